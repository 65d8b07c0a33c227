"""What holds loopwatch's hook on when a project's settings switch hooks off, and who is
told: `install --system` (Claude Code's managed settings, Codex's requirements pin),
`loopwatch run` (the host's command line keeps hooks on, or run refuses to start),
`doctor` (the file and the remedy, per host), and the hook (once, at a session's start).

Every /etc path is redirected into the test's folder: nothing here writes outside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwatch._cli import cli
from loopwatch._hosts.codex_pin import MARK
from loopwatch._cli.doctor import switch_off_lines
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
from loopwatch._hosts import claude_code, codex, copilot, host
from loopwatch._supervise.hold import hold, host_of

CLAUDE = host("claude-code")
CODEX = host("codex")
KEEP_CLAUDE = ["--settings", '{"disableAllHooks": false}']
KEEP_CODEX = ["-c", "features.hooks=true"]


@pytest.fixture(autouse=True)
def etc(tmp_path, monkeypatch):
    """The machine's /etc settings files, redirected here."""
    folder = tmp_path / "etc"
    monkeypatch.setattr(claude_code, "MANAGED_SETTINGS", str(folder / "claude-code" / "managed-settings.json"))
    monkeypatch.setattr(codex, "REQUIREMENTS", str(folder / "codex" / "requirements.toml"))
    monkeypatch.setattr(codex, "MANAGED_CONFIG", str(folder / "codex" / "managed_config.toml"))
    monkeypatch.setattr(copilot, "POLICY_DIR", str(folder / "github-copilot" / "policy.d"))
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "CLAUDE_CODE_ENTRYPOINT", "LOOPWATCH_SUPERVISED"):
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A user (HOME, CODEX_HOME, COPILOT_HOME here) and a project folder, the working one."""
    home, work = tmp_path / "home", tmp_path / "work"
    for folder in (home, work):
        folder.mkdir()
    for name in ("CLAUDE_CONFIG_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "COPILOT_ALLOW_ALL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("COPILOT_HOME", str(home / ".copilot"))
    monkeypatch.setenv("LOOPWATCH_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(work)
    return home, work


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def claude_off(work: Path, name: str = "settings.json") -> Path:
    path = work / ".claude" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"disableAllHooks": true}')
    return path


def codex_off(folder: Path, key: str = "hooks") -> Path:
    path = folder / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# the project's\n[features]\n{key} = false\n")
    return path


# -- which host a command runs, and its command line held on -------------------------------------


@pytest.mark.parametrize(
    "events,argv,name",
    [
        ("auto", ["claude", "-p", "x"], "claude-code"),
        ("auto", ["/usr/local/bin/claude"], "claude-code"),
        ("auto", ["codex", "exec"], "codex"),
        ("auto", ["codex-x86_64-unknown-linux-musl", "exec"], "codex"),
        ("auto", ["copilot", "-p", "x"], "copilot"),
        ("auto", ["codexfoo"], None),
        ("auto", ["python", "agent.py"], None),
        ("codex-json", ["./my-wrapper"], "codex"),
        ("claude-stream", ["./my-wrapper"], "claude-code"),
    ],
)
def test_the_host_is_told_by_its_binary_or_its_stream(events, argv, name):
    assert host_of(events, argv) == name


def test_claude_codes_command_line_gets_flag_settings_first():
    assert CLAUDE.keep_on(["claude", "-p", "do it"]) == ["claude", *KEEP_CLAUDE, "-p", "do it"]
    assert CLAUDE.keep_on(["/opt/bin/claude"]) == ["/opt/bin/claude", *KEEP_CLAUDE]
    # The user's own flag settings would be replaced by ours: not touched.
    assert CLAUDE.keep_on(["claude", "--settings", "mine.json", "-p", "x"]) is None
    assert CLAUDE.keep_on(["claude", "--settings=mine.json"]) is None
    assert CLAUDE.keep_on(["./wrapper.sh", "-p", "x"]) is None


def test_codexs_command_line_gets_the_feature_on():
    assert CODEX.keep_on(["codex", "exec", "--json", "x"]) == ["codex", *KEEP_CODEX, "exec", "--json", "x"]
    assert CODEX.keep_on(["node", "codex.js"]) is None
    assert host("copilot").keep_on(["copilot", "-p", "x"]) is None  # no command line holds Copilot's


# -- loopwatch run -------------------------------------------------------------------------------


def test_run_holds_claude_codes_hooks_on_against_the_project(machine):
    _, work = machine
    assert invoke("install", "claude-code").exit_code == 0
    off = claude_off(work)
    held = hold("auto", ["claude", "-p", "x"], os.environ, work)
    assert held.argv == ["claude", *KEEP_CLAUDE, "-p", "x"] and held.refused is None
    assert held.said is not None and str(off) in held.said and "disableAllHooks" in held.said
    # No switch-off: still held on (a file written during the run changes nothing), and nothing said.
    off.unlink()
    assert hold("auto", ["claude", "-p", "x"], os.environ, work) == (
        ["claude", *KEEP_CLAUDE, "-p", "x"],
        None,
        None,
        None,
    )


def test_run_holds_codexs_hooks_on_against_every_project_folder(machine):
    _, work = machine
    (work / ".git").mkdir()
    inner = work / "pkg"
    inner.mkdir()
    assert invoke("install", "codex").exit_code == 0
    off = codex_off(work, "codex_hooks")  # at the project's root, read from a folder below it
    held = hold("auto", ["codex", "exec", "--json", "x"], os.environ, inner)
    assert held.argv == ["codex", *KEEP_CODEX, "exec", "--json", "x"]
    assert held.said is not None and str(off) in held.said and "features.codex_hooks" in held.said


def test_nothing_is_added_where_loopwatch_is_not_installed(machine):
    _, work = machine
    claude_off(work)
    codex_off(work)
    for argv in (["claude", "-p", "x"], ["codex", "exec"]):
        assert hold("auto", argv, os.environ, work) == (argv, None, None, None)


def test_run_refuses_when_nothing_can_hold_the_hook_on(machine):
    """The user's own `--settings` (which ours would replace): the project's switch-off
    stands, so `run` does not start; one line naming the file and what to do, exit 2."""
    _, work = machine
    assert invoke("install", "claude-code").exit_code == 0
    off = claude_off(work, "settings.local.json")
    argv = ["claude", "--settings", "mine.json", "-p", "x"]
    held = hold("auto", argv, os.environ, work)
    assert held.argv == argv and held.refused is not None
    done = invoke("run", "--", *argv)
    assert done.exit_code == 2
    (line,) = done.output.strip().splitlines()
    assert line.startswith(f"Error: {off}: ")
    assert "sudo loopwatch install claude-code --system" in line and "--allow-unguarded" in line
    assert "under `loopwatch run`" not in line  # it is under `loopwatch run` already


def test_a_system_install_holds_where_the_command_line_cannot(machine, etc):
    _, work = machine
    claude_off(work)
    assert invoke("install", "claude-code", "--system").exit_code == 0
    managed = etc / "claude-code" / "managed-settings.json"
    assert managed.stat().st_mode & 0o777 == 0o644
    argv = ["claude", "--settings", "mine.json", "-p", "x"]
    assert hold("auto", argv, os.environ, work).refused is None
    # Managed settings that themselves switch every hook off hold nothing.
    managed.write_text(json.dumps({**json.loads(managed.read_text()), "disableAllHooks": True}))
    assert hold("auto", argv, os.environ, work).refused is not None


def test_copilots_switch_off_refuses_run_unless_its_policy_holds(machine, etc):
    home, work = machine
    (work / ".git").mkdir()
    assert invoke("install", "copilot").exit_code == 0
    (home / ".copilot" / "config.json").write_text(json.dumps({"trustedFolders": [str(work)]}))
    settings = work / ".github" / "copilot" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"disableAllHooks": true}')
    held = hold("auto", ["copilot", "-p", "x"], os.environ, work)
    assert held.refused is not None and str(settings) in held.refused
    assert invoke("install", "copilot", "--system").exit_code == 0
    assert hold("auto", ["copilot", "-p", "x"], os.environ, work).refused is None


def test_allow_unguarded_starts_it_and_says_so(machine, tmp_path, monkeypatch):
    """With --allow-unguarded the command starts (here one that is not there: 127)."""
    _, work = machine
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert invoke("install", "claude-code").exit_code == 0
    off = claude_off(work)
    done = invoke("run", "--allow-unguarded", "--", "claude", "--settings", "mine.json", "-p", "x")
    assert f"loopwatch: {off}: " in done.output and "running unguarded (--allow-unguarded)" in done.output
    assert "not started" not in done.output and done.exit_code == 127


# -- install --system ------------------------------------------------------------------------------


def test_install_claude_code_system_merges_into_the_managed_settings(machine, etc):
    managed = etc / "claude-code" / "managed-settings.json"
    managed.parent.mkdir(parents=True)
    theirs = {
        "permissions": {"deny": ["Read(./.env)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "audit"}]}]},
    }
    managed.write_text(json.dumps(theirs))
    managed.chmod(0o644)
    done = invoke("install", "claude-code", "--system")
    assert done.exit_code == 0, done.output
    assert f"installed into {managed}" in done.output and "whatever a project" in done.output
    after = json.loads(managed.read_text())
    assert after["permissions"] == theirs["permissions"]
    assert after["hooks"]["Stop"][0]["hooks"][0]["command"] == "audit"
    assert set(CLAUDE.hooked(after)) == set(CLAUDE.hooked_events)
    assert managed.stat().st_mode & 0o777 == 0o644
    assert invoke("install", "claude-code", "--system").output.startswith("already installed")
    assert invoke("uninstall", "claude-code", "--system").exit_code == 0
    assert json.loads(managed.read_text())["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    assert not CLAUDE.hooked(json.loads(managed.read_text()))


def test_install_codex_system_pins_hooks_on_keeping_the_administrators_text(machine, etc):
    requirements = etc / "codex" / "requirements.toml"
    requirements.parent.mkdir(parents=True)
    theirs = '# set by IT\nallowed_sandbox_modes = ["read-only", "workspace-write"]\n\n[features]\nweb_search = true  # keep\n'
    requirements.write_text(theirs)
    requirements.chmod(0o644)
    done = invoke("install", "codex", "--system")
    assert done.exit_code == 0, done.output
    assert f"pinned in {requirements}: [features] hooks = true" in done.output
    assert "loopwatch install codex" in done.output  # the hook itself is each user's
    text = requirements.read_text()
    assert text.startswith(theirs) and MARK in text
    assert requirements.stat().st_mode & 0o777 == 0o644
    assert (
        CODEX.held(os.environ, Path.cwd())
        == f"features.hooks = true pinned in {requirements}, which no project overrides"
    )
    assert "already pinned" in invoke("install", "codex", "--system").output
    assert requirements.read_text() == text
    done = invoke("uninstall", "codex", "--system")
    assert done.exit_code == 0 and "removed loopwatch's pin" in done.output
    assert requirements.read_text() == theirs
    assert CODEX.held(os.environ, Path.cwd()) is None


@pytest.mark.parametrize(
    "text,why",
    [
        ("[features]\nhooks = false\n", "an administrator's decision"),
        ("features = { web_search = true }\n", "in a form loopwatch does not edit"),
        ("[features\n", "not valid TOML"),
    ],
)
def test_a_requirements_file_loopwatch_will_not_edit_is_left_alone(machine, etc, text, why):
    requirements = etc / "codex" / "requirements.toml"
    requirements.parent.mkdir(parents=True)
    requirements.write_text(text)
    done = invoke("install", "codex", "--system")
    assert done.exit_code == 2 and why in done.output and "nothing was changed" in done.output
    assert len(done.output.strip().splitlines()) == 1
    assert requirements.read_text() == text


def test_a_pin_someone_else_wrote_is_never_removed(machine, etc):
    requirements = etc / "codex" / "requirements.toml"
    requirements.parent.mkdir(parents=True)
    requirements.write_text("[features]\nhooks = true\n")
    assert "already pinned" in invoke("install", "codex", "--system").output
    assert "nothing to do" in invoke("uninstall", "codex", "--system").output
    assert requirements.read_text() == "[features]\nhooks = true\n"


# -- doctor ----------------------------------------------------------------------------------------


def test_doctor_names_the_file_and_the_remedy_of_each_host(machine, etc):
    _, work = machine
    off = claude_off(work)
    (line,) = switch_off_lines(CLAUDE, os.environ, work)
    assert line.status == "problem" and line.text.startswith(f"{off}: ")
    assert "sudo loopwatch install claude-code --system" in line.text and "loopwatch run" in line.text
    codex_file = codex_off(work)
    (line,) = switch_off_lines(CODEX, os.environ, work)
    assert line.status == "problem" and line.text.startswith(f"{codex_file}: features.hooks = false")
    assert "sudo loopwatch install codex --system" in line.text and "loopwatch run" in line.text
    # Held at the system level: said, and not a problem.
    assert invoke("install", "claude-code", "--system").exit_code == 0
    assert invoke("install", "codex", "--system").exit_code == 0
    for found in (CLAUDE, CODEX):
        (line,) = switch_off_lines(found, os.environ, work)
        assert line.status == "info" and "held on by" in line.text and "no project overrides" in line.text


# -- the hook, at a session's start ----------------------------------------------------------------


def _event(work: Path, event: str, session: str = "s1", command: str = "ls", **extra) -> bytes:
    payload = {
        "session_id": session,
        "transcript_path": str(work / "t.jsonl"),
        "cwd": str(work),
        "hook_event_name": event,
        **extra,
    }
    if event.startswith(("Pre", "Post")):
        payload.update(tool_name="Bash", tool_input={"command": command}, tool_use_id=f"toolu_{os.urandom(4).hex()}")
    if event == "PostToolUse":
        payload["tool_response"] = {"stdout": "a\n", "stderr": "", "interrupted": False}
    return json.dumps(payload).encode()


def test_the_hook_tells_the_person_once_at_the_sessions_start(machine, tmp_path, monkeypatch):
    _, work = machine
    off = claude_off(work)
    reads = []
    real = type(CLAUDE).switch_offs
    monkeypatch.setattr(type(CLAUDE), "switch_offs", lambda self, cwd, env: reads.append(cwd) or real(self, cwd, env))
    store = Store(tmp_path / "state")
    try:
        events = [
            ("UserPromptSubmit", ""),
            *((e, f"echo {i}") for i in range(3) for e in ("PreToolUse", "PostToolUse")),
        ]
        answers = [handle(parse(_event(work, event, command=command)), {}, store) for event, command in events]
        answers.append(handle(parse(_event(work, "Stop")), {}, store))
    finally:
        store.close()
    told = answers[0].stdout["systemMessage"]
    assert told.startswith(f"loopwatch: {off}: ") and "From the next session on, nothing guards it" in told
    assert "sudo loopwatch install claude-code --system" in told
    assert all(a.stdout is None or "systemMessage" not in a.stdout for a in answers[1:])
    assert reads == [work]  # the settings are read at the first event, never after


def test_under_run_the_hook_says_the_hold_is_for_this_run_only(machine, tmp_path, monkeypatch):
    _, work = machine
    codex_off(work)
    monkeypatch.setenv("LOOPWATCH_SUPERVISED", "1")
    store = Store(tmp_path / "state")
    try:
        answer = handle(parse(_event(work, "PostToolUse", turn_id="t1"), "codex"), {}, store)
    finally:
        store.close()
    told = answer.stdout["systemMessage"]
    assert "`loopwatch run` holds them on for this run only" in told and "install codex --system" in told
    assert "under `loopwatch run`" not in told


def test_the_hook_says_nothing_when_held_or_for_a_sub_agent(machine, tmp_path):
    _, work = machine
    claude_off(work)
    store = Store(tmp_path / "state")
    try:
        sub = handle(parse(_event(work, "PreToolUse", agent_id="a1")), {}, store)
        assert sub.stdout is None or "systemMessage" not in sub.stdout
        assert invoke("install", "claude-code", "--system").exit_code == 0
        held = handle(parse(_event(work, "PreToolUse", session="s2")), {}, store)
        assert held.stdout is None or "systemMessage" not in held.stdout
    finally:
        store.close()


def test_a_reply_that_cannot_carry_words_for_the_person_is_left_as_it_is():
    refusal = CODEX.refuse("PreToolUse", "no")
    assert CODEX.tell(refusal, "hello") is refusal  # exit 2 and stderr: Codex reads no JSON then
    told = CLAUDE.tell(CLAUDE.refuse("PreToolUse", "no", person="why"), "hello")
    assert told.stdout["systemMessage"].endswith("\nhello") and told.stdout["hookSpecificOutput"]
    copilot_reply = host("copilot").tell(host("copilot").refuse("preToolUse", "no"), "hello")
    assert "systemMessage" not in copilot_reply.stdout  # Copilot shows a person nothing a hook says
