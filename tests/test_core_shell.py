"""`shell.always_prints`: a command line that shows something every time it runs."""

from __future__ import annotations

import pytest

from loopwatch._core.shell import always_prints, command_of


@pytest.mark.parametrize(
    "command",
    [
        "echo DONE",
        "bash -lc 'set -e; echo DONE'",
        "bash -lc 'sleep 1; echo still running'",
        "true; echo DONE",
        "cd /app && ls -la",
        "ls -l /app/out.json",
        "ps aux | head -n 20",
        "ls -la /app | sed -n '1,200p'",
        "pwd",
        "file /app/a.out",
        "printf 'ok\\n'",
        "C-c",
        "C-d",
        'echo "a; b" && rm -f x',  # the echo ran before anything else could fail
    ],
)
def test_commands_that_print_whatever_the_machine_holds(command: str) -> None:
    assert always_prints(command)


@pytest.mark.parametrize(
    "command",
    [
        "",
        "echo",  # a blank line at most
        "echo hi > /app/x",  # stdout sent to a file
        "echo hi &> /dev/null",
        "ls -la /app/missing 2>/dev/null",  # the only output for a missing path is the error, discarded
        "ls /app",  # an empty folder lists nothing
        "ps aux | grep python",  # a filter may drop every line
        "cd /app || echo no",  # the echo runs only if cd fails
        "rm -f x; echo DONE",  # an unknown command first: it may have taken the terminal
        "mkdir -p /app/x",
        "python3 run.py",
        "if true; then echo yes; fi",
        "cat > f <<EOF\nx\nEOF",
        "echo $(cat /app/x)",
        "C-x",
        "echo " + "x" * 500,  # a script, not a probe
    ],
)
def test_commands_that_may_print_nothing(command: str) -> None:
    assert not always_prints(command)


def test_the_command_of_a_shell_call() -> None:
    assert command_of("ls -la") == "ls -la"
    assert command_of({"command": "echo DONE", "description": "say done"}) == "echo DONE"
    assert command_of({"cmd": "pwd"}) == "pwd"
    assert command_of({"command": ["bash", "-lc", "echo DONE"]}) == "echo DONE"
    assert command_of({"command": ["ls", "-la"]}) == "ls -la"
    assert command_of({"cmd": None, "unknown_input": "s#1#0"}) is None
    assert command_of({"file_path": "a.py", "content": "echo hi"}) is None  # a file body is no command
    assert command_of(None) is None
