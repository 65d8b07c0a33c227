"""GitHub Copilot CLI as a host: its payloads, its answers, its settings, its switch-offs and
its recorded sessions, on what the real CLI sent and wrote (1.0.89 and 1.0.102: the hook
payloads in tests/fixtures/copilot-hooks/, the session files and printed output in
tests/fixtures/copilot/, all written by `python tests/copilot_fixtures.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwatch._cli import cli
from loopwatch._core.events import Attempt, ToolCall
from loopwatch._core.session import Decision
from loopwatch._core.verdict import Action, Verdict
from loopwatch._hosts import copilot, host
from loopwatch._hosts.base import AFTER, BEFORE, FAILED, PROMPT, TURN_END, Call, PayloadError
from loopwatch._readers import detect, read

HERE = Path(__file__).resolve().parent
HOOKS = HERE / "fixtures" / "copilot-hooks"
SESSIONS = HERE / "fixtures" / "copilot"
HOST = host("copilot")
RELEASES = ("89", "102")


def payload(name: str) -> dict:
    return json.loads((HOOKS / f"{name}.json").read_text())


def parsed(name: str, event: str):
    return HOST.parse(payload(name), event)


# -- payloads ---------------------------------------------------------------------------------


@pytest.mark.parametrize("release", RELEASES)
def test_each_event_is_the_guards_event_named_on_the_command_line(release):
    assert parsed(f"{release}-preToolUse-bash", "preToolUse").event == BEFORE
    assert parsed(f"{release}-postToolUse-bash-exit2", "postToolUse").event == AFTER
    assert parsed(f"{release}-postToolUseFailure-edit", "postToolUseFailure").event == FAILED
    assert parsed(f"{release}-userPromptSubmitted", "userPromptSubmitted").event == PROMPT
    assert parsed(f"{release}-agentStop", "agentStop").event == TURN_END
    assert parsed(f"{release}-preToolUse-bash", "preToolUse").native == "preToolUse"


@pytest.mark.parametrize("release", RELEASES)
def test_a_payload_without_its_event_on_the_command_line_is_refused_as_unreadable(release):
    with pytest.raises(PayloadError, match="names no event"):
        HOST.parse(payload(f"{release}-preToolUse-bash"))


@pytest.mark.parametrize("release", RELEASES)
def test_a_failing_shell_command_is_a_failure_though_copilot_says_success(release):
    raw = payload(f"{release}-postToolUse-bash-exit2")
    assert raw["toolResult"]["resultType"] == "success"  # what Copilot says
    (call,) = HOST.parse(raw, "postToolUse").calls
    assert call.error and call.name == "bash" and call.input["command"] == "ls /nonexistent-dir-xyz"
    (failed_test,) = parsed(f"{release}-postToolUse-bash", "postToolUse").calls  # the failing test: exit 1
    assert failed_test.error and "add is wrong" in failed_test.result
    (ok,) = parsed(f"{release}-postToolUse-bash-exit0", "postToolUse").calls
    assert not ok.error
    for name in ("create", "view", "edit"):
        (call,) = parsed(f"{release}-postToolUse-{name}", "postToolUse").calls
        assert not call.error, name
    (edit,) = parsed(f"{release}-postToolUseFailure-edit", "postToolUseFailure").calls
    assert edit.error and "ENOENT" in edit.result


@pytest.mark.parametrize("release", RELEASES)
def test_identical_failures_have_identical_results_though_the_shell_number_grows(release):
    first = payload(f"{release}-postToolUse-bash-exit2")
    again = payload(f"{release}-postToolUse-bash-exit2-again")
    texts = [p["toolResult"]["textResultForLlm"] for p in (first, again)]
    assert texts[0] != texts[1]  # Copilot's shell number: 0, then 1
    (a,) = HOST.parse(first, "postToolUse").calls
    (b,) = HOST.parse(again, "postToolUse").calls
    assert a.result == b.result and a.result.endswith("<shellId: # completed with exit code 2>")


def test_the_guidance_a_hook_appended_is_not_part_of_the_result():
    text = "ls: x\n<shellId: 3 completed with exit code 2>"
    nudged = text + '\n\nTool "bash" succeeded. Additional guidance from postToolUse hooks:\nloopwatch: stop it'
    assert copilot.result_text(nudged, "bash") == copilot.result_text(text, "bash") == copilot.normalise(text)
    assert copilot.exit_code(copilot.result_text(nudged, "bash")) == 2


def test_other_notes_of_copilot_on_a_shell_are_normalised_too():
    detached = "started\n<detached command with shellId: 12 completed with exit code 3>"
    assert copilot.normalise(detached).endswith("<detached command with shellId: # completed with exit code 3>")
    assert copilot.exit_code(detached) == 3
    running = "<command with shellId: 7 is still running after 30 seconds. Use read_bash.>"
    assert copilot.normalise(running) == "<command with shellId: # is still running after 30 seconds. Use read_bash.>"
    assert copilot.exit_code(running) is None
    assert copilot.normalise("shellId: 5 in the middle of a line the command printed") == (
        "shellId: 5 in the middle of a line the command printed"
    )


def test_a_refused_or_rejected_result_is_not_the_agents_doing():
    raw = payload("102-postToolUse-bash-exit0")
    raw["toolResult"] = {"resultType": "rejected", "textResultForLlm": "The user rejected this tool call."}
    (call,) = HOST.parse(raw, "postToolUse").calls
    assert call.interrupted and not call.error


def test_a_subagent_is_an_agent_of_its_parents_session_in_1_0_102():
    pre = payload("102-preToolUse-bash-subagent")
    task = parsed("102-preToolUse-task", "preToolUse")
    child = HOST.parse(pre, "preToolUse")
    assert pre["sessionId"] == pre["agentId"] != pre["parentAgentId"]  # what 1.0.102 sends
    assert (child.session, child.agent) == (pre["parentAgentId"], pre["agentId"])
    assert task.agent == ""
    stop = parsed("102-postToolUse-bash-exit2-subagent", "postToolUse")
    assert (stop.session, stop.agent) == (child.session, child.agent)


def test_a_subagent_is_a_session_of_its_own_in_1_0_89():
    pre = payload("89-preToolUse-bash-subagent")
    child = HOST.parse(pre, "preToolUse")
    parent = parsed("89-preToolUse-task", "preToolUse")
    assert "agentId" not in pre and (child.session, child.agent) == (pre["sessionId"], "")
    assert child.session != parent.session


def test_a_missing_session_or_tool_is_unreadable():
    raw = payload("102-preToolUse-bash")
    with pytest.raises(PayloadError):
        HOST.parse({**raw, "sessionId": None}, "preToolUse")
    with pytest.raises(PayloadError):
        HOST.parse({k: v for k, v in raw.items() if k != "toolName"}, "preToolUse")


def test_an_oversize_payload_is_identified_from_its_fields_and_the_command_line():
    found = HOST.parse_oversize({"sessionId": "s1", "toolName": "bash"}, "postToolUse")
    assert (found.event, found.session, found.oversize) == (AFTER, "s1", True)
    (call,) = found.calls
    assert call.name == "bash" and call.input["loopwatch"] == "oversize"
    child = HOST.parse_oversize({"sessionId": "c", "agentId": "c", "parentAgentId": "p", "toolName": "x"}, "preToolUse")
    assert (child.session, child.agent) == ("p", "c")
    with pytest.raises(PayloadError):
        HOST.parse_oversize({"sessionId": "s1"}, None)


# -- answers ----------------------------------------------------------------------------------


def _decision(action: Action, message: str | None = "m", reason: str = "r") -> Decision:
    return Decision(action, message, reason, Verdict(action, description=reason))


def test_a_refusal_is_a_deny_decision_with_exit_status_0():
    before = parsed("102-preToolUse-bash", "preToolUse")
    for action in (Action.BLOCK, Action.STOP):
        answer = HOST.reply(before, _decision(action, "loopwatch blocked this call: x"), None)
        assert answer.stdout == {
            "permissionDecision": "deny",
            "permissionDecisionReason": "loopwatch blocked this call: x",
        }
        assert (answer.code, answer.stderr) == (0, "")
    assert HOST.reply(before, _decision(Action.ALLOW, None), None).stdout is None


def test_a_nudge_after_a_call_is_additional_context():
    after = parsed("102-postToolUse-bash-exit2", "postToolUse")
    assert HOST.reply(after, _decision(Action.NUDGE, "loopwatch: circles"), None).stdout == {
        "additionalContext": "loopwatch: circles"
    }
    failed = parsed("102-postToolUseFailure-edit", "postToolUseFailure")
    assert HOST.reply(failed, _decision(Action.NUDGE, "n"), None).stdout == {"additionalContext": "n"}
    assert HOST.reply(after, _decision(Action.ALLOW, None), None).stdout is None
    # A call that ran after the stop (Copilot ignores every stop answer) is told so.
    told = HOST.reply(after, _decision(Action.ALLOW, None), "it kept failing").stdout
    assert told is not None and told["additionalContext"].startswith("loopwatch stopped the run: it kept failing")


def test_nothing_is_answered_to_a_prompt_or_a_turns_end():
    for name, event in (("102-userPromptSubmitted", "userPromptSubmitted"), ("102-agentStop", "agentStop")):
        assert HOST.reply(parsed(name, event), _decision(Action.NUDGE, "n"), None).stdout is None


def test_unattended_is_told_by_the_native_processs_command_line():
    native = "/x/node_modules/@github/copilot-linux-x64/copilot"
    assert HOST.headless([native, "-p", "do it", "--allow-all-tools"]) == "copilot -p"
    assert HOST.headless([native, "--prompt=do it"]) == "copilot -p"
    assert HOST.headless(["node", "/x/node_modules/.bin/copilot", "-p", "x"]) == "copilot -p"
    assert HOST.headless([native, "--allow-all-tools"]) == ""  # the interactive session
    assert HOST.headless([native, "--", "-p"]) == ""
    assert HOST.headless(["/usr/bin/python3", "-p"]) is None
    assert HOST.detect_profile({"COPILOT_LOADER_PID": "123"}) == ("attended", "COPILOT_LOADER_PID: interactive")
    assert HOST.detect_profile({}) is None


# -- settings ---------------------------------------------------------------------------------


def test_install_writes_one_entry_per_event_keeps_others_and_uninstalls_only_its_own():
    theirs = {"type": "command", "bash": "./audit.sh", "timeoutSec": 5}
    settings = {"version": 1, "hooks": {"preToolUse": [theirs]}}
    once = HOST.install(settings, "/py -m loopwatch hook copilot")
    twice = HOST.install(once, "/py -m loopwatch hook copilot")
    assert once == twice and once["version"] == 1
    assert once["hooks"]["preToolUse"] == [
        theirs,
        {"type": "command", "bash": "/py -m loopwatch hook copilot preToolUse || true", "timeoutSec": 30},
    ]
    assert list(HOST.hooked(once)) == list(copilot.HOOK_EVENTS)
    assert HOST.uninstall(once) == {"version": 1, "hooks": {"preToolUse": [theirs]}}
    assert HOST.install({}, "loopwatch hook copilot")["version"] == 1


def test_the_settings_files_of_each_scope(tmp_path):
    (tmp_path / ".git").mkdir()
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir(parents=True)
    env = {"HOME": "/home/u"}
    assert HOST.settings_file("user", env, inner) == Path("/home/u/.copilot/hooks/loopwatch.json")
    assert HOST.settings_file("user", {**env, "COPILOT_HOME": "/c"}, inner) == Path("/c/hooks/loopwatch.json")
    assert HOST.settings_file("project", env, inner) == tmp_path / ".github" / "hooks" / "loopwatch.json"  # git root
    assert HOST.settings_file("system", env, inner) == Path("/etc/github-copilot/policy.d/loopwatch.json")


def _project(tmp_path: Path, trusted: bool) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".copilot").mkdir(parents=True)
    folders = [str(work)] if trusted else []
    config = "// User settings belong in settings.json.\n// This file is managed automatically.\n"
    (home / ".copilot" / "config.json").write_text(config + json.dumps({"trustedFolders": folders}))
    return work, {"HOME": str(home)}


@pytest.mark.parametrize("name", copilot.PROJECT_SETTINGS)
def test_a_projects_disable_all_hooks_is_named_off_when_trusted_and_later_when_not(tmp_path, name):
    for trusted, kind in ((True, "off"), (False, "later")):
        work, env = _project(tmp_path / kind, trusted)
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text('{"disableAllHooks": true}')
        inside = work / "pkg"
        inside.mkdir()
        (found,) = HOST.switch_offs(inside, env)  # read at the git root, as Copilot does
        assert (found.path, found.kind) == (str(work / name), kind)
        assert "--system" in found.what


def test_switch_offs_of_the_users_own_settings_disabled_hooks_and_project_hooks(tmp_path):
    work, env = _project(tmp_path, trusted=True)
    Path(env["HOME"], ".copilot", "settings.json").write_text('{"disableAllHooks": true, "disabledHooks": ["x"]}')
    (work / ".github" / "copilot").mkdir(parents=True)
    (work / ".github" / "copilot" / "settings.json").write_text('{"disabledHooks": ["abc123"]}')
    (work / ".github" / "hooks").mkdir()
    hooks = {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "./rewrite.sh"}]}}
    (work / ".github" / "hooks" / "theirs.json").write_text(json.dumps(hooks))
    ours = HOST.install({}, "loopwatch hook copilot")
    (work / ".github" / "hooks" / "loopwatch.json").write_text(json.dumps(ours))
    found = {(Path(f.path).name, f.kind) for f in HOST.switch_offs(work, env)}
    assert found == {("settings.json", "off"), ("theirs.json", "undo")}
    kinds = [f.kind for f in HOST.switch_offs(work, env)]
    assert kinds.count("off") == 3  # the user's own file (twice), and the project's disabledHooks


@pytest.mark.parametrize(
    "tool,tool_input",
    [
        ("create", {"path": "/repo/.github/copilot/settings.json", "file_text": '{"disableAllHooks": true}'}),
        ("create", {"path": "/repo/.github/copilot/settings.local.json", "file_text": '{\n "disableAllHooks":true\n}'}),
        ("edit", {"path": "/repo/.claude/settings.json", "old_str": "{", "new_str": '{"disableAllHooks": true,'}),
        (
            "bash",
            {
                "command": "mkdir -p .github/copilot && echo '{\"disableAllHooks\": true}' > .github/copilot/settings.json"
            },
        ),
        ("bash", {"command": 'echo \'{"disabledHooks": ["x"]}\' > .github/copilot/settings.json'}),
        ("edit", {"path": "/home/u/.copilot/settings.json", "old_str": "{", "new_str": '{"disableAllHooks": true,'}),
    ],
)
def test_the_agents_write_of_a_switch_off_is_named(tool, tool_input):
    assert HOST.switches_off(Call(tool, tool_input), "/repo") is not None


@pytest.mark.parametrize(
    "tool,tool_input",
    [
        ("create", {"path": "/repo/.github/copilot/settings.json", "file_text": '{"model": "x"}'}),
        ("edit", {"path": "/repo/.github/copilot/settings.json", "old_str": "true", "new_str": "false"}),
        ("bash", {"command": "grep -rn disableAllHooks docs/"}),
        ("create", {"path": "/repo/docs/hooks.md", "file_text": '"disableAllHooks": true switches them off'}),
    ],
)
def test_any_other_write_is_not(tool, tool_input):
    assert HOST.switches_off(Call(tool, tool_input), "/repo") is None


def test_a_system_file_copilot_would_skip_is_named(tmp_path):
    path = tmp_path / "loopwatch.json"
    path.write_text("{}")
    path.chmod(0o666)
    said = HOST.unread("system", path)
    assert said is not None and ("not owned by root" in said or "writable by group or others" in said)
    assert HOST.unread("user", path) is None


def test_read_jsonc_reads_comments_but_not_in_strings(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('// a\n{"a": "http://x//y", /* b */ "c": 1}\n')
    assert copilot.read_jsonc(path) == {"a": "http://x//y", "c": 1}
    path.write_text("{broken")
    assert copilot.read_jsonc(path) is None


# -- recorded sessions ------------------------------------------------------------------------


def _events(name: str) -> list:
    path = SESSIONS / name
    assert detect(str(path), path.read_bytes()[:65536]) == "copilot"
    (session,) = read(str(path))
    return list(session.events)


def _calls(events: list) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


@pytest.mark.parametrize("name", ["89-loop.events.jsonl", "102-loop.events.jsonl", "102-loop.output.jsonl"])
def test_an_ended_loop_reads_as_three_failed_calls_and_the_refused_attempt(name):
    events = _events(name)
    calls = _calls(events)
    assert len(calls) == 3 and all(c.error for c in calls)
    assert len({c.result for c in calls}) == 1  # the shell's number and loopwatch's nudge are not the result
    assert [type(e).__name__ for e in events if isinstance(e, (ToolCall, Attempt))][-1] == "Attempt"


def test_loopwatchs_refusals_read_as_attempts_they_never_ran():
    events = _events("102-attended.events.jsonl")
    assert len(_calls(events)) == 3 and len([e for e in events if isinstance(e, Attempt)]) == 3


@pytest.mark.parametrize("release", RELEASES)
def test_a_healthy_session_reads_as_every_call_with_its_writes(release):
    calls = _calls(_events(f"{release}-healthy.events.jsonl"))
    assert [c.name for c in calls] == ["bash"] * 8 + ["create", "bash", "view", "edit", "bash", "edit"]
    assert [c.error for c in calls] == [False] * 9 + [True, False, False, False, True]
    assert calls[8].changed and calls[11].changed and not calls[13].changed  # the failed edit wrote nothing


@pytest.mark.parametrize("name", ["102-subagent.events.jsonl", "89-subagent.output.jsonl"])
def test_a_subagents_calls_carry_its_agent(name):
    calls = _calls(_events(name))
    assert [c.name for c in calls if c.agent] == ["bash"] * 3
    assert len({c.agent for c in calls if c.agent}) == 1


def test_scan_reads_a_copilot_state_folder_and_leaves_its_own_files_out(tmp_path):
    """`scan ~/.copilot`: the session read, every settings, trust, log and cache file left
    out by name (never opened: unreadable ones included), and counted."""
    home = tmp_path / ".copilot"
    session = home / "session-state" / "7e495018-8b77-41d5-ae2a-351da22b7880"
    session.mkdir(parents=True)
    (session / "events.jsonl").write_bytes((SESSIONS / "102-healthy.events.jsonl").read_bytes())
    (session / "workspace.yaml").write_text("id: 7e495018\n")
    for name in ("rewind-file-snapshots/tracking.json", "checkpoints/index.md", "files/notes.json", "research/a.json"):
        (session / name).parent.mkdir(parents=True, exist_ok=True)
        (session / name).write_text("{not a transcript")
    (home / "config.json").write_text('// managed\n{"firstLaunchAt": "2026-01-01T00:00:00Z"}')
    (home / "settings.json").write_text('{"disableAllHooks": false}')
    (home / "hooks").mkdir()
    (home / "hooks" / "loopwatch.json").write_text(json.dumps(HOST.install({}, "loopwatch hook copilot")))
    (home / "logs").mkdir()
    (home / "logs" / "process-1-2.log").write_text("log")
    (home / "pkg" / "linux-x64" / "1.0.102").mkdir(parents=True)
    (home / "pkg" / "linux-x64" / "1.0.102" / "package.json").write_text("{}")
    (home / "installed-plugins" / "p").mkdir(parents=True)
    (home / "installed-plugins" / "p" / "plugin.json").write_text("{}")
    (home / "session-store.db").write_bytes(b"SQLite format 3\x00")
    unreadable = home / "mcp-config.json"
    unreadable.write_text("{}")
    unreadable.chmod(0)
    result = CliRunner().invoke(cli, ["scan", str(home)])
    assert result.exit_code == 0, result.output
    assert "Scanned 1 file: 1 session, 14 actions." in result.output
    assert "Left out by name: 13 files and folders of GitHub Copilot CLI's state" in result.output
    # A session folder given by itself is walked the same way.
    again = CliRunner().invoke(cli, ["scan", "--json", str(home / "session-state")])
    assert again.exit_code == 0 and len([line for line in again.stdout.splitlines() if line.startswith("{")]) == 1


def test_no_other_formats_file_is_taken_for_copilots():
    others = [
        p for p in (HERE / "fixtures").glob("*/*") if p.is_file() and p.parent.name not in ("copilot", "copilot-hooks")
    ]
    assert others
    for path in others:
        assert detect(str(path), path.read_bytes()[:65536]) != "copilot", path


# -- the guard over Copilot's events ----------------------------------------------------------


class Guarded:
    """The hook's own path (`_hook.guard.handle`) over captured payloads, in one state."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str = "attended") -> None:
        from loopwatch._hook.state import Store

        monkeypatch.setenv("LOOPWATCH_PROFILE", profile)
        monkeypatch.delenv("LOOPWATCH_MODE", raising=False)
        self.store = Store(str(tmp_path / "state"))

    def send(self, raw: dict, event: str):
        from loopwatch._hook.guard import handle

        return handle(HOST.parse(raw, event), {}, self.store)

    def actions(self, session: str) -> int:
        state = self.store.state(session, "")
        return 0 if state is None else state.monitor.record()["actions"]


