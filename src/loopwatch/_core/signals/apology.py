"""`apology`: the model apologises turn after turn.

An apology now and then is manners. `threshold` model messages in a row that each
apologise ("I apologize", "sorry", "my mistake", "please disregard (3)") mean the model
knows it is failing and keeps doing it. Scattered apologies are only flagged (half
severity at most).

Grade: suspicion. An apology is what the model says, not what it does: it nudges, and
stops only when corroborated.
Evidence: alone it catches none of the 62 labelled loops of the 2024 corpus and stops
no session there (its row of `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv`); what it
does is pinned on written fixtures (tests/test_core_signal_apology.py).
"""

from __future__ import annotations

from typing import Any

from ..finding import SUSPICION, Finding
from ..messages import Apologies
from .base import Signal
from .params import Count, SignalParams

__all__ = ["Apology"]


class Params(SignalParams):
    #: Apologising messages in a row.
    threshold: Count = 3


class Apology(Signal[Params]):
    name = "apology"
    grade = SUSPICION

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._streak = 0
        self._started = (0.0, 0)
        self.total = 0
        self.most = 0

    def on_text(self, apology: bool, at: float, index: int) -> Finding | None:
        if not apology:
            self._streak = 0
            return None
        if self._streak == 0:
            self._started = (at, index)
        self._streak += 1
        self.total += 1
        self.most = max(self.most, self._streak)
        if self._streak < 2:
            return None
        return Finding(
            signal=self.name,
            severity=self._streak / self.params.threshold,
            key=self._started[1] * 7919 + int(self._started[0]),
            message=Apologies(self._streak),
            repeats=self._streak,
            started_at=self._started[0],
            at=at,
            started_index=self._started[1],
            index=index,
            can_block=False,
        )

    def reset(self) -> None:
        self._streak = 0

    def calibration(self) -> dict[str, Any]:
        return {"apology_most": self.most, "apology_total": self.total}
