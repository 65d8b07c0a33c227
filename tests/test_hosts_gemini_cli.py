"""Gemini CLI's host module and what the hook does with it, on payloads the real Gemini CLI
sent (0.58.0 and 0.61.0, captured from runs of tests/scripted_gemini.py's scripts:
tests/fixtures/gemini-cli-payloads/, one file per run, in the order they came)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwatch._core.messages import Blocked, Stopped, loopwatch_said
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.spawns import Spawns
from loopwatch._hook.state import Store
from loopwatch._hosts import host
from loopwatch._hosts.base import AFTER, BEFORE, PROMPT, TURN_END, Call
from loopwatch._hosts.gemini_cli import HOST, call_result, shell_result

PAYLOADS = Path(__file__).resolve().parent / "fixtures" / "gemini-cli-payloads"
VERSIONS = ("0.58.0", "0.61.0")


def payloads(version: str, run: str) -> list[dict]:
    return [json.loads(line) for line in (PAYLOADS / f"{version}-{run}.jsonl").read_text().splitlines()]


def first(items: list[dict], event: str, tool: str | None = None) -> dict:
    return next(p for p in items if p["hook_event_name"] == event and (tool is None or p.get("tool_name") == tool))


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "CI", "GITHUB_ACTIONS", "LOOPWATCH_SUPERVISED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def store(tmp_path):
    found = Store(tmp_path / "state")
    yield found
    found.close()


def feed(store: Store, payload: dict, **fields):
    return handle(parse(json.dumps({**payload, **fields}).encode(), "gemini-cli"), {}, store)


def now_stamp(ahead: float = 1.0) -> str:
    """An ISO time `ahead` seconds from now, as Gemini CLI stamps its payloads."""
    import datetime

    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=ahead)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- parse ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_events_are_the_guards(version):
    items = payloads(version, "healthy")
    events = [parse(json.dumps(p).encode(), "gemini-cli").event for p in items]
    assert events[0] == PROMPT and events[-1] == TURN_END
    assert set(events[1:-1]) == {BEFORE, AFTER}
    payload = parse(json.dumps(items[1]).encode(), "gemini-cli")
    assert payload.session == items[1]["session_id"] and payload.agent == "" and payload.stamp is not None
    assert payload.native == "BeforeTool" and payload.calls[0].name == "run_shell_command"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_failing_command_is_a_failure_and_its_process_group_is_no_identity(version):
    """`ls` of a missing folder: no `error` field, `Exit Code: 2` in the text only; the two
    runs have different `Process Group PGID`s and still the same result."""
    items = payloads(version, "loop")
    after = [parse(json.dumps(p).encode(), "gemini-cli").calls[0] for p in items if p["hook_event_name"] == "AfterTool"]
    assert [p["tool_response"].get("error") for p in items if p["hook_event_name"] == "AfterTool"] == [None, None]
    assert len({p["tool_response"]["llmContent"] for p in items if p["hook_event_name"] == "AfterTool"}) == 2
    assert all(call.error for call in after)
    assert after[0].result == after[1].result and "Exit Code: 2" in after[0].result
    assert "PGID" not in after[0].result and "untrusted_context" not in after[0].result


@pytest.mark.parametrize("version", VERSIONS)
def test_successes_and_tool_errors(version):
    healthy = payloads(version, "healthy")
    calls = [
        parse(json.dumps(p).encode(), "gemini-cli").calls[0] for p in healthy if p["hook_event_name"] == "AfterTool"
    ]
    failed = {(c.name, c.error) for c in calls}
    assert [c.error for c in calls] == [False] * 9 + [True] + [False] * 3  # the first test run failed (exit 1)
    assert ("write_file", False) in failed and ("replace", False) in failed
    missing = first(payloads(version, "fail"), "AfterTool", "read_file")
    assert missing["tool_response"]["error"]["type"] == "file_not_found"
    assert parse(json.dumps(missing).encode(), "gemini-cli").calls[0].error


def test_the_shell_trailer_is_read_from_the_end():
    assert shell_result("Output: Exit Code: 1\nok") == ("Output: Exit Code: 1\nok", None, False)
    assert shell_result("Output: x\nSignal: 9\nProcess Group PGID: 7")[1:] == (None, True)
    assert shell_result("Command was automatically cancelled because it exceeded the timeout")[2]
    _text, failed, interrupted = call_result("run_shell_command", {"llmContent": "Command was cancelled by user."})
    assert interrupted and not failed
    nudged = "<untrusted_context>\nOutput: x\nExit Code: 2\nProcess Group PGID: 9\n</untrusted_context>"
    plain = call_result("run_shell_command", {"llmContent": nudged})
    assert (
        call_result("run_shell_command", {"llmContent": nudged + "\n\n<hook_context>loopwatch: hi</hook_context>"})
        == plain
    )


def test_a_subagent_that_did_not_reach_its_goal_failed():
    done = {"llmContent": [{"text": "Subagent 'generalist' finished.\nTermination Reason: MAX_TURNS\nResult:\n"}]}
    assert call_result("invoke_agent", done)[1]
    assert not call_result("invoke_agent", {"llmContent": [{"text": "Termination Reason: GOAL\n"}]})[1]


# -- answers ----------------------------------------------------------------------------------


def test_refusals_and_stops_in_gemini_clis_words():
    deny = HOST.refuse("BeforeTool", "loopwatch blocked this call: again", person="the same call 3 times").stdout
    assert deny["decision"] == "deny" and deny["reason"].startswith("loopwatch blocked this call")
    assert "continue" not in deny and deny["systemMessage"].startswith("loopwatch blocked a call")
    stop = HOST.refuse("BeforeTool", "x", stop=True, person="the same call 3 times").stdout
    assert stop["continue"] is False and loopwatch_said(stop["stopReason"]) is Stopped
    after = HOST.stop_reply("AfterTool", "the same call 3 times").stdout
    assert after["continue"] is False
    assert loopwatch_said(after["stopReason"]) is None  # the call ran: a reader must not take it for a refusal
    assert loopwatch_said(deny["reason"]) is Blocked


@pytest.mark.parametrize("version", VERSIONS)
def test_the_hook_nudges_after_the_call_and_stops_before_the_fourth(version, store, clean_env, monkeypatch):
    monkeypatch.setenv("LOOPWATCH_PROFILE", "unattended")
    items = payloads(version, "loop")
    before, after = first(items, "BeforeTool"), first(items, "AfterTool")
    feed(store, first(items, "BeforeAgent"))
    answers = []
    for _ in range(3):
        allowed = feed(store, before).stdout
        assert allowed is None or "decision" not in allowed
        answers.append(feed(store, after).stdout)
    assert answers[2]["hookSpecificOutput"] == {
        "hookEventName": "AfterTool",
        "additionalContext": answers[2]["hookSpecificOutput"]["additionalContext"],
    }
    assert answers[2]["hookSpecificOutput"]["additionalContext"].startswith(
        "loopwatch: you appear to be going in circles"
    )
    stop = feed(store, before).stdout
    assert stop["decision"] == "deny" and stop["continue"] is False
    state = store.state(items[0]["session_id"], "")
    assert state is not None and state.monitor.actions == 3 and state.stopped


def test_a_refused_call_run_later_is_counted(store, clean_env, monkeypatch):
    """Gemini CLI never reports a refused call: the refusal is not remembered, so the same
    call let run later (after the model wrote a fix) counts as the call that ran."""
    monkeypatch.setenv("LOOPWATCH_PROFILE", "attended")
    items = payloads("0.61.0", "loop")
    before, after = first(items, "BeforeTool"), first(items, "AfterTool")
    for _ in range(3):
        feed(store, before)
        feed(store, after)
    assert feed(store, before).stdout["decision"] == "deny"
    write = first(payloads("0.61.0", "healthy"), "AfterTool", "write_file")
    feed(store, {**write, "session_id": items[0]["session_id"]})
    assert "decision" not in (feed(store, before).stdout or {})
    feed(store, after)
    state = store.state(items[0]["session_id"], "")
    assert state is not None and state.monitor.actions == 5


@pytest.mark.parametrize("version", VERSIONS)
def test_a_stopped_subagent_may_finish_and_its_parent_is_stopped(version, store, clean_env, monkeypatch):
    """The captured sub-agent run, its sub-agent's one call made to loop: the sub-agent's
    calls are watched apart (by when they come), it is stopped at its fourth call,
    `complete_task` passes, and the parent's AfterTool(invoke_agent) ends the run."""
    monkeypatch.setenv("LOOPWATCH_PROFILE", "unattended")
    items = payloads(version, "sub")
    session = items[0]["session_id"]
    spawn_before, spawn_after = first(items, "BeforeTool", "invoke_agent"), first(items, "AfterTool", "invoke_agent")
    inner_before, inner_after = (
        first(items, "BeforeTool", "run_shell_command"),
        first(items, "AfterTool", "run_shell_command"),
    )
    finish_before, finish_after = (
        first(items, "BeforeTool", "complete_task"),
        first(items, "AfterTool", "complete_task"),
    )
    feed(store, items[0])
    assert feed(store, spawn_before, timestamp=now_stamp(-1)).stdout is None
    # The sub-agent's calls come after the spawn was recorded (the captured run's times,
    # moved to now: the spawn is recorded at this test's time).
    for _ in range(3):
        feed(store, inner_before, timestamp=now_stamp())
        feed(store, inner_after, timestamp=now_stamp())
    assert feed(store, inner_before, timestamp=now_stamp()).stdout["continue"] is False
    assert feed(store, finish_before, timestamp=now_stamp()).stdout is None
    assert feed(store, finish_after, timestamp=now_stamp()).stdout is None
    ended = feed(store, spawn_after, timestamp=now_stamp()).stdout
    assert ended["continue"] is False and "a sub-agent was stopped" in ended["stopReason"]
    child = store.state(session, "sub-agent-1")
    main = store.state(session, "")
    assert child is not None and child.monitor.actions == 3 and child.stopped
    assert main is not None and main.monitor.actions == 1 and main.stopped


