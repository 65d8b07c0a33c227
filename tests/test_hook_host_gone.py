"""A hook whose host has gone before it answers (its end of the pipe closed: the host was
killed, or ended the run) ends at once: it never waits for a watchdog that will not
answer, and says so in hook.log."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hook_support import Agent, bash

FAILING = bash("ls /nonexistent-dir-xyz")
ERROR = "ls: cannot access '/nonexistent-dir-xyz': No such file or directory"


def test_an_answer_the_host_can_no_longer_read_ends_the_hook(tmp_path):
    agent = Agent(tmp_path / "state", tmp_path)
    for _ in range(3):
        agent.run("Bash", FAILING, error=ERROR)
    payload = {**agent.base("PreToolUse"), "tool_name": "Bash", "tool_input": FAILING, "tool_use_id": "toolu_gone"}
    read, write = os.pipe()
    os.close(read)  # the host has gone: nobody reads the answer
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loopwatch", "hook"],
            stdin=subprocess.PIPE,
            stdout=write,
            stderr=subprocess.PIPE,
            env=agent.env(),
            cwd=tmp_path,
        )
    finally:
        os.close(write)
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    try:
        proc.wait(timeout=120)  # far past the watchdog's 25 s: a hang is unmistakable
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = (tmp_path / "state" / "hook.log").read_text()
    assert "the answer could not be written (the host has gone)" in log, log
    assert proc.returncode == 0, (proc.returncode, proc.stderr.read().decode())
