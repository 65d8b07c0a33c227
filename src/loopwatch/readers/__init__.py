"""Transcript readers, one module per format, and format detection.

`detect(path, head)` names the format of a file; `read(path, format=None)` yields its
sessions. Reader modules are imported lazily, by name, so reading one format never
pays for the others.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import BinaryIO, Iterator

from .base import ReadError, Session

__all__ = ["FORMATS", "ReadError", "Session", "detect", "read", "reader"]

#: format name -> module, in the order formats are sniffed (most specific first).
FORMATS: dict[str, str] = {
    "asciicast": "loopwatch.readers.asciicast",
    "swe-agent": "loopwatch.readers.swe_agent",
    "mini-swe-agent": "loopwatch.readers.mini_swe_agent",
    "atif": "loopwatch.readers.atif",
    "tb-console": "loopwatch.readers.tb_console",
    "claude-code": "loopwatch.readers.claude_code",
    "codex": "loopwatch.readers.codex",
    "openhands": "loopwatch.readers.openhands",
    "chat": "loopwatch.readers.chat",
    "events": "loopwatch.readers.events",
}

HEAD_SIZE = 64 * 1024


def reader(name: str) -> ModuleType:
    try:
        module = FORMATS[name]
    except KeyError:
        raise ReadError(f"unknown format {name!r} (known: {', '.join(FORMATS)})") from None
    return importlib.import_module(module)


def detect(path: str, head: bytes) -> str | None:
    """The name of the first format whose reader recognizes the file, or None."""
    for name in FORMATS:
        try:
            module = reader(name)
        except ImportError:
            continue  # a reader not written yet
        if module.sniff(path, head):
            return name
    return None


def read(path: str, format: str | None = None, stream: BinaryIO | None = None) -> Iterator[Session]:
    """Sessions in a file. Raises ReadError when the format is unknown or the file is
    not readable as it."""
    if format is None:
        if stream is not None:
            head = stream.peek(HEAD_SIZE)[:HEAD_SIZE] if hasattr(stream, "peek") else b""
        else:
            try:
                with open(path, "rb") as fh:
                    head = fh.read(HEAD_SIZE)
            except OSError as exc:
                raise ReadError(f"cannot open: {exc.strerror or exc}") from exc
        if not head.strip():
            raise ReadError("empty file")
        if b"\x00" in head:
            raise ReadError("binary data, not a transcript")
        format = detect(path, head)
        if format is None:
            raise ReadError("unknown format (use --format to name it)")
    return reader(format).read(path, stream)
