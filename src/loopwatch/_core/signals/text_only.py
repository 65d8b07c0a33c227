"""`text_only`: the harness prompts again and again, and the model answers with text only.

Harnesses that need an action answer a reply with no tool call by prompting again
("Please continue working on the task..."); a model that believes it is done, or cannot
form a call, answers each prompt with more text ("The task is complete", a call written
out as markup) and never acts. `threshold` user messages with no tool call between
them is that streak. Its unit is a user message, so a user message cannot end it
(unlike every other streak); a tool call does. It reports at the threshold and at each
multiple of it, not at every prompt. A user message counts only when the model replied
with text since the previous one: in a terminal watched by `loopwatch run` every line a
person types is a user message and the agent's answers are output, never a reply, so
typing is no streak. (A plain chat log with no tools is text only by nature: it would
nudge there, as a suspicion.)

Evidence (the shared Terminal-Bench 2.0 half; user events with no tool call between):
7 or more in a row in 2 of 2,721 sessions that solved their task and in 25 of 2,360
that failed (one answered 215 prompts with text); 5 or more in 3 and 29 (`loopwatch
scan --json --format events ../shared/corpus-tb2`: each record's
`calibration.text_only_most` against `resolved` in its MANIFEST.tsv). A person
chatting with an agent without asking it to act makes the same shape, so it is a
suspicion that only nudges, never blocks or stops. The threshold was chosen out of
fold on both corpora together with `reverify`'s rounds, `unchanged`'s rounds and
`wedged`'s turns, with a margin of one grid step (the most labelled loops
nudged at or after their onset within the harm budgets: at most 3% of resolved TB2
sessions nudged, the 2024 corpus's successful sessions nudged no more than 1% above
today's; `python labels/choose_nudges.py`): 6 in 4 folds of 5, 7 in the
fold holding the one labelled loop it adds (an OpenHands gpt-5 run answering six
"please continue" prompts with "All set.", "Work complete." before `finish`). In
sample 6 nudges the same 39 resolved TB2 sessions as 7 and no 2024 session more
(there are no automatic prompts there); 3 would nudge 8 resolved TB2 sessions more.

Grade: suspicion (`can_stop` False).
"""

from __future__ import annotations

from ..finding import SUSPICION, Finding
from ..messages import PromptedOnly
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["TextOnly"]


class Params(SignalParams):
    #: User messages in a row with no tool call between: 6, chosen out of fold (see
    #: above); the labelled Terminal-Bench loops answer 6 and 215 prompts; 6 nudges
    #: no resolved session more than 7 did.
    threshold: Count = 6


class TextOnly(Signal[Params]):
    name = "text_only"
    grade = SUSPICION
    can_stop = False
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._count = 0
        self._started_at = 0.0
        self._started_index = 0
        self.most = 0  # calibration: the longest run of prompts answered with text only
        self._replied = False  # the model replied with text since the last user message

    def on_step(self, step: Step) -> Finding | None:
        self._count = 0
        return None

    def on_text(self, apology: bool, at: float, index: int) -> Finding | None:
        self._replied = True
        return None

    def on_user(self, at: float, index: int) -> Finding | None:
        replied, self._replied = self._replied, False
        if not replied:
            return None
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
            can_stop=False,
            can_block=False,
        )

    def reset(self) -> None:
        """A user message resets every streak, but this streak is made of them: kept."""

    def calibration(self) -> dict[str, int]:
        return {"text_only_most": self.most}
