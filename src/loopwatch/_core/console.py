"""A terminal's byte streams as monitor events: the one path from console bytes to a verdict.

`loopwatch run` (its pump, for plain output) and the asciicast reader (for recordings)
both turn what a terminal carries into events here, and the monitor does the rest:

    bytes written to the terminal  ->  Console.output  ->  Output  ->  Monitor
        -> lines.LineCutter (what the screen shows: redraws, erases, cursor moves)
        -> signals.repeated_lines (masked and exact repeats, graded)  ->  Policy
    bytes typed into the terminal  ->  Console.typed   ->  UserMessage (on Enter)

So a recording replayed by `scan` and the same output watched live by `run` give the
same verdicts, save for the times the two see.

What was typed is not output: a harness typing a command line (Terminal-Bench types
the agent's `openhands ...` command; a person types a prompt) gives the console
something new to answer, so a finished input line is a `UserMessage` (every streak
starts again). Keystrokes without an Enter are held, at most 1 KiB, and never count.
It does not tell a harness's typing from an agent's own keystrokes into a shell (an
agent driving tmux types its actions): both are input here.

Pure: no clock, no I/O; times are passed in.
"""

from __future__ import annotations

from typing import Any

from .events import Output, UserMessage

__all__ = ["Console"]

_HELD = 1024


class Console:
    """Events from one terminal session's output and input."""

    def __init__(self) -> None:
        self._typed = ""

    def output(
        self, data: bytes | str, at: float | None, stream: str = "stdout", source_ref: str | None = None
    ) -> list[Any]:
        """What the program wrote to the terminal (as is: escapes, CRs, partial lines)."""
        return [Output(data, stream, at, source_ref)] if data else []

    def typed(self, data: bytes | str, at: float | None, source_ref: str | None = None) -> list[Any]:
        """What was typed into the terminal: a `UserMessage` for each finished line."""
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode("utf-8", "replace")
        text = self._typed + data
        ends = text.count("\r") + text.count("\n") - text.count("\r\n")
        if not ends:
            self._typed = text[-_HELD:]
            return []
        self._typed = text[max(text.rfind("\r"), text.rfind("\n")) + 1 :][-_HELD:]
        return [UserMessage(at, source_ref)]
