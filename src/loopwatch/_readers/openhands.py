"""OpenHands trajectories: event lists of actions and observations.

Accepted shapes:
- a JSON list of events (what `save_trajectory_path` writes): actions
  `{"id", "timestamp", "source", "action": "run", "args": {...}, "tool_call_metadata"}`
  and observations `{"id", "cause", "observation": "run", "content", "extras": {...}}`;
- a JSON object with that list under `history` (an evaluation record);
- the older history of `[action, observation]` pairs, in either of the above;
- JSON Lines of evaluation records (`output.jsonl`: one `{"instance_id", "history",
  ...}` per line), read one line at a time: one session per line, named by its
  `instance_id`. A broken line is skipped and counted in the next session's `skipped`.

`source_ref` is `[i]`, the 0-based index of the **action** in the event list (of the
pair, in the pair form), whether the list is top-level or under `history`.

Events:
- `ToolCall` for each agent action that gets an observation (`run`, `run_ipython`,
  `read`, `edit`, `write`, `browse`, `think`, `mcp`, ...), joined by the observation's
  `cause` (the action's `id`) and emitted then, at the observation's time. The name is
  the function the model called (`tool_call_metadata.function_name`, e.g.
  `execute_bash`) when recorded, else the action (`run`). The input is the action's
  `args` without bookkeeping fields that vary between identical calls (`thought`,
  `confirmation_state`, `security_risk`, ...; a `think` call keeps its thought). The result is the observation's
  `content`. `error`: an `error` or `user_rejected` observation, or a positive exit
  code (`extras.metadata.exit_code`, or `extras.exit_code` in older files).
  `changed`: the path of a `write`, or of an `edit` other than `view`, that did not
  fail.
- a `finish` action (the model's call to end its run): its final thought as
  `ModelText`, then a `ToolCall` named by the function (`finish`) with `result=None`
  (no observation answers it);
- `ModelText` for the agent's `message` actions;
  `UserMessage` for the user's messages. System prompts, recalls, state changes and
  condensations yield nothing.
- cost and tokens: events carrying `llm_metrics` give the run's running totals
  (`accumulated_cost`, prompt + completion tokens), the last of which are the
  session's; each action's cost is the growth since the previous metrics. An
  evaluation record's `metrics.accumulated_cost` is used when no event has any.

An action whose observation never came is emitted at the end with `result=None`.
Not handled: the OpenHands SDK (V1) event files (`{"kind": "ActionEvent", ...}`, one
JSON file per event in a directory).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from .._core.events import Event, ModelText, ToolCall, UserMessage
from .._files import open_file
from . import sniff_head
from ._common import iso_seconds, load_json, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, keys_at, kind_of, session_name

__all__ = ["NAME", "read", "sniff"]

NAME = "openhands"

#: args that vary between otherwise identical calls, or only steer the harness
NOISE = frozenset(
    {
        "thought",
        "reasoning_content",
        "blocking",
        "hidden",
        "confirmation_state",
        "is_confirmed",
        "security_risk",
        "impl_source",
        "kernel_init_code",
        "include_extra",
        "wait_for_response",
    }
)
#: actions that are not tool calls: they get no observation, or not one of their own
_NOT_CALLS = frozenset(
    {
        "message",
        "finish",
        "system",
        "recall",
        "change_agent_state",
        "condensation",
        "condensation_request",
        "reject",
        "null",
        "start",
    }
)
_FAILED = frozenset({"error", "user_rejected"})

_EVENT = re.compile(rb'"(?:action|observation)"\s*:\s*"[a-z_]+"')
_SOURCE = re.compile(rb'"source"\s*:\s*"(?:agent|user|environment)"')


def sniff(path: str, head: bytes) -> bool:
    text = head.lstrip()
    if not _EVENT.search(text) or not _SOURCE.search(text):
        return False
    if text.startswith(b"["):
        return True  # an event list, or a list of [action, observation] pairs
    if not text.startswith(b"{"):
        return False
    keys = keys_at(text, 1)
    return "history" in keys and not {"trajectory", "environment", "schema_version", "steps"} & set(keys)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The sessions in an OpenHands trajectory (one) or evaluation output (one a line).
    Raises ReadError when the file is not one."""
    if stream is not None:
        head, stream = sniff_head(stream)  # a first instance of any length whole
        jsonl = _first_of_several(head)
    else:
        jsonl = _is_jsonl(path)
    if jsonl:
        yield from _read_lines(path, stream)
        return
    data = load_json(path, stream)
    if isinstance(data, dict):
        events = data.get("history")
        name = data.get("instance_id") or data.get("id")
    else:
        events, name = data, None
    if not isinstance(events, list) or not _looks_like_events(events):
        raise ReadError(
            "not an OpenHands trajectory (expected a list of action/observation events, or an object with one under `history`)"
        )
    yield _session(events, str(name) if name else session_name(path), data if isinstance(data, dict) else None)


