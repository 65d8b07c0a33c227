"""Transcript readers, one module per format, and format detection.

`detect(path, head)` names the format of a file from its head (`sniff_head`: the
structure of its first 64 KiB, a first record of any length whole); `read(path,
format=None)` yields its sessions. Reader modules are imported lazily, by name, so
reading one format never pays for the others.
"""

from __future__ import annotations

import importlib
import io
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import BinaryIO

from .._files import NOT_REGULAR, NotRegularFile, open_file
from .base import ReadError, Session
from .jsonio import LINE_CAP, structure_head

__all__ = [
    "FORMATS",
    "ReadError",
    "Session",
    "detect",
    "open_stdin",
    "open_transcript",
    "read",
    "reader",
    "register",
    "sniff_head",
]

#: format name -> module, in the order formats are sniffed. loopwatch's own events come
#: first: their first line is an object whose `type` is an event type, which no other
#: format writes, and a session's texts may quote any other format's markers.
FORMATS: dict[str, str] = {
    "events": "loopwatch._readers.events",
    "asciicast": "loopwatch._readers.asciicast",
    "swe-agent": "loopwatch._readers.swe_agent",
    "mini-swe-agent": "loopwatch._readers.mini_swe_agent",
    "atif": "loopwatch._readers.atif",
    "tb-console": "loopwatch._readers.tb_console",
    "qwen-code": "loopwatch._readers.qwen_code",
    # Before Claude Code's: Cursor's stream-json opens with a `system` init line that
    # Claude Code's stream-json reader would take for its own (Cursor's has no `tools`).
    "cursor": "loopwatch._readers.cursor",
    "claude-code": "loopwatch._readers.claude_code",
    "codex": "loopwatch._readers.codex",
    "copilot": "loopwatch._readers.copilot",
    "gemini-cli": "loopwatch._readers.gemini_cli",
    "opencode": "loopwatch._readers.opencode",
    "verl": "loopwatch._readers.verl",
    "skyrl": "loopwatch._readers.skyrl",
    "rllm": "loopwatch._readers.rllm",
    "openhands": "loopwatch._readers.openhands",
    "cline": "loopwatch._readers.cline",
    "chat": "loopwatch._readers.chat",
}

HEAD_SIZE = 64 * 1024
#: The first bytes of a SQLite database: the one binary file a reader reads (opencode's sessions).
SQLITE_MAGIC = b"SQLite format 3\x00"


