"""Model text: apologies, and cutting a streamed response into passages.

Passages are sentences or lines of prose. Code blocks, tables and list items are
skipped: repeating structure there (a table row per file, a list of steps) is not the
model chanting. Only a partial passage is held between chunks, at most 1 KiB.
"""

from __future__ import annotations

import re

__all__ = ["PassageCutter", "is_apology"]

# "I apologize", "sorry", "my mistake", "please disregard (3)" and the like.
_APOLOGY = re.compile(
    r"\b(?:i\s+apologi[sz]e|apologies|i'?m\s+(?:so\s+|very\s+|really\s+)?sorry|sorry\b|my\s+(?:mistake|bad)"
    r"|i\s+was\s+wrong|please\s+disregard|i\s+made\s+(?:an?\s+)?(?:error|mistake))",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s")
_MAX_PENDING = 1024


_APOLOGY_WORDS = ("sorry", "apolog", "mistake", "my bad", "disregard", "was wrong", "made an error")


def is_apology(text: str) -> bool:
    low = text.lower()
    # Substring checks first: the regex over every long message was a scan's hot spot.
    return any(word in low for word in _APOLOGY_WORDS) and _APOLOGY.search(low) is not None


class PassageCutter:
    """Cut streamed text into prose passages, skipping code, tables and lists."""

    def __init__(self) -> None:
        self._pending = ""
        self._in_code = False
        self._started = False

    def feed(self, text: str) -> list[str]:
        self._started = True
        data = self._pending + text
        pieces = _SENTENCE_END.split(data)
        self._pending = pieces.pop()[-_MAX_PENDING:]
        return [p for p in (self._keep(piece) for piece in pieces) if p]

    def flush(self) -> str | None:
        """End of the response: the last passage ("" if none); None if nothing was fed."""
        if not self._started:
            return None
        rest = self._keep(self._pending) or ""
        self._pending, self._in_code, self._started = "", False, False
        return rest

    def _keep(self, piece: str) -> str | None:
        stripped = piece.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            self._in_code = not self._in_code
            return None
        if self._in_code or not stripped or stripped.startswith("|") or _LIST_ITEM.match(piece):
            return None
        return stripped
