"""The real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned) with loopwatch
installed by `loopwatch install claude-code`, driven offline by a scripted model.

Each test is a user's machine: a fresh HOME, the install command, then `claude -p`
(`--output-format stream-json --verbose`) talking to a scripted Anthropic Messages
API on 127.0.0.1. What the model was sent (each request), what Claude Code printed,
and what `loopwatch status` says are checked against the README's promises.

Skipped only where node/npm are missing; the CLI is installed into a cache folder
on first use (see `real_claude_support`).
"""

from __future__ import annotations

import json
import sys

import pytest
import real_clis
from real_claude_support import (
    CLAUDE_CODE_VERSION,
    CURRENT_CLAUDE_CODE_VERSION,
    LOOP_COMMAND,
    ClaudeRun,
    ScriptedAnthropic,
    claude_binary,
    healthy_script,
    loop_script,
    reworded_script,
    same_error_script,
    subagent_script,
    tool_results,
    tool_uses,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def claude() -> str:
    return claude_binary()


@pytest.fixture
def scripts(tmp_path):
    return {
        "loop": loop_script(12),
        "healthy": healthy_script(tmp_path / "work"),
        "subagent": subagent_script(),
        "sameerror": same_error_script(12),
    }


def _machine(tmp_path, server, claude, profile=None) -> ClaudeRun:
    machine = ClaudeRun(tmp_path, server, claude, profile=profile)
    machine.install()
    return machine


def _corroborate(machine: ClaudeRun) -> None:
    """The user's own config lets suspicion stop once corroborated (one more unchanged
    round past the nudge): without it a live hook, which has no calibration, only
    nudges on the same error from varied calls."""
    mine = machine.home / ".config" / "loopwatch" / "loopwatch.toml"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("[evidence]\nconfirm = 1\n")


def _mentions_loopwatch(request) -> bool:
    return any("loopwatch" in r["text"] for r in request.results) or any("loopwatch" in t for t in request.reminders)


def test_the_installed_events_are_exactly_these(tmp_path, claude):
    with ScriptedAnthropic({}) as server:
        machine = ClaudeRun(tmp_path, server, claude)
        said = machine.install()
        hooks = machine.settings()["hooks"]
    assert list(hooks) == [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "UserPromptSubmit",
        "Stop",
        "SubagentStop",
    ]
    for event, groups in hooks.items():
        assert len(groups) == 1 and len(groups[0]["hooks"]) == 1
        command = groups[0]["hooks"][0]["command"]
        assert command == real_clis.hook_command("claude-code", machine.env())
        assert ("matcher" in groups[0]) == (
            event in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch")
        )
    assert "PostToolBatch" in said


def test_version_under_test(claude):
    import subprocess

    out = subprocess.run([claude, "--version"], check=False, capture_output=True, text=True, timeout=60).stdout
    assert out.split()[0] == CLAUDE_CODE_VERSION


def test_unattended_loop_ends_right_after_the_fourth_call(tmp_path, claude, scripts):
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)  # profile detected: `claude -p` is unattended
        run = machine.claude("SCENARIO:loop do the task")
        turns = server.of("loop")
    # Four model turns, each asking for the same call; none after the stopping call.
    assert [t.answered for t in turns] == ["tool:Bash"] * 4, [t.answered for t in turns]
    assert len(server.requests) == len([r for r in server.requests if r.scenario == "loop"])
    # Calls 1-3 ran and failed; the nudge reached the model with the third result.
    assert all(r["error"] and r["text"].startswith("Exit code 2") for t in turns[1:4] for r in t.results)
    assert not any(_mentions_loopwatch(t) for t in turns[:3])
    assert any(
        "loopwatch: you appear to be going in circles" in text and LOOP_COMMAND in text for text in turns[3].reminders
    )
    # The fourth was denied before it ran, and the run ended there.
    calls = tool_uses(run.lines)
    results = tool_results(run.lines)
    assert len(calls) == 4
    assert results[calls[3]["id"]]["text"].startswith("loopwatch stopped the run")
    assert run.result["terminal_reason"] == "hook_stopped" and run.code == 0
    assert [d["tool_use_id"] for d in run.result["permission_denials"]] == [calls[3]["id"]]
    # loopwatch's own account: unattended (why), 3 calls counted (the denied one never
    # ran), one stop, decided at PreToolUse.
    row = machine.status()[""]
    assert row["profile"] == "unattended" and row["profile_reason"] == "CLAUDE_CODE_ENTRYPOINT=sdk-cli"
    assert row["actions"] == 3 and row["stops"] == 1 and row["stopped"]
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PreToolUse", "stop")


