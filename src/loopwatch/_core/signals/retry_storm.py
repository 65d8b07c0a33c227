"""`retry_storm`: provider retries one after another, and nothing else.

`retries` retries in a row, spanning at least `window` seconds, with no completed turn
and no action between them: the run is paying for a provider that is not answering.

Grade: proof (the harness's own retries, nothing else between), but it never blocks:
there is no tool call to refuse (`can_block` False).
Evidence: the corpora hold no retry storm (alone it stops no session of the 2024 corpus:
its row of `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
../shared/corpus/MANIFEST.tsv`); what it does is
pinned on written fixtures (tests/test_core_signal_output.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from ..finding import Finding
from ..messages import ProviderRetries
from .base import Signal
from .params import Count, Seconds, SignalParams

__all__ = ["RetryStorm"]


class Params(SignalParams):
    #: Retries in a row. Harnesses retry 3 to 5 times with backoff on a passing fault
    #: (LiteLLM 3, the Anthropic and OpenAI SDKs 2, Claude Code up to 10); more than
    #: that in a row is not passing.
    retries: Count = 8
    #: Seconds the streak must span, so a burst of instant failures is not a storm yet.
    window: Annotated[float, Seconds()] = 60.0


class RetryStorm(Signal[Params]):
    name = "retry_storm"
    can_block = False

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._count = 0
        self._first = 0.0
        self._index = 0
        self._seen_actions = -1
        self.longest = 0

    def on_retry(self, at: float, index: int) -> Finding | None:
        if self._count and index != self._seen_actions:
            self._count = 0  # an action came between
        if self._count == 0:
            self._first, self._index = at, index
        self._count += 1
        self._seen_actions = index
        self.longest = max(self.longest, self._count)
        span = at - self._first
        window = self.params.window
        severity = min(self._count / self.params.retries, 1.0 if span >= window else span / window if window else 1.0)
        if self._count < 2 or severity < 0.5:
            return None
        return Finding(
            signal=self.name,
            severity=severity,
            key=int(self._first * 1000) ^ self._index,
            message=ProviderRetries(self._count, span),
            repeats=self._count,
            started_at=self._first,
            at=at,
            started_index=self._index,
            index=index,
            can_block=False,
        )

    def on_turn(self, at: float, index: int) -> Finding | None:
        self._count = 0
        return None

    def reset(self) -> None:
        self._count = 0

    def calibration(self) -> dict[str, Any]:
        return {"retry_longest": self.longest}
