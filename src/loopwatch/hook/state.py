"""The hook's memory between calls: one SQLite database, one row per (session, agent).

Every hook call is a new process, and a parallel batch of tool calls fires hooks
concurrently, so each call runs inside one `BEGIN IMMEDIATE` transaction: load the
session's state, feed the event, save, commit. SQLite serialises the writers (WAL
mode, a busy timeout), so 32 processes on one session each see the state the
previous one saved: nothing is lost or counted twice.

The state is the session's `Monitor`, pickled. A monitor holds digests, names,
counts and times only (its `Step`s keep 8-byte digests and 16-bit word hashes).
Two things are changed on the way out: its lock is dropped (a `threading.Lock`
cannot be pickled; a fresh one is made on load), and the model-facing `message` of
each remembered verdict is removed, because it quotes the call ("you ran
`pytest -x` 4 times"). Loading uses an unpickler that only builds loopwatch
classes and a few containers, so a tampered database cannot run code.

Times stored here are wall-clock seconds (`time.time()`): a monotonic clock is
per-boot and meaningless across processes, and the monitor only needs times that
are consistent between the calls of one session.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import sqlite3
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator

from ..monitor import Monitor
from ..verdict import Verdict

__all__ = ["SessionState", "Store", "dumps", "loads"]

_SCHEMA_VERSION = 1
_SEEN = 512  # tool_use_ids remembered per agent, to count a call once (PostToolUse and PostToolBatch)
_MAX_DECISIONS = 20000


class SessionState:
    """What is kept for one (session, agent): the monitor, the ids of the calls
    already counted, the stop reason once the run was stopped, and counts of the
    decisions taken."""

    def __init__(self, monitor: Monitor, host: str, profile: str, reason: str) -> None:
        self.monitor = monitor
        self.host = host
        self.profile = profile
        self.profile_reason = reason
        self.seen: deque[str] = deque(maxlen=_SEEN)
        self.stopped: str | None = None
        self.counts: dict[str, int] = {}


# -- pickling ---------------------------------------------------------------------------

def _reduce_monitor(monitor: Monitor) -> tuple:
    state = dict(monitor.__dict__)
    state.pop("_lock", None)
    state["_policy"].on_warning = None  # a callback is the caller's, never state
    return (_restore_monitor, (state,))


def _restore_monitor(state: dict) -> Monitor:
    monitor = Monitor.__new__(Monitor)
    monitor.__dict__.update(state)
    monitor._lock = threading.Lock()
    return monitor


_TABLE = copyreg.dispatch_table.copy()
_TABLE[Monitor] = _reduce_monitor
_SAFE = {
    ("collections", "OrderedDict"), ("collections", "deque"), ("collections", "Counter"),
    ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("builtins", "object"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "getattr"),
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "loopwatch" or module.startswith("loopwatch.") or (module, name) in _SAFE:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"state refers to {module}.{name}, which loopwatch never stores")


def dumps(state: SessionState) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.dispatch_table = _TABLE
    pickler.dump(state)
    return buffer.getvalue()


def loads(blob: bytes) -> SessionState:
    state = _Unpickler(io.BytesIO(blob)).load()
    if not isinstance(state, SessionState):
        raise pickle.UnpicklingError("not a loopwatch session state")
    return state


# -- the database -----------------------------------------------------------------------

_CREATE = (
    """CREATE TABLE IF NOT EXISTS sessions (
        session TEXT NOT NULL, agent TEXT NOT NULL, host TEXT NOT NULL, profile TEXT NOT NULL,
        created REAL NOT NULL, updated REAL NOT NULL, actions INTEGER NOT NULL,
        nudges INTEGER NOT NULL, blocks INTEGER NOT NULL, stops INTEGER NOT NULL,
        state BLOB NOT NULL, PRIMARY KEY (session, agent)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated)",
    """CREATE TABLE IF NOT EXISTS decisions (
        session TEXT NOT NULL, agent TEXT NOT NULL, at REAL NOT NULL, event TEXT NOT NULL,
        action TEXT NOT NULL, signal TEXT, tool TEXT, description TEXT)""",
    "CREATE INDEX IF NOT EXISTS decisions_session ON decisions (session, agent, at)",
)


