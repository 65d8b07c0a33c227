"""The real Gemini CLI (npm `@google/gemini-cli`, the pinned and the current release) with
loopwatch installed by `loopwatch install gemini-cli`, driven offline by a scripted
Gemini API.

Each test is a user's machine: a fresh HOME that trusts its work folder, the install
command, then `gemini -p ... -o stream-json --approval-mode yolo` talking to the scripted
model on 127.0.0.1 (`scripted_gemini`). What the model was sent (each request), what
Gemini CLI printed, the session files it wrote (read back by `loopwatch scan`) and what
`loopwatch status` says are checked against the README's promises; no process of a run
may outlive it.

`LOOPWATCH_GEMINI_FIXTURES=DIR` also writes the session files and outputs of these runs
to DIR, paths replaced by a placeholder (how tests/fixtures/gemini-cli/ was made).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import real_clis
from real_gemini_support import (
    CURRENT,
    LOOP_COMMAND,
    PINNED,
    SHELL,
    VERSIONS,
    GeminiRun,
    gemini_binary,
    healthy_script,
    loop_script,
    reworded_script,
    settings_write_script,
    subagent_script,
)
from scripted_gemini import ScriptedGemini, Step

pytestmark = pytest.mark.slow

STOPPED = "Agent execution stopped by hook: loopwatch stopped the run"
BLOCKED = "Tool execution blocked: loopwatch blocked this call"
NO_OWN_LOOP_CHECK = {"model": {"disableLoopDetection": True}}


def _output(result: dict) -> str:
    response = result.get("response") or {}
    return str(response.get("output", response.get("error", "")))


def _mentions_loopwatch(request) -> bool:
    return any("loopwatch" in _output(r) for r in request.results) or any("loopwatch" in t for t in request.texts)


def _scan(machine: GeminiRun, path: Path) -> dict:
    done = machine.loopwatch("scan", "--json", str(path), check=False)
    assert done.returncode in (0, 1), done.stderr
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert record["format"] == "gemini-cli" and not record.get("error"), record
    return record


def _stream_file(machine: GeminiRun, run, name: str) -> Path:
    path = machine.root / f"{name}.stream-json.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in run.lines))
    return path


def _keep(machine: GeminiRun, version: str, name: str, files: dict[str, Path]) -> None:
    """Write this run's files as fixtures (`LOOPWATCH_GEMINI_FIXTURES`), the run's own
    folder replaced by `/fixture`."""
    target = os.environ.get("LOOPWATCH_GEMINI_FIXTURES")
    if not target:
        return
    Path(target).mkdir(parents=True, exist_ok=True)
    for label, path in files.items():
        text = path.read_text().replace(str(machine.root), "/fixture")
        text = re.sub(r"Process Group PGID: \d+", "Process Group PGID: 4242", text)
        (Path(target) / f"{version}-{name}.{label}").write_text(text)


def _machine(tmp_path, server, version, **kwargs) -> GeminiRun:
    return GeminiRun(tmp_path, server, gemini_binary(version), **kwargs)


# -- install --------------------------------------------------------------------------------


def test_the_installed_hooks_are_these(tmp_path):
    with ScriptedGemini({}) as server:
        machine = _machine(tmp_path, server, PINNED)
        hooks = json.loads(machine.settings_path.read_text())["hooks"]
    assert list(hooks) == ["BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent"]
    for event, groups in hooks.items():
        (group,) = groups
        assert group["hooks"] == [
            {
                "name": "loopwatch",
                "type": "command",
                "command": real_clis.hook_command("gemini-cli", machine.env()),
                "timeout": 30000,  # milliseconds: Gemini CLI's unit
            }
        ]
        assert group.get("matcher") == ("*" if event in ("BeforeTool", "AfterTool") else None)


# -- the loop, unattended ----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_an_unattended_loop_ends_at_the_fourth_call(tmp_path, version):
    """12 identical failing calls scripted: three run, the nudge reaches the model with
    the third result, the fourth is refused and the run ends there: no model request
    after it, exit 0 (before Gemini CLI's own detector, which cuts at the 5th)."""
    with ScriptedGemini({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.gemini("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert run.code == 0, run.stderr[-2000:]
    assert [t.answered for t in turns] == [f"tool:{SHELL}"] * 4
    assert len(server.requests) == 4  # nothing else after the stop either
    # Calls 1-3 ran and failed (exit code 2 in the text only); the nudge came with the third.
    assert all("Exit Code: 2" in _output(r) for t in turns[1:4] for r in t.results)
    assert not any(_mentions_loopwatch(t) for t in turns[:3])
    (third,) = turns[3].results
    assert "<hook_context>" in _output(third) and "loopwatch: you appear to be going in circles" in _output(third)
    uses, results = run.of_type("tool_use"), run.results()
    assert len(uses) == 4
    last = results[uses[3]["tool_id"]]
    assert last["error"]["type"] == "stop_execution" and last["output"].startswith(STOPPED)
    row = machine.status()[""]
    assert (row["profile"], row["profile_reason"]) == ("unattended", "gemini -p")
    assert row["actions"] == 3 and row["stops"] == 1 and row["stopped"]
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PreToolUse", "stop")
    # Its session file and its stream-json read back: three calls ran, the loop is found.
    (session,) = machine.sessions()
    scanned = _scan(machine, session)
    assert scanned["actions"] == 3 and scanned["verdict"]["action"] == "stop", scanned
    stream = _stream_file(machine, run, "loop")
    assert _scan(machine, stream)["actions"] == 3
    _keep(machine, version, "loop", {"session.jsonl": session, "stream-json.jsonl": stream})


@pytest.mark.parametrize("version", VERSIONS)
def test_a_reworded_description_is_the_same_call(tmp_path, version):
    """The model words `description` (for the person) anew at every call of the same
    failing command: Gemini CLI's own detector lets all 12 through; loopwatch stops the
    run at the fourth as with a fixed description. Every field the defaults ignore is
    one this release offers the model."""
    from loopwatch._core.identity import HOSTS

    with ScriptedGemini({"reworded": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.gemini("SCENARIO:reworded do the task")
        turns = server.of("reworded")
        offered = server.tools
    assert run.code == 0
    uses = run.of_type("tool_use")
    assert len({u["parameters"]["description"] for u in uses}) == len(uses) == 4
    assert [t.answered for t in turns] == [f"tool:{SHELL}"] * 4
    assert run.results()[uses[3]["tool_id"]]["output"].startswith(STOPPED)
    row = machine.status()[""]
    assert row["actions"] == 3 and row["stops"] == 1
    for tool, fields in HOSTS["gemini-cli"].items():
        if tool in offered:
            assert set(fields) <= set(offered[tool].get("properties", {})), (version, tool, fields)
    assert {SHELL, "replace", "write_file"} <= set(offered)


# -- attended ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_attended_refuses_every_repeat_and_never_ends_the_run(tmp_path, version):
    """Gemini CLI's own detector off (it would end the run at the 5th identical request),
    so what refuses is loopwatch alone: three calls run, the other nine are refused
    before they run, and the model ends the run by itself."""
    with ScriptedGemini({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, version, profile="attended", settings=NO_OWN_LOOP_CHECK)
        run = machine.gemini("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert run.code == 0
    assert len(turns) == 13 and turns[-1].answered == "text"
    uses, results = run.of_type("tool_use"), run.results()
    outputs = [results[u["tool_id"]]["output"] for u in uses]
    assert len(outputs) == 12
    assert all(not o.startswith(("Tool execution blocked", "Agent execution stopped")) for o in outputs[:3])
    assert all(o.startswith(BLOCKED) and LOOP_COMMAND in o for o in outputs[3:]), outputs
    assert not any(r["error"]["type"] == "stop_execution" for r in results.values() if r.get("error"))
    row = machine.status()[""]
    assert row["profile"] == "attended"
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0 and not row["stopped"]


def test_a_prompt_piped_in_is_unattended(tmp_path):
    """`echo PROMPT | gemini`: no `-p`, but no terminal either: Gemini CLI runs it
    headless, and so the hook stops the loop."""
    with ScriptedGemini({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, PINNED)
        argv = [
            "sh",
            "-c",
            f'echo "SCENARIO:loop do the task" | exec {machine.binary} -o stream-json --approval-mode yolo -m gemini-2.5-flash',
        ]
        run = machine.gemini("", argv=argv)
        turns = server.of("loop")
    assert run.code == 0 and len(turns) == 4
    row = machine.status()[""]
    assert (row["profile"], row["profile_reason"]) == ("unattended", "gemini without a terminal")
    assert row["stops"] == 1


# -- healthy work -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_healthy_session_runs_untouched(tmp_path, version):
    """Eight different commands, then a failing test written, run, read, fixed and run
    again: all 13 calls run, nothing is refused, the model is told nothing."""
    with ScriptedGemini({"healthy": healthy_script(tmp_path / "work")}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.gemini("SCENARIO:healthy fix the test")
        turns = server.of("healthy")
    assert run.code == 0
    assert len(turns) == 14 and turns[-1].answered == "text"
    assert not any(_mentions_loopwatch(t) for t in turns)
    assert "loopwatch" not in run.stderr
    assert "add is wrong" in _output(turns[10].results[0])  # the first test run failed
    assert _output(turns[13].results[0]).startswith("<untrusted_context>\nOutput: ok")  # the second passed
    assert (tmp_path / "work" / "test_calc.py").read_text().count("return a + b") == 1
    row = machine.status()[""]
    assert row["actions"] == 13 and (row["nudges"], row["blocks"], row["stops"]) == (0, 0, 0)
    assert not row["decisions"]
    (session,) = machine.sessions()
    scanned = _scan(machine, session)
    assert scanned["actions"] == 13 and scanned["verdict"] is None, scanned
    stream = _stream_file(machine, run, "healthy")
    assert _scan(machine, stream)["actions"] == 13
    _keep(machine, version, "healthy", {"session.jsonl": session, "stream-json.jsonl": stream})


# -- sub-agents -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_looping_subagent_is_stopped_and_ends_the_run(tmp_path, version):
    """The sub-agent loops: it is watched apart from its parent, stopped at its fourth
    call (a stop inside a sub-agent does not end the run: every later call of it is
    refused but `complete_task`), and the parent's run ends when the sub-agent hands
    back: no main-agent request after `invoke_agent`."""
    with ScriptedGemini({"subagent": subagent_script("loop"), "loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, version)
        run = machine.gemini("SCENARIO:subagent delegate the listing")
        main, sub = server.of("subagent"), server.of("loop")
    assert run.code == 0
    assert [t.answered for t in main] == ["tool:invoke_agent"]
    assert all(t.subagent for t in sub) and sub[-1].answered == "tool:complete_task"
    ran = [r for t in sub for r in t.results if "Exit Code: 2" in _output(r)]
    assert len(ran) == 3
    refused = [r for t in sub for r in t.results if _output(r).startswith(STOPPED)]
    assert len(refused) == len(sub) - 1 - 3
    rows = machine.status()
    assert set(rows) == {"", "sub-agent-1"}
    assert rows["sub-agent-1"]["actions"] == 3 and rows["sub-agent-1"]["stops"] == 1
    assert rows[""]["actions"] == 1 and rows[""]["stopped"].startswith("a sub-agent was stopped")
    assert run.results()[run.of_type("tool_use")[0]["tool_id"]]["output"].startswith(
        "Agent execution stopped by hook: loopwatch stopped the run after this call"
    )
    main_file, child_file = machine.sessions()
    assert _scan(machine, main_file)["actions"] == 1  # invoke_agent ran; the stop came after it
    assert _scan(machine, child_file)["actions"] == 3
    _keep(machine, version, "subagent", {"session.jsonl": main_file, "child.jsonl": child_file})


def test_a_looping_subagent_is_refused_when_attended(tmp_path):
    with ScriptedGemini({"subagent": subagent_script("loop"), "loop": loop_script(6)}) as server:
        machine = _machine(tmp_path, server, PINNED, profile="attended")
        run = machine.gemini("SCENARIO:subagent delegate the listing")
        main, sub = server.of("subagent"), server.of("loop")
    assert run.code == 0
    assert [t.answered for t in main] == ["tool:invoke_agent", "text"]  # the parent carries on
    outputs = [_output(r) for t in sub for r in t.results]
    assert sum("Exit Code: 2" in o for o in outputs) == 3 and sum(o.startswith(BLOCKED) for o in outputs) == 3
    rows = machine.status()
    assert rows["sub-agent-1"]["blocks"] == 3 and rows["sub-agent-1"]["stops"] == 0
    assert rows[""]["stops"] == 0 and not rows[""]["stopped"]


def test_the_parents_parallel_calls_are_not_the_subagents(tmp_path):
    """The parent runs a sub-agent and two shell calls in one turn (in parallel, their
    hooks too); the sub-agent runs the same failing command as one of them. Each agent
    is told its own: the parent's calls count for the parent, the sub-agent's for it,
    and nothing is counted twice or refused."""
    spawn = ("invoke_agent", {"agent_name": "generalist", "prompt": "SCENARIO:inner look around"})
    siblings = [
        (SHELL, {"command": LOOP_COMMAND, "description": "p1"}),
        (SHELL, {"command": "echo p2", "description": "p2"}),
    ]
    inner = [
        Step("One.", SHELL, {"command": LOOP_COMMAND, "description": "i1"}),
        Step("Two.", SHELL, {"command": "echo i2", "description": "i2"}),
        Step("Done."),
    ]
    scripts = {"outer": [Step("All at once.", calls=[spawn, *siblings]), Step("Done.")], "inner": inner}
    with ScriptedGemini(scripts) as server:
        machine = _machine(tmp_path, server, PINNED)
        run = machine.gemini("SCENARIO:outer do it")
    assert run.code == 0
    assert [t.answered for t in server.of("outer")][-1] == "text"
    rows = machine.status()
    assert rows[""]["actions"] == 3  # invoke_agent and its two siblings
    assert rows["sub-agent-1"]["actions"] == 2
    assert all(row["blocks"] == row["stops"] == 0 for row in rows.values())


# -- a project switching the guard off --------------------------------------------------------


def test_a_projects_hooks_off_is_told_then_held_by_the_system_install(tmp_path):
    """A project's `.gemini/settings.json` says `"hooksConfig": {"enabled": false}`:
    with the user's install only, no hook runs (the reworded loop runs all 12) and
    `doctor` names the file; `loopwatch install gemini-cli --system` (the system file,
    redirected here by GEMINI_CLI_SYSTEM_SETTINGS_PATH) holds: the loop is stopped at the
    fourth call, and doctor no longer reports it."""
    with ScriptedGemini({"reworded": reworded_script(12)}) as server:
        machine = _machine(tmp_path, server, PINNED)
        system = tmp_path / "etc" / "gemini-cli" / "settings.json"
        machine.extra_env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(system)
        (machine.work / ".gemini").mkdir()
        project = machine.work / ".gemini" / "settings.json"
        project.write_text(json.dumps({"hooksConfig": {"enabled": False}}))
        told = machine.loopwatch("doctor", "gemini-cli", "--json", check=False)
        off = machine.gemini("SCENARIO:reworded do the task")
        unguarded = len(server.of("reworded"))
        nothing = machine.status() if machine.state_dir.exists() else {}
        machine.loopwatch("install", "gemini-cli", "--system")
        held = machine.loopwatch("doctor", "gemini-cli", "--json", check=False)
        on = machine.gemini("SCENARIO:reworded do the task")
        guarded = len(server.of("reworded")) - unguarded
    assert f"Gemini CLI {PINNED} " in told.stdout  # the release under test
    problems = [json.loads(line)["text"] for line in told.stdout.splitlines() if '"problem"' in line]
    assert told.returncode == 1 and any(str(project) in p and "enabled" in p for p in problems), problems
    assert off.code == 0 and unguarded == 13 and nothing == {}  # no hook ran at all
    settings = json.loads(system.read_text())
    assert settings["hooksConfig"] == {"enabled": True} and "BeforeTool" in settings["hooks"]
    assert oct(system.stat().st_mode & 0o777) == "0o644"  # every user's agent reads it
    assert not any(str(project) in json.loads(line)["text"] for line in held.stdout.splitlines()), held.stdout
    assert on.code == 0 and guarded == 4
    assert on.results()[on.of_type("tool_use")[3]["tool_id"]]["output"].startswith(STOPPED)


def test_the_agents_write_of_a_switch_off_is_refused(tmp_path):
    """The agent writes `.gemini/settings.json` turning hooks off: refused before it runs
    (the file is never written), and the run goes on guarded."""
    content = json.dumps({"hooksConfig": {"disabled": ["loopwatch"]}})
    with ScriptedGemini({"write": settings_write_script(tmp_path / "work", content)}) as server:
        machine = _machine(tmp_path, server, PINNED)
        run = machine.gemini("SCENARIO:write do it")
        turns = server.of("write")
    assert run.code == 0 and len(turns) == 3
    (refusal,) = turns[1].results
    assert _output(refusal).startswith("Tool execution blocked: loopwatch refused this call"), refusal
    assert "ask them" in _output(refusal)
    assert not (machine.work / ".gemini" / "settings.json").exists()
    assert "loopwatch refused a call that would switch it off" in run.stderr


@pytest.mark.parametrize(
    "name,text",
    [(".env", "LOOPWATCH_MODE=off\n"), (os.path.join(".gemini", ".env"), "LOOPWATCH_PROFILE=attended\n")],
)
def test_a_projects_env_file_cannot_switch_the_guard_off(tmp_path, name, text):
    """Gemini CLI loads a project's `.env` into the hook's environment; what it sets
    there may only tighten: the unattended loop still ends at the fourth call, and
    hook.log says what was not trusted."""
    with ScriptedGemini({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, PINNED, settings=NO_OWN_LOOP_CHECK)
        path = machine.work / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        run = machine.gemini("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert run.code == 0 and len(turns) == 4
    row = machine.status()[""]
    assert row["profile"] == "unattended" and row["stops"] == 1
    variable = text.split("=")[0]
    assert f"{variable} set by {path}: not trusted" in machine.hook_log()


def test_the_users_own_env_setting_is_honoured(tmp_path):
    """The same variable exported by the user before starting Gemini CLI is the user's
    (the session process started with it), whatever a project `.env` says too."""
    with ScriptedGemini({"loop": loop_script(6)}) as server:
        machine = _machine(tmp_path, server, PINNED, settings=NO_OWN_LOOP_CHECK)
        (machine.work / ".env").write_text("LOOPWATCH_PROFILE=attended\n")
        machine.extra_env["LOOPWATCH_PROFILE"] = "attended"
        run = machine.gemini("SCENARIO:loop do the task")
    assert run.code == 0
    row = machine.status()[""]
    assert row["profile"] == "attended" and row["stops"] == 0 and row["blocks"] == 3
    assert "not trusted" not in machine.hook_log()


# -- doctor -----------------------------------------------------------------------------------


def _doctor(machine: GeminiRun) -> tuple[int, list[dict]]:
    done = machine.loopwatch("doctor", "gemini-cli", "--json", check=False)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


def test_doctor_on_a_fresh_home(tmp_path):
    """Not installed: told; installed: all well (the hook's dry run, the version); an
    untrusted folder, a project that disables the hook by name and a project `.env`
    setting LOOPWATCH_MODE: each named; uninstalled: told again."""
    with ScriptedGemini({}) as server:
        machine = _machine(tmp_path, server, CURRENT, install=False)
        code, lines = _doctor(machine)
        assert code == 1 and [x["text"] for x in lines if x["status"] == "problem"] == [
            "the hook is not installed: run `loopwatch install gemini-cli`"
        ]
        machine.loopwatch("install", "gemini-cli")
        code, lines = _doctor(machine)
        texts = [x["text"] for x in lines]
        assert code == 0, lines
        assert any(t.startswith("hook installed for 4 events") for t in texts)
        assert any(t.startswith("hook runs: a dry-run call answered") for t in texts)
        assert f"Gemini CLI {CURRENT} " in "\n".join(texts)
        (machine.home / ".gemini" / "trustedFolders.json").write_text("{}")
        (machine.work / ".gemini").mkdir()
        disabled = {"hooksConfig": {"disabled": ["loopwatch"]}}
        (machine.work / ".gemini" / "settings.json").write_text(json.dumps(disabled))
        (machine.work / ".env").write_text("LOOPWATCH_MODE=off\n")
        code, lines = _doctor(machine)
        found = [x["text"] for x in lines if x["status"] == "problem"]
        assert code == 1 and len(found) == 2, found
        assert any("is not trusted in Gemini CLI" in t for t in found)
        assert any('"disabled"' in t and "nothing overrides it" in t for t in found)
        assert any("LOOPWATCH_MODE=off is set by" in x["text"] and x["status"] == "info" for x in lines)
        machine.loopwatch("uninstall", "gemini-cli")
        settings = json.loads(machine.settings_path.read_text())
        assert not any(settings["hooks"].values()) and settings["security"]  # the rest is kept
        code, lines = _doctor(machine)
        assert code == 1 and any(x["text"].startswith("the hook is not installed") for x in lines)


def test_install_into_the_project(tmp_path):
    """`--project`: the project's `.gemini/settings.json` with the portable command;
    Gemini CLI runs it (the loop is stopped) once the user trusts the folder."""
    with ScriptedGemini({"loop": loop_script(12)}) as server:
        machine = _machine(tmp_path, server, PINNED, install=False)
        done = machine.loopwatch("install", "gemini-cli", "--project")
        project = machine.work / ".gemini" / "settings.json"
        assert "installed into" in done.stdout and project.exists()
        commands = {
            h["command"]
            for groups in json.loads(project.read_text())["hooks"].values()
            for g in groups
            for h in g["hooks"]
        }
        assert commands == {"loopwatch hook gemini-cli"}
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "loopwatch").write_text(f'#!/bin/sh\nexec {sys.executable} -m loopwatch "$@"\n')
        (shim / "loopwatch").chmod(0o755)
        machine.extra_env["PATH"] = f"{shim}{os.pathsep}{machine.env()['PATH']}"
        run = machine.gemini("SCENARIO:loop do the task")
        assert run.code == 0 and len(server.of("loop")) == 4
        machine.loopwatch("uninstall", "gemini-cli", "--project")
        assert not any(json.loads(project.read_text())["hooks"].values())
