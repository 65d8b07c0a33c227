"""Cline CLI transcripts: session files and `cline --json` output.

Two shapes, told apart by structure:

- a session's messages, `~/.cline/data/sessions/<id>/<id>.messages.json` (and a sub-agent's,
  `agent_<id>.messages.json` beside it, a session of its own): one JSON object
  `{version, updated_at, agent, sessionId, origin, messages: [...]}`, the messages
  Anthropic-style (`{role, content: [blocks], ts, metrics}`), `ts` in milliseconds;
- the stream of `cline --json`: JSON lines `{ts, type: "hook_event" | "agent_event" |
  "run_result" | "run_aborted", ...}`, a call as `agent_event` `content_start` /
  `content_end` (`contentType: "tool"`, `toolName`, `toolCallId`, `input`, `output`). A
  sub-agent's calls are not in it.

Events:
- `ToolCall` for each call, emitted when its result comes: `error` by the one rule for a
  Cline result (`_hosts.cline.output_failed`: a command's `success: false` item, whose exit
  code Cline writes only in text, or a tool error); `changed` is the edited path of a
  successful `editor` call. `source_ref` points at the message (or line) that asked for it.
- `Attempt` for a call that never ran: loopwatch refused it (the session file keeps the
  model's own input, the result is the refusal's), Cline's own repeat check aborted it, or
  no result was ever recorded (a run ended by a hook's `cancel` drops the call's result).
  A refused call in `--json` output shows only the refusal in its place, and is left out.
- `ModelText` for assistant text, `Turn` after each assistant message (its `metrics`
  tokens), `UserMessage` for what the person wrote (`<user_input ...>`), never for the
  hook context Cline adds as a user message (`<hook_context ...>`).

`Session.tokens` sums the messages' input and output tokens (`--json`: the `run_result`
usage); `Session.outcome` is the run's `finishReason` in `--json` output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Attempt, Event, ModelText, ToolCall, Turn, UserMessage
from .._hosts import HOST_WRITERS, WRITERS
from .._hosts import cline as host
from ._common import iso_seconds, load_json, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, keys_at, kind_of, number_of, session_name, tokens_of

__all__ = ["NAME", "read", "sniff"]

NAME = "cline"

_STREAM_TYPES = frozenset({"hook_event", "agent_event", "run_result", "run_aborted"})
_TOKENS = ("inputTokens", "outputTokens")
_PEEK = 20


def is_stream_line(obj: dict[str, Any]) -> bool:
    """A line of `cline --json` output."""
    kind = kind_of(obj)
    if kind not in _STREAM_TYPES or "ts" not in obj:
        return False
    if kind == "agent_event":
        return isinstance(obj.get("event"), dict)
    if kind == "hook_event":
        return "hookEventName" in obj
    return True


def sniff(path: str, head: bytes) -> bool:
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    objs = head_objects(text, _PEEK)
    if objs and any(is_stream_line(o) for o in objs):
        return True
    return host.SESSION_KEYS <= set(keys_at(text, 1, limit=40))


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a Cline messages file or `--json` capture; ReadError for neither."""
    if stream is None:
        from . import open_transcript

        stream = open_transcript(path)
    from . import sniff_head

    head, stream = sniff_head(stream)  # the structure of the head: a first line of any length shows its keys
    objs = head_objects(head.lstrip(), 2)
    if objs and is_stream_line(objs[0]):
        yield from _read_stream(path, stream)
        return
    data = load_json(path, stream)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ReadError("not a Cline messages file or `cline --json` output")
    session = Session(NAME, str(data.get("sessionId") or session_name(path)), ())
    session.meta["variant"] = "session"
    if isinstance(data.get("agent"), str):
        session.meta["agent"] = data["agent"]
    session.events = _messages(data["messages"], session)
    yield session


# -- a session file ---------------------------------------------------------------------------


