"""The child and its process group: start it, signal it, end it, leave nothing behind.

The child runs in a session (and so a process group) of its own, so one `killpg`
reaches everything it started, grandchildren included, and a Ctrl-C typed at the
terminal reaches loopwatch only: loopwatch forwards it. A new session rather than
just a new group because a background group that reads the terminal is stopped
(SIGTTIN); in its own session the child reads the inherited stdin freely.

Deliberately not handled: a descendant that starts a session of its own (a daemon)
leaves the group and is out of reach of `killpg`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pty import Terminal

__all__ = ["ChildGroup"]


class ChildGroup:
    """One child process and its group.

    `grace` (seconds) is how long `end` waits after SIGTERM before SIGKILL.
    Times are the caller's monotonic seconds; nothing here reads a clock.
    """

    def __init__(
        self,
        argv: Sequence[str],
        grace: float = 5.0,
        env: Mapping[str, str] | None = None,
        terminal: Terminal | None = None,
    ) -> None:
        # Raises FileNotFoundError / PermissionError when the command cannot start.
        if terminal is None:
            self.process = subprocess.Popen(
                list(argv),
                env=None if env is None else dict(env),
                stdin=None,  # inherited: the agent reads our stdin directly
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        else:  # --pty: all three on the terminal, which becomes its controlling one
            # preexec_fn is unsafe once threads run; none does yet (the pty's stdin
            # thread starts after), and only it can take a controlling terminal.
            self.process = subprocess.Popen(
                list(argv),
                env=None if env is None else dict(env),
                stdin=terminal.slave,
                stdout=terminal.slave,
                stderr=terminal.slave,
                bufsize=0,
                start_new_session=True,
                preexec_fn=terminal.in_child,  # noqa: PLW1509
            )
        self.pid = self.process.pid
        self.grace = grace
        self.returncode: int | None = None
        self.killed_at: float | None = None  # when SIGKILL went to the group
        self._ladder: list[int] | None = None  # signals still to send, once ending
        self._next_at: float | None = None  # when to send the next one
        self.signals_sent: list[str] = []

    @property
    def stdout(self) -> int:
        return self.process.stdout.fileno()  # type: ignore[union-attr]

    @property
    def stderr(self) -> int:
        return self.process.stderr.fileno()  # type: ignore[union-attr]

    def poll(self) -> int | None:
        """Reap the child if it has exited; its status as Popen gives it (-N: signal N)."""
        if self.returncode is None:
            self.returncode = self.process.poll()
        return self.returncode

    def send(self, sig: int) -> bool:
        """Send `sig` to the whole group; False when no process is left in it."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            return False  # only zombies we may not signal are left
        self.signals_sent.append(signal.Signals(sig).name)
        return True

    def group_alive(self) -> bool:
        """Is any process of the group still running? Zombies do not count: where
        nothing reaps orphans (a container whose PID 1 does not), a killed grandchild
        stays a zombie, and waiting for it would be waiting forever."""
        members = live_members(self.pid)
        if members is not None:
            return bool(members)
        try:
            os.killpg(self.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    @property
    def ending(self) -> bool:
        return self._ladder is not None

    def end(self, now: float, first: int = signal.SIGTERM) -> None:
        """Begin ending the group: `first` now (SIGTERM, or a forwarded SIGINT), then
        SIGTERM and SIGKILL, each after `grace` seconds, from `tick`. Once only."""
        if self._ladder is None:
            self._ladder = list(dict.fromkeys((first, signal.SIGTERM, signal.SIGKILL)))
            self._step(now)

    def force(self, now: float) -> None:
        """SIGKILL the group now (a second Ctrl-C)."""
        self._ladder = [signal.SIGKILL]
        self._step(now)

    def tick(self, now: float) -> None:
        """Send the next signal of the ladder once its time has come."""
        if self._next_at is not None and now >= self._next_at:
            self._step(now)

    def deadline(self) -> float | None:
        """When `tick` next has something to do, or None."""
        return self._next_at

    def _step(self, now: float) -> None:
        assert self._ladder
        sig = self._ladder.pop(0)
        self._next_at = now + self.grace if self._ladder else None
        if sig == signal.SIGKILL:
            self.killed_at = now
        if not self.send(sig):  # nobody left: nothing more to send
            self._ladder.clear()
            self._next_at = None

    def close_pipe(self, fd: int) -> None:
        """Close our end of the child's stdout or stderr pipe: its next write there
        gets SIGPIPE (or EPIPE), as when a reader goes away."""
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed and pipe.fileno() == fd:
                pipe.close()

    def close(self) -> None:
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


def live_members(pgid: int) -> list[int] | None:
    """Pids of the group's processes that are not zombies, from /proc; None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # gone meanwhile
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry))
    return members
