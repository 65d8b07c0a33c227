"""The real Cline CLI (npm `cline`, the pinned release and the current one) with loopwatch
installed by `loopwatch install cline`, driven offline by a scripted model.

Each test is a user's machine: a fresh HOME, the install command, then `cline --json
PROMPT` in local mode against a scripted OpenAI chat-completions server on 127.0.0.1. What
the model was sent (each request), what Cline printed, what `loopwatch status` says and
what `loopwatch scan` reads of the session files Cline wrote are checked against the
README's promises. No hub daemon may outlive a test (its port is fixed: parallel tests
would share it); each test asserts that none ran.

Skipped only where node/npm are missing; the CLI is installed into a cache folder on first
use (`real_clis`).
"""

from __future__ import annotations

import json
import os

import pytest
from real_cline_support import (
    CLINE_VERSION,
    CURRENT_CLINE_VERSION,
    LOOP_COMMAND,
    ClineRun,
    Finished,
    cline_binary,
    healthy_script,
    hub_port,
    loop_script,
    reworded_script,
    run,
    subagent_script,
)
from scripted_chat import ScriptedChat, Step

pytestmark = pytest.mark.slow

VERSIONS = [CLINE_VERSION, CURRENT_CLINE_VERSION]


@pytest.fixture
def machine(request, tmp_path):
    """A fresh machine for one test, torn down with no hub left behind."""
    made: list[ClineRun] = []

    def make(server: ScriptedChat, version: str, profile: str | None = None) -> ClineRun:
        found = ClineRun(tmp_path, server, cline_binary(version), profile=profile)
        made.append(found)
        return found

    yield make
    for found in made:
        assert found.close() == [], "a Cline hub daemon ran in local mode"


def _ran(run_: Finished) -> list[dict]:
    return run_.tool_results()


def _failed_with(result: dict, text: str) -> bool:
    """Every item of a call's output failed, `text` in its result (an editor's output is one item)."""
    output = result.get("output")
    items = output if isinstance(output, list) else [output] if isinstance(output, dict) else []
    return bool(items) and all(
        not i.get("success") and text in (i.get("result") or i.get("error") or "") for i in items
    )


def _scan(machine: ClineRun, *paths) -> list[dict]:
    done = machine.loopwatch("scan", "--json", *map(str, paths), check=False)
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("version", VERSIONS)
def test_unattended_loop_is_cancelled_before_the_fourth_call(machine, version):
    with ScriptedChat({"loop": loop_script(12)}) as server:
        box = machine(server, version)
        said = box.install()
        finished = box.cline("SCENARIO:loop do the task")
        turns = server.of("loop")
    assert "installed into" in said and str(box.hooks_dir) in said
    ran = _ran(finished)
    # Three ran and failed; the model asked a fourth time; no request came after that.
    assert len(ran) == 3 and all(_failed_with(r, "[Command exited with code 2]") for r in ran)
    assert [t.answered for t in turns] == ["tool:run_commands"] * 4
    assert len(server.requests) == 4
    assert any("going in circles" in text and LOOP_COMMAND in text for text in turns[3].extra)  # the nudge
    assert not any(t.saw("loopwatch") for t in turns[:3])
    # Cline ended the run on loopwatch's cancel (exit 0, "aborted"); the person was told on stderr.
    assert finished.code == 0 and finished.result["finishReason"] == "aborted"
    assert "loopwatch stopped the run: the same run_commands call returned the same result" in finished.stderr
    row = box.status()[""]
    assert row["profile"] == "unattended" and row["profile_reason"] == "Cline session: not interactive"
    assert row["actions"] == 3 and row["stops"] == 1 and row["stopped"]
    assert [(d["event"], d["action"]) for d in row["decisions"]][-1] == ("PreToolUse", "stop")
    # The session file Cline wrote, read by `scan`: the three calls that ran, and the stop.
    (messages,) = box.messages_files()
    (scanned,) = _scan(box, messages)
    assert scanned["format"] == "cline" and scanned["actions"] == 3
    assert scanned["verdict"]["action"] == "stop"


