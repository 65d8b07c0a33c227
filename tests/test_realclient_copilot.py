"""The real GitHub Copilot CLI (npm `@github/copilot`, the pinned and the current release)
with loopwatch installed by `loopwatch install copilot`, driven offline by a scripted model.

Each test is a user's machine: a fresh HOME, the install command, then `copilot -p ...
--allow-all-tools --output-format json` talking to `scripted_chat.ScriptedChat` on
127.0.0.1. What the model was sent (each request), what Copilot printed and recorded, and
what `loopwatch status` says are checked against what the README promises. Every run's
processes are gone when it returns (`Finished.leftover`).

Skipped only where node/npm are missing (the CLI is installed on first use).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import real_clis
from real_copilot_support import (
    CURRENT,
    KEY,
    LOOP_COMMAND,
    PINNED,
    CopilotRun,
    Finished,
    healthy_script,
    loop_script,
    reworded_script,
    same_error_script,
    subagent_script,
    switch_off_script,
)
from scripted_chat import ScriptedChat

pytestmark = pytest.mark.slow

BOTH = pytest.mark.parametrize("version", [PINNED, CURRENT])
NUDGE = "loopwatch: you appear to be going in circles"
DENIED = "Denied by preToolUse hook: "


def _machine(tmp_path: Path, server: ScriptedChat, version: str, profile: str | None = None) -> CopilotRun:
    machine = CopilotRun(tmp_path, server, version, profile=profile)
    machine.install()
    return machine


def _scan(machine: CopilotRun, *paths: str) -> list[dict]:
    done = machine.loopwatch("scan", "--json", *paths, check=False)
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _clean(run: Finished) -> None:
    assert not run.leftover, run.leftover  # nothing of the run outlives it
    assert KEY not in run.stdout + run.stderr


def _exit_code_two(text: str) -> bool:
    return text.rstrip().endswith("completed with exit code 2>")


@BOTH
def test_an_unattended_loop_is_ended_before_its_fourth_call_runs(tmp_path, version):
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, version)  # `copilot -p`: unattended, found from the process
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
    _clean(run)
    # Four model requests, each asking for the same call; none after the stopping call.
    assert [t.answered for t in turns] == ["tool:bash"] * 4, [t.answered for t in turns]
    assert len(server.requests) == 4
    # Calls 1-3 ran and failed (the exit code only in the text); the nudge reached the model
    # with the third result; the fourth was refused and never ran.
    assert all(len(t.results) == 1 and _exit_code_two(t.results[0]["text"].split("\n\n")[0]) for t in turns[1:])
    assert not any(t.saw("loopwatch") for t in turns[1:3]) and turns[3].saw(NUDGE)
    started, completed = run.started(), run.completed()
    assert len(started) == 4 and len(completed) == 3 and started[3]["toolCallId"] not in completed
    # Ended by loopwatch's SIGINT to the session process: Copilot's abort, exit 0.
    assert run.code == 0 and run.interrupted()
    log = machine.hook_log(until="ended the run (SIGINT")
    assert "sending SIGINT to copilot pid" in log and "ended the run (SIGINT to the headless copilot process)" in log
    # loopwatch's own account: unattended (why), 3 calls counted, one stop at preToolUse.
    ((session, agent),) = machine.status()
    row = machine.status()[(session, agent)]
    assert (row["profile"], row["profile_reason"]) == ("unattended", "copilot -p")
    assert row["actions"] == 3 and row["stops"] == 1 and row["stopped"]
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PreToolUse", "stop")
    # The session file Copilot wrote, and its printed stream, read by `scan`: the same 3
    # calls, the same stop before the fourth.
    (events,) = machine.sessions()
    assert events.parent.name == session
    stream = tmp_path / "stream.jsonl"
    stream.write_text(run.stdout)
    for record in _scan(machine, str(events), str(stream)):
        assert record["format"] == "copilot" and record["actions"] == 3, record
        assert record["verdict"]["action"] == "stop" and record["verdict"]["at_action"] == 4, record["verdict"]


@BOTH
def test_attended_refuses_every_repeat_and_never_ends_the_run(tmp_path, version):
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, version, profile="attended")
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
    _clean(run)
    assert len(turns) == 13 and turns[-1].answered == "text"  # the model gave up by itself
    texts = [t.results[0]["text"] for t in turns[1:]]
    assert all(_exit_code_two(t.split("\n\n")[0]) for t in texts[:3])
    assert all(t.startswith(DENIED + "loopwatch blocked this call") and LOOP_COMMAND in t for t in texts[3:]), texts
    assert turns[3].saw(NUDGE)
    assert run.code == 0 and run.result is not None and run.result["exitCode"] == 0 and not run.of_type("abort")
    assert len(run.started()) == 12
    assert "SIGINT" not in machine.hook_log()
    (row,) = machine.status().values()
    assert row["profile"] == "attended"
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0 and not row["stopped"]
    assert [d["event"] for d in row["decisions"] if d["action"] == "block"] == ["PreToolUse"] * 9
    # The session file: 3 calls ran; the 9 refusals are the attempts they were.
    (record,) = _scan(machine, str(machine.sessions()[0]))
    assert record["actions"] == 3


@BOTH
def test_a_healthy_session_runs_untouched(tmp_path, version):
    """Different commands, then a failing test, a read, an edit, the test again: it passes.
    Nothing is refused, nobody is nudged, the run ends by itself."""
    with ScriptedChat({"healthy": healthy_script(tmp_path / "work")}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.run("SCENARIO:healthy fix the test")
        turns = server.of("healthy")
    _clean(run)
    assert len(turns) == 14 and turns[-1].answered == "text"
    assert not any(t.saw("loopwatch") for t in turns)
    assert (
        "add is wrong" in turns[10].results[0]["text"] and "completed with exit code 1>" in turns[10].results[0]["text"]
    )
    assert turns[13].results[0]["text"].startswith("ok\n")  # the test passes
    assert (tmp_path / "work" / "test_calc.py").read_text().count("return a + b") == 1
    assert run.code == 0 and run.result["exitCode"] == 0
    assert "SIGINT" not in machine.hook_log()
    (row,) = machine.status().values()
    assert row["profile"] == "unattended"
    assert row["actions"] == 13 and (row["nudges"], row["blocks"], row["stops"]) == (0, 0, 0) and not row["decisions"]
    (record,) = _scan(machine, str(machine.sessions()[0]))
    assert record["actions"] == 13 and record["verdict"] is None and not record["interventions"]


@BOTH
def test_a_reworded_description_is_the_same_call(tmp_path, version):
    """`bash`'s `description` is written for the person: worded anew at every call of the
    same failing command, the run still ends before the fourth call runs."""
    from loopwatch._core.identity import HOSTS

    with ScriptedChat({"loop": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
        offered = server.tools
    _clean(run)
    started = run.started()
    assert len({s["arguments"]["description"] for s in started}) == len(started) == 4
    assert [t.answered for t in turns] == ["tool:bash"] * 4
    assert len(run.completed()) == 3 and run.of_type("abort")
    (row,) = machine.status().values()
    assert row["actions"] == 3 and row["stops"] == 1
    # Every field the defaults ignore is one this release offers the model.
    for tool, fields in HOSTS["copilot"].items():
        assert tool in offered and set(fields) <= set(offered[tool].get("properties", {})), (version, tool)


def test_an_interactive_session_is_attended_and_never_ended(tmp_path):
    """A person at Copilot's terminal UI: no profile forced, found from what the hook sees;
    every repeat after the nudge is refused, nothing is signalled, the model gives up."""
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        machine.interactive(
            "SCENARIO:loop do the task", done=lambda: any(t.answered == "text" for t in server.of("loop"))
        )
        turns = server.of("loop")
    assert len(turns) == 13 and turns[-1].answered == "text"
    texts = [t.results[0]["text"] for t in turns[1:]]
    assert all(t.startswith(DENIED + "loopwatch blocked this call") for t in texts[3:]), texts
    assert "SIGINT" not in machine.hook_log()
    (row,) = machine.status().values()
    assert (row["profile"], row["profile_reason"]) == ("attended", "COPILOT_LOADER_PID: interactive")
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0


def test_a_looping_subagent_ends_the_whole_run(tmp_path):
    """The sub-agent's calls are counted apart from its parent's (an agent of the parent's
    session), and its stop ends the run: no parent turn after it."""
    with ScriptedChat({"subagent": subagent_script(), "loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        run = machine.run("SCENARIO:subagent delegate the listing")
        main, sub = server.of("subagent"), server.of("loop")
    _clean(run)
    assert [t.answered for t in main] == ["tool:task"]  # the parent was never asked again
    assert [t.answered for t in sub] == ["tool:bash"] * 4
    # Ended by loopwatch's SIGINT; Copilot then prints `abort`, or (seen on a busy machine,
    # the signal landing as the sub-agent's turn closed) its `result` line: either way, exit 0.
    assert run.code == 0 and (run.of_type("abort") or run.result is not None)
    assert "sending SIGINT to copilot pid" in machine.hook_log(until="sending SIGINT")
    rows = machine.status()
    ((session, child),) = [key for key in rows if key[1]]
    assert rows[(session, child)]["actions"] == 3 and rows[(session, child)]["stops"] == 1
    assert (session, "") in rows and rows[(session, "")]["stops"] == 0
    assert machine.sessions()[0].parent.name == session


def test_a_stop_decided_after_a_call_ran_ends_the_run_there(tmp_path):
    """The same error from a different command each time: nothing can be refused in
    advance; the stop comes with a result (postToolUse), and the run ends right there,
    no model request after it. (Corroborated stops: the user opted in.)"""
    with ScriptedChat({"sameerror": same_error_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        mine = machine.home / ".config" / "loopwatch" / "loopwatch.toml"
        mine.parent.mkdir(parents=True)
        mine.write_text("[evidence]\nconfirm = 1\n")
        run = machine.run("SCENARIO:sameerror list the folders")
        turns = server.of("sameerror")
    _clean(run)
    started = run.started()
    assert 4 <= len(started) < 12
    assert len(turns) == len(started)  # the stopping call was the last thing the model asked for
    assert run.interrupted()
    # Every call ran (none refused). The last one's result was being checked when the run
    # ended: whether Copilot printed its completion before the signal landed is a race of
    # its own (both seen), so only the calls before it must have completed.
    completed = run.completed()
    assert all(call["toolCallId"] in completed for call in started[:-1])
    assert set(completed) <= {call["toolCallId"] for call in started}
    assert not any(str(done.get("result", "")).find("loopwatch refused") >= 0 for done in completed.values())
    (row,) = machine.status().values()
    assert row["actions"] == len(started) and row["stops"] == 1 and row["blocks"] == 0
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PostToolUse", "stop")


@BOTH
def test_the_agents_write_of_the_switch_off_is_refused(tmp_path, version):
    """The agent writes `{"disableAllHooks": true}` into the project's Copilot settings:
    refused before it runs (the file never exists), and the loop after it still ends."""
    with ScriptedChat({"off": switch_off_script(12)}) as server:
        machine = _machine(tmp_path, server, version)
        machine.trust()
        run = machine.run("SCENARIO:off do the task")
        turns = server.of("off")
    _clean(run)
    assert not (machine.work / ".github").exists()
    assert turns[1].results[0]["text"].startswith(DENIED + "loopwatch refused this call")
    assert [t.answered for t in turns] == ["tool:bash"] * 5  # the write, then the loop's four
    assert run.interrupted()


def test_a_project_switch_off_is_told_by_doctor(tmp_path):
    """A trusted project's `.github/copilot/settings.json` says `disableAllHooks`: Copilot
    runs no user hook (the loop runs all 12 calls, loopwatch never hears of them), and
    `loopwatch doctor copilot` names that file as the problem."""
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        machine.trust()
        settings = machine.work / ".github" / "copilot" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text('{"disableAllHooks": true}')
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
        doctor = machine.loopwatch("doctor", "copilot", check=False)
    _clean(run)
    assert len(turns) == 13 and len(run.completed()) == 12  # the guard was off
    assert not (machine.state_dir / "state.db").exists()
    assert doctor.returncode == 1
    assert f'copilot: problem: {settings}: "disableAllHooks": true turns your hooks off' in doctor.stdout, doctor.stdout
    assert "--system" in doctor.stdout


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="writes /etc/github-copilot: root only")
def test_a_system_install_holds_against_the_project_switch_off(tmp_path):
    """`loopwatch install copilot --system` writes Copilot's policy file: it runs whatever a
    trusted project says (`disableAllHooks`), and the loop still ends before its fourth call.
    Nothing moves that folder, so the test holds every other Copilot run off while the
    file exists, and puts /etc/github-copilot back exactly as it was (`real_clis.etc_written`)."""
    policy = Path("/etc/github-copilot/policy.d")
    with real_clis.etc_written("copilot", policy.parent):
        assert not (policy / "loopwatch.json").exists()
        with ScriptedChat({"loop": loop_script(12)}) as server:
            machine = CopilotRun(tmp_path, server, CURRENT)
            said = machine.install("--system")
            machine.trust()
            settings = machine.work / ".github" / "copilot" / "settings.json"
            settings.parent.mkdir(parents=True)
            settings.write_text('{"disableAllHooks": true}')
            mode = (policy / "loopwatch.json").stat()
            doctor = machine.loopwatch("doctor", "copilot", check=False)
            run = machine.run("SCENARIO:loop do the task", locked=False)  # this test holds the lock
            turns = server.of("loop")
        removed = machine.loopwatch("uninstall", "copilot", "--system")
    assert "policy.d/loopwatch.json" in said
    assert mode.st_uid == 0 and oct(mode.st_mode & 0o777) == "0o644"
    assert "hook installed for 5 events in /etc/github-copilot/policy.d/loopwatch.json" in doctor.stdout
    assert "hook runs: a dry-run call answered" in doctor.stdout
    _clean(run)
    assert [t.answered for t in turns] == ["tool:bash"] * 4
    assert len(run.completed()) == 3 and run.of_type("abort")
    assert "removed loopwatch from /etc/github-copilot/policy.d/loopwatch.json" in removed.stdout


def test_project_environment_files_do_not_reach_the_hook(tmp_path):
    """A trusted project ships `.env`, `.github/.env` and a Claude-style settings "env"
    saying `LOOPWATCH_MODE=off` and `LOOPWATCH_PROFILE=attended`: the loop still ends
    before its fourth call."""
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        machine.trust()
        lines = "LOOPWATCH_MODE=off\nLOOPWATCH_PROFILE=attended\n"
        (machine.work / ".env").write_text(lines)
        (machine.work / ".github").mkdir()
        (machine.work / ".github" / ".env").write_text(lines)
        (machine.work / ".claude").mkdir()
        env = {"LOOPWATCH_MODE": "off", "LOOPWATCH_PROFILE": "attended"}
        (machine.work / ".claude" / "settings.json").write_text(json.dumps({"env": env}))
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
    _clean(run)
    assert [t.answered for t in turns] == ["tool:bash"] * 4
    (row,) = machine.status().values()
    assert row["profile"] == "unattended" and row["stops"] == 1


def test_install_uninstall_and_doctor_on_a_fresh_home(tmp_path):
    with ScriptedChat({}) as server:
        machine = CopilotRun(tmp_path, server, CURRENT)
        before = machine.loopwatch("doctor", "copilot", check=False)
        said = machine.install()
        again = machine.install()
        hooks_file = machine.copilot_home / "hooks" / "loopwatch.json"
        written = json.loads(hooks_file.read_text())
        mode = hooks_file.stat().st_mode & 0o777
        after = machine.loopwatch("doctor", "copilot", check=False)
        project = machine.install("--project")
        project_file = machine.work / ".github" / "hooks" / "loopwatch.json"
        shared = json.loads(project_file.read_text())
        machine.loopwatch("uninstall", "copilot", "--project")
        removed = machine.loopwatch("uninstall", "copilot")
        gone = machine.loopwatch("doctor", "copilot", check=False)
    assert before.returncode == 1 and "the hook is not installed: run `loopwatch install copilot`" in before.stdout
    assert f"installed into {hooks_file}" in said and "already installed" in again
    assert written["version"] == 1 and list(written["hooks"]) == [
        "preToolUse",
        "postToolUse",
        "postToolUseFailure",
        "userPromptSubmitted",
        "agentStop",
    ]
    for event, entries in written["hooks"].items():
        assert entries == [
            {
                "type": "command",
                "bash": f"{real_clis.hook_command('copilot', machine.env())} {event} || true",
                "timeoutSec": 30,
            }
        ]
    assert mode == 0o600
    assert after.returncode == 0, after.stdout
    assert "copilot: ok: hook installed for 5 events" in after.stdout
    assert "copilot: ok: hook runs: a dry-run call answered" in after.stdout
    assert f"copilot: info: GitHub Copilot CLI {CURRENT}" in after.stdout
    assert "only in folders you trust" in project
    assert shared["hooks"]["preToolUse"][0]["bash"] == "loopwatch hook copilot preToolUse || true"
    assert json.loads(project_file.read_text())["hooks"] == {}
    assert "removed loopwatch from" in removed.stdout and json.loads(hooks_file.read_text())["hooks"] == {}
    assert gone.returncode == 1 and "the hook is not installed" in gone.stdout
