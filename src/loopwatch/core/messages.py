"""Words: what the model is told, and how a person reads a finding.

The model-facing message may name the call being repeated (a short label built from
the event at hand, which the model has just written itself); nothing here is stored.
"""

from __future__ import annotations

from typing import Any

from .finding import Finding
from .verdict import Action

__all__ = ["duration", "for_model", "label", "tools_phrase"]

_LABEL_FIELDS = ("command", "cmd", "file_path", "path", "pattern", "query", "url")
_LABEL_MAX = 80


def label(name: str, value: Any) -> str:
    """A short label for a call: `pytest -x`, `Read a.py`, or the tool name."""
    text = None
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        for key in _LABEL_FIELDS:
            item = value.get(key)
            if isinstance(item, str) and item:
                text = item if key in ("command", "cmd") else f"{name} {item}"
                break
    if not text:
        return name
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_MAX else text[: _LABEL_MAX - 1] + "…"


def duration(seconds: float) -> str:
    """`9m14s`, `2h03m`, `42s`."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def tools_phrase(tools: tuple[str, ...]) -> str:
    return ", ".join(tools)


def for_model(finding: Finding, action: Action, call_label: str = "") -> str:
    """The message for the model: what it is circling, and what to do instead."""
    what = finding.description
    if call_label and finding.period <= 1 and finding.signal in ("repeat", "echo"):
        what = f"you ran `{call_label}` {finding.repeats} times and got the same result each time"
    head = {
        Action.NUDGE: "loopwatch: you appear to be going in circles: ",
        Action.BLOCK: "loopwatch blocked this call: ",
        Action.STOP: "loopwatch stopped the run: ",
    }.get(action, "loopwatch: ")
    hint = finding.hint or "change your approach before trying again"
    return f"{head}{what}. {hint[0].upper()}{hint[1:]}."
