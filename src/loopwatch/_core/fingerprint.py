"""Fingerprints: stable digests of calls, results and lines, and the normalization behind them.

Digests are 8-byte BLAKE2b values, stable across processes (the hook keeps them in a
database between calls). Nothing here keeps the text it digests.

Inputs are digested exactly as given, in canonical JSON (sorted keys at every depth, no
whitespace, list order kept, `None` the same as `{}`): `grep pattern-1` and
`grep pattern-2` are two different searches, and masking inputs turned such progress
into a false loop in a peer's detector.

Results are normalized first, because real loops hide behind volatile counters (a
recorded run got `bash: line 11301: cd: fastjson/: No such file or directory`, then
`line 11316`, `line 11331`, ... twenty times): terminal escapes are dropped, digit and
hex runs masked, whitespace collapsed, and the call's own arguments masked out (errors
echo them: `No matches found for "X"`). Progress is kept: percentages, byte counts and
counts out of a total (`40%`, `48 MB`, `3 of 10`) are appended back after masking, so a
moving download or a poll whose count advances is not a repeat.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

try:  # the bare BLAKE2 module: hashlib would load OpenSSL too (3 ms of hook start-up)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python builds
    from hashlib import blake2b

__all__ = [
    "Digest",
    "arguments_of",
    "blake2b",
    "call_fingerprint",
    "canonical",
    "digest",
    "digest_call",
    "digest_value",
    "mask_hex_ids",
    "mask_numbers",
    "normalize",
    "normalize_line",
    "strip_escapes",
    "text_of",
]

Digest = bytes

_SIZE = 8
_MAX_ARGUMENTS = 16  # longest first; enough for any command line seen in the corpus
_MIN_ARGUMENT = 4  # shorter tokens ("a", "-n", "the") would mask ordinary words
_MAX_ARGUMENT_SOURCE = 256  # only short input strings are argument-like; file bodies are not
_RESULT_LIMIT = 64 * 1024  # digest at most this much of a result's head and tail each

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# A run that starts with a digit and goes on in hex: counters, addresses, hashes from
# their first digit on. (A pattern for whole hex words was 6x slower on real results.)
_NUMBERS = re.compile(r"[0-9][0-9a-fA-FxX]*")
# Progress figures start where a digit run starts (`(?<![0-9])`): a match starting inside
# a run implies one from its start, so this finds the same, and without it every digit
# of a long run restarts the scan of the run (quadratic: 47 s for a 60 KB result).
# A count out of a total (`3 of 10 tasks done`, `3/10`), in results and lines alike; a
# date or a path caught by it (`2024/01`) is the same in every copy of a repeat.
# These patterns start with the digit they need and check what precedes it after it
# (`[0-9](?<![0-9][0-9])` is `(?<![0-9])[0-9]`): a pattern that starts with a
# lookbehind is tried at every character, one that starts with a digit only at digits
# (a third of a scan's time went to `_PROGRESS` alone). `_COUNT` follows a first digit.
_COUNT = r"[0-9]*\s*(?:/|of)\s*[0-9]+\b"
_PROGRESS = re.compile(
    r"[0-9](?:(?<![0-9][0-9])[0-9]*(?:\.[0-9]+)?\s?(?:%|[kKMGT]i?B\b)|(?<![0-9A-Za-z.][0-9])" + _COUNT + ")"
)
# In output lines only numbers that start a word or follow `_`/`-` are counters
# (`attempt 3`, `0.3s`, `toolu_0001`); digits right after a letter (`file12.o`,
# `python3`, a hash) name a different thing, and `N of M`, `N/M` count progress.
_LINE_NUMBERS = re.compile(r"[0-9](?<![A-Za-z0-9.][0-9])(?:(?<=0)[xX][0-9a-fA-F]+|[0-9]*(?:\.[0-9]+)*)")
_LINE_PROGRESS = re.compile(
    r"[0-9](?:(?<![0-9][0-9])[0-9]*(?:\.[0-9]+)?\s?(?:%|[kKMGT]i?B\b)|(?<!\w[0-9])" + _COUNT + ")"
)
# Random hex ids: a token (between non-alphanumerics; `-` and `_` separate) of four or
# more hex characters, with at least one digit and one letter. Codex 0.171 starts every
# shell output with `Chunk ID: <6 random hex>`; masked from their first digit only,
# `e1eabb` becomes `e#` and `86d36c` `#`, so twelve identical results would read as
# two. Four: the shortest group of a UUID (`9b2e`); shorter mixed words (`e2e`,
# `b4`) are left alone. Results only: in output lines a hex id names a thing (`docker
# pull` prints one line per layer id), as digits after a letter do.
_HEX_IDS = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9a-fA-F]{0,63}[0-9])(?=[0-9a-fA-F]{0,63}[a-fA-F])[0-9a-fA-F]{4,}(?![0-9A-Za-z])"
)
# A hex letter right before a masked number: the only trace a hex id that starts with
# a letter (`e1eabb` -> `e#`) leaves once `_NUMBERS` has run. Ids that start with a
# digit are masked whole by `_NUMBERS` alone, so a result without this mark needs no
# `_HEX_IDS` pass, which costs four times `_NUMBERS` (it has no literal to scan for;
# this one starts at `#`). Most results have none, so most skip the costly pass
# (`python bench/core.py` measures the core's cost). `mask_numbers` gives what both
# passes give.
_HEX_MARK = re.compile(r"#(?<=[a-fA-F]#)")
# The standard library's encoder, not orjson: inputs are small, and importing orjson
# costs the hook 14 ms of start-up (it pulls in dataclasses, uuid and datetime).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# A harness that saves a large output to a file hands back a stub naming a file per call:
# Claude Code's "Output too large (24.1KB). Full output saved to: <path>" (or "only the
# first 2KB were saved to: <path>"), Qwen Code's "The full output has been saved to:
# <path>". The path is masked, so the same large output twice is the same result; the
# size and preview the stub carries still tell two outputs apart, and a sha256 digest
# it carries is kept whole (masking numbers would hide it).
_SAVED_TO = re.compile(r"((?:[Ff]ull output(?: has been)?|were) saved to:[ \t]*)\S+")
_SHA256 = re.compile(r"sha256:?[ \t]*([0-9a-fA-F]{64})(?![0-9a-fA-F])")
# An input string's tokens are the runs between these; only those `_MIN_ARGUMENT` long count.
_SEPARATORS = r"\s\"'`=,;()<>|&"
_LONG_TOKEN = re.compile(f"[^{_SEPARATORS}]{{{_MIN_ARGUMENT},}}")
_QUOTED = re.compile(r"\"([^\"\n]{4,})\"|'([^'\n]{4,})'")


def digest(data: bytes | str) -> Digest:
    """An 8-byte stable digest of bytes or text."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return blake2b(data, digest_size=_SIZE).digest()


