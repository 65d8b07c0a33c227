"""Helpers for the `loopwatch run` tests: run the real CLI on a real agent script."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loopwatch._supervise.group import live_members

ROOT = Path(__file__).resolve().parent.parent
AGENTS = Path(__file__).resolve().parent / "agents"


@dataclass
class Ran:
    status: int
    stdout: bytes
    stderr: bytes
    record: dict | None
    pids: list[int]  # what the agent noted: its own pid first

    @property
    def ours(self) -> list[str]:
        """loopwatch's own lines on stderr."""
        return [line for line in self.stderr.decode("utf-8", "replace").splitlines() if line.startswith("loopwatch: ")]


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LOOPWATCH_MODE"}
    env["PYTHONPATH"] = str(ROOT / "src")
    env["AGENT_PIDFILE"] = str(tmp_path / "pids")
    return env


def agent(name: str, *args: str) -> list[str]:
    return [sys.executable, str(AGENTS / f"{name}.py"), *args]


def loopwatch(
    tmp_path: Path,
    command: list[str],
    *options: str,
    record: bool = True,
    timeout: float = 30,
    interrupt_on: bytes | None = None,
    interrupts: int = 1,
) -> Ran:
    """Run `loopwatch run [options] -- command` in tmp_path. With `interrupt_on`, send
    SIGINT to loopwatch (`interrupts` times, 0.1 s apart) once that text shows on stdout."""
    path = tmp_path / "record.json"
    argv = [sys.executable, "-m", "loopwatch", "run", *options]
    if record:
        argv += ["-o", str(path)]
    argv += ["--", *command]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env_for(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if interrupt_on is not None:
        seen = b""
        while interrupt_on not in seen:
            piece = proc.stdout.read1(4096)  # type: ignore[union-attr]
            assert piece, "the agent ended before it was interrupted"
            seen += piece
        for _ in range(interrupts):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.1)
    else:
        seen = b""
    pidfile = tmp_path / "pids"
    try:
        rest, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # leave nothing running behind a failed test
        proc.kill()
        proc.communicate()
        for pid in [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        raise
    out = seen + rest
    pids = [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []
    data = json.loads(path.read_text()) if record and path.exists() else None
    return Ran(proc.returncode, out, err, data, pids)


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaps counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def assert_nothing_left(ran: Ran) -> None:
    assert ran.pids, "the agent noted no pid"
    for pid in ran.pids:
        assert not alive(pid), f"process {pid} outlived the run"
    assert live_members(ran.pids[0]) == [], "the agent's process group still has members"