def test_calls_stamped_before_the_subagent_began_are_the_parents():
    spawns = Spawns()
    assert spawns.before("a", 10.0, spawn=True, finish=False) == ""
    key = spawns.spawned("a", now=11.0)
    assert spawns.before("sibling", 10.5, spawn=False, finish=False) == ""  # same turn as the spawn
    assert spawns.before("inner", 12.0, spawn=False, finish=False) == key
    assert spawns.before("done", 10.9, spawn=False, finish=True) == key  # only a sub-agent finishes
    assert spawns.after("sibling", spawn=False) == ("", None)
    assert spawns.after("inner", spawn=False) == (key, None)
    assert spawns.after("a", spawn=True) == ("", key)
    assert spawns.before("later", 13.0, spawn=False, finish=False) == ""
    second = spawns.spawned("b", now=14.0)
    assert second != key
    assert spawns.before("b", 15.0, spawn=True, finish=False) == ""  # a stale spawn: only the parent spawns
    assert not spawns.running


def test_a_new_prompt_means_no_subagent_runs(store, clean_env):
    items = payloads("0.61.0", "sub")
    feed(store, first(items, "BeforeTool", "invoke_agent"))
    state = store.state(items[0]["session_id"], "")
    assert state is not None and state.spawns is not None and state.spawns.running
    feed(store, first(items, "BeforeAgent"))
    state = store.state(items[0]["session_id"], "")
    assert state is not None and state.spawns is not None and not state.spawns.running


