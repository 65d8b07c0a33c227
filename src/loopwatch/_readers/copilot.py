"""GitHub Copilot CLI transcripts: session files and `copilot -p --output-format json`.

One shape of JSON Lines, in two places: `~/.copilot/session-state/<session>/events.jsonl`
(or under `$COPILOT_HOME`), and what `copilot -p ... --output-format json` prints. Each
line is an event `{type, data, id, timestamp, parentId}`, a sub-agent's with a top-level
`agentId`; the printed stream adds `ephemeral` ones (deltas, progress), which are passed
over, and ends with `{"type": "result", "sessionId", "exitCode"}` (no such line when the
run was interrupted: an `abort` line instead).

Events:
- `ToolCall` for each `tool.execution_start` (`toolCallId`, `toolName`, `arguments`),
  completed by the `tool.execution_complete` with the same id and emitted then;
  `source_ref` is the start's line, `at` the completion's time. `result` is
  `result.content` (else `error.message`), with the shell's number in Copilot's notes
  written as `#` and a hook's "Additional guidance" appended to it cut off (as the live
  hook reads a result: `loopwatch._hosts.copilot.result_text`). `error`: `success: false`, or a
  non-zero `shellExecution.exitCode` (a failing shell command is a success to Copilot),
  or an exit code in the text's last line. `changed`: the `path` of a `create` or `edit`
  that succeeded.
- A call loopwatch's hook refused (`error.code: "denied"`, the message being loopwatch's
  refusal) never ran: it is emitted as the `Attempt` it was. So is a call started and
  never completed in the file: the run was ended before it was (while the call was
  refused, or while its result was being checked), and the file does not say whether it
  ran.
- `agent`: a sub-agent's calls carry its `agentId`. Only its calls: text, turns and
  prompts have no agent in the core and would be counted against the main agent.
- `ModelText` for an assistant message's text, `Turn` at `assistant.turn_end`,
  `UserMessage` for the main agent's `user.message`.

One file is one session: its id is `session.start`'s `sessionId` (or the `result`
line's, or the session folder's name). `Session.meta`: the CLI's version, `interrupted`
when an `abort` line was read. Tokens are not counted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Attempt, Event, ModelText, ToolCall, Turn, UserMessage
from .._hosts import copilot as host
from ._common import iso_seconds, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, kind_of, parsed_events, session_name

__all__ = ["NAME", "StreamParser", "read", "sniff"]

NAME = "copilot"

_PEEK = 50
#: Event types only Copilot writes (its session-events schema), with a `data` object.
_TYPES = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "session.skills_loaded",
        "session.mcp_servers_loaded",
        "session.tools_updated",
        "user.message",
        "system.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "hook.start",
        "hook.end",
        "subagent.started",
        "subagent.completed",
    }
)


def _is_event(obj: dict[str, Any]) -> bool:
    return (
        kind_of(obj) in _TYPES
        and isinstance(obj.get("data"), dict)
        and isinstance(obj.get("id"), str)
        and isinstance(obj.get("timestamp"), str)
    )


def _is_result(obj: dict[str, Any]) -> bool:
    return kind_of(obj) == "result" and isinstance(obj.get("sessionId"), str) and "exitCode" in obj


def sniff(path: str, head: bytes) -> bool:
    return any(_is_event(o) for o in head_objects(head, _PEEK))


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a Copilot session file or `--output-format json` capture."""
    lines = JsonLines(path, stream)
    ahead = [obj for _, obj in lines.peek(_PEEK)]
    if not any(_is_event(o) for o in ahead):
        problem = f" ({lines.skipped[0]})" if lines.skipped and not ahead else ""
        raise ReadError(f"not a GitHub Copilot CLI session file or `--output-format json` output{problem}")
    parser = StreamParser()
    for obj in ahead:
        parser.note_session(obj)
    name = parser.session_id
    if name is None:
        name = (
            os.path.basename(os.path.dirname(os.path.abspath(path))) if os.path.basename(path) == "events.jsonl" else ""
        )
    session = Session(NAME, name or session_name(path), (), skipped=lines.skipped)
    session.events = parsed_events(parser, lines, session)
    yield session


