"""Cutting raw agent output into comparable lines.

Lines end at LF, CRLF or a lone CR; a CRLF split across two reads is one line end (a
CR at the end of a read waits for the next read). Each line is normalized (escapes
dropped, numbers masked, whitespace collapsed) and digested; only the first 1 KiB of
a line counts. Skipped, because they repeat in healthy runs:
- lines with no letter once pytest progress marks are dropped (blank lines, rules,
  `..F..s..`, `[100%]`);
- CR-ended redraws that show progress (a percentage, a bar or spinner glyph,
  `[=====>   ]`, an elapsed time `(12s)` or `0:42`, a count `3/10`): a progress bar
  redrawing is not a loop.
Only standalone numbers are masked in lines (see `fingerprint.normalize_line`):
`Compiling module 5 of 200` and `gcc -c file12.c` are progress, not repeats.
Only a partial line is held between reads, at most 1 KiB, per stream.
"""

from __future__ import annotations

import re

from .fingerprint import digest, normalize_line

__all__ = ["LineCutter"]

_LINE_LIMIT = 1024
_LETTER = re.compile(r"[^\W\d_]")
_PYTEST_MARKS = re.compile(r"\[\s*\d+%\]|[.FEsxX]{2,}")
_PROGRESS = re.compile(
    r"(?<!\d)\d+(?:\.\d+)?\s?%|[█▉▊▋▌▍▎▏▓▒░■□●○◐◓◑◒⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]|[|/\\-]{3,}|\[[=#>\-\s.]{3,}\]"
    r"|^\s*[|/\\-]\s|\(\d+(?:\.\d+)?s\)|\b\d+:\d\d\b|\b\d+\s*(?:/|of)\s*\d+\b"
)
_BREAK = re.compile(r"\r\n|\r|\n")


class LineCutter:
    def __init__(self) -> None:
        self._pending: dict[str, str] = {}

    def feed(self, data: bytes | str, stream: str = "stdout") -> list[bytes]:
        """Digests of the complete, countable lines in this read."""
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode("utf-8", "replace")
        text = self._pending.get(stream, "") + data
        # A CR at the end of a read is held: only the next read tells a CRLF line end
        # from a CR redraw.
        held = text.endswith("\r")
        if held:
            text = text[:-1]
        out = []
        start = 0
        for match in _BREAK.finditer(text):
            line = text[start:match.start()]
            start = match.end()
            kept = _countable(line, redraw=match.group() == "\r")
            if kept is not None:
                out.append(kept)
        self._pending[stream] = text[start:][:_LINE_LIMIT] + ("\r" if held else "")
        return out


def _countable(line: str, redraw: bool) -> bytes | None:
    line = line[:_LINE_LIMIT]
    if redraw and _PROGRESS.search(line):
        return None
    text = normalize_line(line)
    if not _LETTER.search(_PYTEST_MARKS.sub("", text)):
        return None
    return digest(text)
