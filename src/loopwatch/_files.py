"""Opening the files a user or a payload names, to read them: transcripts, labels,
outcomes, a transcript followed during a run.

Only regular files, and never a blocking open: opening a FIFO for reading waits until a
writer comes (`scan`, `evaluate` and `run --transcript` hung for ever on one, past
SIGTERM), and a device or a socket holds no file. Everything that reads a named file
opens it here; the error is an `OSError` whose `strerror` is one line for a person.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

__all__ = ["NOT_REGULAR", "NotRegularFile", "open_file", "open_regular", "read_file", "read_small"]

NOT_REGULAR = "not a regular file (a FIFO, socket, device or folder)"


class NotRegularFile(OSError):
    """The path names something other than a regular file."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EINVAL, NOT_REGULAR, path)


def open_regular(path: str) -> int:
    """A descriptor of the regular file at `path`, open for reading (blocking reads,
    closed on exec). Raises OSError, `NotRegularFile` for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: str, buffering: int = -1) -> BinaryIO:
    """The regular file at `path` as a binary stream (see `open_regular`)."""
    fd = open_regular(path)
    try:
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_file(path: str) -> bytes:
    """The whole regular file at `path` (see `open_regular`)."""
    with open_file(path) as fh:
        return fh.read()


def read_small(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The regular file at `path` when it holds at most `limit` bytes, else None (absent,
    unreadable, not a regular file, or larger: a file a project wrote is read bounded).
    Never raises OSError."""
    try:
        fd = open_regular(os.fspath(path))
    except OSError:
        return None
    try:
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None
