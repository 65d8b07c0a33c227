"""Shared bits of the test agents: note our pid where the test can find it."""

import os
import sys


def note_pid(pid: int | None = None, name: str = "pids") -> None:
    """Append a pid to the file named by $AGENT_PIDFILE (the test reads it after the run)."""
    path = os.environ.get("AGENT_PIDFILE")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{pid or os.getpid()}\n")


def say(text: str, stream=sys.stdout) -> None:
    stream.write(text)
    stream.flush()
