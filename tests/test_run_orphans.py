"""`loopwatch run` never leaves the agent running unsupervised: whatever ends loopwatch
(a signal it passes on, SIGKILL) or its stdout (`| head -3`), the child's group ends too.

The child is quiet (it never writes, so a closed pipe cannot end it by itself) and starts
a grandchild; both note their pids. The waits below are liveness bounds, generous, not
measures: before the fix these processes lived for ever.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _run_helpers import alive, env_for

from loopwatch._supervise.group import live_members

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]

LIVENESS = 30.0  # seconds: far above what ending a group takes, far below "for ever"

QUIET_WITH_GRANDCHILD = (
    "import os, subprocess, sys, time\n"
    "def note(pid):\n"
    "    with open(os.environ['AGENT_PIDFILE'], 'a') as fh: fh.write(f'{pid}\\n')\n"
    "note(os.getpid())\n"
    "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "note(helper.pid)\n"
    "time.sleep(600)\n"
)

CHATTY = "import time\nwhile True:\n    print('working on it', flush=True)\n    time.sleep(0.05)\n"


def start(tmp_path: Path, code: str, stdout=subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "loopwatch", "run", "--", sys.executable, "-c", code],
        cwd=tmp_path,
        env=env_for(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
    )


def pids_noted(tmp_path: Path, count: int) -> list[int]:
    path = tmp_path / "pids"
    deadline = time.monotonic() + LIVENESS
    while time.monotonic() < deadline:
        pids = [int(x) for x in path.read_text().split()] if path.exists() else []
        if len(pids) >= count:
            return pids
        time.sleep(0.05)
    raise AssertionError("the child never started")


def gone(pids: list[int]) -> bool:
    """Every process noted, and the child's group, ended within `LIVENESS`."""
    deadline = time.monotonic() + LIVENESS
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids) and not live_members(pids[0]):
            return True
        time.sleep(0.05)
    return False


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_the_group_ends_when_loopwatch_is_killed(tmp_path):
    run = start(tmp_path, QUIET_WITH_GRANDCHILD)
    pids = pids_noted(tmp_path, 2)
    try:
        run.kill()  # SIGKILL: loopwatch gets no chance to end anything
        run.communicate(timeout=LIVENESS)
        assert gone(pids), "the agent outlived loopwatch"
    finally:
        kill_all(pids)


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM])
def test_a_signal_that_would_end_loopwatch_alone_is_passed_to_the_group(tmp_path, sig):
    run = start(tmp_path, QUIET_WITH_GRANDCHILD)
    pids = pids_noted(tmp_path, 2)
    try:
        run.send_signal(sig)
        _, err = run.communicate(timeout=LIVENESS)
        assert gone(pids), "the agent outlived loopwatch"
        # the child died of the signal passed on; loopwatch said so and exited as it did
        assert run.returncode == 128 + sig, err
        assert b"Traceback" not in err
    finally:
        kill_all(pids)


def test_a_closed_stdout_reaches_the_child_as_a_pipe_would(tmp_path):
    run = start(tmp_path, CHATTY, stdout=subprocess.PIPE)
    assert run.stdout is not None
    try:
        lines = [run.stdout.readline() for _ in range(3)]
        assert lines == [b"working on it\n"] * 3
        run.stdout.close()  # `| head -3` has read what it wanted
        _, err = run.communicate(timeout=LIVENESS)
    except BaseException:
        run.kill()
        raise
    # the child's next print met the closed pipe: it ended by itself, of it
    assert b"BrokenPipeError" in err or run.returncode == 128 + signal.SIGPIPE, err
    assert not live_members(run.pid)


def test_a_normal_run_leaves_no_watchdog(tmp_path):
    """The watchdog is a fork of loopwatch (its command line is loopwatch's): none is
    left once the run is over."""
    marker = f"print({str(tmp_path)!r})"
    run = subprocess.run(
        [sys.executable, "-m", "loopwatch", "run", "--", sys.executable, "-c", marker],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        timeout=LIVENESS,
    )
    assert run.returncode == 0, run.stderr
    left = [p for p in os.listdir("/proc") if p.isdigit() and marker in _cmdline(int(p)) and alive(int(p))]
    assert left == []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
