"""ATIF (Agent Trajectory Interchange Format) `trajectory.json`.

`steps[]`, each with `step_id`, ISO `timestamp`, `source` (user | agent | system),
`message`, `tool_calls[{tool_call_id, function_name, arguments}]` and
`observation.results[{source_call_id, content}]`. Each tool call becomes a `ToolCall`
with `source_ref = "steps[i]"` (0-based index into `steps[]`; `Session.meta["step_of"]`
maps it to `step_id`). A failure is `extra.tool_result_is_error`, or a result marked
`<tool_use_error>`; a write is a successful call of a tool in `hosts.WRITERS`.
User steps are user messages; agent text is model text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import ModelText, ToolCall, UserMessage
from .._hosts import WRITERS
from ._common import iso_seconds, load_json, mapping_at
from .base import ReadError, Session
from .jsonio import keys_at, tokens_of

__all__ = ["NAME", "read", "sniff"]

NAME = "atif"

_SCHEMA = re.compile(rb'"schema_version"\s*:\s*"ATIF')


def sniff(path: str, head: bytes) -> bool:
    """One JSON document whose top-level `schema_version` names ATIF."""
    text = head.lstrip()
    return text[:1] == b"{" and _SCHEMA.search(text) is not None and "schema_version" in keys_at(text, 1)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    data = load_json(path, stream)
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ReadError("not an ATIF trajectory: no steps[] list")
    metrics = mapping_at(data, "final_metrics")
    tokens = tokens_of(metrics, "total_prompt_tokens", "total_completion_tokens")
    session = Session(format=NAME, session=str(data.get("session_id") or path), events=(), tokens=tokens or None)
    step_of: dict[str, int] = {}
    session.meta["step_of"] = step_of
    session.events = _events(data["steps"], step_of, session.skipped)
    yield session


def _events(steps: list[Any], step_of: dict[str, int], skipped: list[str]) -> Iterator[Any]:
    for i, step in enumerate(steps):
        ref = f"steps[{i}]"
        if not isinstance(step, dict):
            skipped.append(f"{ref}: not an object")
            continue
        if isinstance(step.get("step_id"), int):
            step_of[ref] = step["step_id"]
        at = iso_seconds(step.get("timestamp"))
        if step.get("source") == "user":
            yield UserMessage(at=at, source_ref=ref)
            continue
        calls = step.get("tool_calls") or []
        message = step.get("message")
        if not calls and isinstance(message, str) and message:
            yield ModelText(message, at=at, source_ref=ref)
        observation = mapping_at(step, "observation")
        results = {
            r.get("source_call_id"): r.get("content") for r in observation.get("results") or [] if isinstance(r, dict)
        }
        extra = mapping_at(step, "extra")
        metrics = mapping_at(step, "metrics")
        tokens = tokens_of(metrics, "prompt_tokens", "completion_tokens") or None
        for call in calls:
            if not isinstance(call, dict):
                continue
            name = str(call.get("function_name") or "tool")
            arguments = call.get("arguments")
            result = results.get(call.get("tool_call_id"))
            text = result if isinstance(result, str) else ""
            error = bool(extra.get("tool_result_is_error")) or "<tool_use_error>" in text[:200]
            changed: tuple[str, ...] = ()
            if name in WRITERS and not error and isinstance(arguments, dict):
                changed = (str(arguments.get("file_path") or arguments.get("path") or "?"),)
            yield ToolCall(
                name=name,
                input=arguments,
                result=result,
                error=error,
                changed=changed,
                at=at,
                call_id=call.get("tool_call_id"),
                source_ref=ref,
                tokens=tokens,
            )
            tokens = None  # count a step's tokens once
