"""`correction`: the harness has to tell the model the same thing again and again.

Two kinds, told apart by what the correction says:
- an invented tool ("No such tool available: X", "Unknown tool: X"): the model calls a
  tool that does not exist, and the tool's name is in the correction. The same
  invented tool refused `threshold` times, in a row or scattered between other calls,
  is the same rejected call resubmitted. Grade: proof; it nudges at the threshold and
  stops at the next refusal.
- a generic format correction ("Please always provide EXACTLY ONE action"): the harness
  is already correcting the model, and models recover from it. In the shared corpus
  every session with many of them solved its task: up to 15 over a long session, up
  to 8 in a row, and the one runaway (31, 9 in a row) solved it too. Grade: suspicion,
  and it never stops or blocks: `threshold` in a row (no tool call got through
  between them) earn one nudge; scattered ones only a warning.
Counts reset at a new user message only.
Evidence: the most corrections in a row and in all of each session, printed by
`loopwatch calibrate --labels ../shared/corpus/labels.tsv`.
"""

from __future__ import annotations

from typing import Any

from ..finding import PROOF, SUSPICION, Finding
from ..messages import InventedTool, SameCorrection
from .base import Signal
from .params import Count, SignalParams

__all__ = ["CorrectionSignal"]

_MAX_KINDS = 64


class Params(SignalParams):
    #: Times one correction is given (in a row, for format corrections). 3: twice can
    #: be bad luck, a third time is a pattern. In the shared corpus 4 of the 261
    #: sessions that solved their task drew 3 or more format corrections in a row.
    threshold: Count = 3


class CorrectionSignal(Signal[Params]):
    name = "correction"
    grade = SUSPICION

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._counts: dict[bytes, tuple[int, float, int]] = {}
        self._row: tuple[bytes, int, int] | None = None  # message, count in a row, tool calls then
        self.most = 0
        self.most_in_row = 0

    def on_correction(self, message: bytes, at: float, index: int, invented: bool = False) -> Finding | None:
        row = self._row
        # In a row: the same correction, and no tool call completed since the last one.
        if row is not None and row[0] == message and row[2] == index:
            self._row = (message, row[1] + 1, index)
        else:
            self._row = (message, 1, index)
        in_row = self._row[1]
        self.most_in_row = max(self.most_in_row, in_row)
        count, started_at, started_index = self._counts.get(message, (0, at, index))
        count += 1
        if message not in self._counts and len(self._counts) >= _MAX_KINDS:
            self._counts.pop(next(iter(self._counts)))
        self._counts[message] = (count, started_at, started_index)
        self.most = max(self.most, count)
        if count < 2:
            return None
        scattered = in_row < self.params.threshold and not invented
        if scattered:
            severity = min(count / self.params.threshold, 0.99)  # scattered format corrections: a warning at most
        else:
            severity = (count if invented else in_row) / self.params.threshold
        return Finding(
            signal=self.name,
            severity=severity,
            key=int.from_bytes(message[:6], "little")
            ^ (started_index if scattered or invented else -started_index - 1),
            message=InventedTool(count) if invented else SameCorrection(count, 0 if scattered else in_row),
            can_stop=invented,
            can_block=invented,
            grade=PROOF if invented else SUSPICION,
            repeats=count,
            started_at=started_at,
            at=at,
            started_index=started_index,
            index=index,
        )

    def reset(self) -> None:
        self._counts.clear()
        self._row = None

    def calibration(self) -> dict[str, Any]:
        return {"correction_most": self.most, "correction_most_in_row": self.most_in_row}
