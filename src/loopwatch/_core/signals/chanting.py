"""`chanting`: the model's text repeats itself within one response.

A degenerate generation says the same passage over and over ("Let me check the file.
Let me check the file. ..."). Passages are prose sentences and lines; code blocks,
tables and lists are skipped (see `loopwatch._core.text`). A passage, or a cycle of up to
`max_period` passages, repeated `repeats` times in a row within a response is chanting.

Grade: suspicion. Text that repeats itself is a degenerate generation, not yet a
repeated action: it nudges, and stops only when corroborated.
Evidence: the 2024 corpus holds no chanting (alone it catches none of its 62 labelled
loops and stops no session: its row of `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv`);
what it does is pinned on written fixtures (tests/test_core_signal_output.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from ..finding import SUSPICION, Finding
from ..messages import Chant
from ..periodic import TailCycles
from .base import Signal
from .params import Between, Count, SignalParams

__all__ = ["Chanting"]


class Params(SignalParams):
    #: Copies in a row within one response. Prose repeats a sentence twice for
    #: emphasis, seldom four times in a row.
    repeats: Count = 4
    max_period: Annotated[int, Between(1, 16)] = 4


class Chanting(Signal[Params]):
    name = "chanting"
    grade = SUSPICION
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
            message=Chant(period, copies),
            repeats=copies,
            period=period,
            started_at=self._start,
            at=at,
            started_index=index,
            index=index,
            can_block=False,
        )

    def reset_response(self) -> None:
        self._tail.clear()
        self._responses += 1

    def reset(self) -> None:
        self.reset_response()

    def calibration(self) -> dict[str, Any]:
        return {"chanting_most": self.most}
