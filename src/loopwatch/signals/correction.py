"""`correction`: the harness has to tell the model the same thing again and again.

"No such tool: X", "Please always provide EXACTLY ONE action": one correction given
`threshold` times, in a row or not, means the model is not taking it in. Counts reset
at a new user message only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..finding import Finding
from .base import Signal

__all__ = ["CorrectionSignal"]

_MAX_KINDS = 64


@dataclass(frozen=True)
class Params:
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
        self.most = 0

    def on_correction(self, message: bytes, at: float, index: int) -> Finding | None:
        count, started_at, started_index = self._counts.get(message, (0, at, index))
        count += 1
        if message not in self._counts and len(self._counts) >= _MAX_KINDS:
            self._counts.pop(next(iter(self._counts)))
        self._counts[message] = (count, started_at, started_index)
        self.most = max(self.most, count)
        if count < 2:
            return None
        return Finding(
            signal=self.name,
            severity=count / self.params.threshold,
            key=int.from_bytes(message[:6], "little"),
            description=f"the harness gave the same correction {count} times",
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

    def calibration(self) -> dict:
        return {"correction_most": self.most}