def _first_of_several(head: bytes) -> bool:
    """Does the head's first line hold a whole JSON object, with more after it? Then
    each line is a record."""
    text = head.lstrip()
    return text.startswith(b"{") and b"\n" in text.strip() and _parses(text.split(b"\n", 1)[0])


def _is_jsonl(path: str) -> bool:
    """Does the file's first line hold a whole JSON object? Then each line is a record."""
    try:
        with open_file(path) as fh:
            line = fh.readline()
            while line and not line.strip():
                line = fh.readline()
            return line.lstrip().startswith(b"{") and _parses(line)
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from exc


def _parses(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _read_lines(path: str, stream: BinaryIO | None) -> Iterator[Session]:
    skipped: list[str] = []
    found = False
    for number, record in JsonLines(path, stream, skipped):
        events = record.get("history")
        if not isinstance(events, list) or not _looks_like_events(events):
            skipped.append(f"line {number}: not an OpenHands record (no `history` of events)")
            continue
        found = True
        name = record.get("instance_id") or record.get("id") or f"{session_name(path)}:{number}"
        session = _session(events, str(name), record)
        session.meta["line"] = number
        session.skipped.extend(skipped)
        skipped.clear()
        yield session
    if not found:
        raise ReadError(f"not an OpenHands trajectory or evaluation output{f' ({skipped[0]})' if skipped else ''}")


def _looks_like_events(events: list[Any]) -> bool:
    for entry in events[:20]:
        if isinstance(entry, list) and entry and isinstance(entry[0], dict):
            entry = entry[0]
        if isinstance(entry, dict) and ("action" in entry or "observation" in entry):
            return True
    return not events  # an empty history is a (short) trajectory


def _session(events: list[Any], name: str, record: dict[str, Any] | None) -> Session:
    session = Session(NAME, name, ())
    session.events = _events(events, session, record)
    return session


class _Pending:
    __slots__ = ("changes", "cost", "index", "input", "name")

    def __init__(self, index: int, name: str, input: Any, changes: str | None, cost: float | None) -> None:
        self.index, self.name, self.input, self.changes, self.cost = index, name, input, changes, cost


def _events(events: list[Any], session: Session, record: dict[str, Any] | None) -> Iterator[Event]:
    pending: dict[Any, _Pending] = {}
    last_cost: list[float | None] = [None]
    for index, entry in enumerate(events):
        if isinstance(entry, list):  # the older [action, observation] pair
            action, observation = (entry + [None, None])[:2]
            if isinstance(action, dict) and "action" in action:
                call = _action(action, index, session, last_cost)
                if isinstance(call, _Pending):
                    if (
                        isinstance(observation, dict)
                        and "observation" in observation
                        and kind_of(observation, "observation") != "null"
                    ):
                        yield _complete(call, observation)
                    else:
                        pending[("pair", index)] = call
                elif isinstance(call, list):
                    yield from call
                elif call is not None:
                    yield call
            continue
        if not isinstance(entry, dict):
            session.skipped.append(f"[{index}]: not an event object")
            continue
        if "action" in entry:
            call = _action(entry, index, session, last_cost)
            if isinstance(call, _Pending):
                pending[entry.get("id", ("index", index))] = call
            elif isinstance(call, list):
                yield from call
            elif call is not None:
                yield call
        elif "observation" in entry:
            call = pending.pop(entry.get("cause"), None) if entry.get("cause") is not None else None
            if call is not None:
                yield _complete(call, entry)
    for call in pending.values():
        yield ToolCall(call.name, call.input, None, source_ref=f"[{call.index}]", cost=call.cost)
    if session.cost is None and isinstance(record, dict) and isinstance(record.get("metrics"), dict):
        cost = record["metrics"].get("accumulated_cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            session.cost = float(cost)


def _action(
    entry: dict[str, Any], index: int, session: Session, last_cost: list[float | None]
) -> _Pending | Event | list[Event] | None:
    """A tool call waiting for its observation, a text event, the events of a finish
    call, or None."""
    kind = kind_of(entry, "action")
    args = mapping_at(entry, "args")
    at = iso_seconds(entry.get("timestamp"))
    ref = f"[{index}]"
    cost = _metrics(entry, session, last_cost)
    source = entry.get("source")
    if kind == "message":
        if source == "user":
            return UserMessage(at=at, source_ref=ref)
        text = args.get("content") or entry.get("message")
        return ModelText(text, at=at, source_ref=ref) if isinstance(text, str) and text.strip() else None
    if kind == "finish":
        # The model called a tool to end its run: a call like any other (no observation
        # answers it), after its final thought.
        session.outcome = "finished"
        text = args.get("final_thought") or args.get("thought")
        thought = [ModelText(text, at=at, source_ref=ref)] if isinstance(text, str) and text.strip() else []
        value = {k: v for k, v in args.items() if k not in NOISE and k != "final_thought"}
        return [*thought, ToolCall(_function(entry) or kind, value, None, at=at, source_ref=ref, cost=cost)]
    if kind in _NOT_CALLS or not isinstance(kind, str) or source not in (None, "agent"):
        return None
    name = _function(entry)
    # a think call's thought is its whole input; elsewhere a thought is commentary
    value = args if kind == "think" else {k: v for k, v in args.items() if k not in NOISE}
    changes = None
    if kind == "write" or (kind == "edit" and args.get("command") != "view"):
        path = args.get("path")
        changes = path if isinstance(path, str) and path else None
    return _Pending(index, name or kind, value, changes, cost)


def _function(entry: dict[str, Any]) -> str | None:
    """The function the model called, when the event records it."""
    metadata = entry.get("tool_call_metadata")
    name = metadata.get("function_name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def _complete(call: _Pending, observation: dict[str, Any]) -> ToolCall:
    extras = mapping_at(observation, "extras")
    metadata = mapping_at(extras, "metadata")
    code = metadata.get("exit_code", extras.get("exit_code"))
    error = kind_of(observation, "observation") in _FAILED or (isinstance(code, int) and code > 0)
    changed = (call.changes,) if call.changes and not error else ()
    return ToolCall(
        call.name,
        call.input,
        observation.get("content"),
        error=error,
        changed=changed,
        at=iso_seconds(observation.get("timestamp")),
        call_id=str(observation.get("cause")) if observation.get("cause") is not None else None,
        source_ref=f"[{call.index}]",
        cost=call.cost,
    )


def _metrics(entry: dict[str, Any], session: Session, last_cost: list[float | None]) -> float | None:
    """Update the session's running totals from an event's `llm_metrics`; return the
    cost added since the previous metrics (None when the event has none)."""
    metrics = entry.get("llm_metrics")
    if not isinstance(metrics, dict):
        return None
    usage = metrics.get("accumulated_token_usage")
    if isinstance(usage, dict):
        counts = [usage.get(k) for k in ("prompt_tokens", "completion_tokens")]
        if any(isinstance(c, int) for c in counts):
            session.tokens = sum(c for c in counts if isinstance(c, int))
    cost = metrics.get("accumulated_cost")
    if not isinstance(cost, (int, float)) or isinstance(cost, bool):
        return None
    added = cost - (last_cost[0] or 0.0)
    last_cost[0] = session.cost = float(cost)
    return max(round(added, 9), 0.0)
