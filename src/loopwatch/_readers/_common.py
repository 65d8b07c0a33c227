"""Helpers the transcript readers share: loading whole-JSON files, shell heuristics."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, BinaryIO

import orjson

from .._core.events import ToolCall
from .._files import read_file
from .base import ReadError

__all__ = [
    "empty_search",
    "iso_seconds",
    "load_json",
    "mapping_at",
    "read_bytes",
    "shell_call",
    "shell_error",
    "shell_writes",
]


def read_bytes(path: str, stream: BinaryIO | None = None) -> bytes:
    """A whole file (or stream); ReadError when it cannot be read or is empty."""
    try:
        if stream is not None:
            data = stream.read()
        else:
            data = read_file(path)
    except OSError as exc:
        raise ReadError(f"cannot read: {exc.strerror or exc}") from exc
    if not data.strip():
        raise ReadError("empty file")
    return data


def mapping_at(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The JSON object under `key`, or a new empty one when it is absent, null or not an
    object: a reader's way down a record it does not trust. It does not copy the object."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def load_json(path: str, stream: BinaryIO | None = None) -> Any:
    """A whole-JSON transcript (these formats are one object, not lines)."""
    data = read_bytes(path, stream)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ReadError(f"not valid JSON (truncated?): {exc}") from exc


# Shell and tool outputs that mean the call failed. Matched against the first lines of
# an observation only: a test log further down that mentions "error" is not a failure
# of the call itself.
_ERROR = re.compile(
    r"command not found|No such file or directory|: not found|not found\b|No matches found"
    r"|Your proposed edit has introduced new syntax error|^Usage: |^usage: |^Error\b|^error:|\bERROR\b"
    r"|Traceback \(most recent call last\)|unexpected EOF|syntax error|EXECUTION TIMED OUT"
    r"|Permission denied|cannot open|Unable to locate|is not defined correctly|^fatal: |Exception in thread",
    re.MULTILINE,
)
_HEAD = 600


def shell_error(observation: str) -> bool:
    """Does this observation read as a failed call? (For formats with no error flag.)"""
    return _ERROR.search(observation[:_HEAD]) is not None


# Shell commands that change files or the environment: a run after one of these may
# rightly give another result, so it counts as progress.
_WRITES = re.compile(
    r"\bsed\s+-i|(?<![0-9&])>\s*(?!/dev/null|&)[\w./~$\"'-]|\btee\b|\bpatch\b|\bgit\s+(?:apply|checkout|restore|stash|reset|am|commit)"
    r"|\b(?:pip|pip3|npm|apt|apt-get|yum|conda|cargo|go)\s+(?:install|add|get)\b|\bmv\s|\bcp\s|\brm\s|\bmkdir\b|\btouch\b"
    r"|\bcat\s*<<|\bwrite_text\("
)
# `open(..., "w")`: the call's argument list up to its first `)`, then a mode looked for
# in it. Two steps, not `open\([^)]*['"][wa]['"]` in `_WRITES`: that restarted the scan
# to the next `)` at every `open(` (quadratic on `open(open(open(...`); `finditer`
# never looks inside a span it has passed, and an `open(` inside a span that held no
# mode cannot hold one either (its span is a suffix of the outer one).
_OPEN_CALL = re.compile(r"open\(([^)]*)")
_WRITE_MODE = re.compile(r"['\"][wa]['\"]")


# Searches whose empty output means "nothing found": grep, which and locate exit 1 then;
# find prints nothing. An empty answer to a search is a failed search.
_SEARCH = re.compile(r"^\s*(?:sudo\s+)?(?:find|grep|egrep|rg|which|whereis|locate|ls)\b")


def empty_search(command: str, observation: str) -> bool:
    return not observation.strip() and _SEARCH.match(command) is not None


def shell_writes(command: str) -> bool:
    if _WRITES.search(command) is not None:
        return True
    return "open(" in command and any(_WRITE_MODE.search(m.group(1)) for m in _OPEN_CALL.finditer(command))


def iso_seconds(value: Any) -> float | None:
    """ISO-8601 timestamp (or a Unix number) -> seconds, None when absent or unreadable."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    try:
        # The replace also reads a date-only `2024-01-01Z`, which fromisoformat rejects.
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()  # noqa: FURB162
    except ValueError:
        return None


_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def shell_call(command: str, observation: str, source_ref: str, **fields: Any) -> ToolCall:
    """A `bash` tool call from a command and an observation carrying
    `<returncode>N</returncode>` (mini-swe-agent and its console log): non-zero is a
    failure, and a successful command that writes files is progress."""
    match = _RETURNCODE.search(observation[:200])
    error = match is not None and int(match.group(1)) != 0
    return ToolCall(
        name="bash",
        input={"command": command},
        result=observation,
        error=error,
        changed=("?",) if not error and shell_writes(command) else (),
        source_ref=source_ref,
        **fields,
    )
