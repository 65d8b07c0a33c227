"""`loopwatch doctor` for Claude Code, on a user's machine: a fresh HOME, the real CLI
on PATH, loopwatch installed (or not, or badly) by its own install command."""

from __future__ import annotations

import json

import pytest
from real_claude_support import (
    CLAUDE_CODE_VERSION,
    ClaudeRun,
    ScriptedAnthropic,
    claude_binary,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def claude() -> str:
    return claude_binary()


@pytest.fixture
def machine(tmp_path, claude):
    with ScriptedAnthropic({}) as server:
        yield ClaudeRun(tmp_path, server, claude)


def doctor(machine: ClaudeRun) -> tuple[int, list[dict]]:
    done = machine.loopwatch("doctor", "claude-code", "--json", check=False)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def problems(lines: list[dict]) -> list[str]:
    return [line["text"] for line in lines if line["status"] == "problem"]


def test_all_well_after_install(machine):
    machine.install()
    code, lines = doctor(machine)
    assert code == 0, lines
    texts = [line["text"] for line in lines]
    assert any(t.startswith("hook installed for 7 events") for t in texts)
    assert any(t.startswith("hook runs: a dry-run call answered") for t in texts)
    assert any(t.startswith(f"Claude Code {CLAUDE_CODE_VERSION} ") for t in texts)
    assert not machine.state_dir.exists()  # the dry run used its own throwaway state


def test_not_installed(machine):
    code, lines = doctor(machine)
    assert code == 1 and problems(lines) == ["the hook is not installed: run `loopwatch install claude-code`"]


def test_an_older_install_without_post_tool_batch(machine):
    machine.install()
    path = machine.home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    del settings["hooks"]["PostToolBatch"]
    path.write_text(json.dumps(settings))
    code, lines = doctor(machine)
    assert code == 1 and len(problems(lines)) == 1 and "PostToolBatch" in problems(lines)[0]


def test_a_hook_command_that_cannot_run(machine):
    machine.loopwatch("install", "claude-code", "--command", "/nonexistent/python3 -P -m loopwatch hook claude-code")
    code, lines = doctor(machine)
    assert code == 1 and len(problems(lines)) == 1
    assert problems(lines)[0].startswith("the hook command fails (exit 127")


def test_hooks_switched_off(machine):
    machine.install()
    path = machine.home / ".claude" / "settings.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "disableAllHooks": True}))
    machine.extra_env["LOOPWATCH_MODE"] = "off"
    code, lines = doctor(machine)
    found = problems(lines)
    assert code == 1 and len(found) == 3, found
    assert any("disableAllHooks" in p for p in found) and any(p.startswith("LOOPWATCH_MODE=off") for p in found)
    assert any("loopwatch did nothing" in p for p in found)


def test_bad_usage_is_exit_2(machine):
    done = machine.loopwatch("doctor", "vscode", check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_a_broken_configuration_makes_the_hook_allow_everything(machine):
    """The user's own file: a project's file cannot switch the hook off (see below)."""
    machine.install()
    mine = machine.home / ".config" / "loopwatch" / "loopwatch.toml"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text('[hook]\nfail = "sometimes"\n')
    code, lines = doctor(machine)
    found = problems(lines)
    assert code == 1 and len(found) == 1 and found[0].startswith("the hook ran but could not check the call (")
    assert "ConfigError" in found[0] and "hook.fail" in found[0]


def test_a_broken_project_configuration_is_ignored_by_the_hook(machine):
    """The agent can write its working directory's loopwatch.toml: the hook only takes
    what tightens it from there, and a broken one is ignored, not obeyed."""
    machine.install()
    (machine.work / "loopwatch.toml").write_text('[hook]\nfail = "sometimes"\n')
    code, lines = doctor(machine)
    assert code == 0, problems(lines)


def test_an_older_install_that_imports_the_project_is_a_problem(machine):
    """`python -m loopwatch hook` (what `install` wrote before `-P`): the agent's project is
    first on the module path, so doctor says to install again; a new install is not."""
    machine.install()
    path = machine.home / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    for entries in settings["hooks"].values():
        for entry in entries:
            for hook in entry["hooks"]:
                _, _, tail = hook["command"].partition(" loopwatch hook ")
                hook["command"] = f"python3 -m loopwatch hook {tail}"
    path.write_text(json.dumps(settings))
    code, lines = doctor(machine)
    assert code == 1
    assert any("runs `python -m loopwatch`" in p and "install claude-code` again" in p for p in problems(lines))
    machine.install()  # the current command replaces it
    assert not any("python -m loopwatch" in p for p in problems(doctor(machine)[1]))
