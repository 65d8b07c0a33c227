"""Running `loopwatch` on a pseudo-terminal of a given width, as a person at a terminal
runs it: what the tests of output on a terminal (tables, colours) read."""

from __future__ import annotations

import fcntl
import os
import re
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

#: An ANSI escape sequence (CSI or OSC) or any other escape byte.
ESCAPE = "\x1b"
_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\))")


def shown(text: str) -> str:
    """What a terminal shows of `text`: its escape sequences (styles, links) taken out."""
    return _SEQUENCE.sub("", text)


def in_terminal(
    *args: str, columns: int = 120, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> tuple[int, str]:
    """Run `loopwatch ARGS` with stdin, stdout and stderr on a terminal `columns` wide;
    its exit status and everything the terminal was sent (lines end in CR LF there)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    base = {k: v for k, v in os.environ.items() if k not in ("LOOPWATCH_MODE", "NO_COLOR", "FORCE_COLOR")}
    full = {**base, "PYTHONPATH": str(SRC), "TERM": "xterm-256color", "COLUMNS": str(columns), **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwatch", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=full,
        cwd=cwd,
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        status = proc.wait(timeout=300)
    return status, b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
