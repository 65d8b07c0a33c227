"""`loopwatch run` against hostile children and bad limits: a daemon that escapes the
process group and keeps the output pipe open, NaN and infinite limits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _run_helpers import agent, env_for, loopwatch

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


def _kill_daemon(ran) -> None:
    for pid in ran.pids[1:]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("how", ["exit", "stay"])
def test_an_escaped_daemon_does_not_outlast_max_runtime(tmp_path, how):
    start = time.monotonic()
    ran = loopwatch(tmp_path, agent("escapes_setsid", how), "--max-runtime", "2", "--idle", "1.5", "--grace", "0.5")
    took = time.monotonic() - start
    _kill_daemon(ran)
    assert took < 8, f"the run waited {took:.1f}s on the daemon's pipe"
    assert ran.status == 88, ran.stderr
    assert ran.record["ended_by"] == "max_runtime" and ran.record["status"] == 88
    assert any("not waiting for the output pipe" in line for line in ran.ours)


def test_an_escaped_daemon_that_loops_is_a_stop_and_the_record_agrees(tmp_path):
    start = time.monotonic()
    ran = loopwatch(tmp_path, agent("escapes_setsid", "exit", "same"), "--max-runtime", "10", "--grace", "0.5")
    _kill_daemon(ran)
    assert time.monotonic() - start < 8
    assert ran.status == 86, ran.stderr
    assert ran.record["ended_by"] == "loop" and ran.record["status"] == 86
    assert ran.record["loop"]["verdict"]["action"] == "stop"


def test_no_run_exits_as_ended_by_itself_with_a_record_saying_stop(tmp_path):
    ran = loopwatch(tmp_path, agent("escapes_setsid", "exit", "same"), "--grace", "0.5", timeout=40)
    _kill_daemon(ran)
    stopped = (ran.record["loop"]["verdict"] or {}).get("action") == "stop"
    assert stopped == (ran.record["ended_by"] == "loop") == (ran.status == 86)


@pytest.mark.parametrize("option", ["--grace", "--idle", "--max-runtime"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0"])
def test_nan_infinite_and_negative_limits_are_refused(tmp_path, option, value):
    ran = subprocess.run(
        [sys.executable, "-m", "loopwatch", "run", option, value, "--", "true"],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        timeout=30,
    )
    assert ran.returncode == 2
    assert b"must be a number of seconds above 0, and finite" in ran.stderr and b"Traceback" not in ran.stderr


def test_the_library_refuses_a_nan_limit_too():
    from loopwatch._supervise import Limits

    for field in ("idle", "max_runtime", "grace"):
        with pytest.raises(ValueError, match=field):
            Limits(**{field: float("nan")})


# -- the command line in the record -----------------------------------------------------


def test_the_record_masks_option_values_and_arguments(tmp_path):
    secret = "sk-live-0123456789abcdef"
    command = [
        sys.executable,
        "-c",
        "print('hi')",
        "--api-key",
        secret,
        f"--token={secret}",
        "-k" + secret,
        "fix the tests",
    ]
    ran = loopwatch(tmp_path, command)
    assert ran.status == 0
    recorded = ran.record["command"]
    assert secret not in str(recorded) and "fix the tests" not in str(recorded) and "print" not in str(recorded)
    assert recorded[0] == sys.executable
    assert recorded[1:] == ["-c", "<masked>", "--api-key", "<masked>", "--token=<masked>", "-k<masked>", "<masked>"]


def test_record_argv_keeps_the_whole_command_line(tmp_path):
    command = [sys.executable, "-c", "print('hi')", "--api-key", "sk-1"]
    ran = loopwatch(tmp_path, command, "--record-argv")
    assert ran.record["command"] == command
