"""Qwen Code session files: `~/.qwen/projects/<project>/chats/<session>.jsonl`, and a
sub-agent's own file, `subagents/<session>/agent-<agent_id>.jsonl` beside them.

One JSON object a line, each with `uuid`, `parentUuid`, `sessionId`, `timestamp` (ISO)
and `type`; messages hold Gemini-style `parts` (what tells them from Claude Code's
`content`):

- `user`: the person's prompt (`provenance: "real_user"`; releases before 0.23 write no
  provenance), or Qwen's own message to the model (`subtype: "notification"`: a
  background agent's result), which no person wrote;
- `assistant` (`message.role: "model"`): `text` parts, and `functionCall {id, name,
  args}` parts; `usageMetadata.totalTokenCount`;
- `tool_result`: `functionResponse {id, name, response: {output} | {error}}` parts, and
  `toolCallResult {callId, status: success | error | cancelled, errorType,
  resultDisplay}` (a shell call's `resultDisplay.exitCode`);
- `system` (telemetry, snapshots): not the run's events, skipped.

Events: `ToolCall` for each `functionCall`, completed by the `functionResponse` with the
same id (error: `status` not success, or an `error` response, or a non-zero exit code);
`changed` names the written file of a successful `write_file`, `edit` or
`notebook_edit`. `result` is the text the model read, without what loopwatch's hook
appended to it (Qwen appends a hook's `additionalContext` to the call's result, and it
is recorded so: the call's own result is what the live hook judged). A call loopwatch's
hook refused (an `error` response in loopwatch's words; `errorType:
"execution_denied"` where there is a `toolCallResult`) never ran: it is the `Attempt` it
was. `ModelText` for text parts, `Turn` per assistant line (its tokens),
`UserMessage` for the person's prompts. In a sub-agent's file every line carries
`agentId` and `isSidechain`: its calls carry the agent, and as the file's only agent its
text and turns are kept.

Qwen's `-o stream-json` and `-o json` output is Claude Code's stream format, read by the
Claude Code reader. Neither Qwen's own loop halt nor a stop by loopwatch's hook leaves a
line here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Attempt, Event, ModelText, ToolCall, Turn, UserMessage
from .._core.messages import loopwatch_said, without_told
from .._hosts import HOST_WRITERS, WRITERS
from ._common import iso_seconds, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, kind_of, parsed_events, session_name

__all__ = ["NAME", "SessionParser", "is_session_line", "read", "sniff"]

NAME = "qwen-code"

_PEEK = 50
_KINDS = ("user", "assistant", "tool_result")
_UNSET = object()


def is_session_line(obj: dict[str, Any]) -> bool:
    """A line of a Qwen Code session file: a message of `parts`, or a telemetry line,
    of a session."""
    if not isinstance(obj.get("sessionId"), str) or "uuid" not in obj:
        return False
    kind = kind_of(obj)
    if kind in _KINDS:
        message = obj.get("message")
        return isinstance(message, dict) and isinstance(message.get("parts"), list)
    return kind == "system" and isinstance(obj.get("systemPayload"), dict)


def sniff(path: str, head: bytes) -> bool:
    objs = head_objects(head, _PEEK)
    if objs:
        return any(is_session_line(o) for o in objs) and not any(isinstance(o.get("content"), list) for o in objs)
    first = head.lstrip()[:4096]
    return first.startswith(b"{") and b'"sessionId"' in first and b'"parts"' in first and b'"uuid"' in first


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a Qwen Code session file. Raises ReadError for another file."""
    lines = JsonLines(path, stream)
    ahead = [obj for _, obj in lines.peek(_PEEK)]
    if not any(is_session_line(o) for o in ahead):
        problem = f" ({lines.skipped[0]})" if lines.skipped and not ahead else ""
        raise ReadError(f"not a Qwen Code session file{problem}")
    session_id = next((o["sessionId"] for o in ahead if isinstance(o.get("sessionId"), str)), None)
    session = Session(NAME, session_id or session_name(path), (), skipped=lines.skipped)
    session.events = parsed_events(SessionParser(), lines, session)
    yield session


class _Call:
    __slots__ = ("agent", "input", "name", "ref")

    def __init__(self, name: str, input: Any, ref: str | None, agent: str | None) -> None:
        self.name, self.input, self.ref, self.agent = name, input, ref, agent


