"""The real Qwen Code CLI (npm `@qwen-code/qwen-code`, the pinned and the current release)
with loopwatch installed by `loopwatch install qwen-code`, driven offline by a scripted
model (`scripted_chat`) on 127.0.0.1.

Each test is a user's machine: a fresh HOME, the install command, then `qwen --yolo -o
stream-json PROMPT`. What the model was sent (each request), what Qwen printed, what
its session files say when `loopwatch scan` reads them, and what `loopwatch status`
says are checked against the README's promises. Skipped only where node/npm are
missing (`real_qwen_support`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from real_qwen_support import (
    CURRENT,
    LOOP_COMMAND,
    PINNED,
    QwenRun,
    healthy_script,
    loop_script,
    qwen_binary,
    reworded_script,
    subagent_script,
    switch_off_script,
)
from scripted_chat import ScriptedChat

from loopwatch._core.identity import HOSTS
from loopwatch._core.messages import Blocked, Guarded, Stopped, loopwatch_said

pytestmark = pytest.mark.slow

BOTH = [PINNED, CURRENT]


def _machine(tmp_path, server, version, profile=None, *install_args: str) -> QwenRun:
    machine = QwenRun(tmp_path, server, version, profile=profile)
    machine.install(*install_args)
    return machine


def _texts(run, calls):
    results = run.tool_results()
    return [results[c["id"]]["content"] for c in calls]


def _mentions_loopwatch(request) -> bool:
    return request.saw("loopwatch")


def _stopped_at_the_fourth(machine: QwenRun, run, turns) -> None:
    """What every stopped run shows: four requests of the loop, three calls ran and
    failed, the third nudged, the fourth refused as loopwatch's stop, then no request."""
    assert [t.answered for t in turns] == ["tool:run_shell_command"] * 4, [t.answered for t in turns]
    assert all(
        not r["text"].startswith("loopwatch") and "Exit Code: 2" in r["text"] for t in turns[1:4] for r in t.results
    )
    assert not any(_mentions_loopwatch(t) for t in turns[:3])
    assert "loopwatch: you appear to be going in circles" in turns[3].results[0]["text"]
    calls = run.tool_uses()
    assert len(calls) == 4 and len({c["input"]["command"] for c in calls}) == 1
    refused = run.tool_results()[calls[3]["id"]]
    assert refused["is_error"] and loopwatch_said(refused["content"]) is Stopped
    assert run.code == 0 and run.result["result"] == "" and run.leftover == []
    assert [d["tool_use_id"] for d in run.result["permission_denials"]] == [calls[3]["id"]]
    # The person is told: Qwen shows nothing of a hook's answer headless.
    assert "loopwatch stopped the run: " in run.stderr and "(no further model request)" in run.stderr
    assert "ended the run" in machine.hook_log()


@pytest.mark.parametrize("version", BOTH)
def test_unattended_loop_ends_right_after_the_fourth_call(tmp_path, version):
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, version)  # profile detected: `-o stream-json`
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
        assert len(server.requests) == len(turns)  # no side request, nothing after the stop
    _stopped_at_the_fourth(machine, run, turns)
    ((_, row),) = machine.status().items()
    assert row["profile"] == "unattended" and row["profile_reason"] == "qwen -o stream-json"
    assert row["actions"] == 3 and row["stops"] == 1 and row["stopped"]
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PreToolUse", "stop")
    # Its session file and its stream-json output, replayed, say the same.
    (session,) = machine.sessions()
    for path in (session, tmp_path / "stream.jsonl"):
        if path.name == "stream.jsonl":
            path.write_text(run.stdout)
        row = machine.scan(path)
        assert row["actions"] == 3 and row["verdict"]["action"] == "stop" and row["verdict"]["at_action"] == 4, row
    # `scan ~/.qwen` as the run left it: its one chat read, the rest of Qwen's state left out by name.
    done = machine.loopwatch("scan", "--json", str(machine.home / ".qwen"), check=False)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(r["path"], r["actions"], r["error"]) for r in rows] == [(str(session), 3, None)], done.stderr
    assert "of Qwen Code's state" in done.stderr and "Gemini CLI" not in done.stderr, done.stderr


