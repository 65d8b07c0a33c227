"""Claude Code transcripts: session files and `claude -p --output-format stream-json`.

Two shapes of JSON Lines, told apart line by line:

- a session file, `~/.claude/projects/<project>/<session>.jsonl`: lines with `type`
  user / assistant / system / summary / ..., a `uuid`, a `parentUuid`, a `sessionId`, an
  ISO `timestamp`. An assistant message may be split over several lines, one content
  block each, each repeating the message id and its usage. Its sub-agents write their
  own files in the session's folder (`<session>/subagents/agent-<id>.jsonl`, a
  workflow's agents in `<session>/subagents/workflows/<run>/`; where, is
  `loopwatch._hosts.claude_code`'s `state_folders`' `parts`): a session file is read
  with them, as one session, their lines in the order of their times (a sub-agent's
  calls run while the parent's Agent call does), each agent's calls carrying its
  `agentId`; their `source_ref` names the file (`subagents/agent-<id>.jsonl line 5`).
  A sub-agent's file named by itself is read alone;
- the stream of `claude -p --output-format stream-json --verbose`: `system`/`init`,
  `assistant` and `user` lines carrying `session_id`, and a final `result` line with
  `total_cost_usd`. It has no timestamps (`at` is None).

Events:
- `ToolCall` for each `tool_use` block, completed by the `tool_result` block with the
  same id, emitted when the result arrives. `source_ref` is `line N` of the
  **tool_use** (where the model asked for the call, as the other readers point at the
  action); `at` is the result's time. `error` is the block's `is_error` (a
  `<tool_use_error>` result counts too). `changed` is the edited file for Edit, Write,
  MultiEdit and NotebookEdit when the result is not an error (the path from the line's
  `toolUseResult` when it has one, else from the input). `result` is the text the
  model was shown; `toolUseResult` (the structured copy) only informs `changed`, since
  it holds whole file bodies that change with every edit.
- `agent`: sub-agent calls carry the sub-agent: its `agentId` in a session file (else
  `sidechain-N`, one per sidechain thread of an older single-file session), and the
  `parent_tool_use_id` of the spawning Task call in stream-json.
- `ModelText` for assistant text blocks, `Turn` when an assistant message ends (with its
  tokens), `UserMessage` for user text (not tool results, not `isMeta` or compaction
  summaries), `Retry` for `api_error` system lines and synthetic API-error messages.
  Sub-agents yield only their tool calls: text, turns and prompts have no `agent`
  field in the core, and would otherwise be counted against the main agent. (A
  sub-agent's own file has no main agent: its agent, the first to speak, is treated as
  the main one, so its text and turns are kept; its calls still carry `agent`.)
- tokens: a response's tokens are input + cache creation + cache read + output, taken
  once per message id. `Session.tokens` sums them; the first tool call of a response
  carries its tokens (`ToolCall.tokens`), the others 0. `Session.cost` is the sum of
  `result` lines' `total_cost_usd` (stream-json) or of `costUSD` (old session files).
  Both are complete only once the events have been read.

A call loopwatch's own hook denied (its tool_result is loopwatch's denial text) never
ran: it is not emitted as a completed call, but as the `Attempt` it was (so a replay's
pre-dispatch guard judges the model's asking again, as the live hook did). Counted in
`StreamParser.denied`; a stream-json run that a hook ended (`terminal_reason: "hook_stopped"`) after loopwatch's
stop is flagged `StreamParser.loopwatch_stopped` (how `loopwatch run` tells a loop stop
from a run that ended by itself). The shapes behind these rules are
`loopwatch._hosts.claude_code`'s.

A call whose result never came (a cut file, a killed run) is emitted at the end with
`result=None`. One file is one session; a second `init` in a stream (runs appended to
one log) counts as a new user message.

Not handled: `--include-partial-messages` deltas (`stream_event` lines; the complete
`assistant` lines that follow them are read), and `--output-format json` (one object:
no tool calls in it).
"""

from __future__ import annotations