def test_a_refused_call_that_runs_later_is_counted_when_it_does(tmp_path, monkeypatch):
    """Copilot never reports a call its hook refused: nothing of the refusal is kept to
    match a report, so the same call, run later (once something else was done), counts."""
    guard = Guarded(tmp_path, monkeypatch)
    pre, post = payload("102-preToolUse-bash"), payload("102-postToolUse-bash-exit2")
    other_pre, other_post = payload("102-preToolUse-view"), payload("102-postToolUse-view")
    for raw in (post, post, post):
        guard.send(raw, "postToolUse")
    refused = guard.send(pre, "preToolUse").stdout
    assert refused is not None and refused["permissionDecision"] == "deny"
    guard.send(other_pre, "preToolUse")
    guard.send(other_post, "postToolUse")
    session = pre["sessionId"]
    before = guard.actions(session)
    guard.send(post, "postToolUse")  # the same call ran after all
    assert guard.actions(session) == before + 1
    guard.store.close()


def test_a_reworded_description_does_not_make_a_new_call(tmp_path, monkeypatch):
    guard = Guarded(tmp_path, monkeypatch)
    raw = payload("89-postToolUse-bash-exit2")
    answers = []
    for words in ("List the directory", "Show the folder's files", "Look in the folder"):
        answers.append(guard.send({**raw, "toolArgs": {**raw["toolArgs"], "description": words}}, "postToolUse"))
    assert [a.stdout is None for a in answers] == [True, True, False]  # the third is nudged
    worded = {**payload("89-preToolUse-bash"), "toolArgs": {**raw["toolArgs"], "description": "Peek at it"}}
    refused = guard.send(worded, "preToolUse").stdout
    assert refused is not None and refused["permissionDecision"] == "deny"
    guard.store.close()


