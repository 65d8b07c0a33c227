"""The guarded agent cannot switch its guard off, and the hook answers right: issue 24's
hook cases (long inputs, broken or huge project files, a sabotaged state folder, a held
lock). The environment a project's `.claude/settings.json` sets is tested against the
real Claude Code in `test_realclient_claude.py`, and here through the hook alone."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hook_support import Agent, bash, user_config

pytestmark = pytest.mark.slow


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


@pytest.mark.parametrize("where", ["HOME", "CLAUDE_CONFIG_DIR"])
def test_a_project_cannot_pass_its_settings_off_as_the_users(agent, where):
    # HOME (or CLAUDE_CONFIG_DIR) pointed at the project makes its .claude/settings.json
    # look like the user's own ~/.claude/settings.json, which is trusted.
    value = str(agent.cwd) if where == "HOME" else str(agent.cwd / ".claude")
    folder = agent.cwd / ".claude"
    folder.mkdir()
    (folder / "settings.json").write_text(json.dumps({"env": {where: value, "LOOPWATCH_MODE": "off"}}))
    agent.extra_env.update({where: value, "LOOPWATCH_MODE": "off"})
    assert loop(agent).denied


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


# -- a held lock: the hook answers within its host's timeout ----------------------------------------

HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, b"%12d\n" % os.getpid(), 0)  # as a live loopwatch call holding the lock writes it
print("held", flush=True)
time.sleep(600)
"""

SQLITE_HOLDER = r"""
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(600)
"""


def _held(agent: Agent, script: str, target: str):
    holder = subprocess.Popen([sys.executable, "-c", script, str(agent.state / target)], stdout=subprocess.PIPE)
    assert holder.stdout.readline() == b"held\n"
    return holder


def _release(holder) -> None:
    holder.kill()
    holder.wait()
    holder.stdout.close()


def test_a_held_lock_is_answered_within_the_host_timeout_and_fail_closed_honoured(agent):
    from loopwatch._hook.settings import HOST_TIMEOUT

    user_config(agent, '[hook]\nfail = "closed"\n')  # the default answer_within
    agent.run("Bash", bash("ls"), response={"stdout": "a"})
    holder = _held(agent, HOLDER, "state.lock")
    try:
        began = time.monotonic()
        result = agent.pre("Bash", bash("ls"))
        waited = time.monotonic() - began
    finally:
        _release(holder)
    assert waited < HOST_TIMEOUT - 5, waited  # Python's start on a busy machine needs the rest
    assert result.denied and "fail closed" in result.denied
    assert "LockTimeout" in log_text(agent) and "denied (fail = closed)" in log_text(agent)


@pytest.mark.parametrize("fail", ["open", "closed"])
def test_a_database_locked_by_another_program_is_answered_in_time(agent, fail):
    # SQLite itself would wait a minute for its lock: only the hook's deadline answers in time.
    user_config(agent, f'[hook]\nfail = "{fail}"\nanswer_within = 3\nbusy_timeout = 60\n')
    agent.run("Bash", bash("ls"), response={"stdout": "a"})
    holder = _held(agent, SQLITE_HOLDER, "state.db")  # not our lock: SQLite's own, for ever
    try:
        began = time.monotonic()
        result = agent.pre("Bash", bash("ls"))
        waited = time.monotonic() - began
    finally:
        _release(holder)
    assert waited < 3 + 10, waited  # 3 s, plus starting two Pythons on a busy machine
    assert bool(result.denied) is (fail == "closed")
    assert "no answer within 3s" in log_text(agent)
    assert log_text(agent).rstrip().endswith("denied (fail = closed)" if fail == "closed" else "allowed")


# -- a sabotaged state folder is repaired -----------------------------------------------------------


def _sabotage(path, kind: str, victim) -> None:
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        path.symlink_to(victim)
    else:
        os.link(victim, path)


