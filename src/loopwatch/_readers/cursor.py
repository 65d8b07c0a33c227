"""Cursor CLI output: `cursor-agent -p --output-format stream-json`.

**Written from Cursor's documentation** (the CLI's output-format reference), never
checked against a file the real CLI wrote: `cursor-agent` cannot be run here. The
tests read files of the documented shape.

JSON Lines, one event a line, each with `type` and `session_id`:
`{"type": "system", "subtype": "init", "apiKeySource", "cwd", "session_id", "model",
"permissionMode"}` first, then `user` and `assistant` messages (`message.content`, a
list of `{"type": "text", "text"}` blocks: one line per complete assistant message),
`tool_call` events, and at the end `{"type": "result", "subtype": "success",
"is_error", "duration_ms", "result", "session_id"}` (no such line when the run failed).

A tool call is two lines with the same `call_id`: `subtype: "started"` with
`tool_call: {"<kind>ToolCall": {"args": {...}}}`, then `subtype: "completed"` with the
same plus `result`, whose one key says how it ended (`success`, else a failure).

Events:
- `ToolCall` for each completed call, emitted at its completion; `source_ref` is the
  start's line. Its name is the kind less `ToolCall` (`readToolCall` -> `read`,
  `shellToolCall` -> `shell`, the name the live hook gives a shell call); an MCP
  call's is the tool's own (`args.toolName`, else `args.name`), a `function` call's its
  `name`. The input is `args` (a shell call's: `{command}` alone, as the live hook
  sees it). `result`: a shell call's `stdout` and `stderr`, a read's `content`, else
  the result object; `error`: a result that is not `success`, or a non-zero
  `exitCode`. `changed`: the `path` of a `write`, `edit` or `delete` that succeeded.
- A call whose result is `rejected` (refused by the person or a hook; a key the
  documentation does not show, read so should it come) never ran: it is emitted as the
  `Attempt` it was. So is a call started and never completed in the file
  (the run ended first; the file does not say whether it ran).
- `ModelText` for an assistant message's text, `UserMessage` for a user message, a
  `Turn` at the `result` line.

One file is one session: its `session_id`. `Session.meta`: the `model` of the init
line. A `result` with `is_error: true` makes the outcome `failed`. Tokens are not
counted (the documented lines carry none).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Attempt, Event, ModelText, ToolCall, Turn, UserMessage
from .._hosts import cursor as host
from ._common import mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, kind_of, parsed_events, session_name

__all__ = ["NAME", "StreamParser", "is_stream_line", "read", "sniff"]

NAME = "cursor"

_PEEK = 50
#: Keys of a Claude Code stream-json `system` init line that Cursor's documented one has
#: none of: they tell the two apart.
_CLAUDE_INIT = ("tools", "uuid", "mcp_servers", "claude_code_version")
_SUFFIX = "ToolCall"


def _is_tool_line(obj: dict[str, Any]) -> bool:
    """A `tool_call` line: Cursor's alone (its `call_id` and `tool_call` object)."""
    return (
        kind_of(obj) == "tool_call"
        and obj.get("subtype") in ("started", "completed")
        and isinstance(obj.get("call_id"), str)
        and _kind(obj.get("tool_call")) is not None
    )


def _is_init(obj: dict[str, Any]) -> bool:
    return (
        kind_of(obj) == "system"
        and obj.get("subtype") == "init"
        and isinstance(obj.get("session_id"), str)
        and "apiKeySource" in obj
        and not any(key in obj for key in _CLAUDE_INIT)
    )


def is_stream_line(obj: dict[str, Any]) -> bool:
    """A line only Cursor's stream-json has: a `tool_call` line, or its `system` init."""
    return _is_tool_line(obj) or _is_init(obj)


def _kind(tool_call: Any) -> str | None:
    """The one `<kind>ToolCall` (or `function`) key of a `tool_call` object, else None."""
    if not isinstance(tool_call, dict):
        return None
    kinds = [k for k, v in tool_call.items() if isinstance(v, dict) and (k.endswith(_SUFFIX) or k == "function")]
    return kinds[0] if len(kinds) == 1 else None


