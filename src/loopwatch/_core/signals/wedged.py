"""`wedged`: the terminal does not execute what the agent types.

`turns` calls in a row whose result is only the echo of what was typed, or a shell's
continuation prompt (`Step.stuck`): a quote or heredoc left open, or a program waiting
for input, has the shell; every command after it is swallowed, and the agent keeps
typing (`ls`, `pwd`, `C-c`, `date`), reading nothing but its own echo. Calls with an
empty result (the other calls of a multi-call step, whose output came with the last)
neither count nor break the streak; any other result ends it.

Evidence (the shared Terminal-Bench 2.0 half, 5,081 sessions, `tb2-view` by hand): the
longest run of such calls in a session that solved its task is 9 (one session of 2,721,
wedged after its files were written, marked complete from the prompt); every other
resolved session has at most 1. Of the 2,360 failed ones, 7 have 3 or more, up to 34:
a `>` prompt after a broken `sed` quote, every later command only echoed to the end
(`loopwatch scan --json --format events ../shared/corpus-tb2`: each record's
`calibration.wedged_most` against `resolved` in its MANIFEST.tsv).
A single stuck call is common and harmless (a heredoc typed over two steps), so 3 in
a row, the protocol's rounds, with nothing else between. 2 in a row was measured out of
fold with the other nudge-only thresholds (`python labels/choose_nudges.py`): with the
whole detector it nudges the same sessions of both corpora as 3 (the one labelled
wedged terminal a call sooner), so it gains nothing, and 1 would make every stuck call
a loop: 3 stays.

Grade: suspicion. It never fired on the 2024 corpus (no terminal screens there), so its
evidence is one corpus and one resolved session inside the range; it nudges, and
climbs past the nudge only corroborated.
"""

from __future__ import annotations

from ..finding import SUSPICION, Finding
from ..messages import StuckTerminal
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["Wedged"]


class Params(SignalParams):
    #: Calls in a row that only echo: 3, the protocol's rounds. A resolved Terminal-Bench
    #: session has at most 1 but for one (9); failed ones up to 34.
    turns: Count = 3


class Wedged(Signal[Params]):
    name = "wedged"
    grade = SUSPICION

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._count = 0
        self._started_index = 0
        self._started_at = 0.0
        self.most = 0  # calibration: the longest run of echo-only calls

    def on_step(self, step: Step) -> Finding | None:
        if not step.stuck:
            if not (step.empty and step.failure is None):  # an empty result: no news either way
                self._count = 0
            return None
        if self._count == 0:
            self._started_index, self._started_at = step.index, step.at
        self._count += 1
        self.most = max(self.most, self._count)
        if self._count < 2:
            return None
        return Finding(
            signal=self.name,
            severity=self._count / self.params.turns,
            key=self._started_index,
            message=StuckTerminal(self._count, step.at - self._started_at),
            repeats=self._count,
            period=1,
            tools=(step.name,),
            started_at=self._started_at,
            at=step.at,
            started_index=self._started_index,
            index=step.index,
        )

    def reset(self) -> None:
        self._count = 0

    def calibration(self) -> dict[str, int]:
        return {"wedged_most": self.most}