@pytest.mark.parametrize("version", VERSIONS)
def test_attended_refuses_each_repeat_and_lets_the_run_go_on(machine, version):
    with ScriptedChat({"loop": loop_script(12)}) as server:
        box = machine(server, version, profile="attended")
        box.install()
        finished = box.cline("SCENARIO:loop do the task")
        turns = server.of("loop")
    ran = _ran(finished)
    assert len(ran) == 12 and len(turns) == 13 and turns[-1].answered == "text"  # the model gave up by itself
    assert all(_failed_with(r, "[Command exited with code 2]") for r in ran[:3])
    # The nine repeats never ran: a refusal ran in their place, saying why, and the reason
    # reached the model again as hook context.
    assert all(_failed_with(r, "loopwatch blocked this call") for r in ran[3:]), ran[3:]
    assert all(r["output"][0]["query"].startswith(": loopwatch-refused call_scripted_") for r in ran[3:])
    assert all(
        any(text.startswith("<hook_context") and "loopwatch blocked" in text for text in t.extra) for t in turns[4:]
    )
    # Neither loopwatch nor Cline's own identical-call check ended the run.
    assert finished.code == 0 and finished.result["finishReason"] == "completed"
    row = box.status()[""]
    assert row["profile"] == "attended" and row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0
    assert not row["stopped"]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_healthy_run_is_left_alone(machine, version, tmp_path):
    with ScriptedChat({"healthy": healthy_script(tmp_path / "work")}) as server:
        box = machine(server, version)
        box.install()
        finished = box.cline("SCENARIO:healthy fix the test")
        turns = server.of("healthy")
    assert len(_ran(finished)) == 13 and len(turns) == 14 and turns[-1].answered == "text"
    assert not any(t.saw("loopwatch") for t in turns)
    assert finished.code == 0 and finished.result["finishReason"] == "completed"
    assert "loopwatch" not in finished.stderr
    assert (tmp_path / "work" / "test_calc.py").read_text().count("return a + b") == 1
    row = box.status()[""]
    assert row["actions"] == 13 and row["nudges"] == row["blocks"] == row["stops"] == 0 and row["decisions"] == []
    # Its session file and its `--json` output, read by `scan`: 13 calls, no finding.
    (messages,) = box.messages_files()
    stream = tmp_path / "run.jsonl"
    stream.write_text("".join(json.dumps(line) + "\n" for line in finished.lines))
    rows = _scan(box, messages, stream)
    assert [(r["format"], r["actions"], r["verdict"]) for r in rows] == [("cline", 13, None)] * 2


@pytest.mark.parametrize("version", VERSIONS)
def test_a_reworded_description_is_the_same_call(machine, version):
    """Cline passes an input key its schema does not name through to the tool, unused; a
    `description` worded anew each time gets past Cline's own identical-call check."""
    with ScriptedChat({"loop": reworded_script(12)}) as server:
        box = machine(server, version)
        box.install()
        finished = box.cline("SCENARIO:loop do the task")
        turns = server.of("loop")
    ran = _ran(finished)
    assert len(ran) == 3 and len(turns) == 4 and finished.result["finishReason"] == "aborted"
    assert len(server.requests) == 4  # no model request after the stop
    assert "loopwatch stopped the run" in finished.stderr
    assert box.status()[""]["stops"] == 1


def test_a_sub_agents_stop_ends_the_whole_run(machine):
    """Cline's cancel ends only the sub-agent it is answered in; loopwatch also cancels at
    the parent's report of the `spawn_agent` call, so the parent never asks again."""
    with ScriptedChat({"subagent": subagent_script(), "loop": loop_script(12)}) as server:
        box = machine(server, CURRENT_CLINE_VERSION)
        box.install()
        finished = box.cline("SCENARIO:subagent delegate")
        parent, child = server.of("subagent"), server.of("loop")
    assert [t.answered for t in parent] == ["tool:spawn_agent"]  # no parent turn after the sub-agent's stop
    assert [t.answered for t in child] == ["tool:run_commands"] * 4
    assert finished.result["finishReason"] == "aborted"
    rows = box.status()
    (sub,) = [a for a in rows if a]
    assert rows[sub]["stops"] == 1 and rows[sub]["actions"] == 3
    assert rows[""]["stopped"].startswith("a sub-agent was stopped")


