"""`unchanged`: edits that change nothing: one check gives the identical result across them.

The agent edits, runs the same check, gets the byte-identical (normalized) result,
edits again, runs it again: each edit differs, so to `repeat` and `cycle` every round
is new, and a write resets `same_error`. But a check whose result does not move at
all while the files under it change says the edits do not reach what it tests (the
wrong file, a stale build, a server not restarted) or do not touch the fault. Each
time the same call (name and input) returns the identical result with a file written
since its previous run counts one round; the same result with no write between
(re-running to be sure) neither counts nor breaks the streak; any other result of it
starts again. Empty results ("nothing found", a blank output) are no check and are
passed over. A write is what `Step.wrote` says: files a reader saw change, or a
successful call of a `writer` tool (the hook gives Claude Code's and Codex's editing
tools that role).

Evidence. The shared Terminal-Bench 2.0 half lost the edits and the changed files (its
README), so a write there is only a writer tool's call: with Claude Code's, Gemini CLI's
and the other harnesses' editing tools given the `writer` role, 3 rounds nudge 2 of 2,360
failed sessions and none of 2,721 resolved ones. The 2024 corpus (692 sessions, writes
known), this signal alone, in sample: 3 rounds nudge or stop 13 of 261 sessions that
solved their task, and stop a session labelled `no` (the same `apt-get install` timing
out across edits to the package sources); 4 rounds: 1 and the same `no` session; 5: none,
and 3 labelled loops. The rounds were chosen out of fold on both corpora together with
the other nudge-only thresholds, harm first and with a margin of one grid step
(`python labels/choose_nudges.py`): 5 in every fold. With the whole detector, 4 rounds
nudge one successful 2024 session more than 5 (10 of 261 against 9) and give one labelled
loop its first nudge (51 of 62 against 50), but the step past them, 3, nudges 19 (7.3%,
over the bound of 1% above the shipped detector's), so 4 is at the edge and not shipped.
On the TB2 half 5 and 4 differ by one resolved session nudged (71, 72) and no label.
Lower counts only add harm: 3 nudges no labelled loop sooner on either corpus (its
first nudges come before the onsets: 49 of 62 loops nudged at or after theirs) and 2
nudges 111 of the 261 successful sessions. Never a stop. Each session's longest streak is
its `calibration.unchanged_most` in `loopwatch scan --json`; the harm as shipped,
`loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv`.

Grade: suspicion, and it never blocks or stops (`can_stop` False): a check that stays the
same while other files are written (an install that times out, a lint of another file)
makes the same shape, and the evidence above is thin and in sample.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..finding import SUSPICION, Finding
from ..fingerprint import Digest
from ..messages import UnchangedCheck
from ..step import Step
from .base import Signal
from .params import Count, SignalParams

__all__ = ["Unchanged"]

_MAX_CHECKS = 64  # distinct calls followed, the least recently run forgotten first


class Params(SignalParams):
    #: Runs of one check with the identical result, a write before each but the first:
    #: 5, chosen out of fold with a margin (4 is one step from 3, which nudges 19 of the
    #: 261 successful sessions of the 2024 corpus; see above).
    rounds: Count = 5


class _Check(NamedTuple):
    result: Digest
    rounds: int
    wrote_since: bool
    started_index: int
    started_at: float


class Unchanged(Signal[Params]):
    name = "unchanged"
    grade = SUSPICION
    can_stop = False
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._checks: dict[Digest, _Check] = {}
        self.most = 0  # calibration: the most rounds of one unchanged check

    def on_step(self, step: Step) -> Finding | None:
        checks = self._checks
        if step.wrote:
            for call, before in checks.items():
                if not before.wrote_since:
                    checks[call] = before._replace(wrote_since=True)
            return None
        if step.empty:
            return None
        previous = checks.pop(step.call) if step.call in checks else None
        if previous is None or previous.result != step.result:
            check = _Check(step.result, 1, False, step.index, step.at)
        elif previous.wrote_since:
            check = previous._replace(rounds=previous.rounds + 1, wrote_since=False)
        else:
            check = previous
        checks[step.call] = check  # most recently run last
        if len(checks) > _MAX_CHECKS:
            del checks[next(iter(checks))]
        self.most = max(self.most, check.rounds)
        if check.rounds < self.params.rounds:
            return None  # no warning before: one result that held across edits is no news
        return Finding(
            signal=self.name,
            severity=check.rounds / self.params.rounds,
            key=check.started_index,
            message=UnchangedCheck(step.name, check.rounds, step.at - check.started_at),
            repeats=check.rounds,
            tools=(step.name,),
            started_at=check.started_at,
            at=step.at,
            started_index=check.started_index,
            index=step.index,
            can_stop=False,
            can_block=False,
        )

    def reset(self) -> None:
        self._checks.clear()

    def calibration(self) -> dict[str, Any]:
        return {"unchanged_most": self.most}
