"""Codex CLI transcripts: rollout files and `codex exec --json` output.

Three shapes of JSON Lines, told apart line by line:

- a rollout, `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`: `{timestamp, type, payload}`
  lines (0.171 adds `ordinal`; its first line, `session_meta`, carries the
  instructions and may be megabytes long: it is told by its keys, see `sniff_head`) of type `session_meta`, `turn_context`, `response_item` and `event_msg`;
- an older rollout: a first line `{id, timestamp, instructions}`, then bare response
  items (`{"type": "message", ...}`) and `{"record_type": "state"}` lines;
- the stream of `codex exec --json`: `thread.started`, `turn.started`,
  `item.started` / `item.completed` (`command_execution`, `file_change`,
  `mcp_tool_call`, `web_search`, `agent_message`, ...), `turn.completed` with usage.
  It has no timestamps (`at` is None).

Events from a rollout:
- `ToolCall` for each `function_call`, `custom_tool_call` (e.g. `apply_patch`, whose
  input is the patch text) and `local_shell_call`, completed by the
  `function_call_output` / `custom_tool_call_output` / `local_shell_call_output` with
  the same `call_id` and emitted then; `web_search_call` at once (it has no output).
  `source_ref` is `line N` of the **call** (where the model asked); `at` is the
  output's time. A `function_call`'s JSON `arguments` are parsed into the input.
- `result` is the output text the model saw; when the output is the older JSON form
  `{"output": ..., "metadata": {"exit_code": ...}}`, its `output`.
- `error`: a non-zero exit code, read from that metadata, from an `Exit code: N` or
  `Process exited with code N` header line (`hosts.codex.output_exit_code`), from an
  `item_completed` event of a `CommandExecution` (0.171) or an `exec_command_end`
  event (older versions);
  an output object with `success: false`; or, for an `apply_patch` output with none
  of these, a reply other than `Success. Updated the following files`.
- `changed`: the files an `apply_patch` names (`*** Update File: ...`), when it did
  not fail.
- `ModelText` for assistant messages, `UserMessage` for user messages other than the
  context Codex injects (`<environment_context>`, `<user_instructions>`, AGENTS.md),
  `Turn` for each `token_count` event that adds tokens (with that request's tokens),
  `Retry` for `stream_error` events.
- tokens: `Session.tokens` is the last `total_token_usage.total_tokens`; a request's
  tokens ride on the first call it made, when its `token_count` comes before that
  call's output (as Codex writes it), else on no call.

From `codex exec --json`: `command_execution` -> ToolCall `command_execution`
(input `{"command": ...}`, result the aggregated output, error a non-zero exit code or
a failed status), `file_change` -> `file_change` (changed: its paths),
`mcp_tool_call` -> `<server>.<tool>`, `web_search` -> `web_search`; `agent_message`
-> ModelText; `turn.completed` -> Turn with input + output tokens. `source_ref` is
the `item.started` line when there was one, else `item.completed`.

A call whose output never came is emitted at the end with `result=None`. One file is
one session. Not handled: the `{"id": ..., "msg": {...}}` event stream of early
`codex exec --json` versions; reasoning items (encrypted, or summaries only).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from .._core.events import Attempt, Event, ModelText, Retry, ToolCall, Turn, UserMessage
from .._hosts import codex
from ._common import iso_seconds, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, blocks_text, decode_arguments, head_objects, kind_of, parsed_events, session_name

__all__ = ["NAME", "StreamParser", "read", "sniff"]

NAME = "codex"

_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
_ITEM_TYPES = _CALLS | _OUTPUTS | {"message", "reasoning", "web_search_call"}
#: user messages Codex writes itself: context, not the user speaking
_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>")
# The name runs to the line's last non-space (`\S(?:.*\S)?`, not a lazy `.+?\s*$`, which
# rescans the trailing blanks at every character: quadratic on a line of spaces).
_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (\S(?:.*\S)?)\s*$|^\*\*\* Move to: (\S(?:.*\S)?)\s*$", re.MULTILINE
)
_PEEK = 50
_PATCH_APPLIED = re.compile(r"^Success\. Updated the following files", re.MULTILINE)


def is_rollout_line(obj: dict[str, Any]) -> bool:
    return kind_of(obj) in codex.ROLLOUT_LINES and "payload" in obj and "timestamp" in obj


def is_exec_line(obj: dict[str, Any]) -> bool:
    kind = kind_of(obj)
    if kind == "thread.started":
        return "thread_id" in obj
    if kind in ("item.started", "item.updated", "item.completed"):
        return isinstance(obj.get("item"), dict)
    if kind == "turn.completed":
        return "usage" in obj
    return False


def is_legacy_line(obj: dict[str, Any]) -> bool:
    if kind_of(obj, "record_type") == "state":
        return True
    return "type" not in obj and "id" in obj and "timestamp" in obj and "instructions" in obj


def _recognized(obj: dict[str, Any]) -> bool:
    return is_rollout_line(obj) or is_exec_line(obj) or is_legacy_line(obj)


def sniff(path: str, head: bytes) -> bool:
    return any(_recognized(o) for o in head_objects(head, _PEEK))


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a Codex rollout or `codex exec --json` capture.
    Raises ReadError when the file is neither."""
    lines = JsonLines(path, stream)
    ahead = [obj for _, obj in lines.peek(_PEEK)]
    if not any(_recognized(o) for o in ahead):
        problem = f" ({lines.skipped[0]})" if lines.skipped and not ahead else ""
        raise ReadError(f"not a Codex rollout or `codex exec --json` output{problem}")
    session_id = None
    for obj in ahead:
        session_id = _session_id(obj)
        if session_id:
            break
    session = Session(NAME, session_id or session_name(path), (), skipped=lines.skipped)
    session.meta["variant"] = "exec-json" if any(is_exec_line(o) for o in ahead) else "rollout"
    session.events = parsed_events(StreamParser(), lines, session)
    yield session


