"""The project the working-folder tests give a real CLI: a function with a bug and the
check that shows it, every file written long ago (so the folder's fingerprint is known
from the first call: no stamp a later write could repeat)."""

from __future__ import annotations

import os
from pathlib import Path

#: The check each round runs.
CHECK = {"command": "python3 check.py", "description": "Run the check"}
OLD = 1_000_000_000_000_000_000  # nanoseconds: 2001


def project(work: Path) -> Path:
    """Write the project into `work`; the file to fix (`calc.py`)."""
    work.mkdir(parents=True, exist_ok=True)
    for name, body in {
        "calc.py": "def add(a, b):\n    return a - b  # v0\n",
        "check.py": "from calc import add\nprint('add(2, 3) =', add(2, 3), '(expected 5)')\n",
    }.items():
        (work / name).write_text(body)
        os.utime(work / name, ns=(OLD, OLD))
    return work / "calc.py"