# -- who watches ------------------------------------------------------------------------------


def test_headless_is_read_from_the_command_line_and_the_terminal():
    node = ["/usr/bin/node", "--max-old-space-size=4096", "/x/node_modules/.bin/gemini"]
    assert HOST.headless([*node, "-p", "do it"]) == "gemini -p"
    assert HOST.headless([*node, "--prompt=do it"]) == "gemini -p"
    assert HOST.headless([*node, "-i", "do it"]) == ""
    assert HOST.headless(["/usr/bin/python3", "x.py"]) is None
    assert HOST.headless_process(os.getpid(), [*node, "--acp"]) == ""
    piped = subprocess.Popen(["sleep", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert HOST.headless_process(piped.pid, node) == "gemini without a terminal"
    finally:
        piped.kill()
        piped.wait()
    import pty

    parent, child = pty.openpty()
    watched = subprocess.Popen(["sleep", "30"], stdin=child, stdout=child, stderr=child)
    try:
        assert HOST.headless_process(watched.pid, node) == ""
    finally:
        watched.kill()
        watched.wait()
        os.close(parent)
        os.close(child)


def test_ci_is_headless():
    assert HOST.detect_profile({"CI": "true"}) == ("unattended", "CI=true")
    assert HOST.detect_profile({"CI": "true", "GEMINI_CLI_INTEGRATION_TEST": "true"}) is None
    assert HOST.detect_profile({}) is None


# -- the agent may not switch its guard off ---------------------------------------------------

REFUSED = [
    ("write_file", {"file_path": "/repo/.gemini/settings.json", "content": '{"hooksConfig": {"enabled": false}}'}),
    ("write_file", {"file_path": ".gemini/settings.json", "content": '{"hooksConfig":{"disabled":["loopwatch"]}}'}),
    (
        "replace",
        {"file_path": "/repo/.gemini/settings.json", "old_string": '"enabled": true', "new_string": '"enabled": false'},
    ),
    ("run_shell_command", {"command": 'echo \'{"hooksConfig":{"enabled":false}}\' > .gemini/settings.json'}),
    ("write_file", {"file_path": "/home/u/.gemini/settings.json", "content": '{"hooksConfig": {"disabled": ["x"]}}'}),
]
ALLOWED = [
    ("write_file", {"file_path": "/repo/.gemini/settings.json", "content": '{"model": {"name": "gemini-2.5-pro"}}'}),
    ("run_shell_command", {"command": "cat .gemini/settings.json"}),
    (
        "write_file",
        {"file_path": "/repo/docs/hooks.md", "content": '"hooksConfig": {"enabled": false} turns hooks off'},
    ),
    ("read_file", {"file_path": "/repo/.gemini/settings.json"}),
]


@pytest.mark.parametrize("tool,tool_input", REFUSED)
def test_a_write_that_switches_hooks_off_is_named(tool, tool_input):
    assert host("gemini-cli").switches_off(Call(tool, tool_input), "/repo") is not None


@pytest.mark.parametrize("tool,tool_input", ALLOWED)
def test_any_other_use_of_the_same_files_is_not(tool, tool_input):
    assert host("gemini-cli").switches_off(Call(tool, tool_input), "/repo") is None


# -- settings ---------------------------------------------------------------------------------


def test_install_keeps_what_is_there_and_system_pins_hooks_on(tmp_path, monkeypatch):
    from loopwatch._cli.install import install, uninstall

    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    user = home / ".gemini" / "settings.json"
    theirs = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint"}]}]},
    }
    user.write_text(json.dumps(theirs))
    system = tmp_path / "etc" / "gemini-cli" / "settings.json"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(system))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for _ in range(2):
        assert runner.invoke(install, ["gemini-cli"]).exit_code == 0
    after = json.loads(user.read_text())
    assert after["security"] == theirs["security"]
    assert next(h["command"] for g in after["hooks"]["BeforeTool"] for h in g["hooks"]) == "lint"
    assert len(after["hooks"]["BeforeTool"]) == 2 and len(after["hooks"]["AfterAgent"]) == 1
    assert "hooksConfig" not in after
    assert runner.invoke(install, ["gemini-cli", "--system"]).exit_code == 0
    pinned = json.loads(system.read_text())
    assert pinned["hooksConfig"] == {"enabled": True} and HOST.hooked(pinned)
    assert oct(system.stat().st_mode & 0o777) == "0o644"
    assert runner.invoke(uninstall, ["gemini-cli", "--system"]).exit_code == 0
    assert not HOST.hooked(json.loads(system.read_text())) and json.loads(system.read_text())["hooksConfig"]
    assert runner.invoke(uninstall, ["gemini-cli"]).exit_code == 0
    assert json.loads(user.read_text())["hooks"]["BeforeTool"] == theirs["hooks"]["BeforeTool"]
    wrong = runner.invoke(install, ["claude-code", "--system"])
    assert wrong.exit_code == 2 and "not a Claude Code settings scope" in wrong.output


