"""`text_only`: the model answers with text only, again and again, and never acts.

Harnesses that need an action answer a reply with no tool call by prompting again
("Please continue working on the task..."); a model that believes it is done, or cannot
form a call, answers each prompt with more text ("The task is complete", a call written
out as markup) and never acts. A round is a text reply with no tool call that a user
message, or another such reply, follows: some recordings keep the harness's prompt
(OpenHands' "please continue"), others only the replies (a terminal harness re-prompts
with the screen, which the Terminal-Bench source dropped). `threshold` rounds in a row
is the streak; a tool call ends it, a user message cannot (the streak is made of them).
It reports at the threshold and at each multiple of it, not at every prompt. A user
message counts only when the model replied with text since the previous one: in a
terminal watched by `loopwatch run` every line a person types is a user message and the
agent's answers are output, never a reply, so typing is no streak; the live hook sees
no replies at all. (A plain chat log with no tools is text only by nature: it nudges
there, as a suspicion.)

Evidence (the shared Terminal-Bench 2.0 half; `loopwatch scan --json --format events
../shared/corpus-tb2`: each record's `calibration.text_only_most` against `resolved` in
its MANIFEST.tsv): 6 or more rounds in 2 of the 2,721 sessions that solved their task
(at most 36: an OpenHands run answering prompts after its work was done) and in 39 of
the 2,360 that failed, 17 of them past 100 (up to 500). Replies with no prompt between:
no resolved terminal-harness session has 3 in a row; the first holdout's labelled
terminus loop answers 144 episodes that way (the same "the container only allows
writes to /app" analysis), and counting them gives it its nudge, with no resolved
session nudged more. The threshold was chosen out of fold on both corpora together
with `reverify`'s rounds, `unchanged`'s rounds and `wedged`'s turns, with a margin of
one grid step (`python labels/choose_nudges.py`): 6.

Grade: suspicion: a person chatting with an agent without asking it to act makes the
same shape. It never blocks (there is no call to refuse), and stops only when
corroborated: `evidence.confirm` reports past the nudge (each `threshold` more
rounds), which a configuration sets (a calibration, or the folds of `loopwatch
evaluate --folds`), never the live default (0). Chosen out of fold on the TB2 labels
(`loopwatch evaluate --labels labels/tb2-labels.tsv --outcomes
../shared/corpus-tb2/MANIFEST.tsv --folds 5`), 16 reports (102 rounds) stops the labelled
loops of 144, 215, 433 and 500 rounds and no resolved session; 8 (54) spares the
resolved 36 too, 4 (30) stops it.
"""

from __future__ import annotations

from ..finding import SUSPICION, Finding
from ..messages import PromptedOnly
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["TextOnly"]


class Params(SignalParams):
    #: Text replies in a row with no tool call: 6, chosen out of fold with a margin (see
    #: above); the labelled Terminal-Bench loops answer 6 to 500 prompts, a resolved
    #: session at most 36.
    threshold: Count = 6


class TextOnly(Signal[Params]):
    name = "text_only"
    grade = SUSPICION
    can_block = False
    spans_user = True

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._count = 0
        self._started_at = 0.0
        self._started_index = 0
        self.most = 0  # calibration: the longest run of prompts answered with text only
        self._replied = False  # the model replied with text since the last user message
        self._unanswered = False  # ... and since the last call: a reply nothing answered yet

    def on_step(self, step: Step) -> Finding | None:
        self._count = 0
        self._unanswered = False
        return None

    def on_text(self, apology: bool, at: float, index: int) -> Finding | None:
        self._replied = True
        if self._unanswered:
            return self._round(at, index)  # a reply, then another with no call and no prompt between
        self._unanswered = True
        return None

    def on_user(self, at: float, index: int) -> Finding | None:
        replied, self._replied, self._unanswered = self._replied, False, False
        if not replied:
            return None
        return self._round(at, index)

    def _round(self, at: float, index: int) -> Finding | None:
        """One more reply with no call, answered by a prompt or by another reply."""
        if self._count == 0:
            self._started_at, self._started_index = at, index
        self._count += 1
        self.most = max(self.most, self._count)
        threshold = self.params.threshold
        if self._count % threshold:
            return None
        return Finding(
            signal=self.name,
            severity=self._count / threshold,
            key=self._started_index,
            message=PromptedOnly(self._count),
            repeats=self._count,
            started_at=self._started_at,
            at=at,
            started_index=self._started_index,
            index=index,
            can_block=False,
        )

    def reset(self) -> None:
        """A user message resets every streak, but this streak is made of them: kept."""

    def calibration(self) -> dict[str, int]:
        return {"text_only_most": self.most}
