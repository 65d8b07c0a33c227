"""Data as output: the one encoder for everything loopwatch writes out of a session
(`scan --json` and `--out`, the report page, `evaluate`/`calibrate --json`,
`run --record`, Ray's blocks) and for the text it shows on a terminal.

It never fails on a name or a number:

- an integer past 64 bits (a file's token total can be anything) is written exactly;
- a string with a lone surrogate (a file name that is not UTF-8, which Python keeps as
  `\\udcff` by surrogateescape) is written as its JSON escape, which `json.loads`
  reads back exactly; where only UTF-8 text can go (`text`: a Parquet column, a page's
  title) the byte is written as `\\xff`;
- a float that is not finite is null, and a key that is not a string its `str`, as
  orjson writes them.

`json_bytes` tries orjson first (fast, and the common case) and the standard library
for what orjson refuses, so one odd record never costs the others their speed.

`visible(text)` is the one place where text from data is made safe for a terminal:
escape sequences, C0 and C1 controls, bidirectional overrides and other invisible
format characters become visible escapes (`\\x1b`, `\\u202e`), so a tool name, a file
name or a session id cannot write the clipboard (OSC 52), clear the screen, retitle
the window or hide a verdict line. It escapes; it does not quote, wrap or cut.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["decode_json", "encode_json", "json_bytes", "text", "visible"]


def json_bytes(value: Any, *, indent: bool = False) -> bytes:
    """`value` as JSON (compact, or indented by two), whatever its names and numbers."""
    return encode_json(value, indent=indent)[0]


def encode_json(value: Any, *, indent: bool = False) -> tuple[bytes, bool]:
    """`json_bytes(value)`, and whether orjson wrote it: then `decode_json` may read it
    back with orjson, else only the standard library reads it exactly (orjson reads an
    integer past 64 bits as a float, and refuses an escaped lone surrogate)."""
    import orjson

    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        return orjson.dumps(value, option=option, default=str), True
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a lone surrogate
        pass
    # ASCII: lone surrogates escaped; _plain makes what orjson would (null for NaN) exact
    text = json.dumps(
        _plain(value),
        separators=(",", ": ") if indent else (",", ":"),
        indent=2 if indent else None,
        default=str,
        allow_nan=False,
    )
    return text.encode("ascii"), False


def decode_json(data: bytes, by_orjson: bool) -> Any:
    """What `encode_json` wrote, read back exactly (orjson is the faster reader)."""
    if by_orjson:
        import orjson

        return orjson.loads(data)
    return json.loads(data)


def _plain(value: Any) -> Any:
    """`value` with what the standard library writes otherwise than orjson made alike:
    non-finite floats as None, keys that are not str, int, float, bool or None as str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {
            (k if k is None or isinstance(k, (str, int, float, bool)) else str(k)): _plain(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def text(value: str) -> str:
    """`value` as text any UTF-8 output can hold: a byte that was not UTF-8 (a lone
    surrogate from surrogateescape) as `\\xff`, any other lone surrogate as `\\ud800`."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_surrogate, value)
    return value


def _surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


# Anything outside printable ASCII, tab and newline is looked at one by one.
_LOOKED_AT = re.compile(r"[^\t\n\x20-\x7e]")
# Unicode's control (Cc), format (Cf: bidirectional overrides and isolates, zero-width
# characters), surrogate (Cs), line and paragraph separator (Zl, Zp) categories.
_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def visible(value: str) -> str:
    """`value` for a terminal (see the module docstring): printable text, tab and
    newline as they are; everything else escaped, a C0 control as `\\x1b`, other
    code points as `\\u202e`, a byte that was not UTF-8 as `\\xff`. Escaping twice
    changes nothing more."""
    if value.isascii() and value.isprintable():
        return value
    return _LOOKED_AT.sub(_visible, value)


def _visible(match: re.Match[str]) -> str:
    import unicodedata

    char = match.group()
    if unicodedata.category(char) not in _ESCAPED:
        return char
    code = ord(char)
    if code < 0x20:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return _surrogate(match)
    return f"\\u{code:04x}"