class SessionParser:
    """Qwen Code session lines in, core events out, one line at a time. `feed(obj, ref)`
    returns the events a line completes; `finish()` the calls whose result never came
    (`result=None`). Running totals: `tokens`, `outcome` (always None: the file does not
    say how the run ended), `meta` (version, cwd, model), `denied` (calls loopwatch's
    hook refused)."""

    def __init__(self) -> None:
        self.tokens: int | None = None
        self.outcome: str | None = None
        self.meta: dict[str, Any] = {}
        self.denied = 0
        self._calls: dict[str, _Call] = {}
        self._main: Any = _UNSET

    def feed(self, obj: Any, ref: str | None = None) -> list[Event]:
        if not isinstance(obj, dict):
            return []
        kind = kind_of(obj)
        if kind not in _KINDS:
            return []
        agent = _agent(obj)
        if self._main is _UNSET:
            self._main = agent  # a sub-agent's own file: its agent is the file's main one
        primary = agent == self._main
        at = iso_seconds(obj.get("timestamp"))
        for key in ("version", "cwd", "model"):
            if isinstance(obj.get(key), str):
                self.meta.setdefault(key, obj[key])
        parts = mapping_at(obj, "message").get("parts")
        parts = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
        out: list[Event] = []
        if kind == "assistant":
            self._assistant(obj, parts, at, ref, agent, primary, out)
        elif kind == "tool_result":
            self._results(obj, parts, at, agent, out)
        elif primary and _person_wrote(obj, parts):
            out.append(UserMessage(at=at, source_ref=ref))
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = [self._call(call_id, call, None, False, (), None) for call_id, call in self._calls.items()]
        self._calls.clear()
        return out

    def _assistant(
        self,
        obj: dict[str, Any],
        parts: list[dict[str, Any]],
        at: float | None,
        ref: str | None,
        agent: str | None,
        primary: bool,
        out: list[Event],
    ) -> None:
        usage = obj.get("usageMetadata")
        tokens = usage.get("totalTokenCount") if isinstance(usage, dict) else None
        tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None
        if tokens is not None:
            self.tokens = (self.tokens or 0) + tokens
        for part in parts:
            call = part.get("functionCall")
            if isinstance(call, dict):
                call_id, name = call.get("id"), call.get("name")
                if isinstance(call_id, str) and isinstance(name, str):
                    self._calls[call_id] = _Call(name, call.get("args"), ref, agent)
            elif primary and not part.get("thought"):
                text = part.get("text")
                if isinstance(text, str) and text.strip():
                    out.append(ModelText(text, at=at, source_ref=ref))
        if primary:
            out.append(Turn(at=at, tokens=tokens, source_ref=ref))

    def _results(
        self, obj: dict[str, Any], parts: list[dict[str, Any]], at: float | None, agent: str | None, out: list[Event]
    ) -> None:
        outcome = obj.get("toolCallResult")
        outcome = outcome if isinstance(outcome, dict) else {}
        for part in parts:
            response = part.get("functionResponse")
            if not isinstance(response, dict) or not isinstance(response.get("id"), str):
                continue
            call_id = response["id"]
            call = self._calls.pop(call_id, None)
            if call is None:
                continue
            said = response.get("response")
            said = said if isinstance(said, dict) else {}
            text = said.get("error", said.get("output"))
            mine = outcome.get("callId") in (call_id, None)
            # A sub-agent's file records no `toolCallResult`: the refusal's own words say it.
            if "error" in said and isinstance(text, str) and loopwatch_said(text) is not None:
                self.denied += 1  # loopwatch refused it: it never ran
                out.append(
                    Attempt(call.name, call.input, at=at, call_id=call_id, agent=call.agent, source_ref=call.ref)
                )
                continue
            text = without_told(text) if isinstance(text, str) else text
            error = "error" in said or (mine and outcome.get("status") not in (None, "success"))
            display = outcome.get("resultDisplay") if mine else None
            code = display.get("exitCode") if isinstance(display, dict) else None
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                error = True
            out.append(self._call(call_id, call, text, error, () if error else _changed(call), at))

    @staticmethod
    def _call(
        call_id: str, call: _Call, result: Any, error: bool, changed: tuple[str, ...], at: float | None
    ) -> ToolCall:
        return ToolCall(
            call.name,
            call.input,
            result,
            error=error,
            changed=changed,
            at=at,
            call_id=call_id,
            agent=call.agent,
            source_ref=call.ref,
        )


def _agent(obj: dict[str, Any]) -> str | None:
    agent = obj.get("agentId")
    return agent if obj.get("isSidechain") and isinstance(agent, str) and agent else None


def _person_wrote(obj: dict[str, Any], parts: list[dict[str, Any]]) -> bool:
    """A user line that is the person speaking: their prompt (`real_user`, or no
    provenance at all in older releases), never Qwen's own notices to the model."""
    provenance = obj.get("provenance")
    if provenance not in ("real_user", None) or obj.get("subtype") is not None:
        return False
    return any(isinstance(p.get("text"), str) and p["text"].strip() for p in parts)


def _changed(call: _Call) -> tuple[str, ...]:
    field = WRITERS.get(call.name) or HOST_WRITERS[NAME].get(call.name)
    path = call.input.get(field) if field is not None and isinstance(call.input, dict) else None
    return (path,) if isinstance(path, str) and path else ()
