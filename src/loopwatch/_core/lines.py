"""Cutting raw agent output into comparable lines, as a terminal would show them.

Lines end at LF, CRLF or a lone CR; a CRLF split across two reads is one line end (a
CR at the end of a read waits for the next read). Each line is normalized (escapes
dropped, numbers masked, whitespace collapsed) and digested; only the first 1 KiB of
a line counts. Skipped, because they repeat in healthy runs:
- lines with no letter once pytest progress marks are dropped (blank lines, rules,
  `..F..s..`, `[100%]`);
- redraws that show progress (a percentage, a bar or spinner glyph, `[=====>   ]`,
  an elapsed time `(12s)` or `0:42`, a count `3/10`): a progress bar redrawing is not
  a loop.

A redraw is whatever a terminal draws over, not only a CR: an erased line
(`ESC[2K`, `ESC[1K`), a move back to the first column (`ESC[G`), and every row written
after the cursor went back up (`ESC[nA`, `ESC M`) or was placed on the screen
(`ESC[r;cH`). Package managers draw their progress that way (uv's `Resolving
dependencies`, pip's and rich's bars, apt): 95 of 98 Terminal-Bench console logs were
ended in their install phase when only CR counted. A row drawn over with exactly what
it already showed changes nothing on the screen and is not a line at all; a row drawn
over with something new is judged as a redraw. Colours and other escapes are ignored.
The sequences handled are those found in the Terminal-Bench recordings (260 casts, 98
console logs): CSI K, A, B, C, D, G, H/f, J and ESC M, besides colours; a scroll region
(CSI r, in 5 logs) is ignored. This is a small emulator by hand, not pyte: pyte's
emulation alone costs 17x this whole cutter (`bench/terminal.py`).

Every line comes with two digests (`Line`): `key`, numbers masked (what repeats), and
`exact`, numbers kept (the line as shown), plus whether it reads as a retry message
(`retry`) or a failure (`failure`).
A line that repeats only once numbers are masked is a log template, a table row, a
maze row; one that repeats exactly, or says it retries, is the stronger evidence
(see `signals.repeated_lines`).

Only standalone numbers are masked in lines (see `fingerprint.normalize_line`):
`Compiling module 5 of 200` and `gcc -c file12.c` are progress, not repeats.
Only a partial line is held between reads, at most 1 KiB, per stream, and the exact
digests of the last `_SCREEN_ROWS` rows (to tell a redraw that changed nothing).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .fingerprint import digest, normalize_line, strip_escapes

__all__ = ["Line", "LineCutter"]

_LINE_LIMIT = 1024
#: The largest cursor move counted, in rows: more than any screen has.
_MAX_COUNT = 9999
#: A move forward stops at the right margin, as a terminal's does: no recorded screen
#: is wider than 160 columns (Terminal-Bench's casts); 256 leaves a margin. So the
#: blanks an escape of a few bytes stands for are bounded too.
_WIDTH = 256
#: Rows remembered for redraws: more than any multi-line progress display in the
#: recordings (uv and pip draw at most a dozen rows) or a full screen (40 rows in
#: Terminal-Bench's casts). A redraw further up is judged without a memory.
_SCREEN_ROWS = 64
#: Rows of the screen assumed when a program places the cursor absolutely
#: (`ESC[r;cH`) and no height was given: the VT100's.
_HEIGHT = 24
_LETTER = re.compile(r"[^\W\d_]")
_PYTEST_MARKS = re.compile(r"\[\s*\d+%\]|[.FEsxX]{2,}")
# A letter no pytest mark is made of: a line with one keeps a letter whatever the marks.
_OTHER_LETTER = re.compile(r"[^\W\d_FEsxX]")
_PROGRESS = re.compile(
    r"(?<!\d)\d+(?:\.\d+)?\s?%|[█▉▊▋▌▍▎▏▓▒░■□●○◐◓◑◒⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏━╸╺─]|[|/\\-]{3,}|\[[=#>\-\s.]{3,}\]"
    r"|^\s*[|/\\-]\s|\(\d+(?:\.\d+)?s\)|\b\d+:\d\d\b|\b\d+\s*(?:/|of)\s*\d+\b"
)
# Line ends, and the escapes that move the cursor or erase (colours are left in the
# text for `normalize_line` to drop).
_CONTROL = re.compile(r"\r\n|\r|\n|\x1b(?:\[([0-9;?]*)([ABCDGHJKf])|M)")
# What a retry message says: "retrying in 5s", "attempt 3 of 5", "reconnecting",
# "backing off", "try again". The harness retrying a request the model could not
# answer is a stronger sign than a line that merely repeats.
_RETRY = re.compile(
    r"\bretr(?:y|ying|ies|ied)\b|\battempt\b|\breconnect|\bback(?:ing)?[ -]?off\b|\btry(?:ing)? again\b", re.IGNORECASE
)
# What a failure says (`_says_failure`): an exception (`AssertionError:`), pytest's
# `FAILED`, `failed`, `fatal`; an error label (`Error:`, gcc's `error:`, `[ERROR]`, npm's
# `ERR!`); the shell's and the OS's own words (`command not found`, `No such file or
# directory`, `Permission denied`, `Connection refused`). The same failing step coming
# back is what an agent's loop looks like; a log template or a table has none (the
# OpenHands runtime log is all `INFO ... 200 OK`). The labels and the OS's words stop
# and nudge nothing on the OpenHands casts or the tb1 console logs (`python
# bench/consoles.py`; BENCHMARKS.md, "Consoles"). Substring checks come before each
# regex: most lines have none.
_FAILURE = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\bFAILED\b|\bfailed\b|\bfatal\b|Traceback \(most recent")
_ERROR_LABEL = re.compile(r"\b(?:[Ee]rror[:!\]]|ERROR\b|ERR!)")


class Line(NamedTuple):
    """One countable line: digests only (the text is not kept)."""

    key: bytes  # numbers masked, whitespace folded: what repeats
    exact: bytes  # numbers kept: the line as shown
    retry: bool  # reads as a retry message
    failure: bool  # reads as a failure (an exception, FAILED)


class _Screen:
    """Where the cursor is, in rows counted from the start of the stream, and what the
    last rows showed (exact digests). `partial`: text of the row the cursor is on that
    an escape cut but did not end (`ESC[K` at its end, `ESC[nC`)."""

    def __init__(self) -> None:
        self.row = 0
        self.bottom = 0  # the lowest row reached
        self.top = 0  # the row a clear screen left at the top
        self.shown: dict[int, bytes] = {}
        self.partial = ""


class LineCutter:
    """Cuts each stream's output into `Line`s. `height` is the screen's height in rows,
    when known (a recording's header, a pseudo-terminal's size)."""

    def __init__(self, height: int = _HEIGHT) -> None:
        self._pending: dict[str, str] = {}
        self._screens: dict[str, _Screen] = {}
        self.height = max(1, height)

    def feed(self, data: bytes | str, stream: str = "stdout") -> list[bytes]:
        """Digests (numbers masked) of the complete, countable lines in this read."""
        return [line.key for line in self.lines(data, stream)]

    def lines(self, data: bytes | str, stream: str = "stdout") -> list[Line]:
        """The complete, countable lines in this read."""
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode("utf-8", "replace")
        text = self._pending.get(stream, "") + data
        # A CR at the end of a read is held: only the next read tells a CRLF line end
        # from a CR redraw.
        held = text.endswith("\r")
        if held:
            text = text[:-1]
        screen = self._screens.get(stream)
        if screen is None:
            screen = self._screens[stream] = _Screen()
        out: list[Line] = []
        start = 0
        for match in _CONTROL.finditer(text):
            part = text[start : match.start()]
            start = match.end()
            token = match.group()
            if token == "\n" or token == "\r\n":
                # The row is done: judged as a redraw if the cursor had come back up to it.
                self._finish(screen, part, out, screen.row < screen.bottom)
                screen.row += 1
                screen.bottom = max(screen.bottom, screen.row)
            elif token == "\r":
                self._finish(screen, part, out, True)
            else:
                self._escape(screen, part, match.group(2), match.group(1) or "", out)
        self._pending[stream] = text[start:][:_LINE_LIMIT] + ("\r" if held else "")
        return out

    def _escape(self, screen: _Screen, part: str, final: str | None, arg: str, out: list[Line]) -> None:
        if final == "C" or (final == "K" and arg not in ("1", "2")):
            # Forward over blanks, or erase what follows the cursor (nothing yet):
            # the row goes on.
            blanks = " " * min(_count(arg), _WIDTH) if final == "C" else ""
            screen.partial = (screen.partial + part[:_LINE_LIMIT] + blanks)[:_LINE_LIMIT]
            return
        # Anything else draws over what the row showed: that was a frame.
        self._finish(screen, part, out, True)
        if final is None or final == "A":  # up (ESC M: reverse index, one row up)
            screen.row = max(screen.row - _count(arg), screen.bottom - _SCREEN_ROWS, 0)
        elif final == "B":
            screen.row = min(screen.row + _count(arg), screen.bottom)
        elif final in "Hf":
            top = max(screen.top, screen.bottom - self.height + 1)
            screen.row = min(top + _count(arg) - 1, screen.bottom)
        elif final == "J" and arg in ("2", "3"):  # the screen is cleared: what follows is new
            screen.shown.clear()
            screen.top = screen.row
        # D, G: back along the row; K 1 or 2: the row erased. Either way the next text
        # draws over it.

    def _finish(self, screen: _Screen, part: str, out: list[Line], redraw: bool) -> None:
        if screen.partial:
            part, screen.partial = screen.partial + part, ""
        if not part:
            return
        line = _countable(part, redraw)
        if line is None:
            return
        shown = screen.shown
        row = screen.row
        if shown.get(row) == line.exact:
            return  # drawn over with what it showed: nothing changed on the screen
        shown[row] = line.exact
        if len(shown) > 2 * _SCREEN_ROWS:
            floor = screen.bottom - _SCREEN_ROWS
            for old in [r for r in shown if r < floor]:
                del shown[old]
        out.append(line)


def _count(arg: str) -> int:
    """A cursor move's count: 1 when absent or 0, at most `_MAX_COUNT` (a terminal
    clamps a move to its screen; `ESC[2000000000C` is not two billion blanks, and a
    5,000-digit count is not parsed)."""
    head = arg.split(";", 1)[0].lstrip("?").lstrip("0")
    if not head.isdigit():
        return 1
    return _MAX_COUNT if len(head) > len(str(_MAX_COUNT)) else min(int(head), _MAX_COUNT)


def _countable(line: str, redraw: bool) -> Line | None:
    line = line[:_LINE_LIMIT]
    if redraw and _PROGRESS.search(line):
        return None
    plain = strip_escapes(line)
    text = normalize_line(plain)
    if not _OTHER_LETTER.search(text) and not _LETTER.search(_PYTEST_MARKS.sub("", text)):
        return None
    # Substring checks first: the regexes on every line cost a third of the cutting.
    low = plain.lower()
    retry = (
        "retr" in low or "attempt" in low or "reconnect" in low or "back" in low or "again" in low
    ) and _RETRY.search(plain) is not None
    return Line(digest(text), digest(plain.strip()), retry, _says_failure(plain))


def _says_failure(plain: str) -> bool:
    """Does the line read as a failure (`_FAILURE`, `_ERROR_LABEL`, the OS's words)?"""
    if (
        "Error" in plain
        or "Exception" in plain
        or "ailed" in plain
        or "FAILED" in plain
        or "fatal" in plain
        or "Traceback" in plain
    ) and _FAILURE.search(plain) is not None:
        return True
    if ("rror:" in plain or "rror]" in plain or "rror!" in plain or "ERR" in plain) and _ERROR_LABEL.search(plain):
        return True
    return (
        "command not found" in plain
        or "No such file or directory" in plain
        or "Permission denied" in plain
        or "Connection refused" in plain
    )