def sniff(path: str, head: bytes) -> bool:
    return any(is_stream_line(o) for o in head_objects(head, _PEEK))


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a `cursor-agent --output-format stream-json` capture."""
    lines = JsonLines(path, stream)
    ahead = [obj for _, obj in lines.peek(_PEEK)]
    if not any(is_stream_line(o) for o in ahead):
        problem = f" ({lines.skipped[0]})" if lines.skipped and not ahead else ""
        raise ReadError(f"not Cursor CLI `--output-format stream-json` output{problem}")
    found = next((o.get("session_id") for o in ahead if isinstance(o.get("session_id"), str) and o["session_id"]), None)
    session = Session(NAME, found or session_name(path), (), skipped=lines.skipped)
    session.events = parsed_events(StreamParser(), lines, session)
    yield session


class _Call:
    __slots__ = ("input", "name", "ref")

    def __init__(self, name: str, input: Any, ref: str | None) -> None:
        self.name, self.input, self.ref = name, input, ref


def tool_name(kind: str, body: dict[str, Any]) -> str:
    """The name a call of `kind` (`shellToolCall`, `mcpToolCall`, `function`) gets."""
    args = mapping_at(body, "args")
    if kind == "function":
        name = body.get("name")
        return name if isinstance(name, str) and name else "function"
    if kind == "mcpToolCall":
        for key in ("toolName", "name"):
            if isinstance(args.get(key), str) and args[key]:
                return str(args[key])
    name = kind.removesuffix(_SUFFIX)
    return host.SHELL if name == "shell" else name or kind


def tool_input(kind: str, body: dict[str, Any]) -> Any:
    """A call's input as the guard weighs it: a shell call's command alone."""
    if kind == "function":
        return host.parse_json_text(body.get("arguments"))
    args = body.get("args")
    if kind == "shellToolCall" and isinstance(args, dict):
        return {"command": args.get("command")}
    return args


def outcome(result: Any) -> tuple[Any, bool]:
    """A completed call's result text (or object) and whether it failed."""
    if not isinstance(result, dict) or not result:
        return result, False
    how, body = next(iter(result.items()))
    failed = how != "success"
    if not isinstance(body, dict):
        return body, failed
    code = body.get("exitCode")
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        failed = True
    if "stdout" in body or "stderr" in body:
        parts = [p for p in (body.get("stdout"), body.get("stderr")) if isinstance(p, str) and p]
        return "\n".join(parts), failed
    for key in ("content", "errorMessage", "error", "message"):
        if isinstance(body.get(key), str):
            return body[key], failed
    return body, failed


class StreamParser:
    """Cursor stream-json lines in, core events out, one line at a time (see the module
    doc). `feed(obj, ref)` returns the events a line completes; `finish()` the calls
    started and never completed (as `Attempt`s)."""

    def __init__(self) -> None:
        self.tokens: int | None = None
        self.outcome: str | None = None
        self.meta: dict[str, Any] = {}
        self._calls: dict[str, _Call] = {}

    def feed(self, obj: Any, ref: str | None = None) -> list[Event]:
        if not isinstance(obj, dict):
            return []
        kind = kind_of(obj)
        out: list[Event] = []
        if kind == "tool_call" and _is_tool_line(obj):
            out.extend(self._tool(obj, ref))
        elif kind == "assistant":
            text = _text(mapping_at(obj, "message").get("content"))
            if text.strip():
                out.append(ModelText(text, source_ref=ref))
        elif kind == "user" and isinstance(obj.get("message"), dict):
            out.append(UserMessage(source_ref=ref))
        elif kind == "result":
            if obj.get("is_error") is True:
                self.outcome = "failed"
            out.append(Turn(source_ref=ref))
        elif kind == "system" and obj.get("subtype") == "init" and isinstance(obj.get("model"), str):
            self.meta.setdefault("model", obj["model"])
        return out

    def _tool(self, obj: dict[str, Any], ref: str | None) -> list[Event]:
        call_id = str(obj["call_id"])
        tool_call = obj["tool_call"]
        kind = _kind(tool_call)
        assert kind is not None  # `_is_tool_line`
        body = tool_call[kind]
        if obj.get("subtype") == "started":
            self._calls[call_id] = _Call(tool_name(kind, body), tool_input(kind, body), ref)
            return []
        call = self._calls.pop(call_id, None)
        if call is None:  # completed, its start not in the file: what the completion says
            call = _Call(tool_name(kind, body), tool_input(kind, body), ref)
        result = body.get("result")
        if isinstance(result, dict) and "rejected" in result:  # refused (a person, a hook): it never ran
            return [Attempt(call.name, call.input, call_id=call_id, source_ref=call.ref)]
        text, failed = outcome(result)
        changed: tuple[str, ...] = ()
        field = host.WRITERS.get(call.name)
        path = call.input.get(field) if field and isinstance(call.input, dict) else None
        if not failed and isinstance(path, str) and path:
            changed = (path,)
        return [
            ToolCall(call.name, call.input, text, error=failed, changed=changed, call_id=call_id, source_ref=call.ref)
        ]

    def finish(self) -> list[Event]:
        out: list[Event] = [
            Attempt(call.name, call.input, call_id=call_id, source_ref=call.ref)
            for call_id, call in self._calls.items()
        ]
        self._calls.clear()
        return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )
