"""`repeated_lines`: unstructured output repeating a line, or a cycle of lines.

For agents with no structured events (a CLI's stdout and stderr): each countable line
(see `loopwatch.lines`) is digested, and a line or a cycle of up to `max_period` lines
repeated `repeats` times in a row is a loop: the same retry message forever, a
three-line traceback with a moving counter. Progress bars, pytest dots and blank lines
never count.
"""

from __future__ import annotations

from collections import deque

from typing import NamedTuple

from ..finding import Finding
from ..periodic import TailCycles
from .base import Signal

__all__ = ["RepeatedLines"]


class Params(NamedTuple):
    #: Consecutive copies of a line cycle. 8: healthy logs repeat a line a few times
    #: (a retry with backoff, "waiting for server" x3), rarely 8 times in a row.
    repeats: int = 8
    #: Longest cycle of lines looked for.
    max_period: int = 5

    @property
    def enabled(self) -> bool:
        return self.repeats > 0

    def check(self) -> str | None:
        if self.repeats == 1 or self.repeats < 0:
            return "repeats: must be 0 (off) or 2 or more"
        if not 1 <= self.max_period <= 16:
            return "max_period: must be between 1 and 16"
        return None


class RepeatedLines(Signal):
    name = "repeated_lines"
    Params = Params
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._tail = TailCycles(params.max_period)
        self._times: deque[float] = deque(maxlen=params.max_period * params.repeats + params.max_period)
        self._lines = 0
        self._key: int | None = None
        self.most = 0
        self.most_period = 0

    def on_line(self, line: bytes, at: float, index: int) -> Finding | None:
        self._lines += 1
        self._times.append(at)
        period, copies, length = self._tail.push(line)
        if copies > self.most:
            self.most, self.most_period = copies, period
        if copies < 2:
            self._key = None
            return None
        started_at = self._times[-min(length, len(self._times))]
        if self._key is None:
            self._key = self._lines - length + 1
        what = "the same output line" if period == 1 else f"the same {period}-line output cycle"
        return Finding(
            signal=self.name,
            severity=copies / self.params.repeats,
            key=self._key,
            description=f"{what} repeated {copies} times in a row",
            repeats=copies,
            period=period,
            started_at=started_at,
            at=at,
            started_index=index,
            index=index,
            can_block=False,
            hint="the output is repeating itself; stop retrying and look at why",
        )

    def reset(self) -> None:
        self._tail.clear()
        self._key = None

    def calibration(self) -> dict:
        return {"lines_most": self.most, "lines_period": self.most_period}
