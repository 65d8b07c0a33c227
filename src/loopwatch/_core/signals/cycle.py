"""`cycle`: a short cycle of actions repeated at the tail of the run.

An action is a call together with its normalized result. When the last actions are
2 to `max_period` actions repeated `repeats` times in a row with the same results
(kill server, start, curl, read log; open, edit, run, revert), the run is circling.
Period 1 is `repeat`'s business. Among equal repeat counts the shortest period wins.
O(max period) per step, never a rescan of history.

Cycles whose rounds shift: the same cycle where each round moves a little (the
line range of an edit moves, the file grows, the view after an edit slides by a
line), so no action equals the one a round before. A step counts as a round of such
a cycle when its call equals the earlier one, or equals it once the line range of
both calls' first line is masked (`Step.shifted`: `edit 72:83`, `sed -n 10,20p`; the
digits of a body or of `depth = 1` are kept), and its result is equal or, with the same
outcome (both failed or both succeeded), at least `drift` alike as words (see
`_alike`; empty answers and poll steps never count). Inputs are compared whole, never
merely alike: two edits whose bodies differ anywhere are two edits.

Grade: proof for the exact cycle. Every action of the cycle is the identical call
with the identical result it had a round before: the exact repetition of `repeat`,
with a longer period. Suspicion for a cycle whose rounds shift: a masked line range
and alike results are a judgement (the same body pasted at another line is a
different file), so it nudges and stops only when corroborated (the measured calibrations:
one more conclusive round past the nudge).
Evidence, out of fold on the 2024 corpus: shifting rounds catch three labelled cycles
that exact rounds miss (a run/edit cycle whose edit views move a line, two __init__s
re-edited to the same states, `edit N:N` then `edit N:N+11` with N one lower each round;
recall 81% (50/62), 76% without them) and add no stop before onset, on `no` or on a
successful session, and no nudge on one (9 of 261 either way), as
`loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv --folds 5 --margin 0` re-measures.
"""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any

from ..finding import PROOF, SUSPICION, Finding
from ..messages import ActionCycle, ShiftingCycle
from ..periodic import TailCycles
from ..step import Step
from .base import Signal
from .common import most_common_names, similar
from .params import Between, Count, Fraction, SignalParams

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
    #: Similarity (0 to 1) at which a round that shifts counts as the same round (see
    #: `_alike`); 0 turns shifting cycles off. Echo's documented 0.8 (word-level Indel
    #: similarity), not tuned here.
    drift: Annotated[float, Fraction(off="shifting cycles")] = 0.8


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
        # Shifting cycles: the last steps, and per period the steps in a row alike
        # (`_alike`) to the step that period before (as `TailCycles` counts equal ones).
        self._shifts: deque[Step] = deque(maxlen=self._tail.max_period)
        self._shift_matches = [0] * (self._tail.max_period + 1)
        self._shift_key: int | None = None

    def on_step(self, step: Step) -> Finding | None:
        period, copies, length = self._tail.push(step.action, min_period=2)
        self._recent.append(step)
        if copies > self.most:
            self.most, self.most_period = copies, period
        shifted = self._shift(step) if self.params.drift > 0 else (0, 0, 0)
        if copies < 2:
            self._key = None
            if shifted[1] >= 2:
                return self._shifting(step, *shifted)
            return None
        if self._key is None:
            self._key = (step.index - length + 1) * 31 + period
        return self._finding(step, period, copies, length, self._key, ActionCycle, PROOF)

    def _shift(self, step: Step) -> tuple[int, int, int]:
        """(period, copies, length) of the strongest cycle at the tail whose rounds are
        alike rather than equal (`TailCycles.push`, with `_alike` for equality)."""
        tail, matches, drift = self._shifts, self._shift_matches, self.params.drift
        shifted = step.shifted
        if shifted not in [old.shifted for old in tail]:  # most steps: no round can match
            tail.append(step)
            self._shift_matches = [0] * (self.params.max_period + 1)
            self._shift_key = None
            return (0, 0, 0)
        # beyond the steps the tail holds a count is 0 already (as in `TailCycles.push`)
        for p, old in enumerate(reversed(tail), 1):
            # equal `shifted` first: implied by `_alike`, and cheap
            if old.shifted == shifted and _alike(old, step, drift):
                matches[p] += 1
            else:
                matches[p] = 0
        tail.append(step)
        best = (0, 0, 0)
        if not any(matches):
            self._shift_key = None
            return best
        for p in range(2, self.params.max_period + 1):
            m = matches[p]
            if m == 0 or any(p % d == 0 and matches[d] >= m for d in range(1, p)):
                continue
            copies = (m + p) // p
            if copies > best[1]:
                best = (p, copies, m + p)
        if best[1] < 2:
            self._shift_key = None
        return best

    def _shifting(self, step: Step, period: int, copies: int, length: int) -> Finding:
        if self._shift_key is None:
            self._shift_key = -((step.index - length + 1) * 31 + period)  # never an exact cycle's key
        return self._finding(step, period, copies, length, self._shift_key, ShiftingCycle, SUSPICION)

    def _finding(
        self, step: Step, period: int, copies: int, length: int, key: int, kind: type[ActionCycle], grade: str
    ) -> Finding:
        """The finding for a cycle of `period` steps, `copies` rounds over the last
        `length` steps: exact (`ActionCycle`, proof) or shifting (`ShiftingCycle`)."""
        recent = list(self._recent)[-min(length, len(self._recent)) :]
        first = recent[0]
        names = [s.name for s in recent[-period:]]
        return Finding(
            signal=self.name,
            severity=copies / self.params.repeats,
            key=key,
            message=kind(period, tuple(names), copies, bool(length % period), step.at - first.at),
            repeats=copies,
            period=period,
            tools=most_common_names(names),
            started_at=first.at,
            at=step.at,
            started_index=step.index - length + 1,
            index=step.index,
            grade=grade,
        )

    def predict(self, call: bytes) -> Finding | None:
        return None  # the next action's result is unknown before it runs

    def reset(self) -> None:
        self._tail.clear()
        self._recent.clear()
        self._key = None
        self._shifts.clear()
        self._shift_matches = [0] * (self.params.max_period + 1)
        self._shift_key = None

    def calibration(self) -> dict[str, Any]:
        return {"cycle_most": self.most, "cycle_period": self.most_period}


def _alike(a: Step, b: Step, similarity: float) -> bool:
    """Is step `b` a round of the same cycle as step `a`, shifted?

    The same action (call and result), or: calls identical, or identical once the line
    range of their first line is masked (`Step.shifted`: `edit 72:83` then `edit 71:82`
    with the same body; a shifted line range is a trivial change by the labelling protocol), never
    merely alike (two edits whose bodies differ anywhere are different edits, however
    alike their first lines: re-running a test after different edits is progress);
    and results identical, or both failed or both succeeded and at least `similarity`
    alike as words (`Step.sketch`; results have their numbers masked already). An empty
    answer ("nothing found") counts only as the identical action: different searches
    that find nothing are a search being refined (`grep pattern-1`, `grep pattern-2`).
    Pages of a file read in turn (`sed -n 10,20p`, `sed -n 30,40p`) are alike calls
    with unlike results: progress, never a round.
    """
    if a.action == b.action:
        return True
    if a.name != b.name or a.empty or b.empty or a.role == "poller":
        return False
    if a.call != b.call and a.shifted != b.shifted:
        return False
    if a.result == b.result:
        return True
    return (a.failure is None) == (b.failure is None) and similar(a.sketch, b.sketch, similarity)