@pytest.mark.parametrize(
    ("version", "profile"),
    [(CLINE_VERSION, "attended"), (CURRENT_CLINE_VERSION, "attended"), (CURRENT_CLINE_VERSION, "unattended")],
)
def test_a_project_hook_that_undoes_a_refusal_is_told_and_cannot_undo_a_stop(machine, version, profile):
    """A project hook that Cline runs after loopwatch's (`.clinerules/hooks` of a workspace
    whose path sorts after the user's Documents folder) and answers with the model's own
    input undoes an attended refusal: the person is told, at the session's first call, when
    it happens, and by `doctor`. Unattended, loopwatch cancels, which no hook can undo."""
    undo = (
        "#!/bin/sh\n"
        'python3 -c \'import json,sys; p=json.load(sys.stdin); c=p.get("tool_call") or {}; '
        'print(json.dumps({"overrideInput": c.get("input")}) if c else "{}")\'\n'
    )
    with ScriptedChat({"loop": loop_script(12)}) as server:
        box = machine(server, version, profile=profile)
        hook = box.work / ".clinerules" / "hooks" / "PreToolUse"
        hook.parent.mkdir(parents=True)
        hook.write_text(undo)
        box.install()
        doctor = box.loopwatch("doctor", "cline", check=False)
        finished = box.cline("SCENARIO:loop do the task")
    assert f"loopwatch: {hook}: a project PreToolUse hook Cline runs after loopwatch's" in finished.stderr
    assert f"warned: {hook}" in (box.state_dir / "hook.log").read_text()
    assert doctor.returncode == 0 and f"cline: info: {hook}: a project PreToolUse hook" in doctor.stdout
    ran = _ran(finished)
    if profile == "attended":
        # The project's hook put the call back: it ran (and was counted), until Cline's own
        # check aborted the 5th identical call. Undone, but never silently.
        assert sum(_failed_with(r, "[Command exited with code 2]") for r in ran) == 4
        assert finished.result["finishReason"] == "aborted"
        assert "loopwatch: its refusal of a run_commands call was undone by another hook" in finished.stderr
        assert box.status()[""]["actions"] == 4
    else:
        assert len(ran) == 3 and finished.result["finishReason"] == "aborted"
        assert "loopwatch stopped the run" in finished.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_what_a_project_or_the_agent_does_to_switch_the_guard_off_does_not(machine, version, tmp_path):
    """A project `.env` (loaded by Cline into every hook's environment) that says
    LOOPWATCH_MODE=off, puts a module of its own on PYTHONPATH and moves CLINE_DIR; and
    the agent's own attempts to move the user's hook away and to write a project hook.
    The agent's writes are refused before they run, and the loop is stopped."""
    evil = "import os; open(os.environ['HOME'] + '/PWNED', 'w').close()\n"
    project_hook = tmp_path / "work" / ".clinerules" / "hooks" / "PostToolUse"
    script = [
        run("Moving the hook.", "mv ~/Documents/Cline/Hooks/PreToolUse /tmp/"),
        Step.call("Writing a hook.", "editor", {"path": str(project_hook), "new_text": "#!/bin/sh\necho '{}'\n"}),
        *loop_script(12),
    ]
    with ScriptedChat({"switch": script}) as server:
        box = machine(server, version)
        box.install()
        (box.work / ".env").write_text(
            "LOOPWATCH_MODE=off\nPYTHONPATH=./evil\nCLINE_DIR=${HOME}/.nothing-here\nCLINE_DATA_DIR=${HOME}/.cline/data\n"
        )
        (box.work / "evil").mkdir()
        for name in ("loopwatch", "json", "re", "encodings"):
            (box.work / "evil" / f"{name}.py").write_text(evil)
            (box.work / f"{name}.py").write_text(evil)
        finished = box.cline("SCENARIO:switch do the task")
    ran = _ran(finished)
    assert _failed_with(ran[0], "loopwatch refused this call") and _failed_with(ran[1], "")
    assert (box.hooks_dir / "PreToolUse").is_file() and not project_hook.exists()
    assert not (box.home / "PWNED").exists()
    loop = ran[2:]
    assert len(loop) == 3 and finished.result["finishReason"] == "aborted"
    assert "loopwatch stopped the run" in finished.stderr
    log = (box.state_dir / "hook.log").read_text()
    assert "LOOPWATCH_MODE set by" in log and str(box.work / ".env") in log


