"""The generic loopwatch events format: JSON Lines, one core event per line.

    {"type": "tool", "name": "Bash", "input": {"command": "ls"}, "result": "a.py", "error": false, "changed": [], "at": 12.5}

`type` is one of `tool`, `attempt`, `text`, `output`, `retry`, `turn`, `correction`,
`user`; the other fields are those of the matching class in `loopwatch._core.events`
(`text` -> ModelText(text, chunk), `output` -> Output(data, stream),
`correction` -> Correction(message), `user` -> UserMessage). `at` (seconds, any
origin) is optional everywhere. `id` is accepted for `call_id`. Unknown fields are
ignored.

A `tool` event whose input was not recorded (no `input`, or one marked
`unknown_input`, as converters of digests that lost it write) and whose result is a
harness's rejection of the reply (mini-swe-agent's "Please always provide EXACTLY ONE
action") is that rejection: a `correction` with the result's first line. Nothing ran,
so it is no call; other calls with a lost input stay calls, each unlike any other.
`Session.meta["rejected_calls"]` lists the source refs of the lines read so, which
still number steps as the calls they were recorded as.

The file is read line by line, never whole; a line over `jsonio.LINE_CAP` (16 MiB) is
not held whole either: its strings over 2 MiB are read as their first and last MiB (all
the core reads of a result), noted in `Session.skipped`. A line that is not JSON, not
an object, of an unknown type or missing a required field is skipped and reported in
`Session.skipped` with its 1-based line number; `source_ref` is `line N`.

One file is one session. Its id is the first event's `session` field, else the file
name's stem; a later, different `session` value does not start a new session
(concatenated sessions would need a `user` event between them to reset streaks).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, BinaryIO

import orjson

from .._core.events import Attempt, Correction, ModelText, Output, Retry, ToolCall, Turn, UserMessage
from .._files import open_file
from .base import Session
from .jsonio import first_line, kind_of
from .jsonio import lines as _lines
from .mini_swe_agent import CORRECTIONS

__all__ = ["NAME", "TYPES", "parse_line", "read", "sniff"]

NAME = "events"

TYPES = ("tool", "attempt", "text", "output", "retry", "turn", "correction", "user")

# Claude Code's session lines also say `"type": "user"`; they carry these keys,
# which no loopwatch event has.
_FOREIGN_KEYS = frozenset({"message", "uuid", "parentUuid", "sessionId", "session_id", "payload", "role"})


_PEEK_LINES = 16


class _BadLine(ValueError):
    """A line that is valid JSON but not a loopwatch event; the message says why: the
    field and the kind of value found (`'text' is an array, not a string`), never the
    value, which may be model text, an output line or a command with its token."""


def _kind(value: Any) -> str:
    """The JSON kind of a value, for a message that must not quote it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def sniff(path: str, head: bytes) -> bool:
    """The first non-empty line is a JSON object whose `type` is an event type."""
    value = first_line(head)  # a line the head's end cuts: its keys up to the cut
    if not isinstance(value, dict) or kind_of(value) not in TYPES:
        return False
    return value["type"] != "user" or _FOREIGN_KEYS.isdisjoint(value)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The file's one session (see the module docstring). `stream`, if given, is read
    instead of opening `path`. The file stays open until the session's events are
    consumed (or dropped), so sessions may be collected before they are replayed."""
    fh = stream if stream is not None else open_file(path)  # kept open while the events are consumed
    lines = _lines(fh)
    first: list[tuple[int, bytes, str | None]] = []
    session_id = None
    # Peek at the first readable event (within a few lines) for the session id;
    # the lines read are replayed.
    for number, raw, note in lines:
        first.append((number, raw, note))
        if len(first) >= _PEEK_LINES:
            break
        if raw.strip():
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict) and isinstance(value.get("session"), str):
                session_id = value["session"]
            break
    session = Session(format=NAME, session=session_id or _stem(path), events=())
    session.events = _events(chain(_handed_out(first), lines), session, fh if stream is None else None)
    yield session


def _handed_out(items: list[Any]) -> Iterator[Any]:
    """The items of a list, each dropped from it once handed out (the peeked lines
    would otherwise be held, however long, for the whole session)."""
    items.reverse()
    while items:
        yield items.pop()


def _stem(path: str) -> str:
    name = os.path.basename(path)  # not pathlib: on 3.11 it interns every name (a dict growing per file)
    for suffix in (".jsonl", ".json", ".ndjson"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def _events(lines: Iterator[tuple[int, bytes, str | None]], session: Session, owned: BinaryIO | None) -> Iterator[Any]:
    try:
        yield from _parse(lines, session)
    finally:
        if owned is not None:
            owned.close()


def _parse(lines: Iterator[tuple[int, bytes, str | None]], session: Session) -> Iterator[Any]:
    tokens = cost = None
    for number, raw, note in lines:
        if note:  # a line over the cap: read in part, or skipped
            session.skipped.append(note)
        if not raw or raw.isspace():  # not `strip()`: it copies, and a line can be huge
            continue
        ref = f"line {number}"
        try:
            kind, event = _parse_value(raw, ref)
        except orjson.JSONDecodeError:
            session.skipped.append(f"{ref}: not JSON" + (" (cut off?)" if not raw.endswith(b"\n") else ""))
            continue
        except _BadLine as exc:
            session.skipped.append(f"{ref}: {exc}")
            continue
        raw = b""  # not held while the monitor works on the event
        if type(event) is Correction and kind == "tool":
            session.meta.setdefault("rejected_calls", []).append(ref)
        step_tokens = getattr(event, "tokens", None)
        if step_tokens is not None:
            tokens = (tokens or 0) + step_tokens
        step_cost = getattr(event, "cost", None)
        if step_cost is not None:
            cost = (cost or 0.0) + step_cost
        yield event
    # the session's totals are known only once every line is read
    session.tokens, session.cost = tokens, cost


def parse_line(raw: bytes | str, source_ref: str | None = None) -> Any:
    """One line -> one core event. Raises orjson.JSONDecodeError for a line that is not
    JSON, `ValueError` (with a message for a person) for one that is not an event."""
    return _parse_value(raw, source_ref)[1]


def _parse_value(raw: bytes | str, source_ref: str | None) -> tuple[str | None, Any]:
    """The line's event type and its event (see `parse_line`)."""
    value = orjson.loads(raw)
    if not isinstance(value, dict):
        raise _BadLine(f"not a JSON object but {_kind(value)}")
    kind = kind_of(value)
    make = _MAKERS.get(kind) if kind is not None else None
    if make is None:
        if kind is None and value.get("type") is not None:
            raise _BadLine(f"'type' is {_kind(value['type'])}, not a string")
        raise _BadLine(f"unknown event type (expected one of {', '.join(TYPES)})" if kind else "no 'type'")
    at = _number(value, "at")
    return kind, make(value, at, source_ref)


