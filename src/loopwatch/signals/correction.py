"""`correction`: the harness has to tell the model the same thing again and again.

"No such tool: X", "Please always provide EXACTLY ONE action": one correction given
`threshold` times means the model is not taking it in. Given that often in a row (no
tool call got through between them), it is a loop that may be stopped. Scattered
through a run, it is only flagged: healthy mini-swe-agent runs in the labelled corpus
draw up to 15 format corrections over a long session and still finish, while the one
runaway of this kind drew 26 in a row. Counts reset at a new user message only.
"""

from __future__ import annotations


from typing import NamedTuple

from ..finding import Finding
from .base import Signal

__all__ = ["CorrectionSignal"]

_MAX_KINDS = 64


class Params(NamedTuple):
    #: Times one correction is given. 3: twice can be bad luck, a third time is a pattern.
    threshold: int = 3

    @property
    def enabled(self) -> bool:
        return self.threshold > 0

    def check(self) -> str | None:
        if self.threshold == 1 or self.threshold < 0:
            return "threshold: must be 0 (off) or 2 or more"
        return None


class CorrectionSignal(Signal):
    name = "correction"
    Params = Params

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._counts: dict[bytes, tuple[int, float, int]] = {}
        self._row: tuple[bytes, int, int] | None = None  # message, count in a row, tool calls then
        self.most = 0
        self.most_in_row = 0

    def on_correction(self, message: bytes, at: float, index: int) -> Finding | None:
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
        scattered = in_row < self.params.threshold
        return Finding(
            signal=self.name,
            severity=count / self.params.threshold,
            key=int.from_bytes(message[:6], "little") ^ (started_index if scattered else -started_index - 1),
            description=f"the harness gave the same correction {count} times"
            + ("" if scattered else f", {in_row} in a row"),
            can_stop=not scattered,
            can_block=not scattered,
            repeats=count,
            started_at=started_at,
            at=at,
            started_index=started_index,
            index=index,
            hint="the harness keeps rejecting your reply for the same reason; read its message and follow the "
            "required format exactly",
        )

    def reset(self) -> None:
        self._counts.clear()
        self._row = None

    def calibration(self) -> dict:
        return {"correction_most": self.most, "correction_most_in_row": self.most_in_row}