import heapq
import os
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Attempt, Event, ModelText, Retry, ToolCall, Turn, UserMessage
from .._hosts import WRITERS  # tools whose success changes a file, and the input field naming it
from .._hosts import claude_code as host
from ._common import iso_seconds, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, blocks_text, head_objects, kind_of, parsed_events, session_name, tokens_of

__all__ = ["NAME", "StreamParser", "read", "sniff"]

NAME = "claude-code"

_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
_PEEK = 50  # lines looked at to recognize the format and find the session id
_RECENT = 256  # message ids whose tokens are remembered (split lines are consecutive)
_UNSET = object()


def is_session_line(obj: dict[str, Any]) -> bool:
    """A line of a `~/.claude/projects` session file."""
    kind = kind_of(obj)
    if kind == "user" or kind == "assistant":
        return isinstance(obj.get("message"), dict) and "uuid" in obj and ("sessionId" in obj or "parentUuid" in obj)
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "file-history-snapshot":
        return "snapshot" in obj and "messageId" in obj
    if kind == "system":
        return "uuid" in obj and "sessionId" in obj
    return False


def is_stream_line(obj: dict[str, Any]) -> bool:
    """A line of `claude -p --output-format stream-json`."""
    kind = kind_of(obj)
    if "session_id" not in obj:
        return False
    if kind == "system":
        return obj.get("subtype") == "init"
    if kind == "assistant" or kind == "user":
        return isinstance(obj.get("message"), dict)
    if kind == "result":
        return "num_turns" in obj or "total_cost_usd" in obj
    return False


