"""`echo`: the same (or nearly the same) call keeps getting much the same back.

Consecutive calls that are identical or nearly so (at least `similarity` alike), each
getting a result at least `similarity` alike the last one (the same call with the
same result is `repeat`'s business): a counter moved, a line was added, the rejected edit was
re-indented; the substance did not change. Similarity is a string similarity over
16-bit word hashes (never the words themselves).

What it may do depends on how alike the calls are and how they fared:
- identical calls: a loop (the same edit re-applied, growing the file by a line each
  time); may stop;
- near-identical calls that all failed with a message: "the same edit rejected by the
  same check, resubmitted with trivial changes" is a loop by the labelling protocol;
  may stop (searches that find nothing, `grep pattern-1`, `grep pattern-2`, fail with
  no message: a search being refined, flagged only);
- near-identical calls that succeeded (`git add a.py`, `git add b.py`; sibling files
  with near-identical contents) are progress ("the same operation on different
  targets" is not a loop by the labelling protocol): a warning at most, never a nudge
  (when they nudged, they made 7 of the 18 nudges on sessions of the 2024 corpus that
  solved their task).

Grade: proof for identical calls that all failed (the identical rejected edit
resubmitted: the protocol's own example of a loop); suspicion otherwise, because
"nearly the same" is a similarity threshold, and healthy runs refine a search or edit
sibling files with calls just as alike.
Evidence: alone, on the 2024 corpus, it catches 15% of the labelled loops at a median
delay of 3, with no stop on a `no` session (its row of `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv`).
"""

from __future__ import annotations

from typing import Annotated

from ..finding import PROOF, SUSPICION, Finding
from ..messages import MuchTheSame
from ..step import Step
from .base import Signal
from .common import similar
from .params import Count, Fraction, SignalParams

__all__ = ["Echo"]


class Params(SignalParams):
    #: Turns in a row with alike calls and alike results: the protocol's 3 rounds.
    turns: Count = 3
    #: Minimum similarity (0 to 1) of consecutive calls and of consecutive results, as
    #: word-level Indel similarity. Short commands differ in one word of five or six
    #: (`find /usr -name 'jdk*'`, `find /opt -name 'jdk*'`), which 0.9 misses: on the
    #: labelled corpus echo alone catches 10 of 62 loops at 0.9 and 13 at 0.8, with
    #: no false stop at either.
    similarity: Annotated[float, Fraction()] = 0.8


class Echo(Signal[Params]):
    name = "echo"

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._last: Step | None = None
        self._first: Step | None = None
        self._count = 0
        self._identical = True  # every call in the streak identical to the first
        self._failed = True  # every call in the streak failed

    def on_step(self, step: Step) -> Finding | None:
        last = self._last
        self._last = step
        threshold = self.params.similarity
        if (
            step.role == "poller"
            or last is None
            or (last.result == step.result and last.call == step.call)
            or (last.call == step.call and last.still == step.still)  # only progress moved: a poll
            or not similar(last.call_sketch, step.call_sketch, threshold)
            or not similar(last.sketch, step.sketch, threshold)
        ):
            self._count, self._first = 1, step
            self._identical, self._failed = True, step.failure is not None and not step.empty
            return None
        self._count += 1
        self._identical = self._identical and last.call == step.call
        # An empty answer is no wall: different searches that find nothing are a search
        # being refined, so they never count as "failed the same way".
        self._failed = self._failed and step.failure is not None and not step.empty
        first = self._first or step
        may_stop = self._identical or self._failed
        severity = self._count / self.params.turns
        if not may_stop:
            severity = min(severity, 0.99)  # the same operation on sibling targets: a warning at most
        return Finding(
            signal=self.name,
            severity=severity,
            key=first.index * 4 + (2 if self._identical else 0) + (1 if self._failed else 0),
            message=MuchTheSame(step.name, self._count, self._identical, step.at - first.at),
            repeats=self._count,
            period=1,
            tools=(step.name,),
            started_at=first.at,
            at=step.at,
            started_index=first.index,
            index=step.index,
            can_stop=may_stop,
            can_block=may_stop,
            grade=PROOF if self._identical and self._failed else SUSPICION,
        )

    def reset(self) -> None:
        self._last = self._first = None
        self._count = 0
