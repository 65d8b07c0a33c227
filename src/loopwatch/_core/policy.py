"""The policy: findings in, one `Verdict` out.

One ladder per streak. From half a threshold a streak earns a warning (for the person,
throttled); at the threshold, a nudge (for the model); if the streak still continues,
the next rung of the profile's ladder (block, then stop). A new streak (a new key:
signals key a streak by where it started) starts at the bottom again; the rungs of
at most 256 streaks are remembered. Signals whose
evidence is thin (`can_stop=False`) stop climbing at their last allowed rung, and a
signal allowed only to nudge nudges once per streak.

Two grades of evidence (`Finding.grade`). Proof climbs the ladder on its own. Suspicion
nudges, and climbs past the nudge only when corroborated:
- by a second signal: another signal made a conclusive finding during this streak
  (at or after the streak's first call) and since the last new success
  (`evidence.second_signal`); or
- by the streak going on: `evidence.confirm` conclusive rounds past the nudge with no
  call in between that succeeded with something new (`progress()`: a result the run
  had not seen, or a write; not the echo of a command a wedged terminal swallowed,
  which ran nothing). A new success sets every such count back to 0.
With `confirm = 0` and `second_signal = false` (the configuration of a source with no
calibration) suspicion only nudges. Until corroborated a suspicion streak holds at its
nudge: it does not climb, so when corroboration comes it takes the next rung, not the
last.

A user message ends every streak (the person spoke: what was found is moot), except
those of signals whose streaks outlast one (`Signal.spans_user`: a wedged terminal, text
replies to automatic prompts, claims of "done"): a harness's "please continue" is a
user message too, and it frees no terminal and answers no nudge. Their rungs and
rounds held past a nudge are kept, so they nudge once and, corroborated, climb. Evidence:
`text_only` loops of 144 to 500 automatic prompts on Terminal-Bench 2.0, stopped 16
reports past the nudge, while no session that solved its task goes past 5 (its
docstring).

A new streak that becomes conclusive within `ESCALATE_WITHIN` calls of a nudge starts
one rung up: the model ignored the nudge and circles again in another shape. Proof
takes that rung. Suspicion takes it when no call since that nudge succeeded with
something new: the new streak's conclusive finding is then one conclusive round past
the nudge (`held` 1, judged by `evidence.confirm` as any round is); otherwise it gets a
nudge of its own.
Evidence for that rule: in sample it stops 3 labelled loops 1 to 3 steps sooner (a
rejected edit nudged, then nearly the same rejected edits resubmitted; two streaks of two
wordings of "No matches found") and changes no other verdict; out of fold, with
`repeat`'s near copies, looping steps saved are 57.3% (56.2% without either) and recall,
stops before onset, on `no` and on successful sessions, and successful sessions nudged
do not move, as `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv --folds 5 --margin 0` re-measures.
Without the "nothing new succeeded" condition a gemini-3-pro session nudged for its format
corrections would be stopped (by `apology`) after a call that succeeded with something
new, and one more labelled loop caught.

Warnings are throttled: one, then at most one every `warn_every` seconds of event time,
plus one more when a streak becomes conclusive; never one per event. A warning callback
that raises is not called again.
"""

from __future__ import annotations

from collections.abc import Callable

from .config import Config
from .finding import SUSPICION, Finding
from .verdict import ALLOW, Action, Verdict

__all__ = ["Policy"]

_MAX_STREAKS = 256
#: A new streak that becomes conclusive within this many tool calls of a nudge starts
#: one rung up: the model ignored the nudge and is circling again in another shape
#: (one labelled runaway resubmits 'edit 20:24' x3, is nudged, then 'edit 19:26' x3).
ESCALATE_WITHIN = 10
_ACTIONS = {"nudge": Action.NUDGE, "block": Action.BLOCK, "stop": Action.STOP}