class _Call:
    __slots__ = ("agent", "input", "name", "ref")

    def __init__(self, name: str, input: Any, ref: str | None, agent: str | None) -> None:
        self.name, self.input, self.ref, self.agent = name, input, ref, agent


class StreamParser:
    """Copilot event lines in, core events out, one line at a time (see the module doc).
    `feed(obj, ref)` returns the events a line completes; `finish()` the calls started and
    never completed (as `Attempt`s: they never ran). Running totals: `session_id`,
    `meta`, `denied` (loopwatch's refusals read)."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.tokens: int | None = None
        self.outcome: str | None = None
        self.meta: dict[str, Any] = {}
        self.denied = 0
        self._calls: dict[str, _Call] = {}

    def note_session(self, obj: Any) -> None:
        if self.session_id is not None or not isinstance(obj, dict):
            return
        if kind_of(obj) == "session.start":
            found = mapping_at(obj, "data").get("sessionId")
        elif _is_result(obj):
            found = obj.get("sessionId")
        else:
            return
        if isinstance(found, str) and found:
            self.session_id = found

    def feed(self, obj: Any, ref: str | None = None) -> list[Event]:
        if not isinstance(obj, dict) or obj.get("ephemeral") is True:
            return []
        self.note_session(obj)
        kind = kind_of(obj)
        data = mapping_at(obj, "data")
        at = iso_seconds(obj.get("timestamp"))
        agent = obj.get("agentId") if isinstance(obj.get("agentId"), str) and obj.get("agentId") else None
        out: list[Event] = []
        if kind == "tool.execution_start":
            call_id, name = data.get("toolCallId"), data.get("toolName")
            if isinstance(call_id, str) and isinstance(name, str) and name:
                self._calls[call_id] = _Call(name, data.get("arguments"), ref, agent)
        elif kind == "tool.execution_complete":
            call_id = data.get("toolCallId")
            call = self._calls.pop(call_id, None) if isinstance(call_id, str) else None
            if call is not None and isinstance(call_id, str):
                out.append(self._completed(call, call_id, data, at))
        elif kind == "assistant.message" and agent is None:
            text = data.get("content")
            if isinstance(text, str) and text.strip():
                out.append(ModelText(text, at=at, source_ref=ref))
        elif kind == "assistant.turn_end" and agent is None:
            out.append(Turn(at=at, source_ref=ref))
        elif kind == "user.message" and agent is None:
            out.append(UserMessage(at=at, source_ref=ref))
        elif kind == "session.start" and isinstance(data.get("copilotVersion"), str):
            self.meta.setdefault("cli_version", data["copilotVersion"])
        elif kind == "abort":
            self.meta["interrupted"] = True
        elif _is_result(obj) and isinstance(obj.get("exitCode"), int) and obj["exitCode"] != 0:
            self.outcome = "failed"
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = [
            Attempt(call.name, call.input, call_id=call_id, agent=call.agent, source_ref=call.ref)
            for call_id, call in self._calls.items()
        ]
        self._calls.clear()
        return out

    def _completed(self, call: _Call, call_id: str, data: dict[str, Any], at: float | None) -> Event:
        failure = mapping_at(data, "error")
        message = failure.get("message")
        if failure.get("code") == "denied" and host.loopwatch_denial(message):
            self.denied += 1  # refused by loopwatch's hook: it never ran
            return Attempt(call.name, call.input, at=at, call_id=call_id, agent=call.agent, source_ref=call.ref)
        content = mapping_at(data, "result").get("content")
        text = content if content is not None else message
        text = host.result_text(text, call.name)
        shell = mapping_at(data, "shellExecution").get("exitCode")
        code = shell if isinstance(shell, int) and not isinstance(shell, bool) else host.exit_code(text)
        error = data.get("success") is False or (code is not None and code != 0)
        changed: tuple[str, ...] = ()
        field = host.WRITERS.get(call.name)
        path = call.input.get(field) if field and isinstance(call.input, dict) else None
        if not error and isinstance(path, str) and path:
            changed = (path,)
        return ToolCall(
            call.name,
            call.input,
            text,
            error=error,
            changed=changed,
            at=at,
            call_id=call_id,
            agent=call.agent,
            source_ref=call.ref,
        )
