"""`repeat`: the same call, consecutively, getting the same result back.

The same call (tool name and canonical input) with the same normalized result is the
strongest evidence of a loop there is: nothing was learned from the last try. With a
changing result the same call is polling or waiting, and the streak restarts. Only
consecutive repeats count: validate, fix, validate, fix, validate is progress.

Tools configured as pollers are not counted here (their repeats are the point).

Two near cases count as a copy too, each graded suspicion: the same call once the line
range of its first line is masked (`Step.shifted`: `edit 1:1` then `edit 1:6`, the same
body) failing with the identical, non-empty result (the protocol's "the same edit rejected
by the same check, resubmitted with a shifted line range"; a success is never such a copy:
its digits are masked, and a one-line input is all "first line", so `f(1,2)` then
`f(1,3)` would look alike); and the identical call re-applied, each time
changing files (the same edit pasted again, growing the file by its lines each time:
the result changes only by the duplicate it added). Nothing else is masked or merely
alike: a body that differs anywhere, or a result that differs after a call that wrote
nothing, breaks the streak.

Grade: proof. The identical call getting the identical result, in a row, means the run
learned nothing from the last try; a run making progress cannot produce it. A failure
repeated stops on its own, one round past its nudge; a success repeated is stopped only
from its `STOP_ROUNDS`th copy (see "Thin evidence"). A streak with a near copy in it is suspicion (a
masked range and a changing file are a judgement): it nudges, and stops only when
corroborated (the measured calibrations: one more round past the nudge), until the
identical copies that close it reach the threshold by themselves: that run is proof, as
it would be with no near copy before it.
Evidence for near copies: they occur in 9 sessions of the shared corpus (8 labelled
loops and 1 `no` session, a pair, not stopped), none in a session that solved its task;
in sample they stop 2 labelled loops sooner (the identical edit re-applied 29 times, at
step 11 instead of 20; an edit rejected at 1:1, then at 1:6, at 9 instead of 10), and out
of fold, with the policy's rule for an unheeded nudge, they move no recall or harm figure
while looping steps saved are 57.3% (56.2% without either), as
`loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv --folds 5 --margin 0` re-measures.

Thin evidence: the same success, fewer than `STOP_ROUNDS` (5) times. The same failure
again is the same wall; the same success again (a file re-read, a confirmation echoed,
a check that passes) may be a run verifying, or idling once its work is done. The
protocol (`../shared/corpus/PROTOCOL.md`) calls a stretch a loop however it ends from 5
rounds, so a streak of successes nudges at the threshold, is blocked where a person
watches, and is stopped from its 5th copy; a failure is stopped at the threshold's next
copy. An attempt at the same call that the guard blocked is a round too, so with a
block rung the ladder still reads nudge, block, stop. A failure is what the source says
is one: a result flagged as an error (or "nothing found"). The text of a result is not
read for words that sound like failure: `NOOP: command not found` from a source that
flags nothing is a success to this rule, and stopped from its 5th copy. With the built-in
calibrations of recorded sources (threshold 4) the stop already falls on the 5th copy,
except for a new streak that starts a rung up soon after another nudge.
Evidence: the bar is the protocol's, not a fit. On Terminal-Bench 2.0 (no calibration,
threshold 3; `loopwatch evaluate ../shared/corpus-tb2 --outcomes
../shared/corpus-tb2/MANIFEST.tsv`) it moves one session that solved its task from a stop
to a nudge (Gemini CLI runs `NOOP` 4 times after its last action; its source flags no
failure) and one failed session likewise; no stop on a labelled loop moves. On the shared
corpus as calibrated (threshold 4) only a new streak soon after another nudge moves (one
failed, unlabelled CodeR session: nudged, not stopped), as `loopwatch evaluate --labels
../shared/corpus/labels.tsv --outcomes ../shared/corpus/MANIFEST.tsv --folds 5`
re-measures.

Thin evidence: an empty result (no text, no error). Nothing came back, so nothing says
the world is as it was: a keystroke, a `cp`, a `sleep`, or a call whose output the source
did not record (Terminal-Bench 2.0 keeps one output per step, so every call of a
multi-call step but the last reads as empty: three `C-c` pressed in one step look like
one result thrice). A streak of identical empty results is suspicion, as `unchanged`
takes empty results for no evidence: it nudges, and stops only when corroborated.
Evidence: in the shared corpus no repeat stop, right or wrong, rests on empty results
(the loops it stops repeat a failure, or a success with text), and no figure of
`loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv --folds 5` as configured changes. On Terminal-Bench 2.0
(`loopwatch evaluate ../shared/corpus-tb2 --outcomes ../shared/corpus-tb2/MANIFEST.tsv`)
no session that solved its task is stopped on empty results (terminus-2 on fix-git,
which presses `C-c` three times in one step, each read as empty, is nudged only).

Time. A streak whose copies came mostly `wait` seconds or more apart (more than half
of its gaps) is waiting, not circling: a poll of a CI run every two minutes, the same
check an hour later. It warns at most (its severity stays under 1, and the next copy is
not blocked); a burst of copies, or one long pause in a burst, is still a loop. The
gap is measured between the calls' completions, the call's own run included: a poll
often waits inside its call (`sleep 60 && gh run view`), and ending that would end
work that was going well, while a long call re-run unchanged (a ten-minute build)
then only warns: a loop let run costs less than work ended. Where a source has no times, the monitor places
events a second apart, and nothing changes. The pre-dispatch guard judges the streak
so far: after a burst, the same call attempted an hour later is still blocked.
Grade: judgement, from the time a model takes to answer. In the 10,135 rounds of the
timed sessions of the shared corpus (mini-swe-agent and ATIF, whose steps carry their
time), a round (one call to the next) took 4 s at the median, 47 s at the 99th
percentile, 95 s at the 99.9th: 100 s is beyond what a model takes for 999 rounds in
1000, and under the two minutes of a typical poll. No streak of identical copies there
has its gaps that long (the longest gap between two copies: 57 s, in a session that
solved its task), so no verdict changes on the corpora (BENCHMARKS.md, "Time as
evidence"); re-measured by `python bench/waiting.py`, and `loopwatch evaluate --labels
../shared/corpus/labels.tsv --outcomes ../shared/corpus/MANIFEST.tsv --folds 5`.
"""

