"""`loopwatch run` passes the agent's bytes through unchanged, and its exit status."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from _run_helpers import agent, assert_nothing_left, env_for, loopwatch

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


def direct(tmp_path: Path, command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=tmp_path, env=env_for(tmp_path), capture_output=True, timeout=30)


def test_colours_and_carriage_returns_pass_through_byte_for_byte(tmp_path):
    plain = direct(tmp_path, agent("progress_then_ok"))
    ran = loopwatch(tmp_path, agent("progress_then_ok"))
    assert ran.stdout == plain.stdout
    assert b"\x1b[1;32m" in ran.stdout and b"\r" in ran.stdout
    assert ran.stderr == plain.stderr  # no loopwatch line either: with --record, it is quiet


def test_a_flood_on_both_pipes_does_not_deadlock_and_loses_nothing(tmp_path):
    size = str(2 << 20)  # 2 MiB in 512 KiB writes, stderr first: far beyond a pipe's buffer
    plain = direct(tmp_path, agent("floods_both", size))
    ran = loopwatch(tmp_path, agent("floods_both", size), timeout=60)
    assert ran.status == 3  # the child's own status
    assert ran.record["ended_by"] == "exit" and ran.record["exit_code"] == 3
    assert ran.stdout == plain.stdout and ran.stderr == plain.stderr
    assert ran.record["output_bytes"] == {"stdout": len(plain.stdout), "stderr": len(plain.stderr)}
    assert_nothing_left(ran)


def test_a_child_killed_by_a_signal_gives_128_plus_the_signal(tmp_path):
    ran = loopwatch(tmp_path, ["sh", "-c", "echo bye; kill -USR1 $$"])
    assert ran.status == 128 + 10
    assert ran.record["ended_by"] == "exit"
    assert ran.record["signal"] == "SIGUSR1" and ran.record["exit_code"] is None


def test_stdin_is_passed_through(tmp_path):
    proc = subprocess.run(
        [*"python -m loopwatch run --".split(), "sh", "-c", "read x; echo got:$x"],
        cwd=tmp_path,
        env=env_for(tmp_path),
        input=b"hello\n",
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0
    assert proc.stdout == b"got:hello\n"


def test_a_missing_command_is_127_with_a_clear_message(tmp_path):
    ran = loopwatch(tmp_path, ["no-such-agent-command", "--go"])
    assert ran.status == 127
    assert ran.ours == ["loopwatch: cannot run no-such-agent-command: No such file or directory"]
    assert ran.record is None


def test_options_after_the_command_stay_the_commands(tmp_path):
    ran = loopwatch(tmp_path, ["sh", "-c", 'echo "$@"', "sh", "--idle", "3", "--mode"])
    assert ran.status == 0
    assert ran.stdout == b"--idle 3 --mode\n"


def test_a_bad_limit_is_refused(tmp_path):
    ran = loopwatch(tmp_path, ["true"], "--idle", "0")
    assert ran.status == 2
    assert b"must be a number of seconds above 0" in ran.stderr


def test_the_supervisor_as_a_library(tmp_path):
    from loopwatch import Config
    from loopwatch._supervise import Limits, Supervisor

    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        supervisor = Supervisor(
            ["sh", "-c", "echo hello; echo oops >&2; exit 5"],
            Config.make(mode="enforce"),
            Limits(idle=5),
            stdout=out.fileno(),
            stderr=err.fileno(),
        )
        outcome = supervisor.run()
    assert outcome.status == 5 and outcome.ended_by == "exit" and outcome.exit_code == 5
    assert (tmp_path / "out").read_bytes() == b"hello\n"
    assert (tmp_path / "err").read_bytes() == b"oops\n"
    assert outcome.record()["output_bytes"] == {"stdout": 6, "stderr": 5}
