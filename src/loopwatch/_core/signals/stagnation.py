"""`stagnation`: for a while, nothing the run had not already done.

An action (call and result) is new the first time the run sees it. When no new action
has appeared for `window` seconds and at least `max_period x repeats` replayed actions
fell in that time, the run is going round whatever the shape of its circling. Below
that floor the window is inconclusive: one long tool call, or a few slow ones, is not a
loop. Writing a file counts as something new.

Memory is bounded: at most `memory` actions are remembered, the oldest forgotten first.

Grade: suspicion. Each replay is exact, but they need not be in a row or in any order
(re-reading the same files while thinking it over is not a loop): it nudges, and stops
only when corroborated.
Evidence: most formats of the 2024 corpus keep no times, and alone it catches none of its
62 labelled loops and stops no session there (its row of `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv`);
what it does is pinned on written fixtures (tests/test_core_signal_stagnation.py).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Annotated, Any

from ..finding import SUSPICION, Finding
from ..messages import NothingNew
from ..step import Step
from .base import Signal
from .params import AtLeast, Seconds, SignalParams, Size

__all__ = ["Stagnation"]


class Params(SignalParams):
    #: Seconds with no new action. The replay floor below is what makes the evidence
    #: (no labelled healthy session replays more than 7 known actions in a row); the
    #: window only keeps a burst of quick replays from counting: a minute.
    window: Annotated[float, Seconds(off=True)] = 60.0
    #: Replayed actions that must fall in the window: the cycle signal's longest cycle
    #: (10) times its repeats (2), so stagnation never fires on less evidence than a
    #: cycle would need. No labelled healthy session replays more than 7 in a row.
    replays: Annotated[int, Size()] = 20
    #: Distinct actions remembered, the least recently seen forgotten first. A loop
    #: replays recent actions (cycles of up to 10); 1024 is a hundred times that, and
    #: small enough that the monitor's memory is flat within the first 10,000 events.
    memory: Annotated[int, AtLeast(16, "actions")] = 1024


class Stagnation(Signal[Params]):
    name = "stagnation"
    grade = SUSPICION

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._since: Step | None = None  # the last new action
        self._replays = 0
        self._names: Counter[str] = Counter()
        self.longest_seconds = 0.0
        self.longest_actions = 0

    def on_step(self, step: Step) -> Finding | None:
        seen = self._seen
        if step.action in seen and not step.wrote:
            seen.move_to_end(step.action)
            self._replays += 1
            if len(self._names) < 64:
                self._names[step.name] += 1
        else:
            seen[step.action] = None
            if len(seen) > self.params.memory:
                seen.popitem(last=False)
            self._since, self._replays = step, 0
            self._names.clear()
            return None
        since = self._since
        if since is None:
            return None
        elapsed = step.at - since.at
        self.longest_seconds = max(self.longest_seconds, elapsed)
        self.longest_actions = max(self.longest_actions, self._replays)
        severity = min(elapsed / self.params.window, self._replays / self.params.replays)
        if severity < 0.5:
            return None
        return Finding(
            signal=self.name,
            severity=severity,
            key=since.index,
            message=NothingNew(self._replays, step.at - since.at),
            repeats=self._replays,
            tools=tuple(n for n, _ in self._names.most_common(5)),
            started_at=since.at,
            at=step.at,
            started_index=since.index + 1,
            index=step.index,
        )

    def reset(self) -> None:
        self._since, self._replays = None, 0
        self._names.clear()

    def calibration(self) -> dict[str, Any]:
        return {"stagnation_seconds": round(self.longest_seconds, 3), "stagnation_actions": self.longest_actions}
