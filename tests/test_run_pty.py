"""`loopwatch run --pty`: the agent on a pseudo-terminal of its own.

Some tests run loopwatch itself on a terminal made for the test (its stdin, stdout
and stderr), to see what a person at a terminal would: raw mode, window size and
its changes, keys typed, the terminal given back as it was.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from _run_helpers import agent, assert_nothing_left, env_for, loopwatch

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


def set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class AtTerminal:
    """`loopwatch run --pty -- command` with a terminal for its stdin/stdout/stderr."""

    def __init__(self, tmp_path: Path, command: list[str], rows: int = 37, cols: int = 123) -> None:
        self.master, self.slave = os.openpty()
        set_size(self.slave, rows, cols)
        self.modes = termios.tcgetattr(self.slave)  # a fresh terminal: cooked, echoing
        self.record = tmp_path / "record.json"
        argv = [sys.executable, "-m", "loopwatch", "run", "--pty", "-o", str(self.record), "--", *command]
        self.proc = subprocess.Popen(
            argv,
            cwd=tmp_path,
            env=env_for(tmp_path),
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            start_new_session=True,
        )
        self.seen = b""

    def wait_for(self, text: bytes, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r} in {self.seen!r}"
            if select.select([self.master], [], [], left)[0]:
                self.seen += os.read(self.master, 65536)

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def end(self, timeout: float = 15) -> int:
        status = self.proc.wait(timeout)
        while select.select([self.master], [], [], 0.2)[0]:
            self.seen += os.read(self.master, 65536)
        self.after = termios.tcgetattr(self.slave)
        os.close(self.master)
        os.close(self.slave)
        return status

    def data(self) -> dict:
        return json.loads(self.record.read_text())


def probe_report(seen: bytes) -> dict:
    line = next(x for x in seen.split(b"\r\n") if x.startswith(b"{"))
    return json.loads(line)


# -- on a test terminal ---------------------------------------------------------------------


def test_the_agent_sees_a_terminal_of_its_size_and_follows_resizes(tmp_path):
    run = AtTerminal(tmp_path, agent("tty_probe", "report"), rows=37, cols=123)
    run.wait_for(b"size 37 123\r\n")
    assert probe_report(run.seen) == {"isatty": [True, True, True], "ctty": True, "foreground": True}
    set_size(run.slave, 50, 160)
    run.proc.send_signal(signal.SIGWINCH)  # what the terminal sends loopwatch on a resize
    run.wait_for(b"size 50 160\r\n")
    run.type(b"bye\r")  # raw mode: keys go through as typed, Enter is CR
    run.wait_for(b"got: bye")
    assert run.end() == 0
    assert run.after == run.modes  # the terminal given back as it was
    assert run.data()["ended_by"] == "exit"


def test_ctrl_c_typed_reaches_the_agent_through_its_terminal(tmp_path):
    run = AtTerminal(tmp_path, agent("tty_probe", "report"))
    run.wait_for(b"size 37 123\r\n")
    run.type(b"\x03")
    run.wait_for(b"interrupted")
    assert run.end() == 130
    assert run.after == run.modes


def test_a_loop_on_a_terminal_is_stopped_and_the_terminal_restored(tmp_path):
    run = AtTerminal(tmp_path, agent("spawns_grandchild"))
    status = run.end(timeout=30)
    assert status == 86
    assert run.after == run.modes
    assert b"loopwatch: stopping the run" in run.seen
    # raw mode: our own lines end in CR LF, as the agent's do (a bare LF would stair-step)
    ours = [part.split(b"\n", 1)[0] for part in run.seen.split(b"loopwatch: ")[1:]]
    assert ours and all(line.endswith(b"\r") for line in ours), ours
    pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
    from _run_helpers import alive

    assert pids and not any(alive(p) for p in pids)


def test_the_terminal_is_restored_when_loopwatch_is_ended(tmp_path):
    run = AtTerminal(tmp_path, agent("traps_sigint", "ignore"))
    run.wait_for(b"ready")
    run.proc.send_signal(signal.SIGTERM)  # loopwatch itself told to end
    status = run.end(timeout=30)
    assert status == 128 + signal.SIGTERM or status == 128 + signal.SIGKILL
    assert run.after == run.modes
    assert run.data()["ended_by"] == "interrupted"


# -- piped, as in a script ----------------------------------------------------------------


def test_output_passes_byte_for_byte(tmp_path):
    ran = loopwatch(tmp_path, agent("tty_probe", "bytes"), "--pty")
    assert ran.status == 0, ran.stderr
    assert ran.stdout == bytes(range(256)) + random.Random(11).randbytes(1 << 16) + b"\x1b[31mred\x1b[0m\r\n\rover"
    assert ran.record["output_bytes"]["stdout"] == len(ran.stdout)


def test_lines_come_as_a_terminal_shows_them(tmp_path):
    ran = loopwatch(
        tmp_path, [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"], "--pty"
    )
    assert ran.stdout == b"out\r\nerr\r\n"  # one stream, the terminal's own newlines
    assert ran.stderr.startswith(b"") and ran.status == 0


def test_without_a_terminal_the_size_is_columns_and_lines_or_80x24(tmp_path):
    command = [sys.executable, "-c", "import os; s = os.get_terminal_size(); print(s.lines, s.columns, os.isatty(0))"]
    assert loopwatch(tmp_path, command, "--pty").stdout == b"24 80 True\r\n"
    os.environ["COLUMNS"], os.environ["LINES"] = "132", "43"
    try:
        assert loopwatch(tmp_path, command, "--pty").stdout == b"43 132 True\r\n"
    finally:
        del os.environ["COLUMNS"], os.environ["LINES"]


def test_piped_stdin_reaches_the_agent_and_its_end_is_an_end_of_file(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loopwatch",
            "run",
            "--pty",
            "--",
            sys.executable,
            "-c",
            "import sys; data = sys.stdin.read(); print('read', len(data.splitlines()), 'lines')",
        ],
        cwd=tmp_path,
        env=env_for(tmp_path),
        input=b"one\ntwo\nthree\n",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith(b"read 3 lines\r\n")


def test_a_loop_under_pty_is_stopped_with_86_and_nothing_left(tmp_path):
    ran = loopwatch(tmp_path, agent("cycle3"), "--pty")
    assert ran.status == 86
    assert ran.record["ended_by"] == "loop"
    assert_nothing_left(ran)


def test_a_stopped_agent_that_ignores_sigterm_and_sighup_is_killed(tmp_path):
    stubborn = [
        sys.executable,
        "-c",
        (
            "import os, signal, time\n"
            "open(os.environ['AGENT_PIDFILE'], 'a').write(f'{os.getpid()}\\n')\n"
            "for s in (signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
            "while True: print('connection refused; retrying', flush=True); time.sleep(0.01)"
        ),
    ]
    ran = loopwatch(tmp_path, stubborn, "--pty", "--grace", "0.5")
    assert ran.status == 86
    assert ran.record["signals_sent"] == ["SIGTERM", "SIGKILL"]
    assert_nothing_left(ran)


def test_a_helper_left_on_the_terminal_is_ended_with_the_agent(tmp_path):
    ran = loopwatch(tmp_path, agent("spawns_grandchild"), "--pty", "--grace", "0.5")
    assert ran.status == 86
    assert len(ran.pids) == 2
    assert_nothing_left(ran)


def test_ctrl_c_to_loopwatch_is_forwarded_under_pty(tmp_path):
    ran = loopwatch(tmp_path, agent("traps_sigint"), "--pty", interrupt_on=b"ready")
    assert ran.status == 130
    assert b"interrupted, cleaning up" in ran.stdout
    assert ran.record["ended_by"] == "interrupted"
    assert_nothing_left(ran)


def test_idle_and_a_missing_command_behave_as_without_pty(tmp_path):
    ran = loopwatch(tmp_path, agent("goes_silent"), "--pty", "--idle", "0.5")
    assert ran.status == 87
    missing = loopwatch(tmp_path, ["no-such-agent-xyz"], "--pty", record=False)
    assert missing.status == 127 and b"Traceback" not in missing.stderr