def test_switch_offs_a_project_can_make(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    (work / ".gemini").mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    system = tmp_path / "etc" / "settings.json"
    env = {"HOME": str(home), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)}
    project = work / ".gemini" / "settings.json"
    assert HOST.switch_offs(work, env) == []
    project.write_text(json.dumps({"hooksConfig": {"enabled": False}}))
    (off,) = HOST.switch_offs(work, env)
    assert off.path == str(project) and "enabled" in off.what
    system.parent.mkdir()
    system.write_text(json.dumps({"hooksConfig": {"enabled": True}}))
    assert HOST.switch_offs(work, env) == []  # held: the system level is merged last
    project.write_text(json.dumps({"hooksConfig": {"disabled": ["loopwatch"]}}))
    (off,) = HOST.switch_offs(work, env)
    assert "disabled" in off.what  # nothing holds against it
    project.write_text(json.dumps({"hooksConfig": {"disabled": ["some-other-hook"]}}))
    assert HOST.switch_offs(work, env) == []


def test_hooks_run_only_in_a_folder_the_user_trusts(tmp_path):
    home, work = tmp_path / "home", tmp_path / "code" / "work"
    work.mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    env = {"HOME": str(home), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "none.json")}
    rules = home / ".gemini" / "trustedFolders.json"
    assert "is not trusted" in (HOST.runs_here(work, env) or "")
    rules.write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    assert HOST.runs_here(work, env) is None
    rules.write_text(json.dumps({str(work / "x"): "TRUST_PARENT"}))
    assert HOST.runs_here(work, env) is None
    rules.write_text(json.dumps({str(tmp_path / "code"): "TRUST_FOLDER", str(work): "DO_NOT_TRUST"}))
    assert "DO_NOT_TRUST" in (HOST.runs_here(work, env) or "")  # the longest rule wins
    assert HOST.runs_here(work, {**env, "GEMINI_CLI_TRUST_WORKSPACE": "true"}) is None
    (home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"folderTrust": {"enabled": False}}}))
    assert HOST.runs_here(work, env) is None


