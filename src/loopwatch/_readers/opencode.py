"""opencode's sessions: its SQLite database, `opencode export` JSON, and the JSON lines of
`opencode run --format json`.

Three shapes, one model: a session's messages, each a list of parts (`text`, `tool`,
`step-start`, `step-finish`, `reasoning`, ...), as opencode 1.17.19 and 1.18.33 write them
(`loopwatch._hosts.opencode` has the facts):

- the database, `$XDG_DATA_HOME/opencode/opencode.db`: tables `session` (`id`, `parent_id`),
  `message` and `part`, each row's `data` a JSON object. One `Session` per top-level
  session; the sessions under it (sub-agents: `parent_id`) are read with it, their calls
  carrying the sub-agent's session id as `agent`. Opened read-only: `mode=ro` when its
  `-wal` and `-shm` files are beside it (opencode may be writing it: a reader takes no lock
  a writer waits on), else as an immutable file (a copy: nothing is created beside it, and
  what a copied write-ahead log held is not read). A database given as a stream (standard
  input, a Ray worker's bytes) is read in memory. Its `account` and `credential` tables are
  never read;
- `opencode export ID`: `{"info": {...}, "messages": [{"info": {...}, "parts": [...]}]}`,
  one session (a sub-agent is exported by its own id);
- `opencode run --format json`: one line per finished part, `{"type": "step_start" |
  "text" | "tool_use" | "step_finish" | "reasoning" | "error", "timestamp", "sessionID",
  "part"}`; only the main session's parts are printed (a sub-agent's calls are not).

Events: a `tool` part is a `ToolCall` (`input` the part's `state.input`, `result` its
`output` (less a nudge loopwatch's plugin appended to it: what the call gave) or `error`, `error` when its status is "error" or a shell command's
`metadata.exit` is not 0: opencode reports a failing command as completed); a part that is
loopwatch's own refusal (its error is loopwatch's text) never ran, and is the `Attempt` it
was. `changed`: the file a successful `write` or `edit` names, the files an `apply_patch`
names. Assistant `text` parts are `ModelText`, a user message's text a `UserMessage`, a
`step-finish` a `Turn` with its tokens and cost; a sub-agent yields only its calls (text,
turns and prompts have no agent in the core). Times are the parts' own (milliseconds), and
never go back. `source_ref`: `part <id>` (database), `messages[i].parts[j]` (export),
`line N` (run output).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import orjson

from .._core.events import Attempt, ModelText, ToolCall, Turn, UserMessage
from .._hosts.opencode import loopwatch_refusal, normalised_output, without_nudge
from ._common import load_json, mapping_at
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, keys_at, kind_of, session_name

__all__ = ["NAME", "SQLITE_MAGIC", "is_export", "read", "sniff"]

NAME = "opencode"

#: The first bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"
#: The line types of `opencode run --format json`.
STREAM_LINES = frozenset({"step_start", "step_finish", "text", "tool_use", "reasoning", "error"})
#: The tables (and their columns) a database must have to be opencode's.
_TABLES = {
    "session": {"id", "parent_id", "time_created"},
    "message": {"id", "session_id", "time_created", "data"},
    "part": {"id", "message_id", "session_id", "time_created", "data"},
}
_MAX_STREAM_DB = 1 << 31  # a database read from a stream is held in memory: at most 2 GiB
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Add|Update) File|Move to): (\S(?:.*\S)?)\s*$", re.MULTILINE)


# -- detection ------------------------------------------------------------------------------


def sniff(path: str, head: bytes) -> bool:
    if head.startswith(SQLITE_MAGIC):
        return _is_database(path, head)
    text = head.lstrip()
    if text[:1] != b"{":
        return False
    objs = head_objects(text, 20)
    if any(_stream_line(o) for o in objs):
        return True
    return is_export(text)


def is_export(text: bytes) -> bool:
    """Is this head (from its first `{`) an `opencode export`: `info` (a session: its `id`,
    `projectID`) and `messages`? (The chat reader, which takes any object with a messages
    list, asks too.)"""
    return {"info", "messages"} <= set(keys_at(text, 1)) and {"id", "projectID"} <= set(keys_at(text, 2))


def _stream_line(obj: dict[str, Any]) -> bool:
    if kind_of(obj) not in STREAM_LINES or not isinstance(obj.get("sessionID"), str):
        return False
    return "timestamp" in obj and ("part" in obj or "error" in obj)


def _is_database(path: str, head: bytes) -> bool:
    """A SQLite database with opencode's tables: asked of the file itself when it is one,
    else (a stream) read from the schema in the head."""
    if path != "-" and os.path.isfile(path):
        try:
            con = _connect(path)
        except ReadError:
            return False
        try:
            return _has_tables(con)
        finally:
            con.close()
    return all(f"CREATE TABLE `{name}`".encode() in head for name in _TABLES)


def _has_tables(con: Any) -> bool:
    import sqlite3

    try:
        for table, columns in _TABLES.items():
            found = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
            if not columns <= found:
                return False
    except sqlite3.Error:
        return False
    return True


# -- reading --------------------------------------------------------------------------------


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    head = _head(path, stream)
    if head.startswith(SQLITE_MAGIC):
        yield from _read_database(path, stream)
        return
    if stream is not None:  # the structure of the head: a first line of any length shows its keys
        from . import sniff_head

        head, stream = sniff_head(stream)
    objs = head_objects(head.lstrip(), 1)
    if objs and _stream_line(objs[0]):
        yield _read_stream(path, JsonLines(path, stream))
        return
    data = load_json(path, stream)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ReadError("not an opencode session: no messages[] list")
    yield _read_export(path, data)


_HEAD = 64 * 1024


def _head(path: str, stream: BinaryIO | None) -> bytes:
    """The file's first bytes, without consuming the stream."""
    if stream is not None:
        peek = getattr(stream, "peek", None)
        return peek(_HEAD)[:_HEAD] if peek is not None else b""
    from .._files import open_file

    try:
        with open_file(path) as fh:
            return fh.read(_HEAD)
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from exc


