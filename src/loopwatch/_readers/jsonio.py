"""Reading JSON and JSON Lines for the transcript readers, and cheap sniffing helpers.

JSON Lines are streamed one line at a time, never loaded whole: a line that is not a JSON
object is skipped and reported in the caller's `skipped` list (`line 17: not JSON`).
A line over `LINE_CAP` is never held whole either: its long strings are read as their
head and tail (see `lines`), so memory stays bounded whatever one line holds.
(Formats that are one JSON document are loaded whole, by `_common.load_json`.)

Formats are told by the structure of a file's head, not by its first bytes of text:
`structure_head` reads a JSON or JSON Lines file's head with every long string cut to
its first and last KiB, so a first record of any length (a rollout whose first line
carries a 1 MiB AGENTS.md) shows all its keys. The sniffing helpers read only that head
(64 KiB of structure, possibly cut mid-line or mid-string) and never raise.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .._files import open_file
from .base import ReadError

__all__ = [
    "LINE_CAP",
    "JsonLines",
    "blocks_text",
    "decode_arguments",
    "first_line",
    "head_objects",
    "keys_at",
    "kind_of",
    "lines",
    "number_of",
    "session_name",
    "structure_head",
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
        self._source: Iterator[tuple[int, dict[str, Any]]] | None = None
        self._ahead: list[tuple[int, dict[str, Any]]] = []
        self.lines = 0  # lines read so far, blank and broken ones included

    def peek(self, count: int) -> list[tuple[int, dict[str, Any]]]:
        source = self._objects()
        while len(self._ahead) < count:
            try:
                self._ahead.append(next(source))
            except StopIteration:
                break
        return list(self._ahead)

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        source = self._objects()
        while self._ahead:
            yield self._ahead.pop(0)
        yield from source

    def _objects(self) -> Iterator[tuple[int, dict[str, Any]]]:
        if self._source is None:
            self._source = self._read()
        return self._source

    def _read(self) -> Iterator[tuple[int, dict[str, Any]]]:
        if self._stream is not None:
            yield from self._parse(self._stream)
            return
        try:
            fh = open_file(self.path)
        except OSError as exc:
            raise ReadError(f"cannot open: {exc.strerror or exc}") from exc
        with fh:
            yield from self._parse(fh)

    def _parse(self, fh: BinaryIO) -> Iterator[tuple[int, dict[str, Any]]]:
        loads, skipped = orjson.loads, self.skipped
        for number, raw, note in lines(fh):
            self.lines = number
            if note:
                skipped.append(note)
            # No `strip()`: it copies the line (orjson takes the whitespace), and a
            # line can be hundreds of MB.
            if not raw or raw.isspace():
                continue
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
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


# -- lines of any size ----------------------------------------------------------------

#: A line up to this size is read and parsed whole. The longest JSON Lines record in the
#: real recordings we hold (../shared: Claude Code and Codex transcripts and rollouts) is
#: 22 KB, and the agents cap what a record can hold (Claude Code keeps a Bash result to
#: 30,000 characters by default and moves larger ones to a file; an image block is at most
#: ~7 MB of base64): 16 MiB is several hundred times any event seen and still only one copy
#: of a bounded size in memory.
LINE_CAP = 16 * 1024 * 1024

#: Of a string longer than 2 x `_KEEP` bytes in a line over the cap, the first and last
#: `_KEEP` bytes are kept. The core reads no more of a result than its first and last
#: 64 Ki characters (`fingerprint._RESULT_LIMIT`); 1 MiB of JSON is at least 87 Ki characters
#: even when every one is a `\uXXXX\uXXXX` pair, so the digests are those of the whole line.
_KEEP = 1024 * 1024

_CHUNK = 1024 * 1024  # the piece of an over-cap line read at a time
_SLACK = 64  # bytes kept before a tail so its start can be checked against an escape


def _body_end(data: bytes, pos: int, end: int) -> int:
    """Where the body of a JSON string that runs from `pos` ends: at its closing quote,
    or at the end of the data, or at a backslash that ends the data (its escaped
    character is in the next piece). Found with `bytes.find` (the speed of memchr: a
    regex over the body read long strings at a fiftieth of it), each quote checked for
    the run of backslashes before it."""
    quote = data.find(b'"', pos, end)
    while quote >= 0:
        back = quote
        while back > pos and data[back - 1] == 0x5C:
            back -= 1
        if (quote - back) % 2 == 0:
            return quote
        quote = data.find(b'"', quote + 1, end)
    back = end
    while back > pos and data[back - 1] == 0x5C:
        back -= 1
    return end - 1 if (end - back) % 2 == 1 else end


def lines(
    fh: BinaryIO, cap: int = LINE_CAP, keep: int = _KEEP, chunk: int = _CHUNK
) -> Iterator[tuple[int, bytes, str | None]]:
    """`(line_number, raw, note)` for every line of `fh`, 1-based, with its newline.

    A line up to `cap` bytes is `raw` as it is and `note` is None. A longer line is read
    in pieces and never held whole: each string in it longer than 2 x `keep` bytes is
    reduced to its first and last `keep` bytes (cut between characters, never inside an
    escape), and `note` says so, for the caller's `skipped` list. If the line is still
    over `cap` without those strings (a huge number of small values), it cannot be read
    in bounded memory: `raw` is empty and `note` says it was skipped. It does not parse
    anything: the caller parses the (bounded) `raw`."""
    number, chunk = 0, min(chunk, cap + 1)
    while True:
        raw = fh.readline(chunk)
        if not raw:
            return
        number += 1
        if raw.endswith(b"\n"):
            yield number, raw, None
            continue
        # Longer than a piece: gather pieces up to the cap (a line within it is joined)
        pieces, size = [raw], len(raw)
        while size <= cap and not pieces[-1].endswith(b"\n"):
            raw = fh.readline(chunk)
            if not raw:
                break
            pieces.append(raw)
            size += len(raw)
        if size <= cap or (size == cap + 1 and pieces[-1].endswith(b"\n")):
            raw = b"".join(pieces)
            del pieces
            yield number, raw, None
            continue
        shrunk = _Shrunk(cap, keep)
        pieces.reverse()
        while pieces:  # each piece let go once fed
            shrunk.feed(pieces.pop())
        raw = b"" if not raw or raw.endswith(b"\n") else fh.readline(chunk)
        while raw:
            shrunk.feed(raw)
            if raw.endswith(b"\n"):
                break
            raw = fh.readline(chunk)
        size_text = f"{shrunk.size / 2**20:.0f} MiB"
        if shrunk.over:
            yield (
                number,
                b"",
                (
                    f"line {number}: skipped, {size_text} in one line, over the {cap // 2**20} MiB "
                    f"a line may hold once its long strings are cut"
                ),
            )
        else:
            yield (
                number,
                bytes(shrunk.out),
                (
                    f"line {number}: read in part, {size_text} in one line: "
                    f"{shrunk.cut} string{'s' if shrunk.cut != 1 else ''} kept as its first and last "
                    f"{keep // 2**20} MiB"
                ),
            )
        del shrunk


#: Of a string in the sniffed head longer than 2 x this, its first and last this-many
#: bytes: what a sniffer reads of a string is a `type` or a key, never 1 KiB into a text.
_SNIFF_KEEP = 1024
#: A first line's structure is read whole up to this (16 heads: the structure of any
#: first record seen, a rollout's 1 MiB `session_meta` is 2 KiB of it); past it, the
#: line is cut and sniffed as far as it goes (`first_line`).
_FIRST_CAP = 1024 * 1024


def structure_head(fh: BinaryIO, size: int, limit: int | None = None) -> bytes:
    """The head a JSON or JSON Lines file is told by: its first `size` bytes once every
    string longer than 2 KiB is cut to its first and last KiB (the same JSON, `_Shrunk`'s
    cut), and at least its first non-blank line whole (up to `_FIRST_CAP` of structure).

    Reads `fh` from where it is, as far as that takes: a 1 MiB first line is read
    through, only its structure kept. `limit` bounds the bytes read (for a stream that
    cannot be rewound, whose bytes must be kept to be read again): at the limit, what was
    gathered is the head, cut. Memory is bounded by the structure kept. Never raises on
    bad JSON: it parses nothing. Plain text is no concern of this: the caller gives it
    only heads that open with `{` or `[`."""
    out = bytearray()
    first_end = 0  # where the first non-blank line ends in `out`, once it has
    taken = 0
    room = limit if limit is not None else -1
    peek = getattr(fh, "peek", None)

    def readline() -> bytes:
        nonlocal taken
        if room >= 0 and taken >= room:
            return b""
        raw = fh.readline(_CHUNK if room < 0 else min(_CHUNK, room - taken))
        taken += len(raw)
        return raw

    while not first_end or len(out) < size:
        if peek is not None and (room < 0 or taken < room):
            # the buffered lines up to the first long one, at once (one read per buffer)
            ahead = peek(_CHUNK)
            short = _short_lines(ahead if room < 0 else ahead[: room - taken])
            if short:
                out += fh.read(short)
                taken += short
                if not first_end and out.strip():
                    first_end = out.index(b"\n", len(out) - len(out.lstrip())) + 1
                continue
        raw = readline()
        if not raw:
            break
        if raw.endswith(b"\n") and len(raw) <= 2 * _SNIFF_KEEP:
            out += raw
        else:
            shrunk = _Shrunk(2 * LINE_CAP, _SNIFF_KEEP)
            shrunk.feed(raw)
            while not raw.endswith(b"\n"):
                # the first line is read through; a later one only to the head's size
                if len(shrunk.out) > (_FIRST_CAP if not first_end else size - len(out)):
                    break
                raw = readline()
                if not raw:
                    break
                shrunk.feed(raw)
            out += shrunk.out
            del shrunk
        if not first_end and out.strip():
            first_end = len(out) if out.endswith(b"\n") else len(out) + 1
    return bytes(out[: max(size, first_end)])


def _short_lines(data: bytes) -> int:
    """How many bytes of `data` are whole lines before the first longer than 2 KiB."""
    at, end, longest = 0, len(data), 2 * _SNIFF_KEEP + 1
    while at < end:
        newline = data.find(b"\n", at, at + longest)
        if newline < 0:
            break
        at = newline + 1
    return at


class _Shrunk:
    """A line over the cap, fed in pieces: `out` is the line with every string longer
    than 2 x `keep` bytes reduced to its head and tail; `over` once `out` passes the cap
    (its feeding then only counts `size`)."""

    def __init__(self, cap: int, keep: int) -> None:
        self.cap, self.keep = cap, keep
        self.out = bytearray()
        self.size = 0  # bytes of the whole line
        self.cut = 0  # strings reduced
        self.over = False
        self._in_string = False
        self._start = 0  # where the current string's content starts in `out`
        self._tail: bytearray | None = None  # past the head of a long string: its latest bytes
        self._dropped = False  # bytes were dropped from `_tail`'s front
        self._carry = b""  # a backslash that ended the last piece

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        if self.over:
            return
        if self._carry:
            data, self._carry = self._carry + data, b""
        view = memoryview(data)  # slices of it are not copies
        pos, end = 0, len(data)
        while pos < end:
            if not self._in_string:
                quote = data.find(b'"', pos)
                stop = end if quote < 0 else quote + 1
                self.out += view[pos:stop]
                pos = stop
                if quote >= 0:
                    self._in_string, self._start, self._tail, self._dropped = True, len(self.out), None, False
                continue
            stop = _body_end(data, pos, end)
            self._body(view[pos:stop])
            pos = stop
            if stop < end and data[stop] == 0x22:  # the closing quote
                self._close()
                self.out += b'"'
                pos += 1
                self._in_string = False
            elif stop < end:  # a backslash ends the piece: read it with the next one
                self._carry = bytes(view[stop:])
                pos = end
        if len(self.out) > self.cap:
            self.over = True
            self.out = bytearray()

    def _body(self, body: memoryview) -> None:
        if self._tail is None:
            room = self._start + self.keep + _SLACK - len(self.out)
            if len(body) <= room:
                self.out += body
                return
            self.out += body[:room]
            self._tail = bytearray()
            body = body[room:]
        tail, kept = self._tail, self.keep + _SLACK
        if len(tail) + len(body) <= 2 * self.keep + _SLACK:
            tail += body
        elif len(body) >= kept:  # only the end of this piece can be in the tail
            self._tail, self._dropped = bytearray(body[-kept:]), True
        else:
            tail += body
            del tail[: len(tail) - kept]
            self._dropped = True

    def _close(self) -> None:
        tail, self._tail = self._tail, None
        if tail is None:
            return
        start, keep = self._start, self.keep
        if not self._dropped:
            whole = self.out[start:] + tail
            if len(whole) <= 2 * keep:
                self.out += tail
                return
            tail, tail_start = whole, len(whole) - keep
        else:
            tail_start = len(tail) - keep
        # the head is the string's first `keep` bytes, the tail its last `keep`, each
        # moved back to a character boundary
        from_ = _boundary(tail, tail_start, 0)
        del self.out[_boundary(self.out, start + keep, start) :]
        self.out += tail[from_:]
        self.cut += 1


def _boundary(buf: bytearray, at: int, start: int) -> int:
    """`at`, moved back to a character boundary of the JSON string content in `buf`
    (which starts at `start`): not inside a UTF-8 sequence or an escape, nor between the
    two escapes of a surrogate pair."""
    while at > start and 0x80 <= buf[at] < 0xC0:
        at -= 1
    moved = True
    while moved:
        moved = False
        for q in range(at - 1, max(start, at - 12) - 1, -1):
            if buf[q] != 0x5C or not _escapes(buf, q, start):
                continue
            length = 6 if buf[q + 1 : q + 2] == b"u" else 2
            high = length == 6 and bytes(buf[q + 2 : q + 4]).lower() in (b"d8", b"d9", b"da", b"db")
            if q + length > at or (q + length == at and high):
                at, moved = q, True
            break
    return at


def _escapes(buf: bytearray, q: int, start: int) -> bool:
    """The backslash at `q` starts an escape (an odd run of backslashes ends there)."""
    run = 0
    while q >= start and buf[q] == 0x5C:
        run += 1
        q -= 1
    return run % 2 == 1


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


def kind_of(obj: dict[str, Any], key: str = "type") -> str | None:
    """What a record says it is (its `type`, or another key that says the same: `role`,
    OpenHands' `action`), or None when that is absent or not a string. Every reader asks
    through here: a list or an object there is unhashable (`kind in {...}` raised) and
    must cost its record at most, never the file."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def head_objects(head: bytes, limit: int = 50) -> list[dict[str, Any]]:
    """The JSON objects on the lines of a file's head, at most `limit`: each complete
    line's, and a first line's cut by the head's end as far as it goes (`first_line`).

    Any other line that does not parse (cut, or not JSON) is passed over."""
    found: list[dict[str, Any]] = []
    head = head.removeprefix(_BOM)
    lines = head.split(b"\n")
    for number, line in enumerate(lines):
        line = line.strip()
        if not line.startswith(b"{"):
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            if number != len(lines) - 1 or any(other.strip() for other in lines[:number]):
                continue  # only the first line, cut by the head's end, is read in part
            value = _completed(line)
        if isinstance(value, dict):
            found.append(value)
            if len(found) >= limit:
                break
    return found


def first_line(head: bytes) -> Any:
    """The value on the first non-blank line of a file's head; when the head's end cuts
    that line, the value as far as it goes (`_completed`: its keys and values up to the
    cut). None when it is no JSON."""
    head = head.removeprefix(_BOM).lstrip()
    line, newline, _ = head.partition(b"\n")
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None if newline else _completed(line)


# A JSON token: a string (its closing quote optional: cut by the end), a mark, a scalar.
_PART = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[{}\[\]:,]|[^\s{}\[\]:,"]+')
_CLOSE = {ord("{"): b"}", ord("["): b"]"}


def _completed(text: bytes) -> Any:
    """A JSON object or list cut short, as far as it goes: the members before the cut,
    and a string value cut mid-way kept as far as it goes; the rest dropped, every open
    object and list closed. None when even that is no JSON. Reads the text once."""
    if text[:1] not in (b"{", b"["):
        return None
    # `opened` is the open objects and lists, innermost first, as a linked tuple (a
    # snapshot costs nothing); `keep`, how much of `text` is whole with its closers.
    opened: tuple[int, Any] | None = None
    keep: tuple[int, tuple[int, Any] | None] = (0, None)
    expect = b"value"  # value, key, colon or comma
    empty = False  # just opened: may close at once
    for match in _PART.finditer(text):
        start, end = match.span()
        part = match.group()
        first = part[0]
        was_empty, empty = empty, False
        if expect == b"value" and first in _CLOSE:
            opened = (first, opened)
            expect = b"key" if first == ord("{") else b"value"
            keep = (end, opened)
            empty = True
        elif (
            part in (b"}", b"]")
            and opened is not None
            and _CLOSE[opened[0]] == part
            and (expect == b"comma" or was_empty)
        ):
            opened = opened[1]
            expect = b"comma"
            keep = (end, opened)
            if opened is None:
                break
        elif first == ord('"'):
            whole = len(part) > 1 and part.endswith(b'"') and not _escaped_end(part)
            if expect == b"key" and whole:
                expect = b"colon"
            elif expect == b"value" and whole:
                expect = b"comma"
                keep = (end, opened)
            elif expect == b"value":  # a string cut by the end: kept as far as it goes
                body = bytearray(text[start:]) + b'"'  # `_boundary` looks at the byte past the cut
                cut = _boundary(body, _whole_characters(body, len(body) - 1), 1)
                return _loads(text[:start] + bytes(body[:cut]) + b'"' + _closers(opened))
            else:
                break
        elif part == b":" and expect == b"colon":
            expect = b"value"
        elif part == b"," and expect == b"comma" and opened is not None:
            expect = b"key" if opened[0] == ord("{") else b"value"
        elif expect == b"value" and first not in b'{}[]:,"' and end < len(text):
            expect = b"comma"  # a scalar the end does not cut
            keep = (end, opened)
        else:
            break
    end, opened = keep
    return _loads(text[:end] + _closers(opened)) if end else None


def _whole_characters(buf: bytearray, end: int) -> int:
    """`end`, moved back before a UTF-8 sequence the end cuts."""
    for back in range(1, min(4, end) + 1):
        byte = buf[end - back]
        if byte < 0x80:
            return end
        if byte >= 0xC0:  # a lead byte: how long its sequence is
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end if back >= length else end - back
    return end


def _escaped_end(part: bytes) -> bool:
    """Does the string token end in an escaped quote (an odd run of backslashes before it)?"""
    run = len(part) - 1 - len(part[:-1].rstrip(b"\\"))
    return run % 2 == 1


def _closers(opened: tuple[int, Any] | None) -> bytes:
    out = b""
    while opened is not None:
        out += _CLOSE[opened[0]]
        opened = opened[1]
    return out


def _loads(text: bytes) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


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
        elif first == b":" and level == depth and previous[:1] == b'"':
            keys.append(_key(previous))
            if len(keys) >= limit:
                break
        previous = token
    return keys


def _key(token: bytes) -> str:
    try:
        key: str = orjson.loads(token)  # the token is a JSON string: it decodes to a str
        return key
    except orjson.JSONDecodeError:  # a bad escape: keep it as written
        return token[1:-1].decode("utf-8", "replace")


def parsed_events(parser: Any, lines: JsonLines, session: Any) -> Iterator[Any]:
    """Feed every line to an incremental `StreamParser`, then copy its running totals
    (tokens, and cost and outcome where it keeps them) onto the session."""
    for number, obj in lines:
        yield from parser.feed(obj, f"line {number}")
    yield from parser.finish()
    session.tokens = parser.tokens
    session.cost = getattr(parser, "cost", session.cost)
    session.outcome = parser.outcome
    session.meta.update(parser.meta)
