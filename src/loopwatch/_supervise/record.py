"""What a supervised run ended as: its exit status, its JSON record, its summary line.

The record holds the command line, times, how the run ended and the monitor's own
record (names, counts and times: never the agent's output).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._core.messages import duration
from .._core.monitor import Monitor
from .._core.verdict import Verdict

__all__ = ["ENDED_BY", "EXIT_IDLE", "EXIT_LOOP", "EXIT_MAX_RUNTIME", "MASK", "Outcome", "masked_argv", "write_record"]

EXIT_LOOP = 86
EXIT_IDLE = 87
EXIT_MAX_RUNTIME = 88

#: How a run can end. `exit`: the child ended by itself; `loop`, `idle`,
#: `max_runtime`: loopwatch ended it; `interrupted`: Ctrl-C or SIGTERM/SIGHUP to loopwatch.
ENDED_BY = ("exit", "loop", "idle", "max_runtime", "interrupted")

_STATUS = {"loop": EXIT_LOOP, "idle": EXIT_IDLE, "max_runtime": EXIT_MAX_RUNTIME}

MASK = "<masked>"


def masked_argv(argv: list[str]) -> list[str]:
    """A command line fit for a record: the program, the names of its options and
    the arguments that name an existing file (`python agent.py`: a name, not data);
    every other argument and option value masked. `--api-key sk-...`, `--token=...`
    and a prompt given as an argument are what a command line carries that a record
    must not (`run --record-argv` keeps it whole)."""
    if not argv:
        return []
    kept = [argv[0]]
    for arg in argv[1:]:
        if arg.startswith("--") and len(arg) > 2:
            name, equals, _ = arg.partition("=")
            kept.append(name + ("=" + MASK if equals else ""))
        elif arg.startswith("-") and len(arg) > 1 and arg[1] != "-" and not arg[1].isdigit():
            kept.append(arg[:2] + (MASK if len(arg) > 2 else ""))  # `-k`, `-kVALUE`
        else:
            kept.append(arg if _names_a_file(arg) else MASK)
    return kept


def _names_a_file(arg: str) -> bool:
    try:
        return os.path.isfile(arg)
    except (OSError, ValueError):  # a NUL byte, a name too long
        return False


@dataclass
class Outcome:
    """One supervised run, once it is over. Durations in seconds."""

    command: list[str]
    started: datetime  # wall clock, UTC
    ended: datetime
    duration: float
    ended_by: str
    returncode: int | None  # as Popen gives it: -N when killed by signal N
    events_format: str
    monitor: Monitor
    limits: dict[str, Any] = field(default_factory=dict)
    stop: Verdict | None = None  # the verdict that ended a loop
    signals_sent: list[str] = field(default_factory=list)
    leftovers: bool = False  # processes of the group outlived the child and were ended
    output_bytes: dict[str, int] = field(default_factory=dict)
    #: which evidence judged the run (`source`: transcript, stream (tool calls on
    #: stdout) or console (lines)), and the figures
    #: of the transcript followed and of the console watched beside it
    evidence: dict[str, Any] = field(default_factory=lambda: {"source": "console"})
    full_argv: bool = False  # record the command line as given, not `masked_argv`

    @property
    def exit_code(self) -> int | None:
        return self.returncode if self.returncode is not None and self.returncode >= 0 else None

    @property
    def signal(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return str(-self.returncode)

    @property
    def status(self) -> int:
        """loopwatch's exit status: 86/87/88 when it ended the run, else the child's
        own (128 + N when a signal N ended it, as a shell reports it)."""
        if self.ended_by in _STATUS:
            return _STATUS[self.ended_by]
        if self.returncode is None:
            return 1
        return self.returncode if self.returncode >= 0 else 128 - self.returncode

    def record(self) -> dict[str, Any]:
        return {
            "command": list(self.command) if self.full_argv else masked_argv(self.command),
            "started": self.started.isoformat(timespec="milliseconds"),
            "ended": self.ended.isoformat(timespec="milliseconds"),
            "duration": round(self.duration, 3),
            "ended_by": self.ended_by,
            "status": self.status,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "signals_sent": self.signals_sent,
            "leftovers": self.leftovers,
            "events_format": self.events_format,
            "limits": self.limits,
            "output_bytes": self.output_bytes,
            "evidence": self.evidence,
            "loop": self.monitor.record(),  # includes "calibration"
        }

    def summary(self) -> str:
        """One line for a person, without the `loopwatch: ` prefix."""
        took = f"{self.duration:.1f}s" if self.duration < 60 else duration(self.duration)
        status = self.status
        if self.ended_by == "loop":
            why = self.stop.description if self.stop is not None else "a loop"
            return f"ended the run after {took} (status {status}): {why}"
        if self.ended_by == "idle":
            return f"ended the run after {took} (status {status}): no output for {self.limits.get('idle')}s"
        if self.ended_by == "max_runtime":
            return f"ended the run after {took} (status {status}): max runtime of {self.limits.get('max_runtime')}s reached"
        how = f"signal {self.signal}" if self.signal else f"exit {self.exit_code}"
        head = "interrupted" if self.ended_by == "interrupted" else "the command ended by itself"
        return f"{head} after {took} ({how}, status {status}); {self._seen()}"

    def _seen(self) -> str:
        figures = self.monitor.calibration()
        strongest = max(self.monitor.strongest.values(), key=lambda f: f.severity, default=None)
        if strongest is not None and strongest.severity >= 0.5:
            return f"strongest sign of a loop: {strongest.description}"
        if self.monitor.actions:
            return f"no loop seen in {self.monitor.actions} tool calls"
        return f"no loop seen (most copies of an output line cycle in a row: {figures.get('lines_most', 0)})"


def write_record(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Write the record as JSON, atomically (a reader never sees half a file), by
    `loopwatch._safefile`: a symlink, a FIFO or a device at `path` is refused
    (`safefile.UnsafeWrite`), never replaced or written through. The JSON is
    `loopwatch._encode`'s: any name, any number."""
    from .. import _safefile as safefile
    from .._encode import json_bytes

    safefile.write(path, json_bytes(record, indent=True) + b"\n")
