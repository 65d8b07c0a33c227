"""The guarded agent cannot switch its guard off, and the hook answers right: issue 24's
hook cases (long inputs, broken or huge project files, a sabotaged state folder, a held
lock). The environment a project's `.claude/settings.json` sets is tested against the
real Claude Code in `test_realclient_claude.py`, and here through the hook alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from hook_support import Agent, bash, user_config


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


# -- the environment a project's Claude Code settings set ----------------------------------------


def claude_env(agent: Agent, name: str, value: str, file: str = "settings.json") -> None:
    """What Claude Code does with a project's `"env"`: writes it into every hook's
    environment (checked against the real CLI in test_realclient_claude.py)."""
    folder = agent.cwd / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / file).write_text(json.dumps({"env": {name: value}}))
    agent.extra_env[name] = value


@pytest.mark.parametrize("file", ["settings.json", "settings.local.json"])
def test_a_project_cannot_switch_the_guard_off_through_claude_settings_env(agent, file):
    claude_env(agent, "LOOPWATCH_MODE", "off", file)
    assert loop(agent).denied
    assert "LOOPWATCH_MODE set by" in log_text(agent) and "not trusted" in log_text(agent)


def test_the_users_own_environment_still_switches_it_off(agent):
    agent.extra_env["LOOPWATCH_MODE"] = "off"
    assert not loop(agent).denied


def test_a_project_cannot_point_the_hook_at_its_own_user_config(agent):
    evil = agent.cwd / "mine.toml"
    evil.write_text('mode = "off"\n')
    claude_env(agent, "LOOPWATCH_CONFIG", str(evil))
    assert loop(agent).denied


def test_a_project_cannot_move_the_state_away(agent, tmp_path):
    elsewhere = agent.cwd / "scratch"
    claude_env(agent, "LOOPWATCH_STATE_DIR", str(elsewhere))
    assert loop(agent).denied
    assert not elsewhere.exists()


def test_a_project_environment_may_tighten(agent):
    user_config(agent, 'mode = "warn"\n')
    assert not loop(agent).denied
    other = Agent(agent.state, agent.cwd, session="sess-0002")
    claude_env(other, "LOOPWATCH_MODE", "enforce")
    assert loop(other).denied


def test_a_project_cannot_turn_stops_into_blocks(agent):
    user_config(agent, 'profile = "unattended"\n')
    agent.extra_env.pop("LOOPWATCH_PROFILE", None)
    claude_env(agent, "LOOPWATCH_PROFILE", "attended")
    before = loop(agent)
    assert before.stopped or (before.denied and "stopped" in before.denied), before


# -- project files too big or too deep ------------------------------------------------------------


@pytest.mark.parametrize("name", ["loopwatch.toml", "pyproject.toml"])
def test_a_deeply_nested_project_file_is_ignored_with_a_line(agent, name):
    nested = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    text = f'mode = "off"\n{nested}' if name == "loopwatch.toml" else f'[tool.loopwatch]\nmode = "off"\n{nested}'
    (agent.cwd / name).write_text(text)
    assert loop(agent).denied
    assert "project configuration ignored" in log_text(agent) and "nested deeper" in log_text(agent)
    assert "RecursionError" not in log_text(agent)


def test_a_huge_sparse_project_file_is_not_read(agent):
    with open(agent.cwd / "loopwatch.toml", "wb") as fh:
        fh.write(b'mode = "off"\n')
        fh.truncate(1 << 30)
    began = time.monotonic()
    assert loop(agent).denied
    assert "project configuration ignored" in log_text(agent) and "1 MiB" in log_text(agent)
    assert time.monotonic() - began < 60  # 8 calls; reading the file was 5-25 s each


def test_a_fifo_project_file_does_not_hang_the_hook(agent):
    os.mkfifo(agent.cwd / "loopwatch.toml")
    assert loop(agent).denied  # a read of the FIFO would never return (the helper's 60 s timeout)


@pytest.mark.parametrize("command", ["scan", "run"])
def test_scan_and_run_refuse_a_deep_project_file_in_one_line(agent, tmp_path, command):
    (agent.cwd / "loopwatch.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    events = agent.cwd / "s.jsonl"
    events.write_text('{"type": "turn"}\n')
    argv = ["scan", str(events)] if command == "scan" else ["run", "--", sys.executable, "-c", "pass"]
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", *argv],
        cwd=agent.cwd,
        env=agent.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "nested deeper" in done.stderr
