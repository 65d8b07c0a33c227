"""Small helpers the signals share."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..messages import duration

__all__ = ["count_problem", "span_description", "most_common_names"]


def span_description(what: str, started_at: float, at: float) -> str:
    span = at - started_at
    return f"{what} over {duration(span)}" if span >= 1 else what


def most_common_names(names: Iterable[str], limit: int = 5) -> tuple[str, ...]:
    return tuple(name for name, _ in Counter(names).most_common(limit))


def count_problem(name: str, value: int) -> str | None:
    """What is wrong with a count threshold (0 turns a signal off; 1 is refused)."""
    if value == 1:
        return f"{name}: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off"
    if value < 0:
        return f"{name}: must be 0 (off) or 2 or more"
    return None
