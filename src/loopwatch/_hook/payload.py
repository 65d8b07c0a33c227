"""Reading one hook payload from stdin: bounded, validated, and trimmed.

Both hosts send one JSON object per call. What we rely on, from the public docs
(Claude Code "Hooks reference", code.claude.com/docs/en/hooks; Codex "Hooks",
developers.openai.com/codex/hooks, and the JSON schemas in openai/codex
codex-rs/hooks/schema/generated/):

- every event: `session_id`, `cwd`, `hook_event_name`, `transcript_path`;
  Codex adds `turn_id` and `model` (its tool events require `turn_id`; Claude Code
  never sends it, which is how `auto` tells the hosts apart);
- inside a sub-agent both hosts add `agent_id` (and `agent_type`);
- PreToolUse: `tool_name`, `tool_input`, `tool_use_id`;
- PostToolUse: the same plus `tool_response` (any JSON value). Codex's is the bare
  output string with no exit code (0.171.0; its shell tool is `Bash` there): a
  failure is read from the rollout at `transcript_path` (`hosts.codex`);
- PostToolUseFailure (Claude Code): `error` (a string; some versions and the SDK
  call it `error_message`) and `is_interrupt`;
- PostToolBatch (Claude Code): one array of the batch's calls. The reference and
  the SDK disagree on its name and fields (`tool_calls` or `tool_results`; results
  as `tool_response`/`tool_result`, errors as `error`/`error_message`), so all
  spellings are read.

How Claude Code reports a failure, an interruption or a sub-agent is
`loopwatch._hosts.claude_code`'s to say (what the real CLI sends); this module only
validates and trims.
- UserPromptSubmit: `prompt` (never read); Stop/SubagentStop: nothing we need.

Nothing here keeps a payload: the caller digests it and lets it go. Inputs and
results are trimmed before the monitor sees them (see `trim`), and stdin is read
up to `limit` bytes only; a larger payload is drained and reported as oversize.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, BinaryIO, Literal, overload

from .._hosts import claude_code, codex

__all__ = ["EVENTS", "Call", "Payload", "PayloadError", "parse", "read_stdin", "trim"]

#: The events `loopwatch hook` understands (those it is installed for, in either host);
#: any other is allowed untouched.
EVENTS = tuple(dict.fromkeys(claude_code.HOOK_EVENTS + codex.HOOK_EVENTS))

_STRING_KEEP = 4096  # a long string keeps this many characters of head and of tail
_MAX_ITEMS = 256  # a long list or object keeps this many items (then a count)
_MAX_DEPTH = 16
_CHUNK = 1 << 20
_PROBE = 64 * 1024  # how much of an oversize payload's head and tail is searched
_FIELD = rb'"(hook_event_name|session_id|agent_id|tool_name|tool_use_id|turn_id)"\s*:\s*"([^"\\]{1,200})"'


class PayloadError(ValueError):
    """The payload is not a hook event we can read; the message says why."""


class Call:
    """One tool call as the host reported it (trimmed). A plain class, not a
    dataclass: this module is imported on every hook call, and each dataclass costs
    about a millisecond to build."""

    __slots__ = ("call_id", "error", "input", "interrupted", "name", "result", "spawned")

    def __init__(
        self,
        name: str,
        input: Any,
        call_id: str | None = None,
        result: Any = None,
        error: bool = False,
        interrupted: bool = False,
        spawned: str | None = None,
    ) -> None:
        self.name, self.input, self.call_id = name, input, call_id
        self.result, self.error, self.interrupted = result, error, interrupted
        self.spawned = spawned  # the sub-agent this call ran (Claude Code's Agent tool), when known


class Payload:
    """One hook event. `host` is "claude-code" or "codex"; `agent` is "" for the main
    agent; `calls` holds the call(s) of a tool event (a batch may hold several);
    `oversize` says stdin was larger than the limit and only the identifying fields
    could be read."""

    __slots__ = ("agent", "calls", "cwd", "event", "host", "oversize", "session")

    def __init__(
        self,
        host: str,
        event: str,
        session: str,
        agent: str,
        cwd: str | None,
        calls: tuple[Call, ...] = (),
        oversize: bool = False,
    ) -> None:
        self.host, self.event, self.session, self.agent, self.cwd = host, event, session, agent, cwd
        self.calls, self.oversize = calls, oversize


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


def parse(data: bytes, host: str = "auto", oversize: bool = False) -> Payload:
    """Validate one payload. `host` is "claude-code", "codex" or "auto"."""
    if oversize:
        return _parse_oversize(data, host)
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PayloadError(f"not JSON: {exc}") from None
    if b"\\u" in data and _LONE.search(data):
        raw = _scrub(raw)
    if not isinstance(raw, dict):
        raise PayloadError(f"expected a JSON object, got {type(raw).__name__}")
    event = _text(raw, "hook_event_name", required=True)
    session = _text(raw, "session_id", required=True)
    if host == "auto":
        host = "codex" if "turn_id" in raw else "claude-code"
    agent = _text(raw, "agent_id") or ""
    if host == "claude-code":
        agent = claude_code.payload_agent(raw)
    cwd = _text(raw, "cwd")
    calls: tuple[Call, ...] = ()
    if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        calls = (_call(raw, event, host),)
    elif event == "PostToolBatch":
        items = raw.get("tool_calls", raw.get("tool_results"))
        if not isinstance(items, list):
            raise PayloadError("PostToolBatch: expected a list in tool_calls")
        calls = tuple(_call(item, event, host) for item in items[:_MAX_ITEMS] if isinstance(item, dict))
    return Payload(host=host, event=event, session=session, agent=agent, cwd=cwd, calls=calls)


# A \uD800-\uDFFF escape: JSON allows a lone one, which no UTF-8 text can hold.
_LONE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _scrub(value: Any) -> Any:
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


def _parse_oversize(data: bytes, host: str) -> Payload:
    found: dict[str, str] = {}
    for match in re.finditer(_FIELD, data):
        found.setdefault(match.group(1).decode(), match.group(2).decode("utf-8", "replace"))
    if "hook_event_name" not in found or "session_id" not in found:
        raise PayloadError("oversize payload without a readable hook_event_name and session_id")
    if host == "auto":
        host = "codex" if "turn_id" in found else "claude-code"
    event = found["hook_event_name"]
    calls: tuple[Call, ...] = ()
    if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure") and "tool_name" in found:
        # The input cannot be read: a unique placeholder, so this call never looks
        # like any other (the core does the same for values it cannot digest).
        import os

        marker = {"loopwatch": "oversize", "nonce": os.urandom(8).hex()}
        calls = (Call(found["tool_name"], marker, found.get("tool_use_id"), None, event == "PostToolUseFailure"),)
    return Payload(host, event, found["session_id"], found.get("agent_id", ""), None, calls, oversize=True)


@overload
def _text(raw: dict[str, Any], key: str, required: Literal[True]) -> str: ...
@overload
def _text(raw: dict[str, Any], key: str, required: bool = False) -> str | None: ...
def _text(raw: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise PayloadError(f"missing {key}")
        return None
    if not isinstance(value, str) or (required and not value):
        raise PayloadError(f"{key}: expected a non-empty string")
    return value


def _call(raw: dict[str, Any], event: str, host: str = "codex") -> Call:
    name = raw.get("tool_name")
    if not isinstance(name, str) or not name:
        raise PayloadError(f"{event}: missing tool_name")
    call_id = raw.get("tool_use_id")
    call_id = call_id if isinstance(call_id, str) else None
    tool_input = trim(raw.get("tool_input"))
    if host == "claude-code":
        return _claude_call(raw, event, name, call_id, tool_input)
    failure = raw.get("error", raw.get("error_message"))
    if event == "PostToolUseFailure" or (event == "PostToolBatch" and failure):
        return Call(name, tool_input, call_id, trim(failure), True, bool(raw.get("is_interrupt")))
    if event == "PreToolUse":
        return Call(name, tool_input, call_id)
    result = raw.get("tool_response", raw.get("tool_result"))
    failed = _failed(result)
    if not failed and codex.is_shell(name) and codex.output_exit_code(result) is None:
        # Codex's PostToolUse gives the bare output, no exit code: the rollout has it.
        code = codex.rollout_exit_code(raw.get("transcript_path"), call_id)
        failed = code is not None and code != 0
    return Call(name, tool_input, call_id, trim(result), failed)


def _claude_call(raw: dict[str, Any], event: str, name: str, call_id: str | None, tool_input: Any) -> Call:
    if event == "PreToolUse":
        return Call(name, tool_input, call_id)
    if event == "PostToolUseFailure":
        result = raw.get("error", raw.get("error_message"))
    else:
        result = raw.get("tool_response", raw.get("tool_result"))
        if event == "PostToolBatch" and (raw.get("error") or raw.get("error_message")):
            result = raw.get("error", raw.get("error_message"))
    spawned = claude_code.spawned_agent(name, raw.get("tool_response")) if event == "PostToolUse" else None
    return Call(
        name,
        tool_input,
        call_id,
        trim(result),
        claude_code.call_failed(event, raw),
        claude_code.interrupted(event, raw),
        spawned,
    )


def _failed(result: Any) -> bool:
    """Did a completed call fail, by what its result says? Claude Code sends failures
    to PostToolUseFailure, so this matters for Codex, whose PostToolUse covers both:
    the rule is the reader's, `hosts.codex.output_status`."""
    return bool(codex.output_status(result)[1])


