"""`echo`: the same call keeps getting much the same back.

Identical calls whose results are not identical but similar (at least `similarity`,
a string similarity over hashed words) for `turns` turns in a row: a counter moved,
a line was added, the substance did not change ("noted (2 in the draft)", "noted (3
in the draft)"). The similarity is computed on 16-bit word hashes, never on the text.

Near-identical calls (`git add a.py`, `git add b.py`) are different calls, and
sibling files with near-identical contents are progress: echo only flags; it never
blocks or stops.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..finding import Finding
from ..step import Step
from .base import Signal
from .common import span_description

__all__ = ["Echo"]


@dataclass(frozen=True)
class Params:
    #: Turns in a row with the same call and a similar result.
    turns: int = 3
    #: Minimum similarity (0 to 1) of consecutive results. 0.9 lets one word in ten
    #: change, as a counter or a timestamp would.
    similarity: float = 0.9

    @property
    def enabled(self) -> bool:
        return self.turns > 0

    def check(self) -> str | None:
        if self.turns == 1 or self.turns < 0:
            return "turns: must be 0 (off) or 2 or more"
        if not 0.0 < self.similarity <= 1.0:
            return f"similarity: {self.similarity} is not in (0, 1]"
        return None


class Echo(Signal):
    name = "echo"
    Params = Params
    can_stop = False
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._last: Step | None = None
        self._first: Step | None = None
        self._count = 0

    def on_step(self, step: Step) -> Finding | None:
        last = self._last
        self._last = step
        if step.role == "poller" or last is None or last.call != step.call or not _similar(
            last.sketch, step.sketch, self.params.similarity
        ):
            self._count, self._first = 1, step
            return None
        self._count += 1
        first = self._first or step
        if self._count < 2:
            return None
        return Finding(
            signal=self.name,
            severity=self._count / self.params.turns,
            key=first.index,
            description=span_description(
                f"the same {step.name} call got much the same result {self._count} times in a row", first.at, step.at
            ),
            repeats=self._count,
            period=1,
            tools=(step.name,),
            started_at=first.at,
            at=step.at,
            started_index=first.index,
            index=step.index,
            can_stop=False,
            can_block=False,
            hint="the result is not changing in substance; change what you do before asking again",
        )

    def reset(self) -> None:
        self._last = self._first = None
        self._count = 0


def _similar(a: tuple[int, ...], b: tuple[int, ...], threshold: float) -> bool:
    if a == b:
        return True
    if not a or not b:
        return False
    from rapidfuzz.distance import Indel  # lazy: keeps `import loopwatch` fast

    return Indel.normalized_similarity(a, b) >= threshold
