"""`repeat`: the same call, consecutively, getting the same result back.

The same call (tool name and canonical input) with the same normalized result is the
strongest evidence of a loop there is: nothing was learned from the last try. With a
changing result the same call is polling or waiting, and the streak restarts. Only
consecutive repeats count: validate, fix, validate, fix, validate is progress.

Tools configured as pollers are not counted here (their repeats are the point).

Grade: proof. The identical call getting the identical result, in a row, means the run
learned nothing from the last try; a run making progress cannot produce it. It stops
on its own, one round past its nudge.
"""

from __future__ import annotations

from typing import Any

from ..finding import PROOF, Finding
from ..messages import SameResult
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["Repeat"]


class Params(SignalParams):
    #: Copies in a row that earn the nudge; the next one is blocked (attended) or
    #: stopped (unattended). 3 is the protocol's own bar (a loop is "3+ rounds without
    #: progress"), kept for live hooks, where the next rung is a block the model can
    #: read. The built-in calibrations of recorded sources (`calibrations.py`) use 4, so
    #: a stop falls on the 5th identical round, the protocol's bar for a stretch that is
    #: a loop however it ends: at 3 two sessions that solved their task were stopped
    #: after 4 identical rounds they then escaped (a rejected edit resubmitted 4 times, a
    #: no-op `sed` re-run 4 times); every fold of `loopwatch evaluate --labels
    #: ../shared/corpus/labels.tsv --outcomes ../shared/corpus/MANIFEST.tsv --folds 5
    #: --margin 0` chose 4 (BENCHMARKS.md).
    threshold: Count = 3


class Repeat(Signal[Params]):
    name = "repeat"
    grade = PROOF

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._last: Step | None = None
        self._first: Step | None = None
        self._count = 0
        self.most = 0  # calibration: the longest run seen

    def on_step(self, step: Step) -> Finding | None:
        if step.role == "poller":
            return None
        last = self._last
        if last is not None and last.call == step.call and last.result == step.result:
            self._count += 1
        else:
            self._count = 1
            self._first = step
        self._last = step
        self.most = max(self.most, self._count)
        return self._finding(step)

    def _finding(self, step: Step) -> Finding | None:
        count, first = self._count, self._first
        if count < 2 or first is None:
            return None
        return Finding(
            signal=self.name,
            severity=count / self.params.threshold,
            key=int.from_bytes(first.action[:6], "little") ^ first.index,
            message=SameResult(step.name, count, step.at - first.at),
            repeats=count,
            period=1,
            tools=(step.name,),
            started_at=first.at,
            at=step.at,
            started_index=first.index,
            index=step.index,
        )

    def predict(self, call: bytes) -> Finding | None:
        last = self._last
        if last is None or last.call != call or self._count < self.params.threshold:
            return None
        return self._finding(last)

    def reset(self) -> None:
        self._last = self._first = None
        self._count = 0

    def calibration(self) -> dict[str, Any]:
        return {"repeat_most": self.most}