def register(name: str, module: str, *, first: bool = False) -> None:
    """Add a reader of your own: `module` (a dotted name, imported when first needed)
    exposes `NAME`, `sniff(path, head)` and `read(path, stream=None)` (see `base`).
    It is sniffed after the built-in formats, or before them with `first=True` (a
    format the built-in ones would take for theirs). A name is registered once."""
    if name in FORMATS:
        raise ValueError(f"a reader named {name!r} is already registered ({FORMATS[name]})")
    if first:
        FORMATS.update({name: module, **{k: v for k, v in FORMATS.items()}})
        items = [(name, module)] + [(k, v) for k, v in FORMATS.items() if k != name]
        FORMATS.clear()
        FORMATS.update(items)
    else:
        FORMATS[name] = module


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
    not readable as it.

    Every reader gets the file through here, opened once (`open_transcript`: never a
    blocking open of a FIFO, a UTF-8 byte-order mark skipped), as `stream`."""
    if stream is None:
        stream = open_transcript(path)
    else:
        _skip_bom(stream)
    if format is None:
        first = stream.peek(HEAD_SIZE)[:HEAD_SIZE] if hasattr(stream, "peek") else b""
        if not first.strip():
            raise ReadError("empty file")
        if b"\x00" in first and not first.startswith(SQLITE_MAGIC):  # a database is one (opencode's)
            raise ReadError("binary data, not a transcript")
        head, stream = sniff_head(stream)
        format = detect(path, head)
        if format is None:
            raise ReadError("unknown format (use --format to name it)")
    sessions: Iterator[Session] = reader(format).read(path, stream)  # a reader module's `read` (see `base`)
    return sessions


def sniff_head(stream: BinaryIO) -> tuple[bytes, BinaryIO]:
    """The head a format is told by, and the stream to read the file from, at its start.

    Plain text: its first `HEAD_SIZE` bytes. JSON or JSON Lines: the structure of its
    head (`jsonio.structure_head`: long strings cut, the first line whole however long),
    so a first record longer than the head still shows its keys. A stream that can be
    rewound is read and rewound (the same stream is returned); another (standard input)
    is read at most `LINE_CAP` bytes further, and a stream that gives those bytes again,
    then the rest, is returned."""
    first = stream.peek(HEAD_SIZE)[:HEAD_SIZE] if hasattr(stream, "peek") else stream.read(HEAD_SIZE)
    if not hasattr(stream, "peek"):
        stream = io.BufferedReader(_HeadFirst(first, stream.read), buffer_size=HEAD_SIZE)
    if first.lstrip()[:1] not in (b"{", b"["):
        return first, stream
    if stream.seekable():
        start = stream.tell()
        head = structure_head(stream, HEAD_SIZE)
        stream.seek(start)
        return head, stream
    kept = _Kept(getattr(stream, "read1", stream.read))
    head = structure_head(io.BufferedReader(kept, buffer_size=HEAD_SIZE), HEAD_SIZE, limit=LINE_CAP)
    return head, io.BufferedReader(_HeadFirst(bytes(kept.data), kept.source), buffer_size=HEAD_SIZE)


class _Kept(io.RawIOBase):
    """A stream's bytes, kept as they are read, to be read again."""

    def __init__(self, source: Callable[[int], bytes]) -> None:
        self.source, self.data = source, bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.source(len(buffer))
        buffer[: len(data)] = data
        self.data += data
        return len(data)


_BOM = b"\xef\xbb\xbf"


def open_transcript(path: str) -> BinaryIO:
    """Open a file to read as a transcript, past a UTF-8 byte-order mark (Windows
    editors and PowerShell's `Out-File` write one; no reader expects it).

    Opened without blocking and checked to be a regular file: opening a FIFO for
    reading blocks until a writer comes (`scan` hung for ever on one), and a device
    or socket is no transcript. Buffered by the head size, so `peek` sees the head."""
    try:
        stream = open_file(path, buffering=HEAD_SIZE)
    except NotRegularFile:
        raise ReadError(f"{NOT_REGULAR}: skipped") from None
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from exc
    _skip_bom(stream)
    return stream


def open_stdin() -> BinaryIO:
    """Standard input as a stream to read a transcript from, read as it comes (never
    copied to a file first). Its head is read whole before anything is sniffed (a
    pipe hands out what the writer has written so far); ReadError when it is closed."""
    source = getattr(sys.stdin, "buffer", None)
    if source is None:  # `0<&-`: Python starts with no sys.stdin
        raise ReadError("standard input is closed")
    read = getattr(source, "read1", source.read)
    head = b""
    try:
        while len(head) < HEAD_SIZE:
            piece = read(HEAD_SIZE - len(head))
            if not piece:
                break
            head += piece
    except (OSError, ValueError) as exc:  # a closed descriptor or file
        raise ReadError(f"cannot read standard input: {getattr(exc, 'strerror', None) or exc}") from exc
    stream = io.BufferedReader(_HeadFirst(head, read), buffer_size=HEAD_SIZE)
    _skip_bom(stream)
    return stream


class _HeadFirst(io.RawIOBase):
    """A stream whose first bytes were already read: those, then the rest."""

    def __init__(self, head: bytes, read: Callable[[int], bytes]) -> None:
        self._head, self._read = memoryview(head), read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _skip_bom(stream: BinaryIO) -> None:
    peek = getattr(stream, "peek", None)
    if peek is not None and peek(len(_BOM))[: len(_BOM)] == _BOM:
        stream.read(len(_BOM))