class _Parts:
    """Turns the parts of one session (and its sub-agents) into events, in order: what
    the three shapes share. `tokens` and `cost` are running totals."""

    def __init__(self, steady: bool = True) -> None:
        self.steady = steady  # times never go back (else the caller orders the events)
        self.tokens = 0
        self.cost = 0.0
        self._at = 0.0
        self._prompted: set[str] = set()  # user messages already told

    def at(self, *millis: Any) -> float | None:
        for value in millis:
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                if not self.steady:
                    return value / 1000.0
                self._at = max(self._at, value / 1000.0)
                return self._at
        return self._at or None

    def events(
        self, part: dict[str, Any], role: str | None, message: str, agent: str, ref: str, when: Any = None
    ) -> Iterator[Any]:
        kind = part.get("type")
        times = mapping_at(part, "time")
        if kind == "tool":
            state = mapping_at(part, "state")
            timing = mapping_at(state, "time")
            yield _call(part, state, agent or None, self.at(timing.get("end"), timing.get("start"), when), ref)
            return
        if kind == "step-finish":
            tokens = _tokens(part.get("tokens"))
            cost = part.get("cost")
            cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
            self.tokens += tokens or 0
            self.cost += cost or 0.0
            if not agent:
                yield Turn(at=self.at(when), tokens=tokens, cost=cost, source_ref=ref)
            return
        if kind != "text" or agent or part.get("synthetic") is True:
            return
        text = part.get("text")
        if not isinstance(text, str):
            return
        if role == "user":
            if message not in self._prompted:
                self._prompted.add(message)
                yield UserMessage(at=self.at(when), source_ref=ref)
            return
        yield ModelText(text, at=self.at(times.get("end"), times.get("start"), when), source_ref=ref)