from __future__ import annotations

from typing import Annotated, Any

from ..finding import PROOF, SUSPICION, Finding
from ..messages import MuchTheSame, SameResult
from ..step import Step
from .base import Signal
from .params import Count, Seconds, SignalParams

__all__ = ["STOP_ROUNDS", "Repeat"]

#: Copies of a success in a streak before it may end a run: the protocol's bar for a
#: stretch that is a loop however it ends (PROTOCOL.md: "5 or more rounds"). Fewer
#: nudge, and block where a person watches (see "Thin evidence"); a failure needs none.
STOP_ROUNDS = 5


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
    #: Seconds between two copies that read as waiting, not circling (see the module
    #: docstring, "Time"): longer than 999 in 1000 of a model's rounds take.
    wait: Annotated[float, Seconds()] = 100.0


class Repeat(Signal[Params]):
    name = "repeat"
    grade = PROOF

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._last: Step | None = None
        self._first: Step | None = None
        self._count = 0
        # The streak's trailing run of identical copies (all of it when it has no near copy).
        self._run_first: Step | None = None
        self._run = 0
        # Gaps of at least `wait` seconds between the copies of the streak, and of its
        # trailing identical run.
        self._waits = 0
        self._run_waits = 0
        # Attempts of the streak's call since its last copy completed: each is a round,
        # run or not (a blocked attempt never completes).
        self._attempts = 0
        self.most = 0  # calibration: the longest run seen

    def on_step(self, step: Step) -> Finding | None:
        if step.role == "poller":
            return None
        self._attempts = 0
        last = self._last
        copy = _copy(last, step) if last is not None else None
        waited = last is not None and step.at - last.at >= self.params.wait
        if copy is None:
            self._count, self._first, self._waits = 1, step, 0
        else:
            self._count += 1
            self._waits += waited
        if copy:
            self._run += 1
            self._run_waits += waited
        else:
            self._run, self._run_first, self._run_waits = 1, step, 0
        self._last = step
        self.most = max(self.most, self._count)
        return self._finding(step)

    def _finding(self, step: Step, attempts: int = 0) -> Finding | None:
        # Proof when every copy is identical, or when the trailing identical run alone is
        # conclusive (a near copy before it never makes proof weaker); else suspicion.
        exact = self._run == self._count or self._run >= self.params.threshold
        count, first = (self._run, self._run_first) if exact else (self._count, self._first)
        if count < 2 or first is None:
            return None
        # An identical empty answer says nothing of the world (see "Thin evidence").
        proof = exact and not (step.empty and step.failure is None)
        span = step.at - first.at
        severity = count / self.params.threshold
        if self._waiting(exact):
            severity = min(severity, 0.99)  # waiting: a warning at most
        return Finding(
            signal=self.name,
            severity=severity,
            key=int.from_bytes(first.action[:6], "little") ^ first.index,
            message=SameResult(step.name, count, span)
            if exact
            else MuchTheSame(step.name, count, first.call == step.call, span),
            repeats=count,
            period=1,
            tools=(step.name,),
            started_at=first.at,
            at=step.at,
            started_index=first.index,
            index=step.index,
            can_stop=self._count + attempts >= STOP_ROUNDS or failed(step),  # near copies are rounds too
            grade=PROOF if proof else SUSPICION,
        )

    def _waiting(self, exact: bool) -> bool:
        """Are most gaps between the streak's copies `wait` seconds or more?"""
        count, waits = (self._run, self._run_waits) if exact else (self._count, self._waits)
        return 2 * waits > count - 1

    def predict(self, call: bytes) -> Finding | None:
        """The streak's finding if an attempt at `call` would continue it; the attempt
        counts as a round toward `STOP_ROUNDS`, whether it then runs or is blocked."""
        last = self._last
        if last is None or last.call != call:
            return None
        self._attempts += 1
        if self._count < self.params.threshold:
            return None
        finding = self._finding(last, self._attempts)
        return finding if finding is not None and finding.conclusive else None

    def reset(self) -> None:
        self._last = self._first = self._run_first = None
        self._count = self._run = self._waits = self._run_waits = self._attempts = 0

    def calibration(self) -> dict[str, Any]:
        return {"repeat_most": self.most}


def _copy(last: Step, step: Step) -> bool | None:
    """Is `step` a copy of `last`: True for the identical call with the identical
    result (proof), False for a near copy (the same call at a shifted line range
    rejected with the identical message, or the identical call re-applied, both
    changing files), None for no copy."""
    if last.call == step.call and last.result == step.result:
        return True
    if last.shifted == step.shifted and last.result == step.result and step.failure is not None and not step.empty:
        # `shifted` equals `call` when there is no line range: never equal calls here.
        # Failed only: a success's result has its digits masked, so two applied edits
        # differing in `f(1,2)` / `f(1,3)` (a one-line input is all "first line") would
        # look alike; a rejection is the same wall whatever the range.
        return False
    if last.call == step.call and last.wrote and step.wrote:
        return False
    return None


def failed(step: Step) -> bool:
    """Is `step` a failure, as its source says: flagged as an error, or "nothing found"?"""
    return step.failure is not None
