"""What an agent does and what comes back: the events a `Monitor` is fed.

Every event carries `at`, the monotonic time in seconds at which the caller saw it.
The core never reads a clock: callers (hooks, readers, the supervisor) pass times, so
every decision replays identically in a test. `at=None` means "unknown"; the monitor
then places the event one second after the previous one.

`source_ref` is an optional pointer back into the input the event came from
(`line 12`, `trajectory[4]`); the monitor copies it into findings and verdicts and
never reads it.

Events hold raw content (inputs, results, text) only for as long as the monitor takes
to digest them; the monitor keeps digests, names, counts and times, never the content.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeAlias

__all__ = [
    "Attempt",
    "Correction",
    "Event",
    "ModelText",
    "Output",
    "Retry",
    "ToolCall",
    "Turn",
    "UserMessage",
]


class ToolCall(NamedTuple):
    """A completed tool call.

    `input` and `result` are any JSON value (a result may also be plain text).
    `error` says the call failed (non-zero exit, a tool error); readers set it
    from what the format records. `changed` lists the files the call changed,
    when known: a non-empty list is progress. `agent` names a sub-agent when a
    session has several. `tokens` and `cost` are what the step cost, when the
    format records it (used for "saved" figures, never for decisions). `tree` is a
    digest of the working folder's state after the call (file names, sizes and times,
    never content), where the caller can see it (the live hook); None, unknown (every
    recording): equal digests say the call changed nothing there.
    """

    name: str
    input: Any = None
    result: Any = None
    error: bool = False
    changed: tuple[str, ...] = ()
    at: float | None = None
    call_id: str | None = None
    agent: str | None = None
    source_ref: str | None = None
    tokens: int | None = None
    cost: float | None = None
    tree: str | None = None


class Attempt(NamedTuple):
    """A tool call about to be dispatched: ask `Monitor.check` whether to run it."""

    name: str
    input: Any = None
    at: float | None = None
    call_id: str | None = None
    agent: str | None = None
    source_ref: str | None = None


class ModelText(NamedTuple):
    """Text from the model: a whole assistant message, or a streamed chunk (`chunk=True`).

    Chunks of one response are joined until the next `Turn` (or a non-chunk event)."""

    text: str
    at: float | None = None
    chunk: bool = False
    source_ref: str | None = None


class Output(NamedTuple):
    """Raw output of an agent process on a named stream (`stdout`, `stderr`).

    Bytes are decoded as UTF-8 with replacement. A read may end mid-line, even between
    the CR and LF of a CRLF: the monitor carries the partial line to the next read."""

    data: bytes | str
    stream: str = "stdout"
    at: float | None = None
    source_ref: str | None = None


class Retry(NamedTuple):
    """The harness retried a model request (rate limit, overload, timeout)."""

    at: float | None = None
    reason: str | None = None
    source_ref: str | None = None


class Turn(NamedTuple):
    """A model turn completed (one request answered). Ends a retry streak."""

    at: float | None = None
    tokens: int | None = None
    cost: float | None = None
    source_ref: str | None = None


class Correction(NamedTuple):
    """The harness corrected the model ("no such tool: X", "provide exactly one action")."""

    message: str
    at: float | None = None
    source_ref: str | None = None


class UserMessage(NamedTuple):
    """A new message from the user: every streak starts again."""

    at: float | None = None
    source_ref: str | None = None


#: Every event a `Monitor` is fed (`observe` takes any of them, `check` an `Attempt`).
Event: TypeAlias = ToolCall | Attempt | ModelText | Output | Retry | Turn | Correction | UserMessage
