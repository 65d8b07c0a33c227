"""Small helpers the signals share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["most_common_names", "similar"]


def most_common_names(names: Iterable[str], limit: int = 5) -> tuple[str, ...]:
    return tuple(name for name, _ in Counter(names).most_common(limit))


def similar(a: tuple[int, ...], b: tuple[int, ...], threshold: float) -> bool:
    """Are two sketches (`Step.sketch`, `Step.call_sketch`) alike: equal, or with an Indel
    similarity of at least `threshold` (two empty ones are equal; one empty one is not alike)."""
    if a == b:
        return True
    if not a or not b:
        return False
    from rapidfuzz.distance import Indel  # lazy: keeps `import loopwatch` fast

    return Indel.normalized_similarity(a, b) >= threshold
