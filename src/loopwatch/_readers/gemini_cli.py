"""Gemini CLI transcripts: session files and `gemini -p -o stream-json`.

Three shapes, told apart by their first record:

- a session file, `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl` (and a
  sub-agent's, `chats/<session id>/<agent id>.jsonl`): JSON Lines whose first record
  is the head `{sessionId, projectHash, startTime, lastUpdated, kind}`, then message
  records `{id, timestamp, type, content, toolCalls?, tokens?}`, `{"$set": {...}}` and
  `{"$rewindTo": id}` records. A message is written again when its calls finish: the
  last record of an id wins (in the place the id first took); `$set.messages` replaces
  the whole list (Gemini CLI writes one when a run it ended on a loop finishes);
  `$rewindTo` drops that message and every one after it. So the file is read to its
  end before its events are handed out (messages are held, their results trimmed);
- the same conversation as one JSON object with the messages under `messages`
  (`session-*.json`, what Gemini CLI wrote before its JSON Lines files);
- the output of `gemini -p ... -o stream-json`: `init {session_id}`, `message {role,
  content, delta}`, `tool_use {tool_name, tool_id, parameters}`, `tool_result {tool_id,
  status, output, error?}`, `error`, `result {stats}`.

Events:
- `ToolCall` per call: its name and `args`, the text the model read
  (`functionResponse.response.output`, or `.error`), `error` when the call's `status`
  is "error" or a shell command's output states a non-zero `Exit Code` (Gemini CLI
  itself calls such a call a success), at the call's own time; the shapes and the
  rules are `loopwatch._hosts.gemini_cli`'s (the hook reads the same), the changing
  `Process Group PGID` and hook contexts taken out. A successful `write_file` or
  `replace` changed its `file_path`. In stream-json the output is what the person saw
  (`returnDisplay`), without the exit code: a failing command reads as a success there,
  only the session file says otherwise.
- A call loopwatch's hook refused (its result is "Tool execution blocked: " or "Agent
  execution stopped by hook: " with loopwatch's words) never ran: it is the `Attempt`
  it was, as in the Claude Code reader.
- `ModelText` for the model's text (not its thoughts), `Turn` after each model message
  (with its `tokens.total`), `UserMessage` for what the person wrote: not Gemini CLI's
  own `<session_context>` or its "System: ..." loop feedback, not function responses.
- A sub-agent's own file is a session of its own (its head's `sessionId` is the agent's
  id; `Session.meta["kind"]` is "subagent"): the parent's file holds only the
  `invoke_agent` call, so a folder scan counts every call once.

Times are the records' ISO timestamps; stream-json's too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Attempt, Event, ModelText, ToolCall, Turn, UserMessage
from .._files import open_file
from .._hosts import WRITERS
from .._hosts.base import trim
from .._hosts.gemini_cli import call_result, content_text, loopwatch_denial
from ._common import iso_seconds, load_json
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, keys_at, kind_of, session_name

__all__ = ["NAME", "read", "sniff"]

NAME = "gemini-cli"

_HEAD_KEYS = frozenset({"sessionId", "projectHash", "startTime"})
_HEAD = 64 * 1024
_STREAM_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


def sniff(path: str, head: bytes) -> bool:
    objects = head_objects(head, 2)
    if objects:
        first = objects[0]
        if _HEAD_KEYS <= first.keys():
            return True  # a session file's head (JSON Lines), or the JSON form whole in the head
        if first.get("type") == "init" and isinstance(first.get("session_id"), str) and "subtype" not in first:
            return all(kind_of(o) in _STREAM_TYPES for o in objects)
    text = head.lstrip()
    if not text.startswith(b"{") or len(objects) > 1:
        return False
    top = keys_at(text, 1)  # one JSON document larger than the head
    return _HEAD_KEYS <= set(top) and "messages" in top


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """The session in a Gemini CLI session file or stream-json output. Raises ReadError
    when the file is neither."""
    head = _head(path, stream)
    opening = head_objects(head, 1)
    if not opening or "messages" in opening[0]:
        # One JSON document (indented, or larger than the head): the whole form.
        data = load_json(path, stream)
        if not (isinstance(data, dict) and _HEAD_KEYS <= data.keys() and isinstance(data.get("messages"), list)):
            raise ReadError("not a Gemini CLI session: no sessionId, projectHash, startTime and messages")
        yield _session(path, data, [(f"messages[{i}]", m) for i, m in enumerate(data["messages"])], [])
        return
    skipped: list[str] = []
    records = JsonLines(path, stream, skipped)
    ahead = records.peek(1)
    first = ahead[0][1] if ahead else {}
    if kind_of(first) == "init":
        session = Session(NAME, str(first.get("session_id") or session_name(path)), (), skipped=skipped)
        session.events = _stream_events(records, session)
        yield session
        return
    if not _HEAD_KEYS <= first.keys():
        raise ReadError("not a Gemini CLI session: its first record has no sessionId, projectHash, startTime")
    yield _session(path, first, _applied(records, skipped), skipped)


def _head(path: str, stream: BinaryIO | None) -> bytes:
    """The file's first 64 KiB, read without consuming the stream."""
    if stream is not None:
        peek = getattr(stream, "peek", None)
        return peek(_HEAD)[:_HEAD] if peek is not None else b""
    try:
        with open_file(path) as fh:
            return fh.read(_HEAD)
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from exc