@pytest.mark.parametrize("version", [CLAUDE_CODE_VERSION, CURRENT_CLAUDE_CODE_VERSION])
def test_a_reworded_description_and_timeout_are_the_same_call(tmp_path, version):
    """The model words Bash's `description` (written for the person) and `timeout` anew
    at every call of the same failing command: it is still the same call, stopped
    right after the 4th as with a fixed description, by the live hook and by a
    replay of the session file Claude Code wrote."""
    from loopwatch._core.identity import HOSTS

    claude = claude_binary(version)
    with ScriptedAnthropic({"loop": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, claude)
        run = machine.claude("SCENARIO:loop do the task")
        turns = server.of("loop")
        offered = server.tools
    calls = tool_uses(run.lines)
    assert len({c["input"]["description"] for c in calls}) == len(calls) == 4, [c["input"] for c in calls]
    assert [t.answered for t in turns] == ["tool:Bash"] * 4
    # (2.1.332 puts `PreToolUse:Bash hook error: ` before a denial's reason; 2.1.197 does not.)
    denied = tool_results(run.lines)[calls[3]["id"]]
    assert denied["error"] and "loopwatch stopped the run" in denied["text"], denied
    assert run.result["terminal_reason"] == "hook_stopped"
    row = machine.status()[""]
    assert row["actions"] == 3 and row["stops"] == 1
    # The replay of this session agrees: the same stop, before the 4th call.
    (session,) = machine.sessions()
    scanned = json.loads(machine.loopwatch("scan", "--json", str(session), check=False).stdout)
    if calls[3]["id"] in session.read_text():
        assert scanned["verdict"]["action"] == "stop" and scanned["verdict"]["at_action"] == 4, scanned["verdict"]
    else:
        # Where Claude Code ended before its session file held the refused 4th call (the
        # replay disagreed now and then on a loaded machine), the replay has 3 calls: a nudge.
        assert scanned["verdict"] is None, scanned["verdict"]
        assert [i["action"] for i in scanned["interventions"]] == ["nudge"], scanned["interventions"]
    # Every field the defaults ignore is one this release offers the model, for each
    # of its tools the defaults name (what the real CLI sends, not a reading of docs).
    for tool, fields in HOSTS["claude-code"].items():
        if tool in offered:
            assert set(fields) <= set(offered[tool].get("properties", {})), (version, tool, fields)
    assert {"Bash", "Agent"} <= set(offered)


def test_attended_blocks_every_repeat_after_the_nudge(tmp_path, claude, scripts):
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude, profile="attended")
        run = machine.claude("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert len(turns) == 13 and turns[-1].answered == "text"  # the model gave up by itself
    calls = tool_uses(run.lines)
    results = tool_results(run.lines)
    assert len(calls) == 12
    texts = [results[c["id"]]["text"] for c in calls]
    assert all(t.startswith("Exit code 2") for t in texts[:3])
    assert all(t.startswith("loopwatch blocked this call") and LOOP_COMMAND in t for t in texts[3:]), texts
    assert any("going in circles" in text for text in turns[3].reminders)
    assert run.result["terminal_reason"] == "completed"
    row = machine.status()[""]
    assert row["profile"] == "attended"
    # Nine denials, none counted as a call that ran, and nothing stopped.
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0 and not row["stopped"]
    assert [d["event"] for d in row["decisions"] if d["action"] == "block"] == ["PreToolUse"] * 9


def test_a_healthy_session_runs_untouched_under_run_and_the_hook(tmp_path, claude, scripts):
    """Different commands, then a failing test, a read, an edit, the test again: it
    passes. Neither guard says a word: no nudge, no block, no stop, exit 0."""
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        record = tmp_path / "run.json"
        run = machine.claude(
            "SCENARIO:healthy fix the test",
            wrap=lambda argv: [sys.executable, "-m", "loopwatch", "run", "-o", str(record), "--", *argv],
        )
        turns = server.of("healthy")
    assert [t.answered for t in turns][-1] == "text" and len(turns) == 14
    assert not any(_mentions_loopwatch(t) for t in turns)
    results = tool_results(run.lines)
    calls = tool_uses(run.lines)
    assert results[calls[9]["id"]]["error"] and "add is wrong" in results[calls[9]["id"]]["text"]
    assert results[calls[-1]["id"]] == {"error": False, "text": "ok"}  # the test passes
    assert (tmp_path / "work" / "test_calc.py").read_text().count("return a + b") == 1
    assert run.code == 0 and run.result["terminal_reason"] == "completed"
    assert "loopwatch" not in run.stderr.replace("loopwatch: the command ended by itself", "")
    kept = json.loads(record.read_text())
    assert kept["ended_by"] == "exit" and kept["status"] == 0
    row = machine.status()[""]
    assert row["profile"] == "unattended"
    assert row["actions"] == 13 and (row["nudges"], row["blocks"], row["stops"]) == (0, 0, 0) and not row["decisions"]


def test_run_reports_a_hook_stop_as_a_loop_stop(tmp_path, claude, scripts):
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        record = tmp_path / "run.json"
        run = machine.claude(
            "SCENARIO:loop do the task",
            wrap=lambda argv: [sys.executable, "-m", "loopwatch", "run", "-o", str(record), "--", *argv],
        )
        turns = server.of("loop")
    assert len(turns) == 4
    assert run.code == 86, run.stderr
    kept = json.loads(record.read_text())
    assert kept["ended_by"] == "loop" and kept["status"] == 86 and kept["exit_code"] == 0
    assert "hook_stopped" in run.stderr


def test_a_looping_subagent_ends_the_whole_unattended_run(tmp_path, claude, scripts):
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        run = machine.claude("SCENARIO:subagent delegate the listing")
        main, sub = server.of("subagent"), server.of("loop")
    assert [t.answered for t in main] == ["tool:Agent"]  # no main-agent turn after the stop
    assert [t.answered for t in sub] == ["tool:Bash"] * 4
    spawn = tool_uses(run.lines)[0]
    inner = tool_uses(run.lines, parent=spawn["id"])
    assert len(inner) == 4
    assert tool_results(run.lines, parent=spawn["id"])[inner[3]["id"]]["text"].startswith("loopwatch stopped the run")
    assert run.result["terminal_reason"] == "hook_stopped"
    rows = machine.status()
    child = next(row for agent, row in rows.items() if agent)
    assert child["actions"] == 3 and child["stops"] == 1
    assert rows[""]["stopped"].startswith("a sub-agent was stopped")


def test_a_looping_subagent_is_blocked_when_attended(tmp_path, claude, scripts):
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude, profile="attended")
        run = machine.claude("SCENARIO:subagent delegate the listing")
        main, sub = server.of("subagent"), server.of("loop")
    assert [t.answered for t in main] == ["tool:Agent", "text"]
    assert len(sub) == 13
    spawn = tool_uses(run.lines)[0]
    inner = tool_uses(run.lines, parent=spawn["id"])
    texts = [tool_results(run.lines, parent=spawn["id"])[c["id"]]["text"] for c in inner]
    assert all(t.startswith("Exit code 2") for t in texts[:3])
    assert all(t.startswith("loopwatch blocked this call") for t in texts[3:]) and len(texts) == 12
    rows = machine.status()
    child = next(row for agent, row in rows.items() if agent)
    assert child["actions"] == 3 and child["blocks"] == 9 and child["stops"] == 0
    assert rows[""]["stops"] == 0 and not rows[""]["stopped"]