def test_the_env_file_gemini_cli_loads(tmp_path):
    home, work = tmp_path / "home", tmp_path / "home" / "code" / "work"
    work.mkdir(parents=True)
    env = {"HOME": str(home)}
    assert HOST.env_files(str(work), env) == []
    (home / ".env").write_text("LOOPWATCH_MODE=off\n")
    assert HOST.env_files(str(work), env) == []  # the user's own
    (tmp_path / "home" / "code" / ".env").write_text("A=1\n")
    assert HOST.env_files(str(work), env) == [str(home / "code" / ".env")]
    (work / ".gemini").mkdir()
    (work / ".gemini" / ".env").write_text("B=2\n")
    assert HOST.env_files(str(work), env) == [str(work / ".gemini" / ".env")]  # the first found wins


# -- a project's .env may only tighten ---------------------------------------------------------


class _Started:
    """A Gemini CLI whose session process started with `started` (None: unknown)."""

    def __init__(self, started: dict[str, str] | None) -> None:
        self.started = started

    def env_files(self, cwd, env):
        return HOST.env_files(cwd, env)

    def started_environ(self):
        return self.started


@pytest.mark.parametrize(
    "started,kept",
    [({}, False), (None, False), ({"LOOPWATCH_MODE": "off"}, True)],
)
def test_a_projects_env_file_is_not_the_users_environment(tmp_path, started, kept):
    """What the file set and the session process did not start with (or where that is
    unknown) is the project's: taken out, only a tightening kept. What the user
    exported before starting Gemini CLI stays theirs."""
    from loopwatch._trust import dotenv, trusted_environ

    (tmp_path / "home").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("# project\nexport LOOPWATCH_MODE='off'  \nLOOPWATCH_PROFILE=unattended # hm\n")
    assert dotenv(work / ".env") == {"LOOPWATCH_MODE": "off", "LOOPWATCH_PROFILE": "unattended"}
    env = {"HOME": str(tmp_path / "home"), "LOOPWATCH_MODE": "off", "LOOPWATCH_PROFILE": "unattended"}
    notes: list[str] = []
    tightened = trusted_environ(env, [str(work)], notes.append, _Started(started))
    assert ("LOOPWATCH_MODE" in env) is kept
    assert "LOOPWATCH_PROFILE" not in env and tightened == {"profile": "unattended"}
    assert any("LOOPWATCH_MODE set by" in n for n in notes) is not kept
    assert any("LOOPWATCH_PROFILE set by" in n for n in notes)


def test_the_hook_knows_gemini_cli():
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "hook", "gemini-cli", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")},
        timeout=60,
    )
    assert "gemini-cli" in done.stdout