def _messages(messages: list[Any], session: Session) -> Iterator[Event]:
    pending: dict[str, tuple[str, Any, str]] = {}  # call id -> (name, input, ref)
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            session.skipped.append(f"messages[{i}]: not an object")
            continue
        ref = f"messages[{i}]"
        at = _ms(message.get("ts"))
        role = kind_of(message, "role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            blocks = []
        if role == "assistant":
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                kind = kind_of(block)
                if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                    yield ModelText(block["text"], at=at, source_ref=ref)
                elif kind == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
                    name = block["name"]
                    pending[block["id"]] = (name, host.call_input(name, block.get("input")), ref)
            tokens = tokens_of(mapping_at(message, "metrics"), *_TOKENS)
            if tokens is not None:
                session.tokens = (session.tokens or 0) + tokens
            yield Turn(at=at, tokens=tokens, source_ref=ref)
        elif role == "user":
            said = False
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                kind = kind_of(block)
                if kind == "tool_result":
                    use_id = block.get("tool_use_id")
                    asked = pending.pop(use_id, None) if isinstance(use_id, str) else None
                    if isinstance(use_id, str) and asked is not None:
                        yield _result(use_id, asked, block.get("content"), block.get("is_error") is True, at)
                elif kind == "text" and _said_by_person(block.get("text")):
                    said = True
            if said:
                yield UserMessage(at=at, source_ref=ref)
    for call_id, (name, value, ref) in pending.items():  # never ran, or its result was dropped
        yield Attempt(name, value, at=None, call_id=call_id, source_ref=ref)


def _said_by_person(text: Any) -> bool:
    """A user text block the person wrote: Cline wraps it in `<user_input ...>`; its own
    additions (hook context, notices) are other tags."""
    if not isinstance(text, str) or not text.strip():
        return False
    stripped = text.lstrip()
    return stripped.startswith("<user_input") or not stripped.startswith("<")


def _result(call_id: str, call: tuple[str, Any, str], output: Any, is_error: bool, at: float | None) -> Event:
    name, value, ref = call
    if host.loopwatch_refused(output) or host.interrupted(output):
        return Attempt(name, value, at=at, call_id=call_id, source_ref=ref)
    error = is_error or host.output_failed(_parsed(output))
    return ToolCall(
        name,
        value,
        output,
        error=error,
        changed=_changed(name, value) if not error else (),
        at=at,
        call_id=call_id,
        source_ref=ref,
    )


def _parsed(output: Any) -> Any:
    """A result kept as JSON text (the sub-agent tool's) read as the value it holds."""
    if isinstance(output, str) and output[:1] in ("{", "["):
        import orjson

        try:
            return orjson.loads(output)
        except orjson.JSONDecodeError:
            return output
    return output


def _changed(name: str, value: Any) -> tuple[str, ...]:
    field = HOST_WRITERS[NAME].get(name) or WRITERS.get(name)
    if not field or not isinstance(value, dict):
        return ()
    path = value.get(field)
    return (path,) if isinstance(path, str) and path else ()


def _ms(value: Any) -> float | None:
    seconds = number_of({"ts": value}, "ts")
    return seconds / 1000.0 if seconds is not None else None


# -- `cline --json` ---------------------------------------------------------------------------


def _read_stream(path: str, stream: BinaryIO) -> Iterator[Session]:
    lines = JsonLines(path, stream)
    ahead = [obj for _, obj in lines.peek(_PEEK)]
    if not any(is_stream_line(o) for o in ahead):
        raise ReadError("not `cline --json` output")
    session = Session(NAME, session_name(path), (), skipped=lines.skipped)
    session.meta["variant"] = "json"
    session.events = _stream_events(lines, session)
    yield session


def _stream_events(lines: JsonLines, session: Session) -> Iterator[Event]:
    pending: dict[str, tuple[str, Any, str]] = {}
    usage: int | None = None
    for number, obj in lines:
        ref = f"line {number}"
        kind = kind_of(obj)
        at = iso_seconds(obj.get("ts"))
        if kind == "run_result":
            if isinstance(obj.get("finishReason"), str):
                session.outcome = obj["finishReason"]
            total = tokens_of(obj.get("usage"), *_TOKENS)
            session.tokens = total if total is not None else usage
            continue
        event = obj.get("event")
        if kind != "agent_event" or not isinstance(event, dict):
            continue
        step = kind_of(event)
        if step == "usage":
            spent = tokens_of(event, *_TOKENS)
            if spent is not None:
                usage = (usage or 0) + spent
                session.tokens = usage
        elif step == "iteration_end":
            yield Turn(at=at, source_ref=ref)
        elif step == "content_end" and event.get("contentType") == "text":
            text = event.get("text")
            if isinstance(text, str) and text.strip():
                yield ModelText(text, at=at, source_ref=ref)
        elif step == "content_start" and event.get("contentType") == "tool":
            start_id, tool = event.get("toolCallId"), event.get("toolName")
            if isinstance(start_id, str) and isinstance(tool, str):
                pending[start_id] = (tool, host.call_input(tool, event.get("input")), ref)
        elif step == "content_end" and event.get("contentType") == "tool":
            ended_id = event.get("toolCallId")
            started = pending.pop(ended_id, None) if isinstance(ended_id, str) else None
            if started is None or not isinstance(ended_id, str):
                continue
            call_id = ended_id
            name, value, asked = started
            output = event.get("output")
            if host.loopwatch_refused(value):  # only the refusal is shown in the call's place
                continue
            if host.interrupted(output):
                yield Attempt(name, value, at=at, call_id=call_id, source_ref=asked)
                continue
            error = host.output_failed(output, event.get("error"))
            yield ToolCall(
                name,
                value,
                output,
                error=error,
                changed=_changed(name, value) if not error else (),
                at=at,
                call_id=call_id,
                source_ref=asked,
            )
    for call_id, (name, value, ref) in pending.items():
        yield Attempt(name, value, at=None, call_id=call_id, source_ref=ref)
