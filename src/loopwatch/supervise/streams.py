"""What the child prints, as monitor events.

Plain output goes to the monitor as `Output` (the `repeated_lines` signal). Two agent
CLIs print structured JSON Lines on stdout instead, and give real events:

- `claude-stream`: `claude -p --output-format stream-json --verbose`. `assistant`
  lines carry `tool_use` blocks ({id, name, input}) and text; `user` lines carry
  `tool_result` blocks ({tool_use_id, content, is_error}); joined by id, they make a
  `ToolCall`. A `result` line (once per query) is a `Turn`.
- `codex-json`: `codex exec --json`. `item.completed` lines whose item is a
  `command_execution` ({command, aggregated_output, exit_code, status}),
  `file_change`, `mcp_tool_call` or `web_search` make a `ToolCall`; `agent_message`
  is model text; `turn.completed` is a `Turn`. Rollout-style `function_call` /
  `function_call_output` lines (bare or inside `response_item`) are joined by
  `call_id`.

`auto` looks at the first few non-blank stdout lines and picks the first format whose
shape it recognizes, else `lines`. Until it has decided, stdout lines are held back
from the monitor (never from the screen): at most 5 lines or 1 MiB.

stderr is always plain output. In a structured format, stdout lines that are not JSON
are plain output too. Deliberately small: these adapters keep only pending tool calls
(at most 1,024) and the current partial line, and skip what they do not know.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator

import orjson

from ..events import ModelText, Output, ToolCall, Turn

__all__ = ["FORMATS", "EventSource", "detect"]

FORMATS = ("auto", "lines", "claude-stream", "codex-json")

_HOLD_LINES = 5
_HOLD_BYTES = 1 << 20
_LINE_LIMIT = 32 << 20  # a longer JSON line is skipped, not buffered
_PENDING_LIMIT = 1024

_CODEX_TYPES = {
    "thread.started", "turn.started", "turn.completed", "turn.failed",
    "item.started", "item.updated", "item.completed",
}


def detect(obj: Any) -> str | None:
    """The structured format one parsed stdout line belongs to, or None."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if kind == "system" and "session_id" in obj and "subtype" in obj:
        return "claude-stream"
    if kind in ("assistant", "user") and isinstance(obj.get("message"), dict) and "session_id" in obj:
        return "claude-stream"
    if kind == "result" and "subtype" in obj and "session_id" in obj:
        return "claude-stream"
    if kind in _CODEX_TYPES:
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
        self._adapter: _Adapter | None = None
        self._held = bytearray()
        if format != "auto":
            self._choose(format)

    def feed(self, data: bytes, stream: str, at: float) -> list[Any]:
        if stream != "stdout":
            return [Output(data, stream, at)]
        if self._adapter is None:
            self._held += data
            choice = self._guess(final=False)
            if choice is None:
                return []
            data = self._release(choice)
        return self._adapter.feed(data, at)  # type: ignore[union-attr]

    def finish(self, at: float) -> list[Any]:
        """The stream ended: decide if still undecided, and flush what is held."""
        if self._adapter is None:
            data = self._release(self._guess(final=True) or "lines")
            return self._adapter.feed(data, at) + self._adapter.finish(at)  # type: ignore[union-attr]
        return self._adapter.finish(at)

    def _choose(self, format: str) -> None:
        self.format = format
        self._adapter = _ADAPTERS[format]()

    def _release(self, format: str) -> bytes:
        self._choose(format)
        data = bytes(self._held)
        self._held.clear()
        return data

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
    def feed(self, data: bytes, at: float) -> list[Any]:
        return [Output(data, "stdout", at)] if data else []


class _JsonLines(_Adapter):
    """Cuts stdout into lines; JSON objects go to `on_object`, other lines are output."""

    def __init__(self) -> None:
        self._partial = bytearray()
        self._skipping = False  # inside a line longer than _LINE_LIMIT
        self._pending: OrderedDict[str, tuple[str, Any]] = OrderedDict()

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

    def on_object(self, obj: dict, at: float) -> Iterator[Any]:
        raise NotImplementedError

    def _remember(self, call_id: Any, name: str, value: Any) -> None:
        if isinstance(call_id, str):
            self._pending[call_id] = (name, value)
            if len(self._pending) > _PENDING_LIMIT:
                self._pending.popitem(last=False)

    def _recall(self, call_id: Any) -> tuple[str, Any] | None:
        return self._pending.pop(call_id, None) if isinstance(call_id, str) else None


