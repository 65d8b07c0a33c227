"""The hook's memory between calls: one SQLite database, one row per (session, agent).

Every hook call is a new process, and a parallel batch of tool calls fires hooks
concurrently. Each call takes an exclusive `flock` on `state.lock`, then runs one
`BEGIN IMMEDIATE` transaction: load the session's state, feed the event, save,
commit. The lock file, not SQLite's busy handler, queues the writers: the kernel
wakes a waiter when the lock is let go, where SQLite's handler sleeps and retries
and, with 128 writers on two busy cores, starved some past a 10 s timeout
(1-12 calls lost in 5 of 9 trials; with the lock none of 512 is lost: `python
bench/hook_stress.py --calls 32,128,512`). A waiter gives up only when nobody
has committed anything for `busy_timeout` seconds while the holder is stopped or
not a loopwatch call (a holder that is stuck, not a queue that is long or a machine
that is starved), or after `_WAIT_CAP` x `busy_timeout` in all.

The state is the session's guard session (`core.session.GuardSession`: its `Monitor`,
the stop, the ids and digests of the calls refused and counted) and the hook's own
counts, stored as plain JSON by `loopwatch._hook.codec` (never pickled: nothing read
back can name code).
A monitor holds digests, names, counts and times only (its `Step`s keep 8-byte
digests and 16-bit word hashes); the model-facing `message` of each remembered
verdict is dropped by the monitor itself, because it quotes the call.

A row that cannot be loaded (another version's, damaged, tampered) or that fails
when fed is replaced by a fresh state for that session, with one line in
`hook.log`: the guard is never off for good. A database that is not one is moved
aside under the lock, only if it is still the very file found broken (same
inode), to a name no other process can pick (`state.db.broken-<time>-<pid>-<hex>`);
the call is then recorded in a fresh database. A dropped table is made again.

Files are private: the folder 0700, files 0600, whatever the umask. What one shell
line can do to the folder is repaired, with a line in hook.log (`secure_folder`,
`claim`): a lock, database or folder replaced by a folder, a FIFO, a symlink or a
hard link is moved aside; a folder made writable by others is made private again
and what others planted there moved aside. A folder owned by someone else is
refused (`UnsafeStateError`).

Times stored here are wall-clock seconds (`time.time()`): a monotonic clock is
per-boot and meaningless across processes, and the monitor only needs times that
are consistent between the calls of one session.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from typing import Any

from .._core.monitor import Monitor
from .._core.verdict import Verdict
from . import codec
from .session import SessionState

__all__ = ["SessionState", "Store", "UnsafeStateError", "claim", "dumps", "loads", "secure_folder"]

_SCHEMA_VERSION = 3  # 3: decisions keep the finding's message kind and arguments; 2: states are codec JSON (1 was pickle; such rows start afresh)
_MAX_DECISIONS = 20000
#: The longest a call waits for the lock, in busy timeouts, however busy the queue;
#: the hook's own deadline (`Store.deadline`, `[hook] answer_within`) comes first, so
#: a call that gives up says so in hook.log before the host kills it. 512 parallel
#: calls on two cores kept busy by other work took up to ~200 s each (BENCHMARKS.md,
#: "The hook: start-up, per call, parallel calls"), most of it starting Python: past
#: the host's timeout.
_WAIT_CAP = 30
_PROGRESS_EVERY = 0.25  # seconds between looks at whether the lock holder is getting anywhere


def dumps(state: SessionState) -> bytes:
    return codec.dumps(state)


def loads(blob: bytes) -> SessionState:
    state = codec.loads(blob)
    if not isinstance(state, SessionState) or not isinstance(getattr(state, "monitor", None), Monitor):
        raise codec.StateError("not a loopwatch session state")
    return state


class UnsafeStateError(OSError):
    """The state folder is not private to this user: loopwatch will not use it."""


def secure_folder(folder: str) -> list[str]:
    """Make the state folder (0700) if missing, and repair one the agent could have
    sabotaged with one shell line (the guard must not stay off for good): a file or
    a dangling link where the folder should be is moved aside; a folder others may
    write to is made private, and whatever someone else planted in it is moved aside.
    A folder another user owns is refused (`UnsafeStateError`): it is not ours to
    repair. Returns what was repaired, one line each, for hook.log."""
    notes: list[str] = []
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        info = None
        if os.path.lexists(folder):  # a dangling symlink
            notes.append(_aside(folder, "a dangling symlink"))
    if info is not None and not stat.S_ISDIR(info.st_mode):
        notes.append(_aside(folder, "not a folder"))
        info = None
    if info is None:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    if info.st_uid != os.getuid():
        raise UnsafeStateError(f"{folder} belongs to another user (uid {info.st_uid}); loopwatch will not use it")
    if info.st_mode & 0o022:
        os.chmod(folder, 0o700)
        notes.append(f"{folder} could be written by others (mode {stat.S_IMODE(info.st_mode):o}); made private")
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_uid != os.getuid():
                    notes.append(_aside(path, "planted by another user"))
            except FileNotFoundError:
                pass
    elif info.st_mode & 0o077:
        os.chmod(folder, 0o700)  # readable by others (an older loopwatch, a umask): make it private
    return notes


def claim(path: str) -> str | None:
    """Make sure `path`, a file loopwatch keeps in the state folder, is a plain file of
    this user's or absent: a symlink, a folder, a FIFO, a device, a file of another
    user or one with a second hard link is moved aside. Returns the line saying so."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_nlink == 1:
        return None
    if stat.S_ISLNK(info.st_mode):
        what = "a symlink (loopwatch will not follow it)"
    elif stat.S_ISDIR(info.st_mode):
        what = "a folder"
    elif not stat.S_ISREG(info.st_mode):
        what = "not a regular file (a FIFO, socket or device)"
    elif info.st_uid != os.getuid():
        what = f"a file of another user (uid {info.st_uid})"
    else:
        what = "a hard link to another file"
    return _aside(path, what, (info.st_dev, info.st_ino))


