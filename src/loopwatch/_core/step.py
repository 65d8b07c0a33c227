"""A `Step`: a completed tool call reduced to digests, names, counts and times.

This is the only form in which the monitor remembers a tool call. Building it is the
one place where raw inputs and results are read; nothing of them survives but digests
and a short similarity sketch (16-bit hashes of words, never the words).
"""

from __future__ import annotations

import re
import zlib
from typing import NamedTuple

from .fingerprint import Digest, arguments_of, blake2b, call_fingerprint, digest, normalize, text_of
from .identity import identifying
from .shell import always_prints, command_of

__all__ = ["Step", "make_step", "sketch_of"]

# Failures no file edit can cure: the program itself is missing.
# (Plain substrings: a pattern of alternatives is tried at every `c`, `i` and `:`.)
_MISSING_PROGRAM = ("command not found", "is not recognized as an internal or external command", ": not installed")
# A search answered "nothing found" by a harness that flags no error (Claude Code's Grep
# and Glob: "No files found"; "Found 0 matches"): a failed search all the same, so
# varied searches meeting it again and again are one wall (matched on the normalized
# head: numbers are masked as `#`, a returncode/output wrapper may come first).
_NO_MATCH = re.compile(
    r"(?:<returncode>#</returncode> <output> )?"
    r"(?:no (?:files?|match(?:es)?|results?|entries|occurrences)(?: (?:were |was )?found)?\b"
    r"|found # (?:files?|match(?:es)?|results?)\b|# (?:files?|match(?:es)?|results?) found\b)",
    re.IGNORECASE,
)
# A line range (`72:83`, `10,20`) in a call's first line when a body follows (its
# canonical input up to the first newline: the command line of `edit 72:83\n<body>`),
# masked for `Step.shifted` only. Digits elsewhere stay: `depth = 1` then `depth = 2` are two edits, and a body
# is compared as written.
_RANGE = re.compile(rb"(?<![0-9A-Za-z_.])[0-9]+[:,][0-9]+(?![0-9A-Za-z_.])")
# The count a "found N matches" answer gives, read in the raw text: normalized, every
# count is `#`, so "Found 34 matches" would read as "nothing found" (a failure, an
# empty answer).
_COUNT = re.compile(r"\bfound ([0-9]+) |\b([0-9]+) (?:files?|match(?:es)?|results?) found\b", re.IGNORECASE)
# A shell's continuation prompt (`>` alone or before the text typed; a REPL's `>>>` is not one):
# the line a shell shows while it waits for the rest of an unfinished command.
_CONTINUATION = re.compile(r">(?: .*)?")
# Terminal harnesses (terminus) put their own notes before the screen; only the screen
# after this marker is what the shell showed.
_SCREEN = "New Terminal Output:"
# ASCII characters `str.split()` takes for whitespace and `bytes.split()` does not.
_TEXT_ONLY_SPACE = re.compile(rb"[\x1c-\x1f]")
_STUCK_CHARS = 4000  # a wedged screen is a few echoed lines; a longer result shows work
_SKETCH_WORDS = 96  # result words hashed for similarity: a screenful, bounded cost
_CALL_SKETCH_WORDS = 48  # a call is told by its command or path, not a whole file body


class Step(NamedTuple):
    """One completed tool call.

    `call` digests the tool name and its identifying input; `result` the normalized
    result; `action` both together (what the run "did and got"). `shape` digests the
    name and the normalized result only (what came back, whatever the call), and
    `failure` is that same digest when the call failed (or was answered "nothing
    found", whatever the harness's flag), else None; `empty` says nothing came back
    (no text, or "nothing found");
    `missing_program` says the failure was a missing command (no edit can cure it). `wrote` is True when
    the call changed files (or is a configured writer and succeeded). `index` counts
    tool calls from 1; `at` is the event time in seconds. `sketch` and `call_sketch` are
    16-bit hashes of the first words of the normalized result and of the input, for
    similarity only.
    """

    index: int  # type: ignore[assignment]  # shadows tuple.index(): the field name is public API
    name: str
    call: Digest
    result: Digest
    action: Digest
    shape: Digest
    failure: Digest | None
    empty: bool
    missing_program: bool
    wrote: bool
    role: str
    at: float
    sketch: tuple[int, ...]
    call_sketch: tuple[int, ...]
    source_ref: str | None = None
    #: digest of the normalized result without its progress figures (`40%`, `48 MB`):
    #: equal `still` and different `result` is a moving poll, waiting, not looping.
    still: Digest | None = None
    #: digest of the call with the line range of its first line masked (`edit 72:83` and
    #: `edit 71:82`, the same body at a shifted range): never a call's identity, only what `cycle`
    #: compares, together with the results, to see a cycle whose rounds shift.
    shifted: Digest | None = None
    #: the command never ran: the result is only the echo of what was typed, or a
    #: shell's continuation prompt (a terminal stuck after an unclosed quote), or nothing
    #: at all from a command that always prints (`shell.always_prints`: `echo DONE`,
    #: `ls -la`, `C-c`), behind a program that never returned; what `wedged` counts.
    stuck: bool = False
    #: the working folder's state after the call (`ToolCall.tree`, a digest), None when
    #: unknown: what tells a round that changed nothing from one that changed files.
    tree: str | None = None


def sketch_of(text: str, limit: int = _SKETCH_WORDS) -> tuple[int, ...]:
    """16-bit hashes of a normalized text's first `limit` words: enough for a
    similarity ratio, never enough to recover the text."""
    return _sketch(text.encode("utf-8", "surrogatepass"), limit)