def canonical(value: Any) -> bytes:
    """Canonical JSON: sorted keys at every depth, no whitespace, `None` as `{}`.

    Raises TypeError for a value that cannot be serialized."""
    if value is None:
        return b"{}"
    try:
        return _ENCODER.encode(value).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError) as exc:  # a circular structure
        raise TypeError(str(exc)) from exc


def digest_value(value: Any) -> Digest:
    """Digest of a JSON value's canonical form; a random digest when it cannot be
    serialized, so it never makes two actions look alike."""
    try:
        return digest(canonical(value))
    except TypeError:
        return os.urandom(_SIZE)


def digest_call(name: str, value: Any) -> Digest:
    """Digest of a call: tool name plus canonical input."""
    return call_fingerprint(name, value)[0]


def call_fingerprint(name: str, value: Any) -> tuple[Digest, bytes]:
    """The call's digest and its canonical input. An input that cannot be serialized
    gets random bytes, so it never makes two calls look alike."""
    try:
        body = canonical(value)
    except TypeError:
        body = os.urandom(16)
    return blake2b(name.encode() + b"\x00" + body, digest_size=_SIZE).digest(), body


def text_of(value: Any) -> str:
    """A result as text: strings as they are, anything else as canonical JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    try:
        return canonical(value).decode()
    except TypeError:
        return repr(value)


def arguments_of(value: Any) -> list[str]:
    """The argument-like tokens of a call's input, longest first.

    Short input strings (paths, patterns, commands) are split into tokens; long ones
    (file bodies) are not arguments an error would echo."""
    found: set[str] = set()
    stack = [value]
    while stack and len(found) < 4 * _MAX_ARGUMENTS:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) <= _MAX_ARGUMENT_SOURCE:
                # Quoted phrases whole ("install java"), then their words.
                if '"' in item or "'" in item:
                    for pair in _QUOTED.findall(item):
                        found.add(pair[0] or pair[1])
                # Its long enough tokens, found in C (no loop over every token).
                tokens = _LONG_TOKEN.findall(item)
                # The first word of a command is the program, not an argument:
                # `ping: command not found` and `sudo: command not found` differ.
                # (It is `tokens[0]` when the input starts with it and goes on.)
                if tokens:
                    line = item.strip()
                    if len(line) > len(tokens[0]) and line.startswith(tokens[0]):
                        del tokens[0]
                    found.update(tokens)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    # ties broken by the text itself: set order varies with the hash seed, and the
    # digest of a result must not (it is compared across processes and runs)
    # (two stable sorts, by text and then by length descending, in C: no key function)
    return sorted(sorted(found), key=len, reverse=True)[:_MAX_ARGUMENTS]


def normalize(text: str, arguments: list[str] | tuple[str, ...] = ()) -> str:
    """Normalize a result or an output line for comparison (see the module docstring).

    Very long results keep their head and tail (64 KiB each): enough to tell two
    results apart, and bounded."""
    if len(text) > 2 * _RESULT_LIMIT:
        text = text[:_RESULT_LIMIT] + "\n...\n" + text[-_RESULT_LIMIT:]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    for argument in arguments:
        if argument in text:
            text = text.replace(argument, "\x00")
    digests = ""
    if " saved to:" in text:
        text = _SAVED_TO.sub(r"\1<file>", text)
        digests = " ".join(d.lower() for d in _SHA256.findall(text))
    # Each progress form holds one of these: most results skip the pattern.
    progress = _PROGRESS.findall(text) if ("%" in text or "B" in text or "of" in text or "/" in text) else None
    text = " ".join(mask_numbers(text).split())
    if digests:
        text += " sha256 " + digests
    if progress:
        text += " \x01" + " ".join(progress)
    return text


def strip_escapes(text: str) -> str:
    """Text without its terminal escapes (colours, cursor moves, titles)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def normalize_line(line: str) -> str:
    """Normalize one output line: like `normalize`, but only standalone numbers are
    masked, and `N of M` / `N/M` counts are kept as progress (see `_LINE_NUMBERS`)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    # Each progress form holds one of these: most lines skip the pattern (a third of the cost).
    hinted = "%" in line or "B" in line or "/" in line or "of" in line
    progress = _LINE_PROGRESS.findall(line) if hinted else None
    line = " ".join(_LINE_NUMBERS.sub("#", line).split())
    if progress:
        line += " \x01" + " ".join(progress)
    return line


def mask_numbers(text: str) -> str:
    """A result's numbers and random hex ids as `#`: `_NUMBERS` over `mask_hex_ids`,
    with the hex pass run only where its mark shows it could change something."""
    masked = _NUMBERS.sub("#", text)
    if _HEX_MARK.search(masked) is None:
        return masked
    return _NUMBERS.sub("#", mask_hex_ids(text))


def mask_hex_ids(text: str) -> str:
    """`text` with random hex ids (`Chunk ID: e1eabb`, `86d36c`, `01a2303a-...`) as `#`,
    as `normalize` does for results (see `_HEX_IDS`)."""
    return _HEX_IDS.sub("#", text)
