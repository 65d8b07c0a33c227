"""A project file that switches every hook off, against the real Claude Code (2.1.197,
2.1.332) and Codex (0.171.0), driven offline by scripted models: the loop is still
stopped, the person is told, the agent cannot write such a file, `doctor` names it.

- Claude Code: `.claude/settings.json` `{"disableAllHooks": true}`. Held by
  `loopwatch run` (it adds `--settings '{"disableAllHooks": false}'`) and by
  `install claude-code --system` (the managed settings).
- Codex: `.codex/config.toml` `[features] hooks = false` in a trusted project. Held by
  `loopwatch run` (it adds `-c features.hooks=true`) and by `install codex --system` (a
  pin in /etc/codex/requirements.toml).

The `--system` tests write the real files in /etc: nothing in either CLI moves them
(Claude Code's path is fixed in its code, Codex's too; no variable names another). So
they run as root only, inside `real_clis.etc_written`: the CLI's /etc lock held
exclusively (every other run of that CLI, and of loopwatch beside it, holds it shared),
and the CLI's /etc folder put back exactly as it was, which is checked. The managed hook's command
runs loopwatch only for this test's HOME: a run of Claude Code elsewhere on the machine
meanwhile (another checkout's tests) runs it as a no-op, never a second guard.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
import real_clis
from codex_support import CodexHome, ScriptedResponses, require_codex, shell, stream_items
from real_claude_support import (
    CLAUDE_CODE_VERSION,
    CURRENT_CLAUDE_CODE_VERSION,
    LOOP_COMMAND,
    ClaudeRun,
    ScriptedAnthropic,
    Step,
    claude_binary,
    loop_script,
    tool_results,
    tool_uses,
)

pytestmark = pytest.mark.slow

VERSIONS = [CLAUDE_CODE_VERSION, CURRENT_CLAUDE_CODE_VERSION]
root_only = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="writes /etc: root only")
NUDGE = "going in circles"
MANAGED = Path("/etc/claude-code/managed-settings.json")
REQUIREMENTS = Path("/etc/codex/requirements.toml")


def _switch_claude_off(machine: ClaudeRun) -> Path:
    settings = machine.work / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"disableAllHooks": True}))
    return settings


def _told(machine: ClaudeRun, settings: Path) -> list[str]:
    """What loopwatch's hook told the person of `settings` in the session (`claude -p`
    shows a hook's words nowhere else: a `hook_system_message` in the session file)."""
    said = []
    for session in machine.sessions():
        for line in session.read_text().splitlines():
            attachment = json.loads(line).get("attachment") if '"hook_system_message"' in line else None
            if isinstance(attachment, dict) and attachment.get("type") == "hook_system_message":
                said.append(attachment.get("content", ""))
    return [text for text in said if text.startswith("loopwatch: ") and str(settings) in text]


# -- Claude Code -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_claude_under_run_is_still_stopped_with_hooks_switched_off(tmp_path, version):
    """Without the hold, all 12 identical failing calls ran (the hook never ran). Under
    `loopwatch run` the run is stopped before the 4th, and the person is told that only
    this run is held; `doctor` names the file and what to do."""
    with ScriptedAnthropic({"loop": loop_script(12)}) as server:
        machine = ClaudeRun(tmp_path, server, claude_binary(version))
        machine.install()
        settings = _switch_claude_off(machine)
        run = machine.claude(
            "SCENARIO:loop do the task",
            wrap=lambda argv: [sys.executable, "-m", "loopwatch", "run", "--", *argv],
        )
        turns = server.of("loop")
        doctor = machine.loopwatch("doctor", "claude-code", check=False)
    assert [t.answered for t in turns] == ["tool:Bash"] * 4, [t.answered for t in turns]
    calls = tool_uses(run.lines)
    assert "loopwatch stopped the run" in tool_results(run.lines)[calls[-1]["id"]]["text"]
    assert run.result["terminal_reason"] == "hook_stopped" and run.code == 86, run.stderr
    assert f"loopwatch: {settings}: " in run.stderr and "held on for this run (--settings" in run.stderr
    row = machine.status()[""]
    assert row["actions"] == 3 and row["stops"] == 1
    (told,) = _told(machine, settings)
    assert str(settings) in told and "`loopwatch run` holds them on for this run only" in told
    assert doctor.returncode == 1
    assert f"claude-code: problem: {settings}: " in doctor.stdout
    assert "sudo loopwatch install claude-code --system" in doctor.stdout


@root_only
@pytest.mark.parametrize("version", VERSIONS)
def test_claude_with_a_system_install_is_still_stopped_with_hooks_switched_off(tmp_path, version):
    """`install claude-code --system` writes the managed settings (0644, root's): their
    hooks run whatever the project says, and the loop is stopped before the 4th call. With
    the user's own install beside it and no switch-off, both hooks run, each call is
    counted once: still the 4th call, never earlier."""
    with real_clis.etc_written("claude-code", MANAGED.parent), ScriptedAnthropic({"loop": loop_script(12)}) as server:
        machine = ClaudeRun(tmp_path, server, claude_binary(version))
        hook = f"{shlex.quote(sys.executable)} -m loopwatch hook claude-code"
        guarded = f'if [ "$HOME" = {shlex.quote(str(machine.home))} ]; then exec {hook}; fi'
        said = machine.loopwatch("install", "claude-code", "--system", "--command", guarded).stdout
        settings = _switch_claude_off(machine)
        mode = MANAGED.stat()
        doctor = machine.loopwatch("doctor", "claude-code", check=False).stdout
        run = machine.claude("SCENARIO:loop do the task")
        turns = server.of("loop")
        stopped = machine.status()[""]

        settings.unlink()
        machine.install()  # the user's own hook too
        again = machine.claude("SCENARIO:loop do the task")
        both = server.of("loop")[len(turns) :]
        removed = machine.loopwatch("uninstall", "claude-code", "--system").stdout
    assert f"installed into {MANAGED}" in said and "whatever a project's settings say" in said
    assert mode.st_uid == 0 and oct(mode.st_mode & 0o777) == "0o644"
    assert f"held on by loopwatch's hooks in {MANAGED}" in doctor, doctor
    assert [t.answered for t in turns] == ["tool:Bash"] * 4, [t.answered for t in turns]
    assert run.result["terminal_reason"] == "hook_stopped"
    assert stopped["actions"] == 3 and stopped["stops"] == 1
    assert not _told(machine, settings)  # held for every session: nothing to tell
    assert [t.answered for t in both] == ["tool:Bash"] * 4, [t.answered for t in both]
    assert again.result["terminal_reason"] == "hook_stopped"
    assert f"removed loopwatch from {MANAGED}" in removed


@pytest.mark.parametrize("version", VERSIONS)
def test_claudes_own_write_of_the_switch_off_is_refused(tmp_path, version):
    """The model writes `{"disableAllHooks": true}` into the project's settings: it gets
    loopwatch's refusal, the file is not written, and the loop after it is stopped."""
    settings = tmp_path / "work" / ".claude" / "settings.json"
    script = [
        Step("Switching the hooks off.", "Write", {"file_path": str(settings), "content": '{"disableAllHooks": true}'}),
        *loop_script(12),
    ]
    with ScriptedAnthropic({"off": script}) as server:
        machine = ClaudeRun(tmp_path, server, claude_binary(version))
        machine.install()
        run = machine.claude("SCENARIO:off do the task")
        turns = server.of("off")
    calls = tool_uses(run.lines)
    refused = tool_results(run.lines)[calls[0]["id"]]
    assert refused["error"] and "loopwatch refused this call" in refused["text"], refused
    assert not settings.exists()
    assert [t.answered for t in turns] == ["tool:Write"] + ["tool:Bash"] * 4, [t.answered for t in turns]
    assert run.result["terminal_reason"] == "hook_stopped"


# -- Codex ----------------------------------------------------------------------------------------