def trim(value: Any, depth: int = 0) -> Any:
    """A copy of a JSON value with bounded size: long strings keep their head and
    tail (4 KiB each), long lists and objects their first 256 items, deep nesting
    stops at 16 levels. Enough to tell calls and results apart, never the whole of
    a huge file body or log: whatever is cut is replaced by a digest of all of it,
    so two values that differ only in what was cut stay different."""
    if isinstance(value, str):
        if len(value) <= 2 * _STRING_KEEP:
            return value
        return f"{value[:_STRING_KEEP]}\n…[{len(value)} chars {_digest(value)}]…\n{value[-_STRING_KEEP:]}"
    if depth >= _MAX_DEPTH and isinstance(value, (dict, list)):
        return f"…[nested {_digest(value)}]…"
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): trim(v, depth + 1) for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            out["…"] = f"{len(items) - _MAX_ITEMS} more keys, {_digest(dict(items[_MAX_ITEMS:]))}"
        return out
    if isinstance(value, list):
        out_list = [trim(v, depth + 1) for v in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            out_list.append(f"…[{len(value) - _MAX_ITEMS} more items, {_digest(value[_MAX_ITEMS:])}]")
        return out_list
    return value


_DIGEST_CHARS = 1 << 16  # a string is hashed in pieces: no second copy of a large input


def _digest(value: Any) -> str:
    """A digest of the whole of a JSON value, read without recursion (the nesting a
    payload may have is the parser's limit, not ours) and in bounded pieces."""
    import hashlib

    hasher = hashlib.blake2b(digest_size=8)
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            hasher.update(b"s%d:" % len(item))
            for start in range(0, len(item), _DIGEST_CHARS):
                hasher.update(item[start : start + _DIGEST_CHARS].encode("utf-8", "surrogatepass"))
        elif isinstance(item, dict):
            hasher.update(b"{%d" % len(item))
            for key, sub in reversed(list(item.items())):
                stack.append(sub)
                stack.append(str(key))
        elif isinstance(item, list):
            hasher.update(b"[%d" % len(item))
            stack.extend(reversed(item))
        else:
            hasher.update(b"v" + repr(item).encode())
    return hasher.hexdigest()