def _sketch(data: bytes, limit: int) -> tuple[int, ...]:
    """`sketch_of` for a text already encoded (UTF-8, surrogates passed)."""
    crc32 = zlib.crc32
    words = data.split(b" ", limit)
    del words[limit:]
    return tuple([crc32(w) & 0xFFFF for w in words])


def _call_sketch(name: str, body: bytes) -> tuple[int, ...]:
    """The sketch of a call: its tool name and the first words of its canonical input,
    whitespace folded (`_first_words`). An ASCII input (most) is split as bytes, without
    a decode and a join: the same words, as bytes and text split on the same whitespace
    when every character is ASCII but the separators `\\x1c`-`\\x1f` (which canonical JSON
    escapes; an input that cannot be serialized gets random bytes)."""
    if body.isascii() and " " not in name and _TEXT_ONLY_SPACE.search(body) is None:
        words = body.split(None, _CALL_SKETCH_WORDS - 1)
        if words:
            del words[_CALL_SKETCH_WORDS - 1 :]
            crc32 = zlib.crc32
            return (crc32(name.encode("utf-8", "surrogatepass")) & 0xFFFF, *[crc32(w) & 0xFFFF for w in words])
    return sketch_of(name + " " + _first_words(body.decode("utf-8", "replace")), _CALL_SKETCH_WORDS)


def _first_words(text: str, limit: int = _CALL_SKETCH_WORDS) -> str:
    """The first `limit` words of `text`, whitespace folded: all a sketch of `limit`
    words can read (a file body is not split whole)."""
    return " ".join(text.split(None, limit)[:limit])


def _stuck(raw: str, input_value: object) -> bool:
    """Did the terminal only echo what was typed? Every non-blank line of the screen is a
    continuation prompt or a line of the call's own input, echoed; at least one such line."""
    if not raw or len(raw) > _STUCK_CHARS:
        return False
    _, marker, screen = raw.rpartition(_SCREEN)
    if not marker and ">" not in raw:
        return False  # a bare echo is a stuck terminal only on a terminal's screen
    lines = [line.strip() for line in screen.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return False
    typed: set[str] = set()
    for value in input_value.values() if isinstance(input_value, dict) else (input_value,):
        if isinstance(value, str):
            typed.update(line.strip() for line in value.splitlines())
    typed.discard("")
    prompted = False
    for line in lines:
        if _CONTINUATION.fullmatch(line) is not None:
            prompted = True
        elif line not in typed:
            return False
    return prompted or bool(marker)


def _nothing_found(text: str, result: object) -> bool:
    """Is the normalized result `text` a "nothing found" answer? A counted answer
    ("Found 0 matches") only when its count, in the raw result, is 0."""
    match = _NO_MATCH.match(text, 0, 160)
    if match is None:
        return False
    if "#" not in match.group(0):
        return True
    count = _COUNT.search(text_of(result)[:300])
    return count is None or int(count.group(1) or count.group(2)) == 0


def _shifted(name: str, call: Digest, body: bytes) -> Digest:
    """The call's digest with the line range of its first line masked (`_RANGE`) when
    a body follows that line; the call digest itself otherwise. A one-line command has
    no body to be the same: its numbers are what it asks (`--window 10,20`, `10,30`)."""
    end = body.find(b"\\n")  # canonical JSON escapes a newline
    if end < 0:
        return call
    head = body[:end]  # not `partition`: the rest (a whole file body) is copied only when masked
    masked = _RANGE.sub(b"#", head)
    if masked == head:
        return call
    return digest(name.encode() + b"\x00" + masked + body[end:])


def make_step(
    index: int,
    name: str,
    input_value: object,
    result: object,
    error: bool,
    changed: tuple[str, ...],
    at: float,
    role: str = "",
    identity: tuple[str, ...] | None = None,
    source_ref: str | None = None,
    ignore: frozenset[str] = frozenset(),
    tree: str | None = None,
) -> Step:
    """Digest one tool call. `identity` names the only input fields that identify the
    call, else `ignore` those that do not (`identity.identifying`); `role` is "",
    "writer", "poller" or "exempt"."""
    input_value = identifying(input_value, identity, ignore)
    call, body = call_fingerprint(name, input_value)
    raw = text_of(result)
    text = normalize(raw, arguments_of(input_value)) if raw else ""  # no result: no argument to mask
    data = text.encode("utf-8", "surrogatepass")  # once, for the digest and the sketch
    result_digest = blake2b(data, digest_size=8).digest()
    shape = blake2b(name.encode() + b"\x00" + result_digest, digest_size=8).digest()
    nothing = not text or _nothing_found(text, result)
    return Step(
        index=index,
        name=name,
        call=call,
        result=result_digest,
        action=blake2b(call + result_digest, digest_size=8).digest(),
        shape=shape,
        failure=shape if error or (nothing and bool(text)) else None,
        empty=nothing,
        missing_program=error and any(words in text for words in _MISSING_PROGRAM),
        wrote=bool(changed) or (role == "writer" and not error),
        role=role,
        at=at,
        sketch=_sketch(data, _SKETCH_WORDS),
        call_sketch=_call_sketch(name, body),
        source_ref=source_ref,
        still=digest(text.partition(" \x01")[0]) if "\x01" in text else result_digest,
        shifted=_shifted(name, call, body),
        stuck=_stuck(raw, input_value) or (not text and not error and _silent(input_value)),
        tree=tree,
    )


def _silent(input_value: object) -> bool:
    """Is the call a command that always prints (so an empty result means it never ran)?"""
    command = command_of(input_value)
    return command is not None and always_prints(command)
