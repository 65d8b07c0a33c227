"""Reading JSON and JSON Lines for the transcript readers, and cheap sniffing helpers.

JSON Lines are streamed one line at a time, never loaded whole: a line that is not a JSON
object is skipped and reported in the caller's `skipped` list (`line 17: not JSON`).
(Formats that are one JSON document are loaded whole, by `_common.load_json`.)

The sniffing helpers read only the head a reader is given (64 KiB, possibly cut
mid-line or mid-string) and never raise.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import orjson

from .base import ReadError

__all__ = [
    "JsonLines",
    "blocks_text",
    "decode_arguments",
    "head_objects",
    "keys_at",
    "number_of",
    "session_name",
    "tokens_of",
]

_BOM = b"\xef\xbb\xbf"


class JsonLines:
    """The JSON objects of a JSON Lines file, as `(line_number, object)`, 1-based.

    Blank lines are ignored; a line that is not JSON, or is JSON but not an object, is
    skipped and described in `skipped`. `peek(n)` reads ahead up to `n` objects without
    consuming them, so a reader can check the format and find a session id before
    handing out its events. The file is opened on first use and closed when iteration
    ends. Iterate once.
    """

    def __init__(self, path: str, stream: BinaryIO | None = None, skipped: list[str] | None = None) -> None:
        self.path = path
        self.skipped: list[str] = [] if skipped is None else skipped
        self._stream = stream
        self._source: Iterator[tuple[int, dict]] | None = None
        self._ahead: list[tuple[int, dict]] = []
        self.lines = 0  # lines read so far, blank and broken ones included

    def peek(self, count: int) -> list[tuple[int, dict]]:
        source = self._objects()
        while len(self._ahead) < count:
            try:
                self._ahead.append(next(source))
            except StopIteration:
                break
        return list(self._ahead)

    def __iter__(self) -> Iterator[tuple[int, dict]]:
        source = self._objects()
        while self._ahead:
            yield self._ahead.pop(0)
        yield from source

    def _objects(self) -> Iterator[tuple[int, dict]]:
        if self._source is None:
            self._source = self._read()
        return self._source

    def _read(self) -> Iterator[tuple[int, dict]]:
        if self._stream is not None:
            yield from self._parse(self._stream)
            return
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise ReadError(f"cannot open: {exc.strerror or exc}") from exc
        with fh:
            yield from self._parse(fh)

    def _parse(self, fh: BinaryIO) -> Iterator[tuple[int, dict]]:
        loads, skipped = orjson.loads, self.skipped
        for number, raw in enumerate(fh, 1):
            self.lines = number
            # No `strip()`: it copies the line (orjson takes the whitespace), and a
            # line can be hundreds of MB.
            if not raw or raw.isspace():
                continue
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            cut = not raw.endswith(b"\n")
            try:
                value = loads(raw)
            except orjson.JSONDecodeError:
                skipped.append(f"line {number}: not JSON{' (cut off)' if cut else ''}")
                continue
            raw = b""  # not held while the caller works on the object
            if not isinstance(value, dict):
                skipped.append(f"line {number}: not a JSON object")
                continue
            yield number, value


def tokens_of(usage: Any, *fields: str) -> int | None:
    """The sum of the named integer fields of a usage record, or None when it has none."""
    if not isinstance(usage, dict):
        return None
    total, found = 0, False
    for name in fields:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
            found = True
    return total if found else None


def number_of(record: Any, name: str) -> float | None:
    """A numeric field (a cost, a time) as a float, or None when absent or of another
    type: one wrong-typed field is dropped, never the session."""
    value = record.get(name) if isinstance(record, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:  # an integer past any float
            return None
    return None


def decode_arguments(raw: Any) -> Any:
    """A tool call's arguments as sent in a JSON string (OpenAI style): the value they
    encode, or the string itself when it is not JSON."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def blocks_text(content: Any) -> Any:
    """Message or result content as text: a string as it is; a list of content blocks
    as their texts joined by newlines, a block without text as `[its type]`; None as
    "". Any other value is returned unchanged."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block.get("type"), str):
                parts.append(f"[{block['type']}]")
    return "\n".join(parts)


def session_name(path: str) -> str:
    """A session's name when the file gives none: the file name without its suffixes."""
    name = Path(path).name
    for suffix in (".jsonl", ".json", ".traj"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return name or "-"


# -- sniffing --------------------------------------------------------------------------


def head_objects(head: bytes, limit: int = 50) -> list[dict]:
    """The JSON objects on the complete lines of a file's head, at most `limit`.

    A line that does not parse (cut by the head's end, or not JSON) is passed over."""
    found: list[dict] = []
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    for line in head.split(b"\n"):
        line = line.strip()
        if not line.startswith(b"{"):
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
            if len(found) >= limit:
                break
    return found


# A string's closing quote is optional: a string cut by the head's end (or never closed)
# is one token to the end. With the quote required, every escaped `"` of an unclosed
# string restarted the scan to the end (quadratic on `\"\"\"...`).
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}:]')


def keys_at(head: bytes, depth: int, limit: int = 200) -> list[str]:
    """Object keys at nesting `depth` in a JSON document's head, in order, at most
    `limit`: 1 gives a top-level object's keys, 2 the keys of the objects in a
    top-level list (or of an object's object values). Works on a cut head."""
    keys: list[str] = []
    level = 0
    previous = b""
    for match in _TOKENS.finditer(head):
        token = match.group()
        first = token[:1]
        if first == b"{" or first == b"[":
            level += 1
        elif first == b"}" or first == b"]":
            level -= 1
        elif first == b":":
            if level == depth and previous[:1] == b'"':
                keys.append(_key(previous))
                if len(keys) >= limit:
                    break
        previous = token
    return keys


def _key(token: bytes) -> str:
    try:
        return orjson.loads(token)
    except orjson.JSONDecodeError:  # a bad escape: keep it as written
        return token[1:-1].decode("utf-8", "replace")


def parsed_events(parser: Any, lines: "JsonLines", session: Any) -> Iterator[Any]:
    """Feed every line to an incremental `StreamParser`, then copy its running totals
    (tokens, and cost and outcome where it keeps them) onto the session."""
    for number, obj in lines:
        yield from parser.feed(obj, f"line {number}")
    yield from parser.finish()
    session.tokens = parser.tokens
    session.cost = getattr(parser, "cost", session.cost)
    session.outcome = parser.outcome
    session.meta.update(parser.meta)