class _ClaudeStream(_JsonLines):
    def on_object(self, obj: dict, at: float) -> Iterator[Any]:
        kind = obj.get("type")
        message = obj.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        agent = obj.get("parent_tool_use_id") or None
        if kind == "assistant" and isinstance(blocks, list):
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    self._remember(block.get("id"), str(block.get("name") or "tool"), block.get("input"))
                elif block.get("type") == "text" and isinstance(block.get("text"), str):
                    yield ModelText(block["text"], at=at)
        elif kind == "user" and isinstance(blocks, list):
            for block in blocks:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                call = self._recall(block.get("tool_use_id"))
                if call is None:
                    continue  # a result whose call we never saw
                yield ToolCall(
                    call[0], call[1], _text(block.get("content")), error=bool(block.get("is_error")),
                    at=at, call_id=block.get("tool_use_id"), agent=agent,
                )
        elif kind == "result":
            yield Turn(at=at, tokens=_tokens(obj.get("usage")), cost=_number(obj.get("total_cost_usd")))


class _CodexJson(_JsonLines):
    def on_object(self, obj: dict, at: float) -> Iterator[Any]:
        kind = obj.get("type")
        if kind == "item.completed" and isinstance(obj.get("item"), dict):
            yield from self._item(obj["item"], at)
        elif kind == "turn.completed":
            yield Turn(at=at, tokens=_tokens(obj.get("usage")))
        elif kind == "response_item" and isinstance(obj.get("payload"), dict):
            yield from self._function(obj["payload"], at)
        elif kind in ("function_call", "function_call_output"):
            yield from self._function(obj, at)

    def _item(self, item: dict, at: float) -> Iterator[Any]:
        kind, status, ref = item.get("type"), item.get("status"), item.get("id")
        failed = status in ("failed", "declined")
        if kind == "command_execution":
            code = item.get("exit_code")
            yield ToolCall(
                "shell", {"command": item.get("command")}, item.get("aggregated_output"),
                error=failed or (isinstance(code, int) and code != 0), at=at, call_id=ref,
            )
        elif kind == "file_change":
            changes = [c for c in item.get("changes") or () if isinstance(c, dict)]
            paths = tuple(str(c.get("path")) for c in changes)
            yield ToolCall(
                "apply_patch", {"changes": [[c.get("kind"), c.get("path")] for c in changes]}, status,
                error=failed, changed=paths if status == "completed" else (), at=at, call_id=ref,
            )
        elif kind == "mcp_tool_call":
            name = f"{item.get('server')}.{item.get('tool')}"
            result = item.get("error") if failed else item.get("result")
            yield ToolCall(name, item.get("arguments"), result, error=failed, at=at, call_id=ref)
        elif kind == "web_search":
            yield ToolCall("web_search", {"query": item.get("query")}, None, at=at, call_id=ref)
        elif kind == "agent_message" and isinstance(item.get("text"), str):
            yield ModelText(item["text"], at=at)

    def _function(self, payload: dict, at: float) -> Iterator[Any]:
        if payload.get("type") == "function_call":
            arguments = payload.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = orjson.loads(arguments)
                except orjson.JSONDecodeError:
                    pass
            self._remember(payload.get("call_id"), str(payload.get("name") or "tool"), arguments)
        elif payload.get("type") == "function_call_output":
            call = self._recall(payload.get("call_id"))
            if call is None:
                return
            output, error = payload.get("output"), False
            if isinstance(output, str) and output.startswith("{"):
                try:  # shell output is itself JSON: {"output": ..., "metadata": {"exit_code": N}}
                    parsed = orjson.loads(output)
                    code = parsed.get("metadata", {}).get("exit_code")
                    output, error = parsed.get("output", output), isinstance(code, int) and code != 0
                except (orjson.JSONDecodeError, AttributeError):
                    pass
            yield ToolCall(call[0], call[1], output, error=error, at=at, call_id=payload.get("call_id"))


_ADAPTERS: dict[str, type[_Adapter]] = {
    "lines": _Lines,
    "claude-stream": _ClaudeStream,
    "codex-json": _CodexJson,
}


def _text(content: Any) -> Any:
    """A tool result's content as text when it is text blocks; else as given."""
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if len(parts) == len(content):
            return "\n".join(parts)
    return content


def _tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = sum(v for k, v in usage.items() if k in ("input_tokens", "output_tokens") and isinstance(v, int))
    return total or None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
