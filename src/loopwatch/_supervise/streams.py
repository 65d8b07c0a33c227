"""What the child prints, as monitor events.

Plain output goes to the monitor as `Output` (the `repeated_lines` signal), through
`loopwatch._core.console.Console`: the path the asciicast reader takes for recordings, so a
live run and its recording are judged alike. Two agent
CLIs print structured JSON Lines on stdout instead, and give real events:

- `claude-stream`: `claude -p --output-format stream-json --verbose`: `tool_use` and
  `tool_result` blocks joined by id make a `ToolCall`; each answered assistant message
  is a `Turn`. A run that loopwatch's own hook ended (`terminal_reason:
  "hook_stopped"`, see `loopwatch._hosts.claude_code`) is told apart by
  `EventSource.stopped_by_hook`.
- `cursor-stream`: `cursor-agent -p --output-format stream-json` (its documented shape:
  written from Cursor's documentation, untested against the real CLI): `tool_call`
  lines, `started` then `completed`, make a `ToolCall`. Told from Claude Code's
  stream by its `tool_call` lines and its init line (no `tools`).
- `codex-json`: `codex exec --json`: `item.completed` items (`command_execution`,
  `file_change`, `mcp_tool_call`, `web_search`) make a `ToolCall` named by the item
  type; `agent_message` is model text; `turn.completed` is a `Turn`. Rollout lines are
  read too (a supervisor may tail a rollout file).

`auto` looks at the first few non-blank stdout lines and picks the first format whose
shape it recognizes, else `lines`. Until it has decided, stdout lines are held back
from the monitor (never from the screen): at most 5 lines or 1 MiB.

stderr is always plain output. In a structured format, stdout lines that are not JSON
are plain output too. The JSON lines are read by the transcript readers' own
incremental parsers (`readers.claude_code.StreamParser`, `readers.cursor.StreamParser`,
`readers.codex.StreamParser`),
so a live run and a recorded one give the same events; each event without a time of
its own gets the time its line was read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from .._core.console import Console
from .._core.events import Output
from .._hosts.codex import EXEC_EVENTS

__all__ = ["FORMATS", "EventSource", "detect"]

FORMATS = ("auto", "lines", "claude-stream", "cursor-stream", "codex-json")

_HOLD_LINES = 5
_HOLD_BYTES = 1 << 20
_LINE_LIMIT = 32 << 20  # a longer JSON line is skipped, not buffered


def detect(obj: Any) -> str | None:
    """The structured format one parsed stdout line belongs to, or None."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if kind in ("system", "tool_call"):  # Cursor's before Claude Code's: their init lines look alike
        from .._readers.cursor import is_stream_line

        if is_stream_line(obj):
            return "cursor-stream"
    if kind == "system" and "session_id" in obj and "subtype" in obj:
        return "claude-stream"
    if kind in ("assistant", "user") and isinstance(obj.get("message"), dict) and "session_id" in obj:
        return "claude-stream"
    if kind == "result" and "subtype" in obj and "session_id" in obj:
        return "claude-stream"
    if kind in EXEC_EVENTS:
        return "codex-json"
    if kind == "response_item" and isinstance(obj.get("payload"), dict):
        return "codex-json"
    return None


