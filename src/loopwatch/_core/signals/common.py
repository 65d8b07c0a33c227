"""Small helpers the signals share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["most_common_names", "similar"]

_indel: Any = None  # rapidfuzz's Indel, imported on first use: keeps `import loopwatch` fast


def most_common_names(names: Iterable[str], limit: int = 5) -> tuple[str, ...]:
    return tuple(name for name, _ in Counter(names).most_common(limit))


def similar(a: tuple[int, ...], b: tuple[int, ...], threshold: float) -> bool:
    """Are two sketches (`step.sketch_of`) at least `threshold` alike, as word-level
    Indel similarity?"""
    global _indel
    if a == b:
        return True
    if not a or not b:
        return False
    # The Indel distance is at least the difference in length: that bound settles most
    # pairs without aligning them (by a margin, so float rounding never decides).
    if 1.0 - abs(len(a) - len(b)) / (len(a) + len(b)) < threshold - 1e-9:
        return False
    if _indel is None:
        from rapidfuzz.distance import Indel

        _indel = Indel
    return bool(_indel.normalized_similarity(a, b) >= threshold)
