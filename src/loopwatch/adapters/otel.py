"""OpenTelemetry: a `SpanProcessor` that finds loops in GenAI `execute_tool` spans.

    from opentelemetry.sdk.trace import TracerProvider
    from loopwatch.adapters.otel import LoopwatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(LoopwatchSpanProcessor())   # before your exporter's processor
    # ... instrument any framework with this provider (pydantic-ai, OpenLLMetry, ...)

Observe-only: it never changes a run. Any framework instrumented with the GenAI
semantic conventions gets detection: each ended span with
`gen_ai.operation.name = "execute_tool"` is a tool call (`gen_ai.tool.name`,
`gen_ai.tool.call.id`, and `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`
where the instrumentation records content; the older `tool_arguments` / `tool_response`
names are read too); a span with status ERROR is a failed call. `chat` spans are model
turns (their `gen_ai.output.messages` text is read when recorded).

A tool span has ended by the time its result is known, and an ended span cannot be
changed, so each finding is added as a `loopwatch.core.finding` event (attributes
`loopwatch.action`, what loopwatch would have done: nudge, block or stop; `loopwatch.signal`; `loopwatch.description`;
`loopwatch.tool.name`; `loopwatch.tool.span_id`) to the nearest ancestor span still
open (the agent's run), which also gets the first of its strongest findings as attributes
(`loopwatch.action`, `loopwatch.signal`, `loopwatch.description`). Every finding is
kept in `findings` as well, and passed to `on_finding` if given.

Each trace is one agent session with its own guard (at most 256 at once, the oldest
forgotten first); a sub-agent in the same trace shares it. Without recorded arguments
calls cannot be told apart, and without a recorded result nothing says a call got the
same answer again: loopwatch does not guess, so each such call counts as a new one.
Descriptions name tools, counts and times, never inputs or results.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

try:
    from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
    from opentelemetry.trace import StatusCode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("loopwatch.adapters.otel needs the OpenTelemetry SDK: pip install 'loopwatch[otel]'") from exc

from .._core.verdict import Action
from .._guard import Decision, Guard

__all__ = ["LoopwatchSpanProcessor", "SpanFinding"]

_MAX_TRACES = 256  # sessions watched at once: one guard each
_MAX_OPEN = 4096  # open spans remembered as places to put findings; older ones are forgotten
_MAX_FINDINGS = 1000
_ARGUMENTS = ("gen_ai.tool.call.arguments", "tool_arguments")
_RESULTS = ("gen_ai.tool.call.result", "tool_response")
_LETTERS = str.maketrans("0123456789abcdef", "ghijklmnopqrstuv")
_RANK = {Action.NUDGE: 2, Action.BLOCK: 3, Action.STOP: 4}


class SpanFinding(NamedTuple):
    """One loop finding: in which trace, on which tool span, and the decision."""

    trace_id: int
    span_id: int
    tool: str
    decision: Decision


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _first(attributes: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        if name in attributes:
            return attributes[name]
    return None


def _output_text(value: Any) -> str:
    """The text parts of `gen_ai.output.messages` (JSON), as far as it parses."""
    messages = _json(value)
    texts: list[str] = []
    if isinstance(messages, list):
        for message in messages:
            for part in (message.get("parts") or []) if isinstance(message, dict) else []:
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("content"), str):
                    texts.append(part["content"])
    return "\n".join(texts)


class LoopwatchSpanProcessor(SpanProcessor):
    """See the module docstring. `guard` builds each trace's guard (default:
    `Guard(**kwargs)`, with span times as its clock)."""

    def __init__(
        self,
        guard: Callable[[], Guard] | None = None,
        *,
        on_finding: Callable[[SpanFinding], object] | None = None,
        **kwargs: Any,
    ) -> None:
        if guard is not None and kwargs:
            raise TypeError("pass a guard factory or a guard configuration, not both")
        self._make = guard if guard is not None else (lambda: Guard(clock=None, **kwargs))
        self.on_finding = on_finding
        self.findings: list[SpanFinding] = []
        self._guards: OrderedDict[int, Guard] = OrderedDict()
        self._open: OrderedDict[int, Span] = OrderedDict()
        self._strongest: dict[int, int] = {}  # open span id -> rank of the finding it shows
        self._lock = threading.Lock()

    # -- SpanProcessor ----------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        context = span.get_span_context()
        with self._lock:
            self._open[context.span_id] = span
            if len(self._open) > _MAX_OPEN:
                gone, _ = self._open.popitem(last=False)
                self._strongest.pop(gone, None)

    def on_end(self, span: ReadableSpan) -> None:
        try:
            self._end(span)
        except Exception:  # a processor must never break the traced program
            logging.getLogger("loopwatch").debug("loopwatch could not read span %r", span.name, exc_info=True)

    def shutdown(self) -> None:
        with self._lock:
            self._open.clear()
            self._guards.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # -- internals ----------------------------------------------------------------------------

    def _end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None:
            return
        attributes = span.attributes or {}
        operation = attributes.get("gen_ai.operation.name")
        with self._lock:
            self._open.pop(context.span_id, None)
            self._strongest.pop(context.span_id, None)
            if operation == "execute_tool":
                self._tool(span, attributes)
            elif operation == "chat":
                guard = self._guard(context.trace_id)
                at = (span.end_time or 0) / 1e9
                text = _output_text(attributes.get("gen_ai.output.messages"))
                if text:
                    self._found(span, "", guard.text(text, at=at))
                self._found(span, "", guard.turn(at=at))
            if span.parent is None:
                self._guards.pop(context.trace_id, None)  # the session is over

    def _tool(self, span: ReadableSpan, attributes: Any) -> None:
        context = span.context
        name = str(attributes.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool").strip() or "tool")
        # Letters only: results are normalized with digit runs masked, which would make
        # every span id alike.
        unique = f"{context.trace_id:032x}{context.span_id:016x}".translate(_LETTERS)
        arguments = _first(attributes, _ARGUMENTS)
        result = _first(attributes, _RESULTS)
        error = span.status.status_code is StatusCode.ERROR
        if result is None and error:
            result = span.status.description
        value = _json(arguments) if arguments is not None else {"loopwatch.unrecorded": f"call {unique}"}
        if result is None:
            result = f"unrecorded result {unique}"
        call_id = attributes.get("gen_ai.tool.call.id")
        guard = self._guard(context.trace_id)
        decision = guard.after_call(
            name, value, result, error=error, call_id=str(call_id) if call_id else None, at=(span.end_time or 0) / 1e9
        )
        self._found(span, name, decision)

    def _guard(self, trace_id: int) -> Guard:
        guard = self._guards.get(trace_id)
        if guard is None:
            guard = self._guards[trace_id] = self._make()
            if len(self._guards) > _MAX_TRACES:
                self._guards.popitem(last=False)
        else:
            self._guards.move_to_end(trace_id)
        return guard

    def _found(self, span: ReadableSpan, tool: str, decision: Decision) -> None:
        rank = _RANK.get(decision.verdict.action)
        if rank is None:
            return
        context = span.context
        finding = SpanFinding(context.trace_id, context.span_id, tool, decision._replace(message=None))
        if len(self.findings) < _MAX_FINDINGS:
            self.findings.append(finding)
        event = {
            # What the ladder reached: a block found after the call ran is reported as
            # the block it would have been had loopwatch been asked before the call.
            "loopwatch.action": decision.verdict.action.value,
            "loopwatch.signal": decision.verdict.signal or "",
            "loopwatch.description": decision.reason or "",
            "loopwatch.tool.name": tool,
            "loopwatch.tool.span_id": f"{context.span_id:016x}",
        }
        parent = span.parent
        while parent is not None:
            target = self._open.get(parent.span_id)
            if target is not None and target.is_recording():
                target.add_event("loopwatch.core.finding", event)
                if rank > self._strongest.get(parent.span_id, 0):  # the first of the strongest: where it began
                    self._strongest[parent.span_id] = rank
                    target.set_attributes(
                        {k: event[k] for k in ("loopwatch.action", "loopwatch.signal", "loopwatch.description")}
                    )
                break
            parent = getattr(target, "parent", None) if target is not None else None
        if self.on_finding is not None:
            try:
                self.on_finding(finding)
            except Exception:  # noqa: BLE001 - a broken callback must not break the traced program
                self.on_finding = None