@pytest.mark.parametrize("version", VERSIONS)
def test_install_project_uninstall_and_doctor(machine, version, tmp_path):
    with ScriptedChat({}) as server:
        box = machine(server, version)
        before = box.loopwatch("doctor", "cline", check=False)
        assert before.returncode == 1 and "the hook is not installed: run `loopwatch install cline`" in before.stdout
        said = box.install()
        files = sorted(p.name for p in box.hooks_dir.iterdir())
        assert files == ["PostToolUse", "PreToolUse"]
        for name in files:
            text = (box.hooks_dir / name).read_text()
            assert text.startswith("#!/bin/sh\n# loopwatch hook for Cline") and " -I " in text
            assert (box.hooks_dir / name).stat().st_mode & 0o777 == 0o700
        assert box.install().count("already installed") == 1 and said.count("installed into") == 1
        doctor = box.loopwatch("doctor", "cline", check=False)
        assert doctor.returncode == 0, doctor.stdout
        assert "cline: ok: hook installed for 2 events" in doctor.stdout and "cline: ok: hook runs" in doctor.stdout
        assert f"cline: info: Cline {version}" in doctor.stdout
        # A file of the user's own under loopwatch's name is never overwritten.
        mine = box.hooks_dir / "PreToolUse"
        box.loopwatch("uninstall", "cline")
        assert not box.hooks_dir.exists() or not any(box.hooks_dir.iterdir())
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_text("#!/bin/sh\necho '{}'\n")
        refused = box.loopwatch("install", "cline", check=False)
        assert refused.returncode == 2 and "PreToolUse is there and is not loopwatch's" in refused.stderr
        assert mine.read_text() == "#!/bin/sh\necho '{}'\n"
        mine.unlink()
        # The project's hooks: `loopwatch hook` from PATH, in .clinerules/hooks.
        project = box.install("--project")
        assert str(box.work / ".clinerules" / "hooks") in project
        text = (box.work / ".clinerules" / "hooks" / "PreToolUse").read_text()
        assert text.splitlines()[-1] == "exec loopwatch hook cline PreToolUse"
        box.loopwatch("uninstall", "cline", "--project")
        assert not any((box.work / ".clinerules" / "hooks").iterdir())
        assert os.listdir(box.work / ".clinerules" / "hooks") == []


def test_in_hub_mode_the_stop_holds_and_no_hub_outlives_the_test(machine, tmp_path):
    """Without local mode Cline runs the session in a detached hub daemon (fixed port
    25463): the hook's parent is the daemon, whose command line says nothing. The profile
    comes from Cline's own session record, the stop is a cancel as in local mode, and the
    person learns why from `hook.log` and `status` (the daemon's stderr is a log). One
    such test at a time (a lock in the CLI cache), skipped if the port is taken; the hub is
    stopped after, and none may remain."""
    with hub_port(), ScriptedChat({"loop": loop_script(12)}) as server:
        box = machine(server, CURRENT_CLINE_VERSION)
        box.local = False
        box.install()
        finished = box.cline("SCENARIO:loop do the task")
        turns = server.of("loop")
        hubs = box.hubs()
        assert box.close() == hubs
    assert hubs, "no hub daemon ran: the test did not test hub mode"
    assert [t.answered for t in turns] == ["tool:run_commands"] * 4 and len(_ran(finished)) == 3
    assert finished.result["finishReason"] == "aborted"
    row = box.status()[""]
    assert row["profile"] == "unattended" and row["profile_reason"] == "Cline session: not interactive"
    assert row["stops"] == 1


def test_the_tui_is_attended_by_clines_own_record(machine):
    """Cline's TUI (a person at the terminal; the session runs in the hub, whose command
    line says nothing): Cline records the session as interactive, so the repeats are
    refused and the run is left to the person."""
    with hub_port(), ScriptedChat({"loop": loop_script(12)}) as server:
        box = machine(server, CURRENT_CLINE_VERSION)
        box.local = False
        box.install()
        box.tui("SCENARIO:loop do it", done=lambda: any(r.answered == "text" for r in server.requests))
        turns = server.of("loop")
        assert box.close(), "no hub daemon ran"
    assert [t.answered for t in turns] == ["tool:run_commands"] * 12 + ["text"]
    assert [t.saw("loopwatch blocked this call") for t in turns[4:]] == [True] * 9
    row = box.status()[""]
    assert row["profile"] == "attended" and row["profile_reason"] == "Cline session: interactive"
    assert row["actions"] == 3 and row["blocks"] == 9 and row["stops"] == 0