def _call(part: dict[str, Any], state: dict[str, Any], agent: str | None, at: float | None, ref: str) -> Any:
    name = str(part.get("tool") or "tool")
    value = state.get("input")
    call_id = part.get("callID") if isinstance(part.get("callID"), str) else None
    status = state.get("status")
    if status == "error":
        error = state.get("error")
        if loopwatch_refusal(error):  # refused by loopwatch's guard: it never ran
            return Attempt(name, value, at=at, call_id=call_id, agent=agent, source_ref=ref)
        return ToolCall(
            name, value, normalised_output(error), error=True, at=at, call_id=call_id, agent=agent, source_ref=ref
        )
    if status != "completed":  # pending or running: the run was cut short
        return ToolCall(name, value, None, at=at, call_id=call_id, agent=agent, source_ref=ref)
    code = mapping_at(state, "metadata").get("exit")
    failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
    return ToolCall(
        name,
        value,
        normalised_output(without_nudge(state.get("output"))),
        error=failed,
        changed=() if failed else _changed(name, value),
        at=at,
        call_id=call_id,
        agent=agent,
        source_ref=ref,
    )


def _changed(name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, dict):
        return ()
    if name in ("write", "edit"):
        path = value.get("filePath")
        return (path,) if isinstance(path, str) and path else ()
    if name == "apply_patch":
        patch = value.get("patchText")
        return tuple(_PATCH_FILE.findall(patch)) if isinstance(patch, str) else ()
    return ()


def _tokens(value: Any) -> int | None:
    if not isinstance(value, dict):
        return None
    total = value.get("total")
    if isinstance(total, int) and not isinstance(total, bool):
        return total
    cache = mapping_at(value, "cache")
    counts = [value.get("input"), value.get("output"), value.get("reasoning"), cache.get("read"), cache.get("write")]
    numbers = [n for n in counts if isinstance(n, int) and not isinstance(n, bool)]
    return sum(numbers) if numbers else None


# -- run --format json ---------------------------------------------------------------------


def _read_stream(path: str, lines: JsonLines) -> Session:
    first = lines.peek(1)[0][1]
    session = Session(format=NAME, session=str(first.get("sessionID") or session_name(path)), events=())
    session.skipped = lines.skipped
    session.events = _stream_events(lines, session)
    return session


def _stream_events(lines: JsonLines, session: Session) -> Iterator[Any]:
    parts = _Parts()
    for number, obj in lines:
        part = obj.get("part")
        if not isinstance(part, dict):
            continue
        sid = obj.get("sessionID")
        agent = sid if isinstance(sid, str) and sid != session.session else ""
        yield from parts.events(part, "assistant", "", agent, f"line {number}", obj.get("timestamp"))
    session.tokens = parts.tokens or None
    session.cost = parts.cost or None


# -- opencode export ----------------------------------------------------------------------


def _read_export(path: str, data: dict[str, Any]) -> Session:
    info = mapping_at(data, "info")
    sid = info.get("id")
    session = Session(format=NAME, session=str(sid) if isinstance(sid, str) and sid else session_name(path), events=())
    session.events = _export_events(data["messages"], session)
    return session


def _export_events(messages: list[Any], session: Session) -> Iterator[Any]:
    parts = _Parts()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            session.skipped.append(f"messages[{i}]: not an object")
            continue
        info = mapping_at(message, "info")
        role = info.get("role") if isinstance(info.get("role"), str) else None
        mid = str(info.get("id") or i)
        when = mapping_at(info, "time").get("created")
        listed = message.get("parts")
        for j, part in enumerate(listed if isinstance(listed, list) else []):
            if isinstance(part, dict):
                yield from parts.events(part, role, mid, "", f"messages[{i}].parts[{j}]", when)
    session.tokens = parts.tokens or None
    session.cost = parts.cost or None


# -- the database -------------------------------------------------------------------------


def _connect(path: str) -> Any:
    """`path` opened read-only (see the module docstring); ReadError when it is not a
    database SQLite can open."""
    import sqlite3
    from pathlib import Path

    uri = Path(os.path.abspath(path)).as_uri()
    tries = ["mode=ro&immutable=1"]
    if os.path.exists(path + "-wal") and os.path.exists(path + "-shm"):
        tries.insert(0, "mode=ro")
    problem: Exception | None = None
    for query in tries:
        try:
            con = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=5.0, check_same_thread=False)
            _harden(con)
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return con
        except sqlite3.Error as exc:
            problem = exc
    raise ReadError(f"not a database SQLite can read: {problem}")


def _harden(con: Any) -> None:
    """Nothing a database holds runs anything (`trusted_schema`), and nothing is written."""
    con.execute("PRAGMA trusted_schema = OFF")
    con.execute("PRAGMA query_only = ON")


