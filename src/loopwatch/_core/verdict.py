"""What the monitor tells its caller to do: a `Verdict` with an `Action`, and what the
model is told (`for_model`, worded by the classes of `messages`)."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from .finding import Finding
from .messages import Blocked, Nudged, Stopped, Told

__all__ = ["ALLOW", "TOLD", "Action", "Verdict", "for_model"]


class Action(str, Enum):
    """The rungs of the policy ladder, mildest first."""

    ALLOW = "allow"
    WARN = "warn"  # tell the person watching; the model is not told
    NUDGE = "nudge"  # tell the model what it is circling and what to do instead
    BLOCK = "block"  # do not run this call; hand the model `Verdict.tool_result`
    STOP = "stop"  # end the run

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Action.ALLOW: 0, Action.WARN: 1, Action.NUDGE: 2, Action.BLOCK: 3, Action.STOP: 4}


class Verdict(NamedTuple):
    """The answer to one event.

    `message` is addressed to the model (for a nudge, a block or a stop); `description`
    to a person ("the same 4-step action cycle ... repeated 5 times over 9m14s").
    For a block, `tool_result` is a ready tool result to hand the model instead of
    running the tool, so every tool call still gets its result.
    """

    action: Action
    signal: str | None = None
    message: str | None = None
    description: str | None = None
    finding: Finding | None = None
    at: float = 0.0
    index: int = 0  # type: ignore[assignment]  # shadows tuple.index(): the field name is public API
    source_ref: str | None = None

    @property
    def tool_result(self) -> str | None:
        if self.action is Action.BLOCK or self.action is Action.STOP:
            return self.message
        return None

    def __bool__(self) -> bool:  # `if verdict:` reads "if something must be done"
        return self.action is not Action.ALLOW


ALLOW = Verdict(Action.ALLOW)


#: How the model is told of each action that reaches it.
TOLD: dict[Action, type[Told]] = {Action.NUDGE: Nudged, Action.BLOCK: Blocked, Action.STOP: Stopped}


def for_model(finding: Finding, action: Action, call_label: str = "") -> str:
    """What the model is told when the monitor acts on `finding` (a nudge, a block or a
    stop): what it is circling, and what to do instead. `call_label` names the call."""
    return TOLD[action](finding.message, call_label).for_model()
