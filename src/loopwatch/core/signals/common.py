"""Small helpers the signals share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["most_common_names"]


def most_common_names(names: Iterable[str], limit: int = 5) -> tuple[str, ...]:
    return tuple(name for name, _ in Counter(names).most_common(limit))