class Store:
    """The state database. `busy_timeout` is in seconds; pruning keeps sessions
    updated within `keep_days` and at most `keep_sessions` of them."""

    def __init__(self, folder: str, busy_timeout: float = 10.0, keep_days: float = 7.0, keep_sessions: int = 500) -> None:
        self.path = os.path.join(folder, "state.db")
        self.keep_days = keep_days
        self.keep_sessions = keep_sessions
        os.makedirs(folder, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None)
        self.db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if self.db.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:
            self._create()
        self.db.execute("PRAGMA synchronous = NORMAL")

    def _create(self) -> None:
        self.db.execute("PRAGMA journal_mode = WAL")  # persistent: set once, when the file is made
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if self.db.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:
                for statement in _CREATE:
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    def update(self, session: str, agent: str, make: Callable[[], SessionState],
               feed: Callable[[SessionState], list[tuple[str, Verdict, str | None]]],
               on_bad_state: Callable[[Exception], None] | None = None) -> list[tuple[str, Verdict, str | None]]:
        """Load (or `make`) the state of (session, agent), `feed` it, save it: one
        transaction. `feed` returns the decisions to log as (event, verdict, tool).
        A state that cannot be loaded is replaced by a fresh one (`on_bad_state` is
        told why)."""
        db = self.db
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT state, created FROM sessions WHERE session = ? AND agent = ?", (session, agent)).fetchone()
            state = None
            if row is not None:
                try:
                    state = loads(row[0])
                except Exception as exc:  # a state from another version, or damaged
                    if on_bad_state is not None:
                        on_bad_state(exc)
            if state is None:
                state = make()
                if row is None:
                    self._prune(now)
            created = row[1] if row is not None else now
            decisions = feed(state)
            for event, verdict, tool in decisions:
                key = verdict.action.value
                state.counts[key] = state.counts.get(key, 0) + 1
                db.execute(
                    "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (session, agent, now, event, key, verdict.signal, tool, verdict.description),
                )
            counts = state.counts
            db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session, agent, state.host, state.profile, created, now, state.monitor.actions,
                 counts.get("nudge", 0), counts.get("block", 0), counts.get("stop", 0), dumps(state)),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return decisions

    def _prune(self, now: float) -> None:
        """Called when a session starts: drop idle sessions and old decisions."""
        cutoff = now - self.keep_days * 86400
        db = self.db
        db.execute("DELETE FROM sessions WHERE updated < ?", (cutoff,))
        db.execute(
            "DELETE FROM sessions WHERE (session, agent) IN "
            "(SELECT session, agent FROM sessions ORDER BY updated DESC LIMIT -1 OFFSET ?)",
            (max(self.keep_sessions - 1, 0),),  # room for the session being made
        )
        db.execute("DELETE FROM decisions WHERE at < ?", (cutoff,))
        db.execute(
            "DELETE FROM decisions WHERE rowid <= (SELECT max(rowid) FROM decisions) - ?", (_MAX_DECISIONS,)
        )

    # -- reading, for `loopwatch status` --------------------------------------------------

    def sessions(self, limit: int = 20, session: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT session, agent, host, profile, created, updated, actions, nudges, blocks, stops FROM sessions"
        args: tuple = ()
        if session:
            query += " WHERE session LIKE ? ESCAPE '\\'"
            args = (_like_prefix(session),)
        query += " ORDER BY updated DESC LIMIT ?"
        keys = ("session", "agent", "host", "profile", "created", "updated", "actions", "nudges", "blocks", "stops")
        return [dict(zip(keys, row)) for row in self.db.execute(query, args + (limit,))]

    def state(self, session: str, agent: str) -> SessionState | None:
        row = self.db.execute("SELECT state FROM sessions WHERE session = ? AND agent = ?", (session, agent)).fetchone()
        return loads(row[0]) if row else None

    def decisions(self, session: str, agent: str, limit: int = 20) -> Iterator[dict[str, Any]]:
        keys = ("at", "event", "action", "signal", "tool", "description")
        rows = self.db.execute(
            "SELECT at, event, action, signal, tool, description FROM decisions "
            "WHERE session = ? AND agent = ? ORDER BY at DESC, rowid DESC LIMIT ?",
            (session, agent, limit),
        ).fetchall()
        for row in reversed(rows):
            yield dict(zip(keys, row))


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
