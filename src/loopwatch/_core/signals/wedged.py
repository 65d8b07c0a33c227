"""`wedged`: the terminal does not execute what the agent types.

`turns` calls in a row that ran nothing (`Step.stuck`): their result is only the echo
of what was typed or a shell's continuation prompt, or nothing at all from a command
that always prints (`echo DONE`, `ls -la`, `ps aux`, an interrupt key: `shell.py`). A
quote or heredoc left open, or a program that never returned (a server in the
foreground, a clone waiting for a password), holds the shell; every command after it
is swallowed, and the agent keeps typing (`ls`, `pwd`, `C-c`, `echo DONE`), reading
nothing but its own echo or an empty screen. Other calls with an empty result (a `cd`,
a `mkdir`: nothing to show) neither count nor break the streak; any other result ends
it. Calls made at one moment (the same time: a terminal harness sends several
keystrokes and reads one screen for them all) are one round. A user message does not
end the streak (a harness's "please continue" frees no terminal); output does.

Evidence (the shared Terminal-Bench 2.0 half, 5,081 sessions, read by hand with
`labels/show.py`): 3 such rounds in a row in 8 of the 2,721 sessions that solved their
task, at most 9; in 16 of the 2,360 that failed, up to 35 (`loopwatch scan --json
--format events ../shared/corpus-tb2`: each record's `calibration.wedged_most` against
`resolved` in its MANIFEST.tsv). Echoes alone: one resolved session (9, wedged after
its files were written, marked complete from the prompt). Empty results: the OpenHands
shells of the holdouts' wedged loops (an unclosed heredoc or quote, then `echo DONE`,
`ps aux`, `C-c` all empty for 8 to 22 calls; 4 of the 40 labelled loops of the three
non-blind label sets, nudged at or after their onsets, none before) and 7 resolved
sessions, each a real wedge: the agent got out with a `C-c` that printed `^C`, switched
to another tool, or had finished its work before the shell was held. In the Terminal-
Bench source the other calls of a multi-call step carry an empty result (their screen
came with the last call): the one-moment rule keeps them from counting, and no
terminus session reaches 2 on empty results alone. A single stuck call is common and
harmless (a heredoc typed over two steps), so 3 in a row, the protocol's rounds, with
nothing else between. `turns` is chosen out of fold with the other nudge-only
thresholds (`python labels/choose_nudges.py`; see `Params`).

Grade: suspicion. The resolved sessions above hold the same shape as the loops for up
to 8 rounds (a wedge the agent escaped, or one it met after its work was done), so the
shape alone cannot end a run: it nudges, and climbs past the nudge only corroborated.
"""

from __future__ import annotations

from ..finding import SUSPICION, Finding
from ..messages import StuckTerminal
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["Wedged"]


class Params(SignalParams):
    #: Rounds in a row that ran nothing: 3, the protocol's rounds; 8 of 2,721 resolved
    #: Terminal-Bench sessions reach it (at most 9), 16 of 2,360 failed ones (up to 35).
    turns: Count = 3


class Wedged(Signal[Params]):
    name = "wedged"
    grade = SUSPICION
    spans_user = True

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._count = 0
        self._started_index = 0
        self._started_at = 0.0
        self._at = 0.0  # when the last counted call completed
        self.most = 0  # calibration: the longest run of echo-only calls

    def on_step(self, step: Step) -> Finding | None:
        if not step.stuck:
            if not (step.empty and step.failure is None):  # an empty result: no news either way
                self._count = 0
            return None
        if self._count and step.at == self._at:
            return None  # calls of one moment are one round: one screen came back for them
        if self._count == 0:
            self._started_index, self._started_at = step.index, step.at
        self._count += 1
        self._at = step.at
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
        """A user message does not free a held terminal: only output from it ends the streak."""

    def calibration(self) -> dict[str, int]:
        return {"wedged_most": self.most}