def _applied(records: JsonLines, skipped: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The messages a session file ends with, each with the line of its last record."""
    messages: dict[str, tuple[str, dict[str, Any]]] = {}
    for number, obj in records:
        if number == 1:
            continue  # the head
        ref = f"line {number}"
        update = obj.get("$set")
        if isinstance(update, dict):
            if isinstance(update.get("messages"), list):
                messages = {}
                for i, message in enumerate(update["messages"]):
                    if isinstance(message, dict):
                        messages[str(message.get("id", f"{ref}#{i}"))] = (ref, _slim(message))
            continue
        if "$rewindTo" in obj:
            target = str(obj["$rewindTo"])
            if target in messages:
                keys = list(messages)
                for key in keys[keys.index(target) :]:
                    del messages[key]
            continue
        if not isinstance(obj.get("id"), str) or kind_of(obj) is None:
            skipped.append(f"{ref}: not a message record")
            continue
        messages[obj["id"]] = (ref, _slim(obj))
    return list(messages.values())


def _slim(message: dict[str, Any]) -> dict[str, Any]:
    """A message without what the events do not need (file bodies, display copies)."""
    calls = message.get("toolCalls")
    if not isinstance(calls, list):
        return message
    kept = []
    for call in calls:
        if isinstance(call, dict):
            kept.append({k: call.get(k) for k in ("id", "name", "args", "result", "status", "timestamp")})
    return {**message, "toolCalls": kept}


def _session(path: str, head: dict[str, Any], messages: list[tuple[str, Any]], skipped: list[str]) -> Session:
    name = head.get("sessionId")
    session = Session(NAME, str(name) if isinstance(name, str) and name else session_name(path), (), skipped=skipped)
    if isinstance(head.get("kind"), str):
        session.meta["kind"] = head["kind"]
    session.events = _events(messages, session)
    return session


def _events(messages: list[tuple[str, Any]], session: Session) -> Iterator[Event]:
    for ref, message in messages:
        if not isinstance(message, dict):
            session.skipped.append(f"{ref}: not a message object")
            continue
        at = iso_seconds(message.get("timestamp"))
        kind = kind_of(message)
        content = message.get("content")
        if kind == "user":
            if _person_said(content):
                yield UserMessage(at=at, source_ref=ref)
        elif kind == "gemini":
            tokens = _tokens(message.get("tokens"))
            if tokens is not None:
                session.tokens = (session.tokens or 0) + tokens
            text = _model_text(content)
            if text.strip():
                yield ModelText(text, at=at, source_ref=ref)
            charged = False
            for call in message.get("toolCalls") or ():
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    continue
                event = _call(call, ref, at, None if charged else tokens)
                charged = charged or isinstance(event, ToolCall)
                if event is not None:
                    yield event
            yield Turn(at=at, tokens=tokens, source_ref=ref)


def _person_said(content: Any) -> bool:
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    else:
        return False
    said = [t for t in texts if t.strip()]
    return any(not t.lstrip().startswith(("<session_context>", "System: ")) for t in said)


def _model_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought")
        )
    return ""


def _tokens(tokens: Any) -> int | None:
    total = tokens.get("total") if isinstance(tokens, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None


def _response(call: dict[str, Any]) -> Any:
    """The `response` of a call's first functionResponse ({"output": ...} or {"error": ...})."""
    result = call.get("result")
    parts = result if isinstance(result, list) else [result]
    for part in parts:
        answer = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(answer, dict):
            return answer.get("response")
    return None


def _call(call: dict[str, Any], ref: str, at: float | None, tokens: int | None) -> Event | None:
    name: str = call["name"]
    args = trim(call.get("args"))
    when = iso_seconds(call.get("timestamp")) or at
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    response = _response(call)
    said = response.get("error") if isinstance(response, dict) else None
    if loopwatch_denial(said) is not None:
        return Attempt(name, args, at=when, call_id=call_id, source_ref=ref)
    if response is None and call.get("status") not in ("success", "error"):
        return None  # never ran (cancelled before it started)
    text, failed, _ = call_result(name, response)
    failed = failed or call.get("status") == "error"
    return ToolCall(
        name,
        args,
        trim(text),
        error=failed,
        changed=_changed(name, args, failed),
        at=when,
        call_id=call_id,
        source_ref=ref,
        tokens=tokens,
    )


def _changed(name: str, args: Any, failed: bool) -> tuple[str, ...]:
    field = WRITERS.get(name)
    if failed or field is None or not isinstance(args, dict) or not isinstance(args.get(field), str):
        return ()
    return (args[field],)


# -- stream-json ------------------------------------------------------------------------------


def _stream_events(records: JsonLines, session: Session) -> Iterator[Event]:
    calls: dict[str, tuple[str, Any, str]] = {}  # tool_id -> (name, parameters, ref)
    phase = ""  # "model": the model is answering; "results": its calls came back
    for number, obj in records:
        ref = f"line {number}"
        kind = kind_of(obj)
        at = iso_seconds(obj.get("timestamp"))
        if (
            kind in ("message", "tool_use")
            and phase == "results"
            or (kind == "message" and obj.get("role") == "user" and phase)
        ):
            yield Turn(at=at, source_ref=ref)  # the model's turn ended with its calls' results
            phase = ""
        if kind == "message":
            text = content_text(obj.get("content"))
            if obj.get("role") == "user":
                if text.strip():
                    yield UserMessage(at=at, source_ref=ref)
            elif obj.get("role") == "assistant" and text:
                phase = "model"
                yield ModelText(text, at=at, chunk=obj.get("delta") is True, source_ref=ref)
        elif kind == "tool_use":
            phase = "model"
            tool_id, name = obj.get("tool_id"), obj.get("tool_name")
            if isinstance(tool_id, str) and isinstance(name, str):
                calls[tool_id] = (name, trim(obj.get("parameters")), ref)
        elif kind == "tool_result":
            tool_id = obj.get("tool_id")
            found = calls.pop(tool_id, None) if isinstance(tool_id, str) else None
            if found is None:
                continue
            phase = "results"
            yield _stream_call(found, tool_id, obj, at)
        elif kind == "result":
            stats = obj.get("stats")
            total = stats.get("total_tokens") if isinstance(stats, dict) else None
            if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
                session.tokens = (session.tokens or 0) + total
    for tool_id, (name, args, ref) in calls.items():
        yield ToolCall(name, args, None, call_id=tool_id, source_ref=ref)
    if phase:
        yield Turn(source_ref="end")


def _stream_call(found: tuple[str, Any, str], tool_id: Any, obj: dict[str, Any], at: float | None) -> Event:
    name, args, ref = found
    output = obj.get("output")
    if loopwatch_denial(output) is not None:
        return Attempt(name, args, at=at, call_id=tool_id, source_ref=ref)
    failed = obj.get("status") == "error" or bool(obj.get("error"))
    text, shell_failed, _ = call_result(name, {"output": output})
    return ToolCall(
        name,
        args,
        trim(text),
        error=failed or shell_failed,
        changed=_changed(name, args, failed),
        at=at,
        call_id=tool_id,
        source_ref=ref,
    )