@pytest.fixture
def codex_user(tmp_path):
    """A fresh Codex user with a trusted project whose config switches hooks off."""
    servers = []

    def make(script):
        server = ScriptedResponses(script).__enter__()
        servers.append(server)
        home = CodexHome(tmp_path, server, require_codex())
        home.trust_project()
        home.install()
        return home, server

    yield make
    for server in servers:
        server.__exit__(None, None, None)


def _switch_codex_off(home: CodexHome) -> Path:
    config = home.work / ".codex" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text("[features]\nhooks = false\n")
    return config


def test_codex_under_run_keeps_its_hook_with_hooks_switched_off(codex_user, tmp_path):
    """Without the hold the hook never ran (12 of 12 calls; `run` alone ends the run at
    the 4th call from the stream, with no word to the model). Under `loopwatch run` the
    hook runs: its nudge reaches the model, and the run ends at the 4th call."""
    home, server = codex_user([shell(LOOP_COMMAND)] * 12)
    config = _switch_codex_off(home)
    record = tmp_path / "record.json"
    done = home.run("list the missing dir", "-o", str(record))
    doctor = home.loopwatch("doctor", "codex")
    assert done.returncode == 86, done.stderr[-2000:]
    assert len(stream_items(done.stdout)) == 4
    assert NUDGE in server.texts(4)  # the hook ran, and said so to the model
    assert f"loopwatch: {config}: features.hooks = false" in done.stderr and "(-c features.hooks=true)" in done.stderr
    assert json.loads(record.read_text())["ended_by"] == "loop"
    assert doctor.returncode == 1
    assert f"codex: problem: {config}: features.hooks = false" in doctor.stdout
    assert "sudo loopwatch install codex --system" in doctor.stdout


@root_only
def test_codex_with_the_system_pin_keeps_its_hook_with_hooks_switched_off(codex_user):
    """`install codex --system` pins hooks on in /etc/codex/requirements.toml: `codex exec`
    alone (no `run`) runs the hook whatever the project says, and it blocks the 4th call."""
    with real_clis.etc_written("codex", REQUIREMENTS.parent):
        home, server = codex_user([shell(LOOP_COMMAND)] * 12)
        said = home.loopwatch("install", "codex", "--system")
        mode = REQUIREMENTS.stat()
        _switch_codex_off(home)
        doctor = home.loopwatch("doctor", "codex")
        done = home.exec("list the missing dir")
        removed = home.loopwatch("uninstall", "codex", "--system")
        left = REQUIREMENTS.read_text() if REQUIREMENTS.exists() else ""
    assert said.returncode == 0 and f"pinned in {REQUIREMENTS}: [features] hooks = true" in said.stdout
    assert mode.st_uid == 0 and oct(mode.st_mode & 0o777) == "0o644"
    assert f"held on by features.hooks = true pinned in {REQUIREMENTS}" in doctor.stdout, doctor.stdout
    ran = stream_items(done.stdout)
    assert len(ran) == 3, len(ran)  # the 4th identical call and every later one were blocked
    assert NUDGE in server.texts(4)
    assert server.tool_outputs(5)[-1].startswith("Command blocked by PreToolUse hook: loopwatch")
    assert "removed loopwatch's pin" in removed.stdout and "hooks" not in left


def test_codexs_own_write_of_the_switch_off_is_refused(codex_user):
    """The model writes `[features] hooks = false` into the project's config: refused by
    loopwatch before it runs, the file is never written, and the loop after it is blocked."""
    write = "mkdir -p .codex && printf '[features]\\nhooks = false\\n' > .codex/config.toml"
    home, server = codex_user([shell(write)] + [shell(LOOP_COMMAND)] * 8)
    done = home.exec("switch the hooks off, then list the missing dir")
    assert server.tool_outputs(2)[-1].startswith("Command blocked by PreToolUse hook: loopwatch refused this call")
    assert not (home.work / ".codex" / "config.toml").exists()
    assert len(stream_items(done.stdout)) == 3  # the loop's 4th call and every later one blocked
