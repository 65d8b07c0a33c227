"""The child's group never outlives loopwatch: a watchdog process ends it if we die.

SIGKILL (or a crash) gives loopwatch no chance to end the group it started, and the
group is in a session of its own, so nothing else would: the agent ran on, unsupervised.
So a small process is forked once the child has started. It holds the read end of a
pipe whose only write end is ours, ignores the signals a terminal or a `kill` of our
group would send, and waits. A normal end writes a byte (`done`): it leaves. End of
file without that byte means loopwatch died: it SIGKILLs the group.
"""

from __future__ import annotations

import os
import signal

__all__ = ["Watchdog"]

_IGNORED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
    signal.SIGPIPE,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)


class Watchdog:
    """Forked at once; `done()` at a normal end (it is reaped there)."""

    def __init__(self, pgid: int) -> None:
        read_end, self._write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forked process; tested from outside
            _watch(read_end, self._write_end, pgid)
        self.pid = pid
        os.close(read_end)
        os.set_inheritable(self._write_end, False)

    def done(self) -> None:
        """The run ended normally: let the watchdog go, and reap it."""
        if self._write_end < 0:
            return
        try:
            os.write(self._write_end, b"x")
        except OSError:
            pass  # it is gone already
        os.close(self._write_end)
        self._write_end = -1
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _watch(read_end: int, write_end: int, pgid: int) -> None:  # pragma: no cover - forked
    try:
        os.setsid()  # out of our group: a Ctrl-C or `kill -- -PGID` of ours is not for it
        for sig in _IGNORED:
            signal.signal(sig, signal.SIG_IGN)
        signal.set_wakeup_fd(-1)
        os.close(write_end)
        # Hold nothing of ours open (a pipe our reader waits to see closed, the child's pipes).
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        keep = sorted({0, 1, 2, read_end})
        start = 3
        for fd in keep[3:] + [os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536]:
            if fd > start:
                os.closerange(start, fd)
            start = fd + 1
        while True:
            try:
                said = os.read(read_end, 1)
                break
            except InterruptedError:
                continue
        if not said:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
    finally:
        os._exit(0)
