"""A `Finding`: what one signal saw, and how sure it is."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Finding"]


class Finding(NamedTuple):
    """One signal's report about one streak.

    `severity` is the streak's strength as a fraction of the signal's threshold:
    0.5 is half-way (worth a warning), 1.0 or more is conclusive. `key` identifies the
    streak (the same pattern keeps the same key while it continues), so the policy can
    climb one ladder per streak. `can_stop` is False for signals whose evidence is too
    thin to end a run (they may warn and nudge only).

    Times are event times in seconds (the caller's monotonic clock); `started_index`
    and `index` count tool calls from 1. `tools` lists the tool names involved, the
    most repeated first. `hint` is what the model should do instead.
    """

    signal: str
    severity: float
    key: int
    description: str
    repeats: int = 0
    period: int = 0
    tools: tuple[str, ...] = ()
    started_at: float = 0.0
    at: float = 0.0
    started_index: int = 0
    index: int = 0
    can_stop: bool = True
    can_block: bool = True
    hint: str = ""
    source_ref: str | None = None

    @property
    def conclusive(self) -> bool:
        return self.severity >= 1.0
