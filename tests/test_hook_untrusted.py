"""The guarded agent cannot switch its guard off, and the hook answers right: issue 24's
hook cases (long inputs, broken or huge project files, a sabotaged state folder, a held
lock). The environment a project's `.claude/settings.json` sets is tested against the
real Claude Code in `test_realclient_claude.py`, and here through the hook alone."""

from __future__ import annotations

import pytest
from hook_support import Agent, bash


@pytest.fixture
def agent(tmp_path):
    (tmp_path / "project").mkdir()
    return Agent(tmp_path / "state", tmp_path / "project")


def log_text(agent: Agent) -> str:
    path = agent.state / "hook.log"
    return path.read_text() if path.exists() else ""


def loop(agent: Agent, times: int = 4):
    """The same failing call `times` times; returns the last PreToolUse answer."""
    before = None
    for _ in range(times):
        before, _ = agent.run("Bash", bash("make"), error="make: *** No rule to make target 'all'")
    return before


# -- identity: the whole input, not its ends ---------------------------------------------------


def test_long_commands_that_differ_in_the_middle_are_not_one_repeat(agent):
    head, tail = "echo '" + "a" * 5000, "b" * 5000 + "'"
    answers = [agent.run("Bash", bash(f"{head}{i:06d}{tail}"), response={"stdout": "done"})[0] for i in range(6)]
    assert not any(a.denied for a in answers), [a.denied for a in answers]
    assert all(a.context is None for a in answers)


def test_the_same_long_command_is_still_a_repeat(agent):
    command = bash("echo '" + "a" * 6000 + "middle" + "b" * 6000 + "'")
    answers = [agent.run("Bash", command, error="exit 1: no such file")[0] for _ in range(4)]
    assert answers[-1].denied
