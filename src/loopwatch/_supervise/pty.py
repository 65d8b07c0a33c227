"""`run --pty`: the child on a pseudo-terminal, so an interactive agent CLI behaves
as it does in a terminal (isatty is true, colours, its full-screen interface).

The pty is the child's controlling terminal (it is the leader of a session of its
own, as without --pty), so keys typed reach it as typed: Ctrl-C becomes a SIGINT
from the child's terminal, as it would in a terminal of its own. Its window size is
copied from ours (stdout, stdin or stderr: the first that is a terminal; else
$COLUMNS x $LINES, else 80x24) and follows ours on SIGWINCH.

Our stdin is forwarded to the pty by a thread (a write into the pty blocks while the
child does not read, and the supervisor's loop must never block); when stdin is a
terminal it is put in raw mode for the run and restored by `close()`, which the
supervisor calls on every way out. When stdin is not a terminal and ends, the child
gets an end of file (the EOF character, while its terminal is in canonical mode), as
`script` does. Everything the child writes comes back on one stream, `stdout`: a
terminal has only one.

What it deliberately does not do: job control (Ctrl-Z reaches the child, which a
terminal would stop; there is no shell here to resume it), or echo and line editing
of its own (the child's terminal does those).
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import termios
import threading
import tty
from typing import Any

__all__ = ["Terminal"]

_DEFAULT_SIZE = (24, 80)  # rows, columns: what a terminal without a size is taken to be
_READ = 64 * 1024


class Terminal:
    """One pseudo-terminal for one child. `master` is read by the pump; `slave` is
    the child's stdin, stdout and stderr. Use: `Terminal()`, start the child with
    `slave` and `in_child` (see `group.ChildGroup`), `started()`, ..., `close()`."""

    def __init__(self, stdin: int = 0, stdout: int = 1, stderr: int = 2) -> None:
        self.stdin = stdin
        self.master, self.slave = os.openpty()
        self._size_fd = next((fd for fd in (stdout, stdin, stderr) if os.isatty(fd)), None)
        self.copy_size()
        self._saved: list[Any] | None = None  # our stdin's terminal modes, while raw
        self._winch: Any = None
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def raw(self) -> bool:
        """Is our terminal in raw mode (so our own lines must end in CR LF)?"""
        return self._saved is not None

    @staticmethod
    def in_child() -> None:
        """Run in the child between fork and exec, after `setsid`: make its stdin (the
        pty) its controlling terminal."""
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    def started(self) -> None:
        """The child runs: let go of our copy of its side, follow our window size,
        take the keyboard, forward stdin."""
        os.close(self.slave)
        self.slave = -1
        if self._size_fd is not None and threading.current_thread() is threading.main_thread():
            self._winch = signal.signal(signal.SIGWINCH, lambda *_: self.copy_size())
        if os.isatty(self.stdin):
            self._saved = termios.tcgetattr(self.stdin)
            tty.setraw(self.stdin, termios.TCSANOW)
        self._thread = threading.Thread(target=self._forward, name="loopwatch-stdin", daemon=True)
        self._thread.start()

    def copy_size(self) -> None:
        """Give the pty our window size (the kernel tells the child with SIGWINCH)."""
        packed = None
        if self._size_fd is not None:
            try:
                packed = fcntl.ioctl(self._size_fd, termios.TIOCGWINSZ, b"\0" * 8)
            except OSError:
                packed = None
        if packed is None or struct.unpack("HHHH", packed)[:2] == (0, 0):
            rows, cols = (_env_size("LINES", _DEFAULT_SIZE[0]), _env_size("COLUMNS", _DEFAULT_SIZE[1]))
            packed = struct.pack("HHHH", rows, cols, 0, 0)
        try:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, packed)
        except OSError:
            pass  # closed meanwhile

    def close(self) -> None:
        """Give the terminal back as it was; stop forwarding; close the pty. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._saved is not None:
            try:
                termios.tcsetattr(self.stdin, termios.TCSADRAIN, self._saved)
            except termios.error:
                pass
            self._saved = None
        if self._winch is not None:
            signal.signal(signal.SIGWINCH, self._winch)
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(1.0)
        for fd in (self.master, self.slave, self._stop_r, self._stop_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass

    # -- the stdin thread -----------------------------------------------------------------

    def _forward(self) -> None:
        stdin, master = self.stdin, self.master
        while True:
            try:
                ready, _, _ = select.select([stdin, self._stop_r], [], [])
            except (OSError, ValueError):
                return
            if self._stop_r in ready:
                return
            try:
                data = os.read(stdin, _READ)
            except OSError:
                data = b""
            if not data:
                self._end_of_input()
                return
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(master, view) :]
            except OSError:  # the child's side is gone
                return

    def _end_of_input(self) -> None:
        """Our stdin ended: tell the child, if its terminal reads lines (in raw mode
        the EOF character would be a keystroke, not an end)."""
        try:
            modes = termios.tcgetattr(self.master)
            if modes[3] & termios.ICANON:
                eof = modes[6][termios.VEOF]
                os.write(self.master, eof if isinstance(eof, bytes) else bytes([eof]))
        except (OSError, termios.error):
            pass


def _env_size(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() and 0 < int(value) < 10000 else default
