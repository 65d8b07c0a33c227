"""One call of an installed hook command, run as the agent runs it, for `doctor`.

The command runs through the shell with the payload on stdin, in a throwaway state folder
(`LOOPWATCH_STATE_DIR`), so the user's sessions are untouched. This module says what came
back; what a host expects of it (exit statuses, output) is each host's check to judge.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["DryRun", "dry_run"]


class DryRun(NamedTuple):
    """What one dry-run call did. `failure` is why it did not run or answer ("" when it
    did, and then `done` is set); `log` the last line of the hook's log that says it could
    not check the call; `wrote_state`: loopwatch kept state, so it did look at the call."""

    done: subprocess.CompletedProcess[str] | None
    failure: str
    took_ms: float
    log: str
    wrote_state: bool


def dry_run(
    command: str,
    payload: Callable[[str], Mapping[str, Any]],
    env: Mapping[str, str],
    cwd: str | Path | None,
    timeout: float,
) -> DryRun:
    """Run `command` once on `payload(folder)` (the payload may name files in the
    throwaway folder) with `env` plus the throwaway state folder."""
    with tempfile.TemporaryDirectory(prefix="loopwatch-doctor-") as folder:
        began = time.perf_counter()
        try:
            done = subprocess.run(
                command,
                shell=True,
                input=json.dumps(payload(folder)),
                capture_output=True,
                text=True,
                env={**env, "LOOPWATCH_STATE_DIR": folder},
                cwd=cwd,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return DryRun(None, f"did not answer within {timeout:.0f}s", 0.0, "", False)
        except OSError as exc:
            return DryRun(None, f"did not run ({exc})", 0.0, "", False)
        took = (time.perf_counter() - began) * 1000
        log = Path(folder, "hook.log")
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.exists() else []
        # Only a line that lets the call through unchecked (or denies it so) says it was not
        # checked; others are what the hook tells of the call it did check (a warning).
        unchecked = [line for line in lines if line.endswith(("allowed", "denied (fail = closed)"))]
        return DryRun(done, "", took, unchecked[-1] if unchecked else "", Path(folder, "state.db").exists())
