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

Proof, where the working folder's state is known (`Step.tree`, which the live hook
gives; recordings never carry it, so nothing above changes for them): a streak whose
every run of the check saw the working folder exactly as at its first run, with an edit
tried before each round (a writer's call, landed or not), shows edits that changed
nothing at all: the check re-ran on the same files and could only say the same. Such a
round also counts when the edit failed (an `Edit` whose text was not found): with the
folder unchanged it is the same shape, and without a known folder a failed edit still
counts nothing. The finding is then graded proof and may stop (`UnchangedTree`), at the
same rounds. Never blocking: the check itself is a fine call to make once the edit lands.
What keeps this from stopping progress: any change the fingerprint sees between two runs
(a file written by the shell, a build output, a checkout) ends the proof for that
streak, which goes on as suspicion; a writer's call whose target the fingerprint cannot
see (outside the folder, in a skipped cache: the hook makes its `tree` None) ends it
too; an unknown state at any run ends it. A change outside the folder that the check
does see (a server restarted by hand) is no edit of the agent's files: the edits tried
between did not land, which is what the stop says.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..finding import PROOF, SUSPICION, Finding
from ..fingerprint import Digest
from ..messages import UnchangedCheck, UnchangedTree
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
    #: the working folder's state at the streak's first run, while every run since saw
    #: the same and every edit tried could have shown in it; None: unknown, or lost.
    tree: str | None = None
    tried_since: bool = False  # a writer was called since the last run (landed or not)


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
        if step.wrote or step.role == "writer":
            # An edit tried: landed (`wrote`) or not. One the folder cannot show (its
            # `tree` None) ends every streak's proof.
            blind = step.tree is None
            for call, before in checks.items():
                if call == step.call and not step.wrote:
                    continue  # a failed edit is not tried "between" its own runs
                if (
                    (step.wrote and not before.wrote_since)
                    or not before.tried_since
                    or (blind and before.tree is not None)
                ):
                    checks[call] = before._replace(
                        wrote_since=before.wrote_since or step.wrote,
                        tried_since=True,
                        tree=None if blind else before.tree,
                    )
            if step.wrote:
                return None
        if step.empty:
            return None
        previous = checks.pop(step.call) if step.call in checks else None
        if previous is None or previous.result != step.result:
            check = _Check(step.result, 1, False, step.index, step.at, step.tree)
        else:
            same = previous.tree is not None and step.tree == previous.tree
            tree = previous.tree if same else None
            if previous.wrote_since or (same and previous.tried_since):
                check = previous._replace(rounds=previous.rounds + 1, wrote_since=False, tried_since=False, tree=tree)
            elif tree != previous.tree:
                check = previous._replace(tree=tree)  # the folder changed with no edit tried: no proof
            else:
                check = previous
        checks[step.call] = check  # most recently run last
        if len(checks) > _MAX_CHECKS:
            del checks[next(iter(checks))]
        self.most = max(self.most, check.rounds)
        if check.rounds < self.params.rounds:
            return None  # no warning before: one result that held across edits is no news
        proof = check.tree is not None
        span = step.at - check.started_at
        return Finding(
            signal=self.name,
            severity=check.rounds / self.params.rounds,
            key=check.started_index,
            message=UnchangedTree(step.name, check.rounds, span)
            if proof
            else UnchangedCheck(step.name, check.rounds, span),
            repeats=check.rounds,
            tools=(step.name,),
            started_at=check.started_at,
            at=step.at,
            started_index=check.started_index,
            index=step.index,
            can_stop=proof,
            can_block=False,
            grade=PROOF if proof else "",
        )

    def reset(self) -> None:
        self._checks.clear()

    def calibration(self) -> dict[str, Any]:
        return {"unchanged_most": self.most}