class Policy:
    def __init__(self, config: Config, on_warning: Callable[[Verdict], object] | None = None) -> None:
        self.mode = config.mode
        self.ladder = config.ladder
        self.warn_every = config.warn_every
        self.on_warning = on_warning
        self.warnings = 0
        self._rungs: dict[tuple[str, int], int] = {}  # streak -> rungs climbed
        self._last_warning: float | None = None
        self._warned_conclusive: set[tuple[str, int]] = set()
        self._last_nudge: int | None = None  # tool-call index of the last nudge
        self.confirm = config.confirm
        self.second_signal = config.second_signal
        self._held: dict[tuple[str, int], int] = {}  # suspicion streak -> rounds held past its nudge
        self._conclusive_at: dict[str, int] = {}  # signal -> tool-call index of its last conclusive finding
        self._progress_at = 0  # tool-call index of the last call that succeeded with something new

    def reset(self, keep: frozenset[str] = frozenset()) -> None:
        """Forget every streak but those of the signals in `keep` (whose streaks a
        user message does not end: their rungs and rounds held stay)."""
        self._rungs = {streak: n for streak, n in self._rungs.items() if streak[0] in keep}
        self._held = {streak: n for streak, n in self._held.items() if streak[0] in keep}
        self._warned_conclusive = {streak for streak in self._warned_conclusive if streak[0] in keep}
        self._last_nudge = None
        self._conclusive_at.clear()
        self._progress_at = 0

    def progress(self, index: int) -> None:
        """Tool call `index` succeeded with something new: suspicion held past a nudge
        starts counting its rounds again, and earlier findings of other signals no
        longer corroborate."""
        self._progress_at = index
        self._held.clear()

    def corroborated(self, finding: Finding, held: int) -> bool:
        """May this suspicion finding, held `held` rounds past its nudge, climb?"""
        if self.confirm > 0 and held >= self.confirm:
            return True
        if self.second_signal:
            since = max(finding.started_index, self._progress_at + 1)
            return any(signal != finding.signal and index >= since for signal, index in self._conclusive_at.items())
        return False

    def climb(self, streak: tuple[str, int]) -> None:
        rungs = self._rungs
        rungs[streak] = rungs.pop(streak, 0) + 1
        if len(rungs) > _MAX_STREAKS:
            rungs.pop(next(iter(rungs)))

    def allowed(self, finding: Finding) -> tuple[Action, ...]:
        return tuple(
            _ACTIONS[r]
            for r in self.ladder
            if (r != "stop" or finding.can_stop) and (r != "block" or finding.can_block)
        )

    def next_action(self, finding: Finding, held: int | None = None) -> Action | None:
        """The rung this conclusive finding would climb to now, without climbing.
        `held`: rounds the streak has been held past its nudge, this one included
        (default: as if this were one more round)."""
        rungs = self.allowed(finding)
        streak = (finding.signal, finding.key)
        climbed = self._rungs.get(streak, 0)
        escalated = (
            climbed == 0 and self._last_nudge is not None and 0 <= finding.index - self._last_nudge <= ESCALATE_WITHIN
        )
        if escalated:
            climbed = 1  # nudged recently, and circling again
        if climbed >= len(rungs) and rungs[-1] is Action.NUDGE:
            return None  # nudge once per streak
        action = rungs[min(climbed, len(rungs) - 1)]
        if action.rank > Action.NUDGE.rank and finding.grade == SUSPICION:
            known = streak in self._rungs
            if held is None:
                held = self._held.get(streak, 0) + 1 if known else 0
            if escalated and self._last_nudge is not None and self._progress_at < self._last_nudge:
                # The nudge went unheeded and nothing new succeeded since: this new streak
                # is one conclusive round past that nudge.
                held = max(held, 1)
            if not self.corroborated(finding, held):
                # Suspicion holds at its nudge until corroborated; one that would have
                # started a rung up (soon after another nudge) gets its own nudge.
                return None if known else rungs[0]
        return action

    def decide(self, findings: list[Finding], at: float, message_for: Callable[[Finding, Action], str]) -> Verdict:
        if self.mode == "off" or not findings:
            return ALLOW
        best: tuple[int, float, Action, Finding] | None = None
        warn: Finding | None = None
        if self.mode == "enforce":
            for finding in findings:  # first, so findings of one event corroborate each other
                if finding.conclusive:
                    self._conclusive_at[finding.signal] = finding.index
        for finding in findings:
            streak = (finding.signal, finding.key)
            if finding.conclusive and self.mode == "enforce":
                held = None
                if finding.grade == SUSPICION and streak in self._rungs:
                    held = self._held.get(streak, 0) + 1
                action = self.next_action(finding, held)
                if action is None and held is not None:
                    self._held[streak] = held
                    if len(self._held) > _MAX_STREAKS:
                        self._held.pop(next(iter(self._held)))
                    continue  # held at the nudge: no climb, no warning
                self.climb(streak)
                if action is not None and (best is None or (action.rank, finding.severity) > best[:2]):
                    best = (action.rank, finding.severity, action, finding)
                continue
            if (
                finding.severity >= 0.5
                and self._may_warn(finding, streak, at)
                and (warn is None or finding.severity > warn.severity)
            ):
                warn = finding
        if best is not None:
            action, finding = best[2], best[3]
            if action is Action.NUDGE:
                self._last_nudge = finding.index
            return Verdict(
                action,
                signal=finding.signal,
                message=message_for(finding, action),
                description=finding.description,
                finding=finding,
                at=at,
                index=finding.index,
                source_ref=finding.source_ref,
            )
        if warn is not None:
            return self._warn(warn, at)
        return ALLOW

    def _may_warn(self, finding: Finding, streak: tuple[str, int], at: float) -> bool:
        if finding.conclusive and streak not in self._warned_conclusive:
            return True
        return self._last_warning is None or at - self._last_warning >= self.warn_every

    def _warn(self, finding: Finding, at: float) -> Verdict:
        self._last_warning = at
        if finding.conclusive:
            if len(self._warned_conclusive) >= _MAX_STREAKS:
                self._warned_conclusive.clear()  # bounded: forgetting only allows one more warning
            self._warned_conclusive.add((finding.signal, finding.key))
        self.warnings += 1
        verdict = Verdict(
            Action.WARN,
            signal=finding.signal,
            description=finding.description,
            finding=finding,
            at=at,
            index=finding.index,
            source_ref=finding.source_ref,
        )
        if self.on_warning is not None:
            try:
                self.on_warning(verdict)
            except Exception:  # noqa: BLE001 - a broken callback must not break the agent
                self.on_warning = None
        return verdict