@pytest.mark.parametrize("kind", ["folder", "fifo", "symlink", "hardlink"])
@pytest.mark.parametrize("name", ["state.lock", "state.db"])
def test_a_lock_or_database_replaced_by_something_else_is_moved_aside(agent, tmp_path, name, kind):
    agent.run("Bash", bash("ls"), response={"stdout": "a"})
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    for suffix in ("-wal", "-shm"):
        (agent.state / f"state.db{suffix}").unlink(missing_ok=True)
    _sabotage(agent.state / name, kind, victim)
    assert loop(agent).denied  # the guard is on again from the very next call
    assert victim.read_bytes() == b"precious\n"
    assert f"{name} was" in log_text(agent) and "moved aside" in log_text(agent)
    assert (agent.state / name).is_file() and not (agent.state / name).is_symlink()


def test_a_folder_made_writable_by_others_is_made_private_again(agent):
    agent.run("Bash", bash("ls"), response={"stdout": "a"})
    os.chmod(agent.state, 0o777)
    assert loop(agent).denied
    assert stat.S_IMODE(agent.state.stat().st_mode) == 0o700
    assert "could be written by others (mode 777); made private" in log_text(agent)


@pytest.mark.skipif(os.getuid() != 0, reason="a file of another user needs root to make")
def test_what_others_planted_in_a_writable_folder_is_moved_aside(agent):
    agent.run("Bash", bash("ls"), response={"stdout": "a"})
    os.chmod(agent.state, 0o777)
    planted = agent.state / "state.lock"
    os.chown(planted, 4242, 4242)
    assert loop(agent).denied
    assert planted.stat().st_uid == os.getuid()
    assert "planted by another user" in log_text(agent)


@pytest.mark.parametrize("kind", ["file", "dangling"])
def test_a_state_folder_replaced_by_a_file_or_a_dangling_link_is_moved_aside(agent, tmp_path, kind):
    if kind == "file":
        agent.state.write_text("not a folder\n")
    else:
        agent.state.symlink_to(tmp_path / "nowhere")
    assert loop(agent).denied
    assert agent.state.is_dir() and not agent.state.is_symlink()
    assert "moved aside" in log_text(agent)


# -- run and mcp-proxy: the same trust rule as the hook --------------------------------------------


def _run_loop(folder, home) -> subprocess.CompletedProcess:
    agent_script = Path(__file__).resolve().parent / "agents" / "retry_forever.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "XDG_"))}
    env.update(HOME=str(home), PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src"))
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", "run", "--max-runtime", "20", "--", sys.executable, str(agent_script)],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_run_does_not_let_a_project_file_switch_it_off(tmp_path):
    (tmp_path / "loopwatch.toml").write_text('mode = "off"\n[signals.repeated_lines]\nrepeats = 1000\n')
    done = _run_loop(tmp_path, tmp_path / "home")
    assert done.returncode == 86, done.stderr[-500:]  # ended as a loop, as with no file at all


def test_run_follows_a_project_file_the_user_trusts(tmp_path):
    mine = tmp_path / "home" / ".config" / "loopwatch" / "loopwatch.toml"
    mine.parent.mkdir(parents=True)
    mine.write_text("[hook]\ntrust_project = true\n")
    (tmp_path / "loopwatch.toml").write_text('mode = "off"\n')
    done = _run_loop(tmp_path, tmp_path / "home")
    assert done.returncode == 88, done.stderr[-500:]  # not stopped: it ran to --max-runtime


def test_mcp_proxy_reads_config_by_the_same_rule(tmp_path, monkeypatch):
    from loopwatch import _trust as trust

    (tmp_path / "loopwatch.toml").write_text('mode = "off"\nprofile = "unattended"\n')
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("LOOPWATCH_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("LOOPWATCH_MODE", raising=False)
    config = trust.load_config(start=tmp_path)
    assert config.mode == "enforce" and config.profile == "unattended"  # loosening ignored, tightening kept
    source = Path(__file__).resolve().parent.parent / "src" / "loopwatch" / "_cli" / "mcp_proxy.py"
    assert "from .._trust import load_config" in source.read_text()