def _text(value: dict[str, Any], key: str, required: bool = True, default: str | None = None) -> Any:
    field = value.get(key, default)
    if field is None and not required:
        return None
    if not isinstance(field, str) or (required and key == "name" and not field):
        what = "missing" if key not in value else ("is empty" if field == "" else f"is {_kind(field)}, not a string")
        raise _BadLine(f"{value['type']} event: {key!r} {what}")
    return field


def _number(value: dict[str, Any], key: str) -> Any:
    field = value.get(key)
    if field is None:
        return None
    if isinstance(field, bool) or not isinstance(field, (int, float)):
        raise _BadLine(f"{value['type']} event: {key!r} is {_kind(field)}, not a number")
    return field


def _tool(value: dict[str, Any], at: Any, ref: str | None) -> ToolCall | Correction:
    rejection = _rejection(value)
    if rejection is not None:
        return Correction(rejection, at=at, source_ref=ref)
    changed = value.get("changed") or ()
    if not isinstance(changed, (list, tuple)) or not all(isinstance(f, str) for f in changed):
        raise _BadLine("tool event: 'changed' is not a list of file names")
    tokens = _number(value, "tokens")
    return ToolCall(
        name=_text(value, "name"),
        input=value.get("input"),
        result=value.get("result"),
        error=bool(value.get("error", False)),
        changed=tuple(changed),
        at=at,
        call_id=_text(value, "call_id", False, value.get("id")),
        agent=_text(value, "agent", False),
        source_ref=ref,
        tokens=int(tokens) if tokens is not None else None,
        cost=_number(value, "cost"),
    )


def _rejection(value: dict[str, Any]) -> str | None:
    """The harness's rejection a call with a lost input stands for, if its result is one."""
    result = value.get("result")
    if not isinstance(result, str):
        return None
    given = value.get("input")
    if given is not None and not (isinstance(given, dict) and given.get("unknown_input")):
        return None  # a recorded input: the call is what the source says it is
    head = result[:1000].lstrip()  # the rejection comes first; a long result is not copied
    if not head.startswith(CORRECTIONS):
        return None
    return head.split("\n", 1)[0]


def _attempt(value: dict[str, Any], at: Any, ref: str | None) -> Attempt:
    return Attempt(
        name=_text(value, "name"),
        input=value.get("input"),
        at=at,
        call_id=_text(value, "call_id", False, value.get("id")),
        agent=_text(value, "agent", False),
        source_ref=ref,
    )


def _turn(value: dict[str, Any], at: Any, ref: str | None) -> Turn:
    tokens = _number(value, "tokens")
    return Turn(at=at, tokens=int(tokens) if tokens is not None else None, cost=_number(value, "cost"), source_ref=ref)


_MAKERS: dict[str, Callable[[dict[str, Any], Any, str | None], Any]] = {
    "tool": _tool,
    "attempt": _attempt,
    "text": lambda v, at, ref: ModelText(_text(v, "text"), at=at, chunk=bool(v.get("chunk", False)), source_ref=ref),
    "output": lambda v, at, ref: Output(
        _text(v, "data"), stream=_text(v, "stream", True, "stdout"), at=at, source_ref=ref
    ),
    "retry": lambda v, at, ref: Retry(at=at, reason=_text(v, "reason", False), source_ref=ref),
    "turn": _turn,
    "correction": lambda v, at, ref: Correction(_text(v, "message"), at=at, source_ref=ref),
    "user": lambda v, at, ref: UserMessage(at=at, source_ref=ref),
}