def test_the_agents_write_of_the_switch_off_is_refused_by_the_hook(tmp_path, monkeypatch):
    guard = Guarded(tmp_path, monkeypatch, profile="unattended")
    raw = {
        **payload("102-preToolUse-create"),
        "toolArgs": {"path": "/FIXTURE/work/.github/copilot/settings.json", "file_text": '{"disableAllHooks": true}'},
    }
    answer = guard.send(raw, "preToolUse").stdout
    assert answer is not None and answer["permissionDecision"] == "deny"
    assert answer["permissionDecisionReason"].startswith("loopwatch refused this call")
    assert ".github/copilot/settings.json" in answer["permissionDecisionReason"]
    guard.store.close()


def test_a_system_install_is_readable_by_every_user(tmp_path):
    """`--system` writes the file mode 0644 (Copilot runs each user's session as that
    user); a user's or a project's is 0600."""
    policy, mine = tmp_path / "policy.json", tmp_path / "mine.json"
    runner = CliRunner()
    done = runner.invoke(
        cli, ["install", "copilot", "--system", "--settings", str(policy), "--command", "loopwatch hook copilot"]
    )
    assert done.exit_code == 0, done.output
    assert runner.invoke(cli, ["install", "copilot", "--settings", str(mine)]).exit_code == 0
    assert (policy.stat().st_mode & 0o777, mine.stat().st_mode & 0o777) == (0o644, 0o600)
    assert (
        json.loads(policy.read_text())["hooks"]["preToolUse"][0]["bash"] == "loopwatch hook copilot preToolUse || true"
    )


