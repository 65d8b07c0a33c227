"""`chanting`: the model's text repeats itself within one response.

A degenerate generation says the same passage over and over ("Let me check the file.
Let me check the file. ..."). Passages are prose sentences and lines; code blocks,
tables and lists are skipped (see `loopwatch.core.text`). A passage, or a cycle of up to
`max_period` passages, repeated `repeats` times in a row within a response is chanting.

Grade: suspicion. Text that repeats itself is a degenerate generation, not yet a
repeated action: it nudges, and stops only when corroborated.
"""

from __future__ import annotations


from typing import NamedTuple

from ..finding import SUSPICION, Finding
from ..periodic import TailCycles
from .base import Signal
from .common import count_problem

__all__ = ["Chanting"]


class Params(NamedTuple):
    #: Copies in a row within one response. Prose repeats a sentence twice for
    #: emphasis, seldom four times in a row.
    repeats: int = 4
    max_period: int = 4

    @property
    def enabled(self) -> bool:
        return self.repeats > 0

    def check(self) -> str | None:
        if problem := count_problem("repeats", self.repeats):
            return problem
        if not 1 <= self.max_period <= 16:
            return "max_period: must be between 1 and 16"
        return None


class Chanting(Signal):
    name = "chanting"
    grade = SUSPICION
    Params = Params
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._tail = TailCycles(params.max_period)
        self._responses = 0
        self._start = 0.0
        self.most = 0

    def on_passage(self, passage: bytes, at: float, index: int) -> Finding | None:
        period, copies, _ = self._tail.push(passage)
        self.most = max(self.most, copies)
        if copies < 2:
            self._start = at
            return None
        return Finding(
            signal=self.name,
            severity=copies / self.params.repeats,
            key=self._responses * 1009 + period,
            description=f"the model repeated the same {'passage' if period == 1 else f'{period} passages'} "
            f"{copies} times in one response",
            repeats=copies,
            period=period,
            started_at=self._start,
            at=at,
            started_index=index,
            index=index,
            can_block=False,
            hint="you are repeating yourself; stop, summarise what you know, and take one concrete next step",
        )

    def reset_response(self) -> None:
        self._tail.clear()
        self._responses += 1

    def reset(self) -> None:
        self.reset_response()

    def calibration(self) -> dict:
        return {"chanting_most": self.most}
