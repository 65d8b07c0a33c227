"""`reverify`: the agent declares the task done, then checks again instead of finishing.

Harnesses that end a run on a completion tool often ask once more ("are you sure?",
terminus' `mark_task_complete` asks for a second call). An agent that answers by
re-running its checks (cat the answer, curl the page, re-run the test) and declaring
the task complete again, round after round, is circling: either the work is done and
only the confirmation is missing, or the checks cannot tell it what is wrong. A call of
a completion tool (`FINISHERS`) counts a round when some other tool call came since the previous one (an immediate second
call is the confirmation the harness asked for, not a round); a file written since
the previous claim starts the count again (work was done after it). The count
survives a user message: the harness's "are you sure?" may come as one.

Evidence (the shared Terminal-Bench 2.0 half, 5,081 sessions; rounds of one completion
tool counted in the events files): 3 rounds or more in 5 of the 14 labelled loops
(every one of terminus-3-3's re-verification cycles, each reaching its 3rd round after
the labelled onset) and in 3 of its 9 sessions labelled `no`; in 34 of 2,721 resolved
sessions (terminus-3-3 19 of 102, terminus-2 13 of 1,192, judy 2 of 28). 4 rounds: 2 of
the 5 cycles, 11 resolved sessions. The rounds were chosen out of fold on both corpora
together with `text_only`'s threshold and `unchanged`'s rounds, harm first and with a
margin of one grid step (`python labels/choose_nudges.py`): 4 in every fold. 3 rounds
nudge more loops (9 of the 14 labelled ones in sample with the rest of the detector, 6
with 4) within the bound of 3% of resolved TB2 sessions nudged (72, 2.6%; 49, 1.8%, with
4), but the step past them, 2, nudges 348 (12.8%): 3 sits at the edge of the harm
budget, where a new sample may cross it, so it is not shipped. Without the margin
(`--margin 0`) every fold chooses 3; chosen to maximise loops caught less false nudges
(`--objective net`), 4 wins as well.
Re-measured by `loopwatch evaluate --labels labels/tb2-labels.tsv --outcomes
../shared/corpus-tb2/MANIFEST.tsv` (the labels) and `loopwatch evaluate
../shared/corpus-tb2 --outcomes ../shared/corpus-tb2/MANIFEST.tsv` (the resolved ones).

Grade: suspicion, and it never blocks or stops (`can_stop`, `can_block` False): one in
five of terminus-3-3's resolved sessions re-checks three times before it confirms, so
the shape alone cannot tell a loop from care; the nudge tells the model to confirm
if its checks pass, which ends both. Blocking a completion call would keep a run
going that wants to end.

Proof, where the working folder's state is known (`Step.tree`, which the live hook
gives; recordings never carry it, so nothing above changes for them): when every claim
of the streak saw the folder exactly as the first one did, the checks between changed
nothing, and re-checking an unchanged folder cannot find anything the first check did
not. The finding is then graded proof and may stop (`can_stop`), at the same rounds
(`DoneAgainUnchanged`); still never blocking. Ending the run there costs nothing the
agent made: the folder is the one it declared complete, round after round. A folder
that changed between two claims is progress (something was done after the claim), and
starts the count again, as a file written does; a claim whose folder is unknown keeps
today's count, as suspicion.
"""

from __future__ import annotations

from ..finding import PROOF, SUSPICION, Finding
from ..messages import DoneAgain, DoneAgainUnchanged
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["FINISHERS", "Reverify"]

#: Completion tools, as the harnesses name them: terminus' `mark_task_complete`,
#: OpenHands' `finish`, SWE-agent's `submit`, judy's `end_execution`.
FINISHERS = frozenset({"mark_task_complete", "finish", "submit", "end_execution"})


class Params(SignalParams):
    #: Rounds of "done", each after other calls, that earn the nudge: 4, chosen out of fold
    #: with a margin (3 catches 3 more of the 5 labelled re-verification cycles, but 2, the
    #: step past it, nudges 13% of resolved TB2 sessions).
    rounds: Count = 4


class Reverify(Signal[Params]):
    name = "reverify"
    grade = SUSPICION
    can_stop = False
    can_block = False
    spans_user = True

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._tool = ""  # the completion tool claimed with
        self._rounds = 0
        self._calls_since = 0  # other tool calls since the last claim
        self._wrote_since = False
        self._started_index = 0
        self._started_at = 0.0
        #: the folder's state at the streak's first claim, while every claim since saw
        #: the same; None: unknown, or not the same.
        self._tree: str | None = None
        self.most = 0  # calibration: the most rounds of "done" in a run

    def on_step(self, step: Step) -> Finding | None:
        if step.name not in FINISHERS:
            self._calls_since += 1
            self._wrote_since = self._wrote_since or step.wrote
            return None
        if self._rounds and self._calls_since == 0 and step.name == self._tool:
            return None  # the confirmation asked for: the same round
        changed = self._tree is not None and step.tree is not None and step.tree != self._tree
        if self._rounds == 0 or self._wrote_since or changed or step.name != self._tool:
            self._tool, self._rounds = step.name, 0
            self._started_index, self._started_at = step.index, step.at
            self._tree = step.tree
        elif step.tree != self._tree:
            self._tree = None  # this claim's folder is unknown: no proof for the streak
        self._rounds += 1
        self._calls_since, self._wrote_since = 0, False
        self.most = max(self.most, self._rounds)
        if self._rounds < self.params.rounds:
            return None  # declaring done twice is how these harnesses end a run
        proof = self._tree is not None
        return Finding(
            signal=self.name,
            severity=self._rounds / self.params.rounds,
            key=self._started_index,
            message=DoneAgainUnchanged(step.name, self._rounds) if proof else DoneAgain(step.name, self._rounds),
            repeats=self._rounds,
            tools=(step.name,),
            started_at=self._started_at,
            at=step.at,
            started_index=self._started_index,
            index=step.index,
            can_stop=proof,
            can_block=False,
            grade=PROOF if proof else "",
        )

    def reset(self) -> None:
        """A user message resets every streak; this one spans the harness's own prompts: kept."""

    def calibration(self) -> dict[str, int]:
        return {"reverify_most": self.most}