HONOURED_PROBE = """
import json, os, sys
payload = json.load(sys.stdin)
event = payload["hook_event_name"]
count = os.path.join(os.environ["PROBE_DIR"], event)
n = int(open(count).read()) + 1 if os.path.exists(count) else 1
open(count, "w").write(str(n))
stop_at = {"PreToolUse": 1, "PostToolUseFailure": 1, "PostToolBatch": 3}[event]
if n == stop_at:
    print(json.dumps({"continue": False, "stopReason": "probe: " + event}))
"""


def test_claude_code_honours_continue_false_only_at_post_tool_batch(tmp_path, claude, scripts):
    """Why loopwatch carries its stop at PostToolBatch: the same `continue: false` is
    ignored at PreToolUse (call 1, allowed) and PostToolUseFailure (call 1), and ends
    the run at PostToolBatch (the third batch: three model turns, no fourth)."""
    probe = tmp_path / "probe.py"
    probe.write_text(HONOURED_PROBE)
    with ScriptedAnthropic(scripts) as server:
        machine = ClaudeRun(tmp_path, server, claude)
        machine.extra_env["PROBE_DIR"] = str(tmp_path)
        (machine.home / ".claude").mkdir(parents=True)
        hooks = {
            event: [{"matcher": "*", "hooks": [{"type": "command", "command": f"{sys.executable} {probe}"}]}]
            for event in ("PreToolUse", "PostToolUseFailure", "PostToolBatch")
        }
        (machine.home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        run = machine.claude("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert [t.answered for t in turns] == ["tool:Bash"] * 3
    assert run.result["terminal_reason"] == "hook_stopped"


def test_an_interactive_session_is_attended_and_blocks_every_repeat(tmp_path, claude, scripts):
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)  # no profile forced: found from the process
        machine.interactive(
            "SCENARIO:loop do the task", done=lambda: any(t.answered == "text" for t in server.of("loop"))
        )
        turns = server.of("loop")
    assert len(turns) == 13 and turns[-1].answered == "text"  # the model gave up by itself
    texts = [r["text"] for t in turns[1:] for r in t.results]
    assert len(texts) == 12 and all(t.startswith("Exit code 2") for t in texts[:3])
    assert all(t.startswith("loopwatch blocked this call") for t in texts[3:]), texts
    assert any("going in circles" in text for text in turns[3].reminders)
    row = machine.status()[""]
    assert (row["profile"], row["profile_reason"]) == ("attended", "interactive")
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0 and not row["stopped"]


def test_a_stop_decided_after_a_call_ran_ends_the_run_at_that_call(tmp_path, claude, scripts):
    """The same error from a different command each time: nothing can be refused in
    advance, so the stop is decided when a failed call's result comes in; the run
    still ends right there, with no model turn after that call. (Suspicion: the user
    opted in to corroborated stops.)"""
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        _corroborate(machine)
        run = machine.claude("SCENARIO:sameerror list the folders")
        turns = server.of("sameerror")
    calls = tool_uses(run.lines)
    results = tool_results(run.lines)
    assert 4 <= len(calls) < 12  # cut short
    assert len(turns) == len(calls)  # the stopping call was the last thing the model asked for
    assert all(results[c["id"]]["text"].startswith("Exit code 2") for c in calls)  # every call ran; none refused
    assert run.result["terminal_reason"] == "hook_stopped" and not run.result["permission_denials"]
    row = machine.status()[""]
    assert row["actions"] == len(calls) and row["stops"] == 1
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PostToolUseFailure", "stop")


def test_run_reports_a_hook_stop_the_stream_does_not_show(tmp_path, claude, scripts):
    """The same run under `loopwatch run --mode warn` (its own monitor only warns): the
    stream carries no loopwatch text, and `run` still reports the hook's stop as a
    loop stop, from the session file Claude Code wrote."""
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        _corroborate(machine)
        record = tmp_path / "run.json"
        run = machine.claude(
            "SCENARIO:sameerror list the folders",
            wrap=lambda argv: [
                sys.executable,
                "-m",
                "loopwatch",
                "run",
                "--mode",
                "warn",
                "-o",
                str(record),
                "--",
                *argv,
            ],
        )
    assert not any("loopwatch" in r["text"] for r in tool_results(run.lines).values())
    assert run.result["terminal_reason"] == "hook_stopped"
    assert run.code == 86, run.stderr
    kept = json.loads(record.read_text())
    assert kept["ended_by"] == "loop" and kept["exit_code"] == 0


def test_the_same_error_from_varied_calls_is_only_nudged_by_default(tmp_path, claude, scripts):
    """Suspicion (varied calls, one error) with no calibration and no opt-in: the model
    is told, and nothing is stopped or refused; the run goes on to its own end."""
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        run = machine.claude("SCENARIO:sameerror list the folders")
        turns = server.of("sameerror")
    calls = tool_uses(run.lines)
    assert len(calls) == 12 and len(turns) == 13  # every scripted call ran, then the final answer
    assert any(_mentions_loopwatch(t) for t in turns)  # the nudge reached the model
    assert run.result["terminal_reason"] != "hook_stopped" and not run.result["permission_denials"]
    assert machine.status()[""]["stops"] == 0


@pytest.mark.parametrize(
    "variable,value,file",
    [
        ("LOOPWATCH_MODE", "off", "settings.json"),
        ("LOOPWATCH_MODE", "off", "settings.local.json"),
        ("LOOPWATCH_PROFILE", "attended", "settings.json"),
    ],
)
def test_a_projects_claude_settings_env_cannot_switch_the_guard_off(tmp_path, claude, scripts, variable, value, file):
    """Claude Code hands a project's `"env"` to every hook; the agent can write that
    file. Whatever it sets there, the unattended loop still ends at the fourth call."""
    with ScriptedAnthropic(scripts) as server:
        machine = _machine(tmp_path, server, claude)
        (machine.work / ".claude").mkdir()
        (machine.work / ".claude" / file).write_text(json.dumps({"env": {variable: value}}))
        run = machine.claude("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert [t.answered for t in turns] == ["tool:Bash"] * 4, [t.answered for t in turns]
    calls = tool_uses(run.lines)
    assert tool_results(run.lines)[calls[-1]["id"]]["text"].startswith("loopwatch stopped the run")
    assert run.result["terminal_reason"] == "hook_stopped"
    row = machine.status()[""]
    assert row["profile"] == "unattended" and row["stops"] == 1
    log = (machine.state_dir / "hook.log").read_text()
    assert f"{variable} set by" in log and "not trusted" in log