class EventSource:
    """Turns chunks of output into events. `format` is one of `FORMATS`; after
    `auto` has decided, `.format` names the choice (None while undecided)."""

    def __init__(self, format: str = "auto") -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown events format {format!r} (known: {', '.join(FORMATS)})")
        self.format: str | None = None
        self._console = Console()
        self._adapter: _Adapter | None = None
        self._held = bytearray()
        if format != "auto":
            self._choose(format)

    def feed(self, data: bytes, stream: str, at: float) -> list[Any]:
        if stream != "stdout":
            return self._console.output(data, at, stream)
        adapter = self._adapter
        if adapter is None:
            self._held += data
            choice = self._guess(final=False)
            if choice is None:
                return []
            adapter, data = self._release(choice)
        return adapter.feed(data, at)

    def stopped_by_hook(self, env: Mapping[str, str] | None = None) -> bool:
        """The agent's own loopwatch hook ended the run (Claude Code's stream-json:
        `terminal_reason: "hook_stopped"` after loopwatch's stop). The child then exits
        by itself, with status 0: the supervisor reports it as the loop stop it is.

        When the stream does not say whose stop it was (the stop came after a call ran:
        no denial in the stream), the session file Claude Code wrote is asked (`env`:
        the child's environment, for where that file is)."""
        parser = getattr(self._adapter, "parser", None)
        if parser is None or self.format != "claude-stream":
            return False
        if parser.loopwatch_stopped:
            return True
        if parser.terminal_reason != "hook_stopped" or not parser.session_id:
            return False
        from .._hosts import claude_code

        reason = claude_code.transcript_stop_reason(parser.session_id, os.environ if env is None else env)
        return reason is not None and claude_code.said_stop(reason)

    def finish(self, at: float) -> list[Any]:
        """The stream ended: decide if still undecided, and flush what is held."""
        if self._adapter is None:
            adapter, data = self._release(self._guess(final=True) or "lines")
            return adapter.feed(data, at) + adapter.finish(at)
        return self._adapter.finish(at)

    def _choose(self, format: str) -> _Adapter:
        self.format = format
        self._adapter = _Lines(self._console) if format == "lines" else _ADAPTERS[format]()
        return self._adapter

    def _release(self, format: str) -> tuple[_Adapter, bytes]:
        """Choose the adapter for `format` and hand back what was held for it."""
        adapter = self._choose(format)
        data = bytes(self._held)
        self._held.clear()
        return adapter, data

    def _guess(self, final: bool) -> str | None:
        lines = [line for line in bytes(self._held).split(b"\n")[:-1] if line.strip()]
        for line in lines[:_HOLD_LINES]:
            try:
                found = detect(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
            if found:
                return found
        if final or len(lines) >= _HOLD_LINES or len(self._held) > _HOLD_BYTES:
            return "lines"
        return None


class _Adapter:
    def feed(self, data: bytes, at: float) -> list[Any]:
        raise NotImplementedError

    def finish(self, at: float) -> list[Any]:
        return []


class _Lines(_Adapter):
    def __init__(self, console: Console) -> None:
        self._console = console

    def feed(self, data: bytes, at: float) -> list[Any]:
        return self._console.output(data, at)


class _JsonLines(_Adapter):
    """Cuts stdout into lines; JSON objects go to `on_object`, other lines are output."""

    def __init__(self) -> None:
        self._partial = bytearray()
        self._skipping = False  # inside a line longer than _LINE_LIMIT

    def feed(self, data: bytes, at: float) -> list[Any]:
        events: list[Any] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            else:
                self._partial += data[start:end]
                events.extend(self._line(bytes(self._partial), at))
            self._partial.clear()
            start = end + 1
        if not self._skipping:
            self._partial += data[start:]
            if len(self._partial) > _LINE_LIMIT:
                self._partial.clear()
                self._skipping = True
        return events

    def finish(self, at: float) -> list[Any]:
        rest, self._partial = bytes(self._partial), bytearray()
        return list(self._line(rest, at)) if rest and not self._skipping else []

    def _line(self, line: bytes, at: float) -> Iterator[Any]:
        stripped = line.strip()
        if stripped.startswith(b"{"):
            try:
                obj = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                yield from self.on_object(obj, at)
                return
        if stripped:
            yield Output(line + b"\n", "stdout", at)

    def on_object(self, obj: dict[str, Any], at: float) -> Iterator[Any]:
        raise NotImplementedError


class _Parsed(_JsonLines):
    """A transcript reader's incremental parser, fed line by line. The streams carry no
    times of their own (or only some): events get the time their line was read."""

    def __init__(self, parser: Any) -> None:
        super().__init__()
        self.parser = parser

    def on_object(self, obj: dict[str, Any], at: float) -> Iterator[Any]:
        return _stamped(self.parser.feed(obj), at)

    def finish(self, at: float) -> list[Any]:
        return super().finish(at) + list(_stamped(self.parser.finish(), at))


def _stamped(events: list[Any], at: float) -> Iterator[Any]:
    for event in events:
        yield event if getattr(event, "at", at) is not None else event._replace(at=at)


def _claude_stream() -> _Parsed:
    from .._readers.claude_code import StreamParser

    return _Parsed(StreamParser())


def _cursor_stream() -> _Parsed:
    from .._readers.cursor import StreamParser

    return _Parsed(StreamParser())


def _codex_json() -> _Parsed:
    from .._readers.codex import StreamParser

    return _Parsed(StreamParser())


_ADAPTERS: dict[str, Any] = {
    "claude-stream": _claude_stream,
    "cursor-stream": _cursor_stream,
    "codex-json": _codex_json,
}