def sniff(path: str, head: bytes) -> bool:
    # Cursor's stream-json has lines of this one's shape (`system` init, `assistant`,
    # `user`, `result` with a `session_id`): a head with a line only Cursor writes is its.
    from .cursor import is_stream_line as cursors

    objects = head_objects(head, _PEEK)
    return any(is_session_line(o) or is_stream_line(o) for o in objects) and not any(cursors(o) for o in objects)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a Claude Code session file or stream-json capture.
    Raises ReadError when the file is neither."""
    lines = JsonLines(path, stream)
    ahead = [obj for _, obj in lines.peek(_PEEK)]
    if not any(is_session_line(o) or is_stream_line(o) for o in ahead):
        problem = f" ({lines.skipped[0]})" if lines.skipped and not ahead else ""
        raise ReadError(f"not a Claude Code session or stream-json output{problem}")
    session_id = next(
        (o.get("sessionId") or o.get("session_id") for o in ahead if o.get("sessionId") or o.get("session_id")), None
    )
    session = Session(NAME, str(session_id or session_name(path)), (), skipped=lines.skipped)
    session.meta["variant"] = "stream-json" if any(is_stream_line(o) for o in ahead) else "session"
    parts = (
        next((found for rule in host.HOST.state_folders if (found := rule.parts_of(path))), []) if path != "-" else []
    )
    if parts:
        session.meta["agent_files"] = len(parts)
        session.events = _with_agents(lines, parts, path[: -len(".jsonl")], session)
    else:
        session.events = parsed_events(StreamParser(), lines, session)
    yield session


def _with_agents(lines: JsonLines, parts: list[str], folder: str, session: Session) -> Iterator[Event]:
    """The events of a session file and its agents' files, as one session: their lines
    merged by time (each file's lines in their order), fed to one parser, which gives
    each agent's calls its `agentId` (the session file's own are the main agent's)."""
    parser = StreamParser()
    parser._main = None  # the session file's agent, whichever file speaks first
    sources = [_timed(lines, 0, "")]
    for order, part in enumerate(parts, 1):
        where = os.path.relpath(part, folder).replace(os.sep, "/")
        sources.append(_timed(JsonLines(part), order, f"{where} ", session.skipped))
    for _, _, _, ref, obj in heapq.merge(*sources):
        yield from parser.feed(obj, ref)
    yield from parser.finish()
    session.tokens, session.cost, session.outcome = parser.tokens, parser.cost, parser.outcome
    session.meta.update(parser.meta)


def _timed(
    lines: JsonLines, order: int, prefix: str, skipped: list[str] | None = None
) -> Iterator[tuple[float, int, int, str, dict[str, Any]]]:
    """A file's lines as `(time, order, number, ref, line)`: the time of the line, or of
    the last line before it that had one (times never go back within a file, so the
    merge keeps each file's order); `order` breaks ties, the session file first. An
    agent's file that cannot be read is noted in `skipped` (when given) and ends there."""
    at = float("-inf")
    try:
        for number, obj in lines:
            at = max(at, iso_seconds(obj.get("timestamp")) or at)
            yield at, order, number, f"{prefix}line {number}", obj
    except ReadError as exc:
        if skipped is None:
            raise
        skipped.append(f"{prefix.strip()}: {exc}")
    if skipped is not None and lines.skipped:
        skipped.extend(f"{prefix}{note}" for note in lines.skipped)


class _Call:
    __slots__ = ("agent", "first", "input", "message", "name", "ref")

    def __init__(self, name: str, input: Any, ref: str | None, agent: str | None, message: str, first: bool) -> None:
        self.name, self.input, self.ref, self.agent, self.message, self.first = name, input, ref, agent, message, first


class StreamParser:
    """Claude Code lines in, core events out, one line at a time: the one implementation
    behind `read()`, and what a live supervisor of `claude -p --output-format
    stream-json --verbose` feeds each stdout line to.

        parser = StreamParser()
        for n, line in enumerate(proc.stdout, 1):
            for event in parser.feed(orjson.loads(line), f"line {n}"):
                verdict = monitor.observe(event)   # give each event.agent its own monitor
        for event in parser.finish():
            monitor.observe(event)

    `feed(obj, ref)` takes one parsed line (a dict; anything else is ignored) and
    returns the events it completes, possibly none; `ref` becomes their `source_ref`.
    `finish()` returns what is still open: the last assistant message's `Turn`, and the
    calls that never got a result (`result=None`). With `attempts=True`, each
    `tool_use` also yields an `Attempt` at once, before its result, for a supervisor
    that wants to stop a run before a repeated call executes.

    Running totals: `session_id`, `tokens`, `cost`, `outcome` (a `result` line's
    subtype, e.g. `success`, `error_max_turns`), `meta` (model, cwd, version),
    `denied` (calls loopwatch's hook denied: not emitted), `terminal_reason` (the
    `result` line's), `loopwatch_stopped` (a hook ended the run, and it was
    loopwatch's stop).
    """

    def __init__(self, *, attempts: bool = False) -> None:
        self.attempts = attempts
        self.session_id: str | None = None
        self.tokens: int | None = None
        self.cost: float | None = None
        self.outcome: str | None = None
        self.meta: dict[str, Any] = {}
        self._calls: dict[str, _Call] = {}
        self._message_tokens: OrderedDict[str, int] = OrderedDict()
        self._open: tuple[str, str | None, float | None] | None = None  # main agent's message: id, ref, at
        self._last_called: dict[str | None, str] = {}  # per agent, the message that last asked for a call
        self._threads: dict[str, str] = {}  # sidechain line uuid -> agent name (old single-file sessions)
        self._sidechains = 0
        self._main: Any = _UNSET  # the agent whose text, turns and prompts are reported
        self._inits = 0
        self.denied = 0
        self.terminal_reason: str | None = None
        self.loopwatch_stopped = False
        self._stop_denied = False  # the latest denial was loopwatch's stop
        self._hook_stops: list[str] = []  # loopwatch stopReasons seen in hook_response lines

    # -- public ---------------------------------------------------------------------------

    def feed(self, obj: Any, ref: str | None = None) -> list[Event]:
        if not isinstance(obj, dict):
            return []
        kind = kind_of(obj)
        at = iso_seconds(obj.get("timestamp"))
        agent = self._agent_of(obj)
        if self._main is _UNSET and (kind == "assistant" or kind == "user"):
            self._main = agent  # a sub-agent's own file: its agent is the main one
        primary = agent == self._main
        out: list[Event] = []
        if self._open is not None and primary and self._ends_message(obj, kind):
            out.append(self._close())
        if self.session_id is None:
            found = obj.get("sessionId") or obj.get("session_id")
            if isinstance(found, str):
                self.session_id = found
        if kind == "assistant":
            self._assistant(obj, at, ref, agent, primary, out)
        elif kind == "user":
            self._user(obj, at, ref, agent, primary, out)
        elif kind == "system":
            self._system(obj, at, ref, out)
        elif kind == "result":
            self._result(obj)
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = []
        if self._open is not None:
            out.append(self._close())
        for call_id, call in list(self._calls.items()):
            out.append(self._tool_call(call_id, call, None, False, (), None))
        self._calls.clear()
        return out

    # -- lines ----------------------------------------------------------------------------

    def _assistant(
        self, obj: dict[str, Any], at: float | None, ref: str | None, agent: str | None, primary: bool, out: list[Event]
    ) -> None:
        message = mapping_at(obj, "message")
        message_id = self._message_id(obj)
        tokens = tokens_of(message.get("usage"), *_USAGE)
        if tokens is not None:
            self._count_tokens(message_id, tokens)
        cost = obj.get("costUSD")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost = (self.cost or 0.0) + cost
        if isinstance(message.get("model"), str):
            self.meta.setdefault("model", message["model"])
        if primary:
            self._open = (message_id, ref, at)
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = kind_of(block)
            if kind == "text" and primary:
                text = block.get("text")
                if isinstance(text, str) and text.strip():
                    if obj.get("isApiErrorMessage"):
                        out.append(Retry(at=at, reason=text[:200], source_ref=ref))
                    else:
                        out.append(ModelText(text, at=at, source_ref=ref))
            elif kind == "tool_use":
                self._tool_use(block, message_id, at, ref, agent, out)

    def _tool_use(
        self,
        block: dict[str, Any],
        message_id: str,
        at: float | None,
        ref: str | None,
        agent: str | None,
        out: list[Event],
    ) -> None:
        call_id = block.get("id")
        name = block.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            return
        first = self._last_called.get(agent) != message_id
        self._last_called[agent] = message_id
        self._calls[call_id] = _Call(name, block.get("input"), ref, agent, message_id, first)
        if self.attempts:
            out.append(Attempt(name, block.get("input"), at=at, call_id=call_id, agent=agent, source_ref=ref))

    def _user(
        self, obj: dict[str, Any], at: float | None, ref: str | None, agent: str | None, primary: bool, out: list[Event]
    ) -> None:
        message = mapping_at(obj, "message")
        content = message.get("content")
        said = isinstance(content, str) and bool(content.strip())
        results = []
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if kind_of(block) == "tool_result":
                    results.append(block)
                elif kind_of(block) in ("text", "image", "document"):
                    said = True
        structured = obj.get("toolUseResult") if len(results) == 1 else None
        for block in results:
            use_id = block.get("tool_use_id")
            call = self._calls.pop(use_id, None) if isinstance(use_id, str) else None
            if call is None:
                continue
            text = blocks_text(block.get("content"))
            denial = host.loopwatch_denial(block, text)
            if denial is not None:  # loopwatch refused it: it never ran
                self.denied += 1
                self._stop_denied = denial == "stop"
                if not self.attempts:  # the model asked for it again: a replay's guard judges that
                    out.append(
                        Attempt(
                            call.name,
                            call.input,
                            at=at,
                            call_id=block["tool_use_id"],
                            agent=call.agent,
                            source_ref=call.ref,
                        )
                    )
                continue
            error = host.result_failed(block, text)
            changed = () if error else _changed(call, structured)
            out.append(self._tool_call(block["tool_use_id"], call, text, error, changed, at))
        if primary and host.is_user_prompt(obj, said, bool(results)):
            self._stop_denied = False
            out.append(UserMessage(at=at, source_ref=ref))

    def _system(self, obj: dict[str, Any], at: float | None, ref: str | None, out: list[Event]) -> None:
        subtype = obj.get("subtype")
        if subtype == "init":
            self._inits += 1
            for key in ("model", "cwd", "claude_code_version"):
                if isinstance(obj.get(key), str):
                    self.meta.setdefault(key, obj[key])
            if self._inits > 1:  # another run appended to the same log: a new prompt
                out.append(UserMessage(at=at, source_ref=ref))
        elif subtype == "hook_response":  # with --include-hook-events
            reason = host.hook_stop_reason(obj)
            if reason is not None:
                self._hook_stops.append(reason)
        elif subtype in ("api_error", "api_retry"):
            error = obj.get("error")
            reason = error.get("message") if isinstance(error, dict) else obj.get("content")
            out.append(Retry(at=at, reason=str(reason)[:200] if reason else subtype, source_ref=ref))

    def _result(self, obj: dict[str, Any]) -> None:
        cost = obj.get("total_cost_usd", obj.get("cost_usd"))
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost = (self.cost or 0.0) + cost
        if isinstance(obj.get("subtype"), str):
            self.outcome = obj["subtype"]
        if isinstance(obj.get("terminal_reason"), str):
            self.terminal_reason = obj["terminal_reason"]
        self.loopwatch_stopped = host.stopped_by_loopwatch(obj, self._stop_denied, self._hook_stops)
        if self.tokens is None:  # no per-message usage: take the run's
            self.tokens = tokens_of(obj.get("usage"), *_USAGE)

    # -- helpers ---------------------------------------------------------------------------

    def _agent_of(self, obj: dict[str, Any]) -> str | None:
        agent = host.line_agent(obj)
        if agent is not None or not obj.get("isSidechain"):
            return agent
        # an older session keeps its sidechains inline: follow each thread to its root
        uuid, parent = obj.get("uuid"), obj.get("parentUuid")
        agent = self._threads.get(parent) if isinstance(parent, str) else None
        if agent is None:
            self._sidechains += 1
            agent = f"sidechain-{self._sidechains}"
        if isinstance(uuid, str):
            self._threads[uuid] = agent
        return agent

    def _ends_message(self, obj: dict[str, Any], kind: Any) -> bool:
        # bookkeeping lines (progress, snapshots) may fall between a message's split lines
        if kind == "assistant":
            return self._message_id(obj) != self._open[0]  # type: ignore[index]
        return kind == "user" or kind == "result" or (kind == "system" and obj.get("subtype") == "init")

    @staticmethod
    def _message_id(obj: dict[str, Any]) -> str:
        message = obj.get("message")
        found = message.get("id") if isinstance(message, dict) else None
        return found if isinstance(found, str) else str(obj.get("uuid"))

    def _count_tokens(self, message_id: str, tokens: int) -> None:
        before = self._message_tokens.get(message_id)
        if before is not None and tokens <= before:
            return  # a repeated line of a message already counted
        self.tokens = (self.tokens or 0) + tokens - (before or 0)
        self._message_tokens[message_id] = tokens
        self._message_tokens.move_to_end(message_id)
        while len(self._message_tokens) > _RECENT:
            self._message_tokens.popitem(last=False)

    def _close(self) -> Turn:
        message_id, ref, at = self._open  # type: ignore[misc]
        self._open = None
        return Turn(at=at, tokens=self._message_tokens.get(message_id), source_ref=ref)

    def _tool_call(
        self, call_id: str, call: _Call, result: Any, error: bool, changed: tuple[str, ...], at: float | None
    ) -> ToolCall:
        tokens = self._message_tokens.get(call.message)
        if tokens is not None and not call.first:
            tokens = 0  # the response's tokens ride on its first call only
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
            tokens=tokens,
        )


def _changed(call: _Call, structured: Any) -> tuple[str, ...]:
    field = WRITERS.get(call.name)
    if field is None:
        return ()
    path = structured.get("filePath") if isinstance(structured, dict) else None
    if not isinstance(path, str) and isinstance(call.input, dict):
        path = call.input.get(field)
    return (path,) if isinstance(path, str) and path else ()