def _session_id(obj: dict[str, Any]) -> str | None:
    if kind_of(obj) == "session_meta" and isinstance(obj.get("payload"), dict):
        found = obj["payload"].get("id")
    elif kind_of(obj) == "thread.started":
        found = obj.get("thread_id")
    elif is_legacy_line(obj):
        found = obj.get("id")
    else:
        found = None
    return found if isinstance(found, str) and found else None


class _Call:
    __slots__ = ("input", "name", "ref", "tokens")

    def __init__(self, name: str, input: Any, ref: str | None) -> None:
        self.name, self.input, self.ref = name, input, ref
        self.tokens: int | None = None


class StreamParser:
    """Codex lines in, core events out, one line at a time: the one implementation behind
    `read()`, and what a live supervisor of `codex exec --json` feeds each stdout line
    to (rollout lines are accepted too, so a supervisor may tail a rollout file).

        parser = StreamParser()
        for n, line in enumerate(proc.stdout, 1):
            for event in parser.feed(orjson.loads(line), f"line {n}"):
                verdict = monitor.observe(event)
        for event in parser.finish():
            monitor.observe(event)

    `feed(obj, ref)` takes one parsed line (a dict; anything else is ignored) and
    returns the events it completes, possibly none; `ref` becomes their `source_ref`.
    `finish()` returns the calls that never got an output (`result=None`). With
    `attempts=True`, each call (and each `item.started` command) also yields an
    `Attempt` at once, before its output.

    Running totals: `session_id`, `tokens`, `outcome` (`failed` after `turn.failed`),
    `meta` (model, cwd, cli version).
    """

    def __init__(self, *, attempts: bool = False) -> None:
        self.attempts = attempts
        self.session_id: str | None = None
        self.tokens: int | None = None
        self.outcome: str | None = None
        self.meta: dict[str, Any] = {}
        self._calls: dict[str, _Call] = {}
        self._unpriced: list[str] = []  # calls asked for since the last token count
        self._exit_codes: dict[str, int] = {}  # from item_completed / exec_command_end, until the output comes
        self._started: dict[str, str | None] = {}  # exec item id -> ref of its item.started

    # -- public ---------------------------------------------------------------------------

    def feed(self, obj: Any, ref: str | None = None) -> list[Event]:
        if not isinstance(obj, dict):
            return []
        out: list[Event] = []
        if self.session_id is None:
            self.session_id = _session_id(obj)
        kind = kind_of(obj)
        if is_rollout_line(obj):
            payload = obj["payload"]
            if not isinstance(payload, dict):
                return out
            at = iso_seconds(obj.get("timestamp"))
            if kind == "response_item":
                self._item(payload, at, ref, out)
            elif kind == "event_msg":
                self._event(payload, at, ref, out)
            elif kind in ("session_meta", "turn_context"):
                for key in ("model", "cwd", "cli_version", "originator"):
                    if isinstance(payload.get(key), str):
                        self.meta.setdefault(key, payload[key])
        elif kind in codex.EXEC_EVENTS or kind == "error":
            self._exec(obj, ref, out)
        elif kind in _ITEM_TYPES:  # an older rollout's bare response item
            self._item(obj, iso_seconds(obj.get("timestamp")), ref, out)
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = [
            self._tool_call(call, None, False, (), None, call_id) for call_id, call in self._calls.items()
        ]
        self._calls.clear()
        return out

    # -- rollout ----------------------------------------------------------------------------

    def _item(self, item: dict[str, Any], at: float | None, ref: str | None, out: list[Event]) -> None:
        kind = kind_of(item)
        if kind == "message":
            text = blocks_text(item.get("content"))
            text = text if isinstance(text, str) else ""
            role = kind_of(item, "role")
            if role == "assistant" and text.strip():
                out.append(ModelText(text, at=at, source_ref=ref))
            elif role == "user" and text.strip() and not text.lstrip().startswith(_INJECTED):
                out.append(UserMessage(at=at, source_ref=ref))
        elif kind in _CALLS:
            call_id = item.get("call_id") or item.get("id")
            if not isinstance(call_id, str):
                return
            if kind == "function_call":
                name, value = item.get("name"), decode_arguments(item.get("arguments"))
            elif kind == "custom_tool_call":
                name, value = item.get("name"), item.get("input")
            else:
                name, value = "local_shell", item.get("action")
            name = name if isinstance(name, str) and name else kind
            self._calls[call_id] = _Call(name, value, ref)
            self._unpriced.append(call_id)
            if self.attempts:
                out.append(Attempt(name, value, at=at, call_id=call_id, source_ref=ref))
        elif kind in _OUTPUTS:
            call_id = item.get("call_id")
            call = self._calls.pop(call_id, None) if isinstance(call_id, str) else None
            if call is None or not isinstance(call_id, str):
                return
            if codex.loopwatch_denial(item.get("output")):  # refused by loopwatch's hook: it never ran
                self._exit_codes.pop(call_id, None)
                if not self.attempts:  # the model asked for it again: a replay's guard judges that
                    out.append(Attempt(call.name, call.input, at=at, call_id=call_id, source_ref=call.ref))
                return
            result, error, known = _output(item.get("output"), self._exit_codes.pop(call_id, None))
            patch = _patch_of(call)
            if patch is not None and not known:  # a bare apply_patch reply: only success says so
                error = not (isinstance(result, str) and _PATCH_APPLIED.search(result))
            changed = _patched_files(patch) if patch and not error else ()
            out.append(self._tool_call(call, result, error, changed, at, call_id))
        elif kind == "web_search_call":
            out.append(ToolCall("web_search", item.get("action"), item.get("status"), at=at, source_ref=ref))

    def _event(self, event: dict[str, Any], at: float | None, ref: str | None, out: list[Event]) -> None:
        kind = kind_of(event)
        if kind == "token_count":
            info = event.get("info")
            if not isinstance(info, dict):
                return
            total = _total(info.get("total_token_usage"))
            if total is None or (self.tokens is not None and total <= self.tokens):
                return  # repeated for a rate-limit update: no new request
            last = _total(info.get("last_token_usage"))
            self.tokens = total
            for position, call_id in enumerate(self._unpriced):
                call = self._calls.get(call_id)
                if call is not None:
                    call.tokens = last if position == 0 else 0
            self._unpriced.clear()
            out.append(Turn(at=at, tokens=last, source_ref=ref))
        elif kind == "stream_error":
            out.append(Retry(at=at, reason=str(event.get("message") or "stream error")[:200], source_ref=ref))
        elif kind == "item_completed":  # 0.171: the command's end, before its output
            found = codex.item_exit_code(event.get("item"))
            if found is not None and found[0] in self._calls:
                self._exit_codes[found[0]] = found[1]
        elif kind == "exec_command_end":  # before 0.171
            code = event.get("exit_code")
            if isinstance(event.get("call_id"), str) and isinstance(code, int) and event["call_id"] in self._calls:
                self._exit_codes[event["call_id"]] = code

    # -- codex exec --json --------------------------------------------------------------------

    def _exec(self, obj: dict[str, Any], ref: str | None, out: list[Event]) -> None:
        kind = kind_of(obj)
        item = mapping_at(obj, "item")
        item_id = item.get("id") if isinstance(item.get("id"), str) else None
        if kind == "item.started" and item_id is not None:
            self._started[item_id] = ref
            if self.attempts and kind_of(item) == "command_execution":
                out.append(
                    Attempt("command_execution", {"command": item.get("command")}, call_id=item_id, source_ref=ref)
                )
        elif kind == "item.completed":
            start = self._started.pop(item_id, ref) if item_id is not None else ref
            self._exec_item(item, item_id, start, out)
        elif kind == "turn.completed":
            usage = obj.get("usage")
            tokens = None
            if isinstance(usage, dict):
                counts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
                tokens = (
                    sum(c for c in counts if isinstance(c, int)) if any(isinstance(c, int) for c in counts) else None
                )
            if tokens is not None:
                self.tokens = (self.tokens or 0) + tokens
            out.append(Turn(tokens=tokens, source_ref=ref))
        elif kind == "turn.failed":
            self.outcome = "failed"
        elif kind == "error":
            message = str(obj.get("message") or "")
            if "reconnect" in message.lower() or "retry" in message.lower():
                out.append(Retry(reason=message[:200], source_ref=ref))

    def _exec_item(self, item: dict[str, Any], item_id: str | None, ref: str | None, out: list[Event]) -> None:
        kind = kind_of(item)
        status = item.get("status")
        failed = status == "failed"
        if kind == "agent_message":
            if isinstance(item.get("text"), str) and item["text"].strip():
                out.append(ModelText(item["text"], source_ref=ref))
        elif kind == "command_execution":
            found = codex.item_exit_code(item)
            error = failed or (found is not None and found[1] != 0)
            out.append(
                ToolCall(
                    "command_execution",
                    {"command": item.get("command")},
                    item.get("aggregated_output"),
                    error=error,
                    call_id=item_id,
                    source_ref=ref,
                )
            )
        elif kind == "file_change":
            changes = item.get("changes")
            changes = changes if isinstance(changes, list) else []
            paths = tuple(c["path"] for c in changes if isinstance(c, dict) and isinstance(c.get("path"), str))
            out.append(
                ToolCall(
                    "file_change",
                    {"changes": changes},
                    status,
                    error=failed,
                    changed=() if failed else paths,
                    call_id=item_id,
                    source_ref=ref,
                )
            )
        elif kind == "mcp_tool_call":
            name = ".".join(str(part) for part in (item.get("server"), item.get("tool")) if part)
            result = item.get("result", item.get("error"))
            error = failed or bool(item.get("error"))
            out.append(
                ToolCall(
                    name or "mcp_tool_call", item.get("arguments"), result, error=error, call_id=item_id, source_ref=ref
                )
            )
        elif kind == "web_search":
            out.append(ToolCall("web_search", {"query": item.get("query")}, status, call_id=item_id, source_ref=ref))

    def _tool_call(
        self, call: _Call, result: Any, error: bool, changed: tuple[str, ...], at: float | None, call_id: str
    ) -> ToolCall:
        return ToolCall(
            call.name,
            call.input,
            result,
            error=error,
            changed=changed,
            at=at,
            call_id=call_id,
            source_ref=call.ref,
            tokens=call.tokens,
        )


def _output(output: Any, exit_code: int | None) -> tuple[Any, bool, bool]:
    """An output's text, whether the call failed, and whether the output said so
    (an exit code or a success flag) rather than leaving it unknown."""
    text, failed = codex.output_status(output, orjson.loads)  # the one rule, shared with the hook
    known = exit_code is not None or failed is not None
    error = (exit_code is not None and exit_code != 0) or bool(failed)
    if isinstance(text, list):
        text = blocks_text(text)
    return text, error, known


def _total(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int):
        return total
    counts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
    return sum(c for c in counts if isinstance(c, int)) if any(isinstance(c, int) for c in counts) else None


def _patch_of(call: _Call) -> str | None:
    """The patch text of an apply_patch call, however it was made."""
    value = call.input
    if call.name == "apply_patch":
        if isinstance(value, dict):
            value = value.get("input") or value.get("patch")
        return value if isinstance(value, str) else None
    command = value.get("command") if isinstance(value, dict) else None
    if isinstance(command, list) and len(command) == 2 and command[0] == "apply_patch" and isinstance(command[1], str):
        return command[1]  # the shell tool asked to run apply_patch
    return None


def _patched_files(patch: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a or b for a, b in _PATCH_FILE.findall(patch)))
