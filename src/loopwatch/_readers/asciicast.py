"""asciinema v2 recordings (`.cast`): what an agent's terminal showed, with its times.

A JSON header line (`{"version": 2, "width": ..., "height": ...}`), then one JSON array
per event: `[seconds, "o", text]` (written to the terminal) or `[seconds, "i", text]`
(typed into it). Terminal-Bench records every agent run this way. Events go through
`loopwatch._core.console.Console`, the path `loopwatch run` uses for live output: `o` is an
`Output` at its time, a finished `i` line a `UserMessage` (see `console`). Other event
kinds (`m` markers, `r` resizes) are skipped. `source_ref = "line N"` (the file's line).

Streamed line by line, through `jsonio.lines`: a line over `jsonio.LINE_CAP` is never
held whole (its text is read as its first and last MiB, and the skipped list says so),
so memory stays bounded whatever one event holds. A line that is not an event is skipped
and counted. Version 1 (one JSON object with a `stdout` list) is refused with a message.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from .._core.console import Console
from .._files import open_file
from .base import ReadError, Session
from .jsonio import first_line, lines

__all__ = ["NAME", "read", "sniff"]

NAME = "asciicast"


def sniff(path: str, head: bytes) -> bool:
    header = first_line(head)  # a header the head's end cuts: its keys up to the cut
    return (
        isinstance(header, dict) and header.get("version") in (1, 2) and ("width" in header or path.endswith(".cast"))
    )


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    try:
        fh: BinaryIO = stream if stream is not None else open_file(path)  # closed by _events
    except OSError as exc:
        raise ReadError(f"cannot open: {exc.strerror or exc}") from exc
    try:
        rows = lines(fh)
        first = next(rows, None)
        header = _header(first[1] if first is not None else b"", first[2] if first is not None else None)
        session = Session(format=NAME, session=_session_name(path), events=())
        session.meta["width"], session.meta["height"] = header.get("width"), header.get("height")
        session.events = _events(rows, fh, session, stream is None)
        yield session
    except BaseException:
        if stream is None:
            fh.close()
        raise


def _header(line: bytes, note: str | None) -> dict[str, Any]:
    if note is not None and not line:  # a header too big to read
        raise ReadError("not an asciicast: the first line is not a JSON header")
    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise ReadError("not an asciicast: the first line is not a JSON header") from None
    if not isinstance(header, dict):
        raise ReadError("not an asciicast: the first line is not a JSON object")
    if header.get("version") != 2:
        raise ReadError(f"asciicast version {header.get('version')!r} is not supported (only version 2)")
    return header


def _events(
    rows: Iterator[tuple[int, bytes, str | None]], fh: BinaryIO, session: Session, close: bool
) -> Iterator[Any]:
    console = Console()
    try:
        for number, line, note in rows:
            if note:
                session.skipped.append(note)
            if not line or line.isspace():
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                session.skipped.append(f"line {number}: not JSON")
                continue
            if not (
                isinstance(event, list)
                and len(event) >= 3
                and isinstance(event[2], str)
                and isinstance(event[0], (int, float))
                and not isinstance(event[0], bool)
            ):
                session.skipped.append(f"line {number}: not an [seconds, kind, text] event")
                continue
            at, kind, text = float(event[0]), event[1], event[2]
            if not math.isfinite(at):
                session.skipped.append(f"line {number}: time is not a number")
                continue
            ref = f"line {number}"
            if kind == "o":
                yield from console.output(text, at, source_ref=ref)
            elif kind == "i":
                yield from console.typed(text, at, source_ref=ref)
    finally:
        if close:
            fh.close()


def _session_name(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.removesuffix(".cast")