def test_scopes_a_host_does_not_have_are_refused_in_one_line():
    done = CliRunner().invoke(cli, ["install", "claude-code", "--system"])
    assert done.exit_code == 2 and "--system is not a Claude Code settings scope" in done.output


@pytest.mark.slow  # runs the dry-run command
def test_doctor_never_hands_a_projects_shell_text_to_the_shell(tmp_path, monkeypatch):
    """A project's hook file is the repository's: doctor dry-runs this machine's
    `loopwatch` with the command's words up to its first shell operator, never the rest."""
    import shutil

    if shutil.which("loopwatch") is None:
        pytest.skip("no `loopwatch` on PATH")
    work, env = _project(tmp_path, trusted=True)
    planted = tmp_path / "PLANTED"
    hooks = HOST.install({}, "loopwatch hook copilot")
    for entries in hooks["hooks"].values():
        entries[0]["bash"] = entries[0]["bash"].replace("|| true", f"|| true; touch {planted}")
    (work / ".github" / "hooks").mkdir(parents=True)
    (work / ".github" / "hooks" / "loopwatch.json").write_text(json.dumps(hooks))
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("PYTHONPATH", str(HERE.parent / "src"))
    done = CliRunner().invoke(cli, ["doctor", "copilot"])
    assert "the hook command in the project's settings was not run" in done.output
    assert "hook runs: a dry-run call answered" in done.output, done.output
    assert not planted.exists()
