"""Reading one hook payload from stdin: bounded, parsed, and handed to its host.

Every host sends one JSON object per call; what its fields mean is the host module's to
say (`loopwatch._hosts.<host>.HOST.parse`, from what the real CLI sends). This module only
reads and bounds:

- stdin is read up to `limit` bytes; a larger payload is drained, and only its
  identifying fields (found in its first and last 64 KiB) are read (`Host.parse_oversize`);
- nesting deeper than the parser can follow (an input the agent shapes 1,000 levels deep)
  is cut, below the parser, to a digest of the text it held (`_shallow`): the call is
  still counted, and two such calls with the same input are still the same call;
- a lone surrogate escape (`\\ud800`, valid JSON, no valid text) is spelled out
  (`_scrub`), so every id, name and input can be encoded wherever it goes next;
- `auto` tells Claude Code from Codex by `turn_id`, which only Codex sends. Every other
  host is named on the hook's command line by `loopwatch install`.

Nothing here keeps a payload: the caller digests it and lets it go.
"""

from __future__ import annotations

import json
import re
import sys
from typing import BinaryIO

from .._hosts import HOSTS
from .._hosts import host as host_named
from .._hosts.base import GUARD_EVENTS, Call, Payload, PayloadError, digest, trim

__all__ = ["EVENTS", "Call", "Payload", "PayloadError", "parse", "read_stdin", "trim"]

#: The guard's events: any other is allowed untouched.
EVENTS = GUARD_EVENTS

_CHUNK = 1 << 20
_PROBE = 64 * 1024  # how much of an oversize payload's head and tail is searched
#: Containers nested deeper than this are cut before parsing (the C parser recurses and
#: gives up near Python's recursion limit, about 1,000; `trim` keeps 16 levels anyway).
_PARSE_DEPTH = 64


def read_stdin(limit: int, stream: BinaryIO | None = None) -> tuple[bytes, bool]:
    """Read at most `limit` bytes; drain the rest. Returns (data, oversize).
    An oversize payload keeps its first and last 64 KiB only, for `parse`."""
    stream = stream if stream is not None else sys.stdin.buffer
    data = stream.read(limit + 1)
    if len(data) <= limit:
        return data, False
    head, tail = data[:_PROBE], data[-_PROBE:]
    while True:  # drain, so the host never blocks writing to us
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        tail = (tail + chunk)[-_PROBE:]
    return head + b"\n" + tail, True


def parse(data: bytes, host: str = "auto", oversize: bool = False, event: str | None = None) -> Payload:
    """Read one payload of `host` (a name of `HOSTS`, or "auto": Claude Code or Codex);
    `event` is the event's name when the hook's command line gives it."""
    if oversize:
        return _parse_oversize(data, host, event)
    try:
        try:
            raw = _loads(data)
        except RecursionError:
            raw = _loads(_shallow(data))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise PayloadError(f"expected a JSON object, got {type(raw).__name__}")
    if host == "auto":
        host = "codex" if "turn_id" in raw else "claude-code"
    if host not in HOSTS:
        raise PayloadError(f"unknown host {host!r}")
    return host_named(host).parse(raw, event)


def _loads(data: bytes) -> object:
    raw = json.loads(data)
    return _scrub(raw) if b"\\u" in data and _LONE.search(data) else raw


# A string (with its escapes; an unclosed one runs to the end), or a bracket: what
# `_shallow` steps through. Possessive, and never failing once a string is open, so no
# text makes it scan the same characters twice.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*+(?:"|\Z)|[\[\]{}]', re.DOTALL)


def _shallow(data: bytes) -> bytes:
    """The JSON text with every container nested deeper than `_PARSE_DEPTH` replaced by a
    string naming a digest of its text: parseable without deep recursion, and the same
    input always gives the same text. Text that is not JSON stays not JSON."""
    out: list[bytes] = []
    depth = 0
    cut_at = -1  # where the container being cut began, or -1
    last = 0
    for token in _TOKENS.finditer(data):
        kind = token.group()[:1]
        if kind == b'"':
            continue
        if kind in (b"[", b"{"):
            depth += 1
            if depth == _PARSE_DEPTH + 1 and cut_at < 0:
                out.append(data[last : token.start()])
                cut_at = token.start()
        else:
            if depth == _PARSE_DEPTH + 1 and cut_at >= 0:
                text = data[cut_at : token.end()]
                out.append(json.dumps(f"…[nested {digest(text.decode('utf-8', 'replace'))}]…").encode())
                last = token.end()
                cut_at = -1
            depth -= 1
    if cut_at >= 0:  # unbalanced: cut to the end, which the parser then refuses
        out.append(data[last:cut_at])
        return b"".join(out)
    out.append(data[last:])
    return b"".join(out)


# A \uD800-\uDFFF escape: JSON allows a lone one, which no UTF-8 text can hold.
_LONE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _scrub(value: object) -> object:
    """The value with each lone surrogate spelled out as its escape (a backslash,
    then `ud800`): still told apart, and encodable wherever an id, a name or an
    input goes next."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


_FIELD = rb'"([A-Za-z_]{1,40})"\s*:\s*"([^"\\]{1,200})"'


def _parse_oversize(data: bytes, host: str, event: str | None) -> Payload:
    found: dict[str, str] = {}
    for match in re.finditer(_FIELD, data):
        found.setdefault(match.group(1).decode(), match.group(2).decode("utf-8", "replace"))
    if host == "auto":
        host = "codex" if "turn_id" in found else "claude-code"
    if host not in HOSTS:
        raise PayloadError(f"unknown host {host!r}")
    return host_named(host).parse_oversize(found, event)