def _in_memory(stream: BinaryIO) -> Any:
    import sqlite3

    data = stream.read(_MAX_STREAM_DB + 1)
    if len(data) > _MAX_STREAM_DB:
        raise ReadError("a database over 2 GiB cannot be read from a stream: name the file")
    con = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        con.deserialize(data)
        _harden(con)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        con.close()
        raise ReadError(f"not a database SQLite can read: {exc}") from None
    return con


def _read_database(path: str, stream: BinaryIO | None) -> Iterator[Session]:
    import sqlite3

    con = _connect(path) if path != "-" and os.path.isfile(path) else _in_memory(stream or _no_stream())
    try:
        if not _has_tables(con):
            raise ReadError("not an opencode database: no session, message and part tables")
        try:
            rows = con.execute("SELECT id, parent_id FROM session ORDER BY time_created, id").fetchall()
        except sqlite3.Error as exc:
            raise ReadError(f"cannot read its sessions: {exc}") from None
        children: dict[str, list[str]] = {}
        known = {sid for sid, _ in rows}
        roots = []
        for sid, parent in rows:
            if isinstance(parent, str) and parent in known and parent != sid:
                children.setdefault(parent, []).append(sid)
            else:
                roots.append(sid)
        for root in roots:
            group = _descendants(root, children)
            try:
                messages, parts = _group_rows(con, group)
            except sqlite3.Error as exc:
                raise ReadError(f"cannot read session {root}: {exc}") from None
            session = Session(format=NAME, session=str(root), events=())
            session.events = _database_events(root, messages, parts, session)
            yield session
    finally:
        con.close()


def _no_stream() -> BinaryIO:
    raise ReadError("a database is read from its file, or from a stream")


def _descendants(root: str, children: dict[str, list[str]]) -> list[str]:
    out, todo, seen = [], [root], set()
    while todo:
        sid = todo.pop(0)
        if sid in seen:
            continue
        seen.add(sid)
        out.append(sid)
        todo.extend(children.get(sid, ()))
    return out


def _group_rows(con: Any, group: list[str]) -> tuple[dict[str, tuple[str, bytes]], list[tuple[Any, ...]]]:
    """The messages (id -> (session, data)) and parts (in id order) of a group of sessions,
    fetched whole before its events are handed out: the connection is not kept."""
    messages: dict[str, tuple[str, bytes]] = {}
    parts: list[tuple[Any, ...]] = []
    for start in range(0, len(group), 500):
        chunk = group[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for mid, sid, data in con.execute(
            f"SELECT id, session_id, data FROM message WHERE session_id IN ({marks})", chunk
        ):
            messages[str(mid)] = (str(sid), data)
        parts.extend(
            con.execute(
                f"SELECT id, message_id, session_id, time_created, data FROM part WHERE session_id IN ({marks})", chunk
            )
        )
    parts.sort(key=lambda row: str(row[0]))
    return messages, parts


def _database_events(
    root: str, messages: dict[str, tuple[str, bytes]], rows: Iterable[tuple[Any, ...]], session: Session
) -> Iterator[Any]:
    # A task's part comes before its sub-agent's (parts are numbered as they begin) but ends
    # after them: the group's events are put in the order they ended.
    parts = _Parts(steady=False)
    roles: dict[str, str | None] = {}
    events: list[tuple[float, int, Any]] = []
    for pid, mid, sid, created, data in rows:
        ref = f"part {pid}"
        part = _json(data)
        if part is None:
            session.skipped.append(f"{ref}: not a JSON object")
            continue
        mid = str(mid)
        if mid not in roles:
            info = _json(messages[mid][1]) if mid in messages else None
            role = info.get("role") if info is not None else None
            roles[mid] = role if isinstance(role, str) else None
        agent = "" if sid == root else str(sid)
        for event in parts.events(part, roles[mid], mid, agent, ref, created):
            events.append((event.at or 0.0, len(events), event))
    events.sort(key=lambda item: (item[0], item[1]))
    for _, _, event in events:
        yield event
    session.tokens = parts.tokens or None
    session.cost = parts.cost or None


def _json(data: Any) -> dict[str, Any] | None:
    try:
        value = orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None
