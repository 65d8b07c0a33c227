"""`cycle`: a short cycle of actions repeated at the tail of the run.

An action is a call together with its normalized result. When the last actions are
2 to `max_period` actions repeated `repeats` times in a row with the same results
(kill server, start, curl, read log; open, edit, run, revert), the run is circling.
Period 1 is `repeat`'s business. Among equal repeat counts the shortest period wins.
O(max period) per step, never a rescan of history.

Grade: proof. Every action of the cycle is the identical call with the identical
result it had a round before: the exact repetition of `repeat`, with a longer period.
"""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any

from ..finding import PROOF, Finding
from ..messages import ActionCycle
from ..periodic import TailCycles
from ..step import Step
from .base import Signal
from .common import most_common_names
from .params import Between, Count, SignalParams

__all__ = ["Cycle"]


class Params(SignalParams):
    #: Longest cycle looked for. The labelled cycles run from 2 to 10 steps (a 6-step
    #: open/search/goto cycle, a 10-step browse cycle); 10 catches one more of them than
    #: 5 with no false stop, for twice the (tiny) per-step cost.
    max_period: Annotated[int, Between(2, 16, off=True)] = 10  # a 1-step cycle is `repeat`'s
    #: Copies in a row that earn the nudge. The stop comes when the cycle goes on
    #: after it, that is as its third round begins: the protocol's 3 rounds. On the
    #: labelled corpus 2 catches 7 loops alone (3 catches 4) with no false stop; no
    #: healthy session repeats any cycle more than twice.
    repeats: Count = 2


class Cycle(Signal[Params]):
    name = "cycle"
    grade = PROOF

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._tail = TailCycles(params.max_period)
        self._recent: deque[Step] = deque(maxlen=params.max_period * max(params.repeats, 2) + params.max_period)
        self._key: int | None = None
        self.most = 0
        self.most_period = 0

    def on_step(self, step: Step) -> Finding | None:
        period, copies, length = self._tail.push(step.action, min_period=2)
        self._recent.append(step)
        if copies > self.most:
            self.most, self.most_period = copies, period
        if copies < 2:
            self._key = None
            return None
        recent = list(self._recent)[-min(length, len(self._recent)):]
        first = recent[0]
        start_index = step.index - length + 1
        if self._key is None:
            self._key = start_index * 31 + period
        names = [s.name for s in recent[-period:]]
        return Finding(
            signal=self.name,
            severity=copies / self.params.repeats,
            key=self._key,
            message=ActionCycle(period, tuple(names), copies, bool(length % period), step.at - first.at),
            repeats=copies,
            period=period,
            tools=most_common_names(names),
            started_at=first.at,
            at=step.at,
            started_index=start_index,
            index=step.index,
        )

    def predict(self, call: bytes) -> Finding | None:
        return None  # the next action's result is unknown before it runs

    def reset(self) -> None:
        self._tail.clear()
        self._recent.clear()
        self._key = None

    def calibration(self) -> dict[str, Any]:
        return {"cycle_most": self.most, "cycle_period": self.most_period}
