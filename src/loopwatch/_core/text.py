"""Model text: apologies, and cutting a streamed response into passages.

Passages are sentences or lines of prose. Code blocks, tables and list items are
skipped: repeating structure there (a table row per file, a list of steps) is not the
model chanting. Only a partial passage is held between chunks, at most 1 KiB.
"""

from __future__ import annotations

import re

__all__ = ["PassageCutter", "is_apology", "names_invented_tool"]

# A harness refusing a call to a tool that does not exist: "No such tool available: X"
# (Claude Code's tool_use_error), "Unknown tool: X", "X is not a valid tool", "Tool X
# not found". The name is in the message, so one digest per invented tool.
_INVENTED_TOOL = re.compile(
    r"\b(?:no\s+such|unknown|invalid|unrecognized|nonexistent)\s+(?:tool|function)\b"
    r"|\bis\s+not\s+a\s+valid\s+(?:tool|function)\b"
    r"|\b(?:tool|function)\s+\S+\s+(?:not\s+found|does\s+not\s+exist|is\s+not\s+available)",
    re.IGNORECASE,
)


def names_invented_tool(text: str) -> bool:
    """Does this correction (or error) say the call named a tool that does not exist?
    Only its first 300 characters are read: the refusal comes first."""
    return _INVENTED_TOOL.search(text[:300]) is not None


# "I apologize", "sorry", "my mistake", "please disregard (3)" and the like.
_APOLOGY = re.compile(
    r"\b(?:i\s+apologi[sz]e|apologies|i'?m\s+(?:so\s+|very\s+|really\s+)?sorry|sorry\b|my\s+(?:mistake|bad)"
    r"|i\s+was\s+wrong|please\s+disregard|i\s+made\s+(?:an?\s+)?(?:error|mistake))",
    re.IGNORECASE,
)
# `(?<=[.!?])\s+`, written to start with what it matches (a pattern that starts with a
# lookbehind is tried at every character).
_SENTENCE_END = re.compile(r"\s(?<=[.!?]\s)\s*")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s")
_MAX_PENDING = 1024


_APOLOGY_WORDS = ("sorry", "apolog", "mistake", "my bad", "disregard", "was wrong", "made an error")


def is_apology(text: str) -> bool:
    low = text.lower()
    # Substring checks first: the regex over every long message was a scan's hot spot.
    return any(word in low for word in _APOLOGY_WORDS) and _APOLOGY.search(low) is not None


class PassageCutter:
    """Cut streamed text into prose passages, skipping code, tables and lists.

    Text is cut into lines first (a list item or a table row is known by how its line
    starts), then prose lines into sentences. Finished sentences of an unfinished
    prose line are let go as they arrive; at most 1 KiB is held."""

    def __init__(self) -> None:
        self._pending = ""
        self._mid_line = False  # the pending text does not start its line
        self._in_code = False
        self._started = False

    def feed(self, text: str) -> list[str]:
        self._started = True
        lines = (self._pending + text).split("\n")
        pending = lines.pop()
        out: list[str] = []
        for k, line in enumerate(lines):
            out.extend(self._passages(line, mid_line=self._mid_line and k == 0))
        if lines:
            self._mid_line = False
        # Release the finished sentences of a prose line once its start is known.
        if (self._mid_line or (len(pending.lstrip()) >= 4 and not self._structured(pending))) and not self._in_code:
            *done, pending = _SENTENCE_END.split(pending)
            if done:
                out.extend(p.strip() for p in done if p.strip())
                self._mid_line = True
        self._pending = pending[-_MAX_PENDING:]
        return out

    def flush(self) -> list[str] | None:
        """End of the response: its last passages; None if nothing was fed."""
        if not self._started:
            return None
        rest = self._passages(self._pending, self._mid_line)
        self._pending, self._mid_line, self._in_code, self._started = "", False, False, False
        return rest

    def _structured(self, line: str) -> bool:
        return self._in_code or line.strip().startswith("|") or _LIST_ITEM.match(line) is not None

    def _passages(self, line: str, mid_line: bool = False) -> list[str]:
        stripped = line.strip()
        if not mid_line and stripped.startswith(("```", "~~~")):
            self._in_code = not self._in_code
            return []
        if not stripped or self._in_code or (not mid_line and self._structured(line)):
            return []
        return [p.strip() for p in _SENTENCE_END.split(stripped) if p.strip()]