@pytest.mark.parametrize("version", BOTH)
def test_a_reworded_description_is_the_same_call(tmp_path, version):
    """Qwen's own detector counts identical inputs: the same failing command, its
    description and timeout reworded each time, ran 12 times of 12 without loopwatch.
    With it: stopped right after the fourth, as when nothing is reworded."""
    with ScriptedChat({"reworded": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.run("SCENARIO:reworded do the task")
        turns = server.of("reworded")
        offered = server.tools
    calls = run.tool_uses()
    said = (
        f"turns answered {[t.answered for t in turns]}; hook log:\n{machine.hook_log()}\nstderr:\n{run.stderr[-3000:]}"
    )
    assert len({c["input"]["description"] for c in calls}) == len(calls) == 4, said
    _stopped_at_the_fourth(machine, run, turns)
    # Every field the defaults ignore is one this release offers the model, for each of
    # its tools the defaults name (what the real CLI sends, not a reading of its docs).
    for tool, fields in HOSTS["qwen-code"].items():
        if tool in offered:
            assert set(fields) <= set(offered[tool].get("properties", {})), (version, tool, fields)
    assert {"run_shell_command", "agent"} <= set(offered)


@pytest.mark.parametrize("version", BOTH)
def test_attended_refuses_every_repeat_and_never_ends_the_run(tmp_path, version):
    with ScriptedChat({"reworded": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, version, "attended")
        run = machine.run("SCENARIO:reworded do the task")
        turns = server.of("reworded")
    assert len(turns) == 13 and turns[-1].answered == "text"  # the model gave up by itself
    texts = _texts(run, run.tool_uses())
    assert len(texts) == 12 and all("Exit Code: 2" in t for t in texts[:3])
    assert all(loopwatch_said(t) is Blocked and LOOP_COMMAND in t for t in texts[3:]), texts
    assert run.code == 0 and run.result["result"] == "Done after 12 tool calls." and run.leftover == []
    assert "loopwatch stopped" not in run.stderr
    ((_, row),) = machine.status().items()
    assert row["profile"] == "attended" and row["profile_reason"] == "LOOPWATCH_PROFILE"
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0 and not row["stopped"]


@pytest.mark.parametrize("version", BOTH)
def test_a_healthy_session_runs_untouched(tmp_path, version):
    """Different commands, then a failing test, a read, an edit, the test again: it
    passes. No nudge, no refusal, no stop, exit 0; the session file says 13 calls."""
    with ScriptedChat({"healthy": healthy_script(tmp_path / "work")}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.run("SCENARIO:healthy fix the test")
        turns = server.of("healthy")
    assert len(turns) == 14 and turns[-1].answered == "text"
    assert not any(_mentions_loopwatch(t) for t in turns)
    texts = _texts(run, run.tool_uses())
    assert len(texts) == 13 and "Exit Code: 1" in texts[9] and texts[12] == "ok"
    assert run.code == 0 and run.result["result"] == "Done: the test passes." and run.leftover == []
    ((_, row),) = machine.status().items()
    assert row["actions"] == 13 and row["nudges"] == row["blocks"] == row["stops"] == 0, row
    (session,) = machine.sessions()
    row = machine.scan(session)
    assert row["actions"] == 13 and row["verdict"] is None and row["interventions"] == []


def test_a_sub_agents_loop_ends_the_session_by_sigint_and_the_person_is_told(tmp_path):
    """No UserPromptSubmit fires inside a sub-agent: its stop interrupts the session
    process (never the launcher above it), as Ctrl-C would."""
    with ScriptedChat({"parent": subagent_script("reworded"), "reworded": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        run = machine.run("SCENARIO:parent delegate the task")
        inside = server.of("reworded")
        last = max(r.at for r in server.requests)
    # The 4th call is refused and the session interrupted. The SIGINT lands after the hook's
    # answer, so on a busy machine Qwen may already have sent the refusal to the model: at
    # most one more request, never a call that runs (3 counted below).
    assert [t.answered for t in inside] in (["tool:run_shell_command"] * 4, ["tool:run_shell_command"] * 5)
    assert run.code == 130 and "Operation cancelled." in run.stderr and run.leftover == []
    assert "loopwatch stopped the run: " in run.stderr and "SIGINT" in run.stderr
    log = machine.hook_log()
    assert "SIGINT to the Qwen Code session" in log and "ended the run" in log
    assert last == inside[-1].at  # none after the sub-agent's last: not its parent's either
    rows = machine.status()
    (agent,) = [row for (_, a), row in rows.items() if a]
    assert agent["agent"].startswith("general-purpose-") and agent["stops"] == 1 and agent["actions"] == 3
    # The sub-agent's file: the three calls that ran, and the fourth asked for. Its refusal is
    # there only when Qwen wrote it before the SIGINT took effect: a race the hook cannot wait
    # out without letting the next model request through. Written, a scan replays the stop
    # at the fourth; else the fourth is a call whose result never came.
    (sub,) = machine.subagent_files()
    lines = [json.loads(line) for line in sub.read_text().splitlines()]
    asked = [p.get("functionCall") for o in lines if o.get("type") == "assistant" for p in o["message"]["parts"]]
    asked = [c for c in asked if c]
    answered = {
        p["functionResponse"]["id"]: json.dumps(p["functionResponse"]["response"])
        for o in lines
        if o.get("type") == "tool_result"
        for p in o["message"]["parts"]
        if "functionResponse" in p
    }
    assert [c["args"]["command"] for c in asked] in ([LOOP_COMMAND] * 4, [LOOP_COMMAND] * 5)
    assert len(asked) == len(inside)
    assert all("Exit Code: 2" in answered[c["id"]] for c in asked[:3])
    row = machine.scan(sub)
    if asked[3]["id"] in answered:
        assert "loopwatch stopped the run" in answered[asked[3]["id"]]
        # A 5th call asked before the SIGINT landed: counted as an attempt, or not, as Qwen
        # recorded its cancellation; the stop is at the 4th either way.
        assert row["actions"] == 3 or (len(asked) == 5 and row["actions"] == 4), (row["actions"], len(asked))
        assert row["verdict"]["action"] == "stop" and row["verdict"]["at_action"] == 4
    else:
        assert row["actions"] == 4 and row["error"] is None


def test_a_project_install_guards_the_run_and_uninstall_takes_it_away(tmp_path):
    """`install --project` writes `loopwatch hook qwen-code` into the project's settings
    (the `loopwatch` on the person's PATH runs it): the loop is stopped as with the user's
    install. After `uninstall --project` the same loop meets only Qwen's own detector,
    which lets the fifth identical request be made."""
    with ScriptedChat({"loop": loop_script(12), "again": loop_script(12)}) as server:
        machine = QwenRun(tmp_path, server, CURRENT)
        machine.extra_env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), machine.env()["PATH"]])
        machine.install("--project")
        settings = json.loads((machine.work / ".qwen" / "settings.json").read_text())
        assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "loopwatch hook qwen-code"
        assert "hooks" not in json.loads(machine.user_settings.read_text())
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
        _stopped_at_the_fourth(machine, run, turns)
        machine.loopwatch("uninstall", "qwen-code", "--project")
        assert not any(json.loads((machine.work / ".qwen" / "settings.json").read_text()).get("hooks", {}).values())
        again = machine.run("SCENARIO:again do the task")
        turns = server.of("again")
    assert len(turns) == 5 and again.code == 1 and again.result["subtype"] == "error_during_execution"
    assert not any(_mentions_loopwatch(t) for t in turns) and again.leftover == []


# -- a project that switches the guard off --------------------------------------------------------


@pytest.mark.parametrize("version", BOTH)
def test_a_projects_switch_off_holds_against_hooks_at_the_system_level(tmp_path, version):
    """`install --system` (here: the run's own system settings file) writes the hooks
    with `"disableAllHooks": false`, which Qwen merges last: a project's `true` loses."""
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = QwenRun(tmp_path, server, version)
        said = machine.install("--system")
        assert json.loads(machine.system.read_text())["disableAllHooks"] is False and "QWEN_CODE_SIMPLE=0" in said
        machine.project_file(".qwen/settings.json", '{"disableAllHooks": true}\n')
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
    _stopped_at_the_fourth(machine, run, turns)


def test_without_the_system_level_the_switch_off_works_and_doctor_names_it(tmp_path):
    """The same project file against a user-level install: Qwen runs no hook (its own
    detector cuts the fifth identical request), and `doctor` says which file did it."""
    with ScriptedChat({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, CURRENT)
        off = machine.project_file(".qwen/settings.json", '{"disableAllHooks": true}\n')
        run = machine.run("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert len(turns) == 5 and run.code == 1 and run.result["subtype"] == "error_during_execution"
    assert run.leftover == []
    assert not any(_mentions_loopwatch(t) for t in turns) and machine.status() == {}
    doctor = machine.loopwatch("doctor", "qwen-code", "--json", check=False)
    problems = [json.loads(line)["text"] for line in doctor.stdout.splitlines() if '"problem"' in line]
    assert doctor.returncode == 1 and any(p.startswith(f'{off}: "disableAllHooks": true') for p in problems)


@pytest.mark.parametrize("version", BOTH)
def test_the_agents_own_switch_off_is_refused_and_a_project_env_cannot_loosen(tmp_path, version):
    """The agent writes `.qwen/settings.json` with `disableAllHooks`: refused before it
    runs. The project's `.qwen/.env` says LOOPWATCH_MODE=off and LOOPWATCH_PROFILE=
    attended: Qwen puts both in the hook's environment, and the hook believes neither."""
    with ScriptedChat({"off": switch_off_script(tmp_path / "work", 12)}) as server:
        machine = _machine(tmp_path, server, version)
        machine.project_file(".qwen/.env", "LOOPWATCH_MODE=off\nLOOPWATCH_PROFILE=attended\n")
        run = machine.run("SCENARIO:off do the task")
        turns = server.of("off")
    calls = run.tool_uses()
    refused = run.tool_results()[calls[0]["id"]]
    assert calls[0]["name"] == "write_file" and refused["is_error"]
    assert loopwatch_said(refused["content"]) is Blocked and refused["content"].startswith(Guarded.head)
    assert not (tmp_path / "work" / ".qwen" / "settings.json").exists()
    assert [t.answered for t in turns] == ["tool:write_file"] + ["tool:run_shell_command"] * 4
    assert loopwatch_said(run.tool_results()[calls[4]["id"]]["content"]) is Stopped and run.code == 0
    assert run.leftover == []
    # Named by the file: its values are in the session's environment, not the launcher's the person started
    env_file = tmp_path / "work" / ".qwen" / ".env"
    for name in ("LOOPWATCH_MODE", "LOOPWATCH_PROFILE"):
        assert f"{name} set by {env_file}: not trusted" in machine.hook_log()


def test_version_and_doctor_on_a_fresh_home(tmp_path):
    for version in BOTH:
        out = subprocess.run(
            [qwen_binary(version), "--version"], check=False, capture_output=True, text=True, timeout=120
        ).stdout
        assert out.split()[0] == version
    with ScriptedChat({}) as server:
        machine = QwenRun(tmp_path, server, CURRENT)
        before = machine.loopwatch("doctor", "qwen-code", check=False)
        assert (
            before.returncode == 1 and "the hook is not installed: run `loopwatch install qwen-code`" in before.stdout
        )
        machine.install()
        after = machine.loopwatch("doctor", "qwen-code", check=False)
    assert after.returncode == 0, after.stdout
    assert "hook runs: a dry-run call answered" in after.stdout and f"Qwen Code {CURRENT}" in after.stdout