def _aside(path: str, what: str, inode: tuple[int, int] | None = None) -> str:
    """Rename `path` (whatever it is: rename follows no link) to a name no other
    process picks, if it is still the thing found (`inode`)."""
    import secrets

    name = os.path.basename(path)
    aside = f"{path}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        if inode is not None:
            info = os.lstat(path)
            if (info.st_dev, info.st_ino) != inode:
                return f"{name} was {what}; another call already moved it aside"
        os.rename(path, aside)
    except FileNotFoundError:
        return f"{name} was {what}; another call already moved it aside"
    return f"{name} was {what}; moved aside to {os.path.basename(aside)}"


def private_file(path: str, append: bool = True) -> int:
    """Open (creating 0600) a file in the state folder, for appending unless told
    otherwise, never through a symlink planted there."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | (os.O_APPEND if append else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


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
        action TEXT NOT NULL, signal TEXT, tool TEXT, description TEXT, message TEXT, args TEXT)""",
    "CREATE INDEX IF NOT EXISTS decisions_session ON decisions (session, agent, at)",
)


#: Columns a decision row gained after version 2 (see `_create`).
_DECISION_COLUMNS = ("message", "args")


class LockTimeout(sqlite3.OperationalError):
    """Nobody let go of the state lock for `busy_timeout` seconds."""


