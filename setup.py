"""The build: pure Python by default; `LOOPWATCH_COMPILE=1` compiles the per-event path with mypyc.

    pip install .                                                    # pure Python, no compiler
    pip install mypy==2.4.1 setuptools                               # the compiled build: mypyc and a C compiler
    LOOPWATCH_COMPILE=1 pip install --no-build-isolation .

The compiled build needs mypy (which ships mypyc) already installed and a C compiler on
the machine; nothing is downloaded for it (`--no-build-isolation`: the installed mypy
is used). Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os

from setuptools import setup

# What every event passes through, outside the signals. The signals and their params
# stay Python: mypyc evaluates a field's `Annotated[...]` to its bare type, which drops
# the range rules `SignalParams` reads from it. `_core/session.py` stays Python too:
# the hook's session state extends its class.
COMPILED = [
    "src/loopwatch/_core/calibrations.py",
    "src/loopwatch/_core/config.py",
    "src/loopwatch/_core/console.py",
    "src/loopwatch/_core/events.py",
    "src/loopwatch/_core/fingerprint.py",
    "src/loopwatch/_core/identity.py",
    "src/loopwatch/_core/lines.py",
    "src/loopwatch/_core/monitor.py",
    "src/loopwatch/_core/periodic.py",
    "src/loopwatch/_core/policy.py",
    "src/loopwatch/_core/record.py",
    "src/loopwatch/_core/step.py",
    "src/loopwatch/_core/text.py",
    "src/loopwatch/_core/verdict.py",
    "src/loopwatch/_readers/events.py",
    "src/loopwatch/_readers/jsonio.py",
    "src/loopwatch/_analysis/replay.py",
]

if os.environ.get("LOOPWATCH_COMPILE") == "1":
    from mypyc.build import mypycify

    # `--no-warn-unused-configs`: pyproject's mypy sections name modules not compiled here.
    setup(ext_modules=mypycify(["--no-warn-unused-configs", *COMPILED], opt_level="3"))
else:
    setup()
