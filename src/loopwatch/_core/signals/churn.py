"""`churn`: a window of calls with few distinct calls and no file written.

In the last `window` calls at most `distinct` different calls (name and input) and
nothing written: the agent is busy without moving. The evidence separating this from
legitimate repetitive work is thin (a long legitimate session had 8 distinct calls in
its worst 20-call window; three runaways had 5, 2 and 7), so churn warns and nudges,
and never blocks or stops. No finding before a full window.

Grade: suspicion (and `can_stop` False: even corroborated, it only nudges).
Evidence: the fewest distinct calls per window of each labelled session, printed by
`loopwatch calibrate --labels ../shared/corpus/labels.tsv`.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Annotated, Any

from ..finding import SUSPICION, Finding
from ..messages import FewDistinct
from ..step import Step
from .base import Signal
from .params import Below, SignalParams, Size

__all__ = ["Churn"]


class Params(SignalParams):
    #: Calls in the window: 20, as in the peer study quoted above.
    window: Annotated[int, Size("calls")] = 20
    #: At most this many distinct calls in a window is churn: 6 sits between the
    #: legitimate session's 8 and the runaways' 5, 2 (the 7 is missed on purpose).
    distinct: Annotated[int, Below("window")] = 6


class Churn(Signal[Params]):
    name = "churn"
    grade = SUSPICION
    can_stop = False
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._calls: deque[Step] = deque(maxlen=params.window)
        self._counts: Counter[bytes] = Counter()
        self._writes = 0
        self._start: int | None = None
        self.fewest: int | None = None  # calibration: fewest distinct calls in a full window

    def on_step(self, step: Step) -> Finding | None:
        calls, counts = self._calls, self._counts
        if len(calls) == calls.maxlen:
            old = calls[0]
            counts[old.call] -= 1
            if not counts[old.call]:
                del counts[old.call]
            self._writes -= old.wrote
        calls.append(step)
        counts[step.call] += 1
        self._writes += step.wrote
        if len(calls) < self.params.window:
            return None
        distinct = len(counts)
        if self._writes == 0:
            self.fewest = distinct if self.fewest is None else min(self.fewest, distinct)
        if self._writes:
            self._start = None
            return None
        severity = self.params.distinct / distinct
        if severity < 0.5:
            self._start = None
            return None
        if self._start is None:
            self._start = calls[0].index
        top = tuple(n for n, _ in Counter(s.name for s in calls).most_common(5))
        return Finding(
            signal=self.name,
            severity=severity,
            key=self._start,
            message=FewDistinct(distinct, len(calls)),
            repeats=len(calls),
            tools=top,
            started_at=calls[0].at,
            at=step.at,
            started_index=calls[0].index,
            index=step.index,
            can_stop=False,
            can_block=False,
        )

    def reset(self) -> None:
        self._calls.clear()
        self._counts.clear()
        self._writes = 0
        self._start = None

    def calibration(self) -> dict[str, Any]:
        return {"churn_fewest_distinct": self.fewest}