class Store:
    """The state database. `busy_timeout` is in seconds; pruning keeps sessions
    updated within `keep_days` and at most `keep_sessions` of them. `write=False`
    opens an existing database read-only (for `loopwatch status`) and takes no lock.
    `log` is told, in one line, what recovery did."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        busy_timeout: float = 10.0,
        keep_days: float = 7.0,
        keep_sessions: int = 500,
        *,
        write: bool = True,
        log: Callable[[str], None] | None = None,
        origin: str = "",
        deadline: float | None = None,
    ) -> None:
        self.folder = os.fspath(folder)
        self.path = os.path.join(self.folder, "state.db")
        self.busy_timeout = busy_timeout
        self.keep_days = keep_days
        self.keep_sessions = keep_sessions
        self.log = log or (lambda line: None)
        self.origin = origin
        self.deadline = deadline  # time.monotonic() by which a call gives up waiting for the lock
        self._lock_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        if write:
            for note in secure_folder(self.folder):
                self.log(note)
            self.db = self._connect()
        else:
            from urllib.parse import quote

            self.db = sqlite3.connect(
                f"file:{quote(self.path)}?mode=ro", uri=True, timeout=busy_timeout, isolation_level=None
            )

    def _connect(self) -> sqlite3.Connection:
        for suffix in ("", "-wal", "-shm"):
            note = claim(self.path + suffix)
            if note is not None:
                self.log(note)
        fd = private_file(self.path)  # made 0600 before SQLite sees it; its -wal and -shm copy the mode
        try:
            # The file opened, not the path: another call's recovery may move it aside
            # in between (then `_ready` sees the path changed and connects again). A
            # stat of the path there raised, and the call failed open: 1 of 64 lost.
            info = os.fstat(fd)
        finally:
            os.close(fd)
        self._inode = (info.st_dev, info.st_ino)
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        return db

    def _create(self) -> None:
        """Make the tables (again: a dropped one is recreated). Under the lock."""
        db = self.db
        db.execute("PRAGMA journal_mode = WAL")  # persistent: set once, when the file is made
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _CREATE:
                db.execute(statement)
            # A version 2 table lacks the message columns: added, its rows kept (None).
            columns = {row[1] for row in db.execute("PRAGMA table_info(decisions)")}
            for column in _DECISION_COLUMNS:
                if column not in columns:
                    db.execute(f"ALTER TABLE decisions ADD COLUMN {column} TEXT")
            db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()
        self._unlock()

    # -- the lock -------------------------------------------------------------------------

    def _lock(self) -> None:
        import fcntl

        lock = os.path.join(self.folder, "state.lock")
        note = claim(lock)
        if note is not None:
            self.log(note)
        fd = private_file(lock, append=False)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._wait(fd)
            os.pwrite(fd, b"%12d\n" % os.getpid(), 0)  # who holds it, for the waiters' progress check
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd

    def _wait(self, fd: int) -> None:
        """Block on the lock; give up after `busy_timeout` without progress (see
        `_progress`), or at the cap."""
        import fcntl

        began = last_move = time.monotonic()
        stamp = self._progress(fd)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            now = time.monotonic()
            seen = self._progress(fd)
            if seen != stamp:
                stamp, last_move = seen, now
            if self.deadline is not None and now >= self.deadline:
                raise LockTimeout(
                    f"database is locked: no answer possible in time (waited {now - began:.1f}s for state.lock, "
                    "which another process holds)"
                )
            if now - last_move >= self.busy_timeout or now - began >= _WAIT_CAP * self.busy_timeout:
                raise LockTimeout(
                    f"database is locked: no progress for {now - last_move:.1f}s "
                    f"(waited {now - began:.1f}s for state.lock)"
                )
            wait = min(_PROGRESS_EVERY, self.busy_timeout)
            if self.deadline is not None:
                wait = max(min(wait, self.deadline - now), 0.001)
            _block(fd, wait)

    def _progress(self, fd: int) -> tuple[Any, ...]:
        """Changes while the queue moves: a commit (the database and its WAL), a new
        holder, or (Linux) all the time while the holder is a live process that is not
        stopped, so a holder slowed by a starved machine is told from one that is
        stopped (Ctrl-Z on its agent) or unknown (not a loopwatch call)."""
        out: list[Any] = []
        for suffix in ("-wal", ""):
            try:
                info = os.stat(self.path + suffix)
                out.append((info.st_ino, info.st_size, info.st_mtime_ns))
            except OSError:
                out.append(None)
        try:
            holder = int(os.pread(fd, 13, 0) or b"0")
            out.append(holder)
            with open(f"/proc/{holder}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if fields[0] not in (b"T", b"t", b"Z"):
                # A loopwatch call that is alive and not stopped is getting somewhere,
                # however slowly a starved machine lets it: its CPU time is not a good
                # enough sign (512 calls on two busy cores lost 126-246 calls to "no
                # progress" with it). Only the cap bounds the wait for such a holder.
                out.append(time.monotonic())
        except (OSError, ValueError, IndexError):
            pass
        return tuple(out)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing lets go of the flock
            self._lock_fd = None

    # -- one call -------------------------------------------------------------------------

    def update(
        self,
        session: str,
        agent: str,
        make: Callable[[], SessionState],
        feed: Callable[[SessionState], list[tuple[str, Verdict, str | None]]],
        on_bad_state: Callable[[Exception], None] | None = None,
    ) -> list[tuple[str, Verdict, str | None]]:
        """Load (or `make`) the state of (session, agent), `feed` it, save it: one
        transaction, under the lock. `feed` returns the decisions to log as (event,
        verdict, tool). A state that cannot be loaded, or that fails when fed, is
        replaced by a fresh one (`on_bad_state` is told why)."""
        self._lock()
        try:
            for attempt in range(3):
                try:
                    self._ready()
                    return self._update(session, agent, make, feed, on_bad_state)
                except sqlite3.DatabaseError as exc:
                    if attempt == 2 or not self._repair(exc):
                        raise
            raise AssertionError("unreachable")
        finally:
            self._unlock()

    def _ready(self) -> None:
        """Under the lock: the connection is to the file now at `path` (another call
        may have moved a broken one aside), and the tables exist."""
        try:
            info = os.stat(self.path)
            current: tuple[int, int] | None = (info.st_dev, info.st_ino)
        except FileNotFoundError:
            current = None
        if current != self._inode:
            self.db.close()
            self.db = self._connect()
        # No fsync: each call is the last connection to close, so each would sync a
        # checkpoint while holding the lock, and a holder blocked on a busy disk made
        # waiters give up (126 of 512 calls lost, "no progress"). A crash of the OS
        # may then damage the file: it is moved aside and sessions start afresh.
        self.db.execute("PRAGMA synchronous = OFF")
        if self.db.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:
            self._create()

    def _repair(self, exc: sqlite3.DatabaseError) -> bool:
        """Under the lock: fix what can be fixed and say whether to try again."""
        text = str(exc)
        if "no such table" in text:
            self.log(f"state database lacked a table ({text[:60]}); made it again")
            self._create()
            return True
        if "not a database" in text or "malformed" in text:
            self._move_aside(text)
            return True
        return False  # locked, read-only, disk full...: nothing to repair here

    def _move_aside(self, why: str) -> None:
        import secrets

        self.db.close()
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            info = None
        if info is not None and (info.st_dev, info.st_ino) == self._inode:  # still the file found broken
            aside = f"{self.path}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{secrets.token_hex(4)}"
            os.rename(self.path, aside)
            for suffix in ("-wal", "-shm"):
                try:
                    os.rename(self.path + suffix, aside + suffix)
                except FileNotFoundError:
                    pass
            self.log(f"state database unreadable ({why[:60]}); moved aside to {os.path.basename(aside)}")
        self.db = self._connect()

    def _update(
        self,
        session: str,
        agent: str,
        make: Callable[[], SessionState],
        feed: Callable[[SessionState], list[tuple[str, Verdict, str | None]]],
        on_bad_state: Callable[[Exception], None] | None,
    ) -> list[tuple[str, Verdict, str | None]]:
        db = self.db
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT state, created FROM sessions WHERE session = ? AND agent = ?", (session, agent)
            ).fetchone()
            state = None
            decisions = None
            if row is not None:
                try:
                    state = loads(row[0])
                    decisions = feed(state)
                except Exception as exc:  # noqa: BLE001 -- another version's state, damaged, or tampered with
                    if on_bad_state is not None:
                        on_bad_state(exc)
                    state = None
            if state is None:
                state = make()
                if self.origin:
                    state.origin = self.origin
                if row is None:
                    self._prune(now)
                decisions = feed(state)
            assert decisions is not None
            created = row[1] if row is not None else now
            for event, verdict, tool in decisions:
                key = verdict.action.value
                state.counts[key] = state.counts.get(key, 0) + 1
                message = verdict.finding.message if verdict.finding is not None else None
                db.execute(
                    "INSERT INTO decisions (session, agent, at, event, action, signal, tool, description, message, args)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session,
                        agent,
                        now,
                        event,
                        key,
                        verdict.signal,
                        tool,
                        verdict.description,
                        message.kind if message is not None else None,
                        json.dumps(message.args, sort_keys=True) if message is not None else None,
                    ),
                )
            counts = state.counts
            db.execute(
                "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    agent,
                    state.host,
                    state.profile,
                    created,
                    now,
                    state.monitor.actions,
                    counts.get("nudge", 0),
                    counts.get("block", 0),
                    counts.get("stop", 0),
                    dumps(state),
                ),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
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
        db.execute("DELETE FROM decisions WHERE rowid <= (SELECT max(rowid) FROM decisions) - ?", (_MAX_DECISIONS,))

    # -- reading, for `loopwatch status` --------------------------------------------------

    def sessions(self, limit: int = 20, session: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT session, agent, host, profile, created, updated, actions, nudges, blocks, stops FROM sessions"
        args: tuple[str | int, ...] = ()
        if session:
            query += " WHERE session LIKE ? ESCAPE '\\'"
            args = (_like_prefix(session),)
        query += " ORDER BY updated DESC LIMIT ?"
        keys = ("session", "agent", "host", "profile", "created", "updated", "actions", "nudges", "blocks", "stops")
        return [dict(zip(keys, row)) for row in self.db.execute(query, args + (limit,))]

    def stopped(self, session: str, agent: str) -> str | None:
        """Why (session, agent) is stopped now, if it is: read only, without the lock (a
        reader sees the last committed state). A session that never stopped is told by
        its count alone, its state not decoded; one that cannot be read is not stopped."""
        try:
            row = self.db.execute(
                "SELECT stops FROM sessions WHERE session = ? AND agent = ?", (session, agent)
            ).fetchone()
            if row is None or not row[0]:
                return None
            state = self.state(session, agent)
        except (sqlite3.DatabaseError, ValueError, TypeError, KeyError):
            return None
        return state.stopped if state is not None else None

    def state(self, session: str, agent: str) -> SessionState | None:
        row = self.db.execute("SELECT state FROM sessions WHERE session = ? AND agent = ?", (session, agent)).fetchone()
        return loads(row[0]) if row else None

    def decisions(self, session: str, agent: str, limit: int = 20) -> Iterator[dict[str, Any]]:
        """The session's last `limit` decisions, oldest first: what was done, by which
        signal, on which tool, and the finding's message (`message`, its kind, and
        `args`; None in rows an older version wrote, or for the hook's own stops)."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(decisions)")}
        keys: tuple[str, ...] = ("at", "event", "action", "signal", "tool", "description")
        keys += tuple(c for c in _DECISION_COLUMNS if c in columns)  # a read-only look at an older database
        rows = self.db.execute(
            f"SELECT {', '.join(keys)} FROM decisions "
            "WHERE session = ? AND agent = ? ORDER BY at DESC, rowid DESC LIMIT ?",
            (session, agent, limit),
        ).fetchall()
        for row in reversed(rows):
            item = dict(zip(keys, row))
            item["args"] = json.loads(item["args"]) if item.get("args") else None
            item.setdefault("message", None)
            yield item


def _block(fd: int, seconds: float) -> None:
    """Wait up to `seconds` for the lock in the kernel's queue (woken the moment it
    is let go), then return either way. SIGALRM interrupts the blocking flock; a
    thread other than the main one, where signals cannot be used, sleeps instead."""
    import fcntl
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        time.sleep(min(seconds, 0.01))
        return

    def _timeout(signum: int, frame: Any) -> None:
        raise _Interrupted

    previous = signal.signal(signal.SIGALRM, _timeout)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Interrupted:
        pass  # not ours yet: the caller looks at the progress and tries again
    finally:
        signal.signal(signal.SIGALRM, previous)


class _Interrupted(Exception):
    pass


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
