"""Cycles at the tail of a sequence, in O(max period) per item.

For each period p we count how many items in a row equalled the item p places before.
A run of m such matches means the last m + p items are p-periodic: (m + p) // p
consecutive copies of a p-item cycle. Nothing is rescanned; only the last `max_period`
items are kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

__all__ = ["TailCycles"]


class TailCycles:
    def __init__(self, max_period: int) -> None:
        self.max_period = max_period
        self._tail: deque[Hashable] = deque(maxlen=max_period)
        self._matches = [0] * (max_period + 1)

    def clear(self) -> None:
        self._tail.clear()
        self._matches = [0] * (self.max_period + 1)

    def push(self, item: Hashable, min_period: int = 1) -> tuple[int, int, int]:
        """Add an item; return (period, copies, length) of the strongest cycle at the
        tail with period >= min_period: the most copies, the shortest period among
        equals. `length` counts the items of the periodic stretch. (0, 0, 0) if none
        repeats."""
        tail, matches = self._tail, self._matches
        if item not in tail:  # most items: every count ends (one search in C, no loop)
            tail.append(item)
            self._matches = [0] * (self.max_period + 1)
            return (0, 0, 0)
        # p places back, for each p the tail holds; beyond it a count is 0 already
        # (the tail only grows until `clear`, which zeroes every count).
        for p, old in enumerate(reversed(tail), 1):
            if old == item:
                matches[p] += 1
            else:
                matches[p] = 0
        tail.append(item)
        best = (0, 0, 0)
        if not any(matches):  # nothing repeats: most items
            return best
        for p in range(min_period, self.max_period + 1):
            m = matches[p]
            if m == 0:
                continue
            # A p-cycle that is also d-periodic for a divisor d is really a d-cycle.
            if any(p % d == 0 and matches[d] >= m for d in range(1, p)):
                continue
            copies = (m + p) // p
            if copies > best[1]:
                best = (p, copies, m + p)
        return best
