"""Small helpers the signals share."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..messages import duration

__all__ = ["span_description", "most_common_names"]


def span_description(what: str, started_at: float, at: float) -> str:
    span = at - started_at
    return f"{what} over {duration(span)}" if span >= 1 else what


def most_common_names(names: Iterable[str], limit: int = 5) -> tuple[str, ...]:
    return tuple(name for name, _ in Counter(names).most_common(limit))
