"""The reader of Cursor's `cursor-agent -p --output-format stream-json`.

The files read here (tests/fixtures/cursor/) and below are written from Cursor's
output-format documentation, in the shape it gives: none was written by the real CLI,
which cannot be run here. They show the documented shape is read; not that Cursor
writes it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from readers_support import FIXTURES, calls, foreign_fixtures, head

from loopwatch._cli import cli
from loopwatch._core.events import Attempt, ModelText, Turn, UserMessage
from loopwatch._readers import detect, read

LOOP = str(FIXTURES / "cursor" / "loop.stream-json.jsonl")
HEALTHY = str(FIXTURES / "cursor" / "healthy.stream-json.jsonl")
SESSION = "5d1c0e7a-1b2c-4d3e-8f90-a1b2c3d4e5f6"


def one(path: str):
    (session,) = list(read(path))
    return session, list(session)


def lines(*objs: dict) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


INIT = {
    "type": "system",
    "subtype": "init",
    "apiKeySource": "env",
    "cwd": "/w",
    "session_id": "s-9",
    "model": "GPT-5",
    "permissionMode": "default",
}


def started(call_id: str, kind: str, args: dict) -> dict:
    return {"type": "tool_call", "subtype": "started", "call_id": call_id, "tool_call": {kind: {"args": args}}}


def completed(call_id: str, kind: str, args: dict, result: dict) -> dict:
    return {
        "type": "tool_call",
        "subtype": "completed",
        "call_id": call_id,
        "tool_call": {kind: {"args": args, "result": result}},
    }


def test_the_documented_files_are_told_by_structure_and_read_with_every_call():
    for path, count in ((LOOP, 12), (HEALTHY, 13)):
        assert detect(path, head(path)) == "cursor"
        session, events = one(path)
        assert session.format == "cursor" and session.session == SESSION
        assert len(calls(events)) == count
        assert session.meta["model"] == "Claude 4 Sonnet" and session.outcome is None


def test_a_failing_shell_call_is_a_failure_by_its_exit_code_and_a_write_is_progress():
    _, events = one(LOOP)
    shells = calls(events)
    assert {c.name for c in shells} == {"shell"}
    assert all(c.error and c.input == {"command": "ls /nonexistent-dir-xyz"} for c in shells)
    assert "No such file or directory" in shells[0].result and shells[0].source_ref == "line 4"
    _, healthy = one(HEALTHY)
    by_name = {}
    for call in calls(healthy):
        by_name.setdefault(call.name, []).append(call)
    assert set(by_name) == {"read", "write", "shell", "edit", "grep"}
    assert [c.error for c in by_name["shell"]][:2] == [True, False]  # the test failed, then passed
    assert by_name["write"][0].changed == ("/home/user/project/test_calc.py",)
    assert by_name["edit"][0].changed == ("/home/user/project/calc.py",)
    assert by_name["read"][0].result == "contents of README.md\n" and by_name["read"][0].changed == ()


def test_text_prompts_and_the_end_are_events():
    _, events = one(LOOP)
    assert isinstance(events[0], UserMessage)
    assert sum(isinstance(e, ModelText) for e in events) == 13
    assert isinstance(events[-1], Turn)


def test_scan_stops_the_loop_and_leaves_the_healthy_run_alone():
    runner = CliRunner()
    looping = runner.invoke(cli, ["scan", "--json", "--no-progress", LOOP])
    healthy = runner.invoke(cli, ["scan", "--json", "--no-progress", HEALTHY])
    (stopped,) = [json.loads(line) for line in looping.stdout.splitlines()]
    (fine,) = [json.loads(line) for line in healthy.stdout.splitlines()]
    assert looping.exit_code == 1 and stopped["verdict"] and stopped["actions"] == 12
    assert healthy.exit_code == 0 and fine["verdict"] is None and fine["actions"] == 13


def test_a_call_refused_or_never_completed_is_an_attempt_and_an_unknown_kind_keeps_its_name(tmp_path):
    path = tmp_path / "cut.jsonl"
    args = {"providerIdentifier": "db", "toolName": "query", "args": {"sql": "select 1"}}
    path.write_text(
        lines(
            INIT,
            started("a", "mcpToolCall", args),
            completed("a", "mcpToolCall", args, {"success": {"content": [{"text": "1"}]}}),
            started("b", "globToolCall", {"globPattern": "*.py"}),
            completed("b", "globToolCall", {"globPattern": "*.py"}, {"error": {"errorMessage": "bad glob"}}),
            started("r", "shellToolCall", {"command": "rm -rf build"}),
            completed("r", "shellToolCall", {"command": "rm -rf build"}, {"rejected": {"reason": "denied by hook"}}),
            started("c", "shellToolCall", {"command": "make", "workingDirectory": "/w", "timeout": 30000}),
        )
    )
    _, events = one(str(path))
    mcp, glob, refused, cut = events
    assert isinstance(refused, Attempt) and refused.input == {"command": "rm -rf build"}
    assert mcp.name == "query" and mcp.input == args and not mcp.error
    assert glob.name == "glob" and glob.error and glob.result == "bad glob"
    assert isinstance(cut, Attempt) and cut.name == "shell" and cut.input == {"command": "make"}


def test_a_failed_run_and_a_result_line_with_no_session_elsewhere(tmp_path):
    path = tmp_path / "failed.jsonl"
    path.write_text(
        lines(
            started("a", "readToolCall", {"path": "x"}),
            completed("a", "readToolCall", {"path": "x"}, {"success": {"content": "x"}}),
            {"type": "result", "subtype": "error", "is_error": True, "result": "", "session_id": "s-2"},
        )
    )
    session, events = one(str(path))
    assert session.outcome == "failed" and len(calls(events)) == 1


def test_claude_codes_stream_json_is_not_taken_for_cursors():
    for path in foreign_fixtures("cursor"):
        if Path(path).is_file():
            assert detect(path, head(path)) != "cursor", path
    init_only = lines({**INIT, "tools": ["Bash"], "uuid": "u"}).encode()
    assert detect("x.jsonl", init_only) == "claude-code"
    assert detect("x.jsonl", lines(INIT).encode()) == "cursor"  # Cursor's init line alone


def test_cursors_state_folder_is_left_out_by_name_and_a_saved_run_beside_it_is_read(tmp_path):
    """`~/.cursor` holds no file of a documented transcript shape: scanning it reads none
    of them (exit 2: no transcript, and why); a stream-json run saved beside it is read."""
    state = tmp_path / ".cursor"
    (state / "chats" / "abc").mkdir(parents=True)
    (state / "hooks.json").write_text('{"version": 1, "hooks": {}}')
    (state / "mcp.json").write_text('{"mcpServers": {}}')
    (state / "cli-config.json").write_text('{"permissions": {"allow": []}}')
    (state / "chats" / "abc" / "store.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    runner = CliRunner()
    alone = runner.invoke(cli, ["scan", "--no-progress", str(state)])
    assert alone.exit_code == 2 and "4 files and folders of Cursor's state left out by name" in alone.stderr
    (tmp_path / "run.jsonl").write_text(Path(LOOP).read_text())
    both = runner.invoke(cli, ["scan", "--json", "--no-progress", str(tmp_path)])
    found = [json.loads(line) for line in both.stdout.splitlines()]
    assert both.exit_code == 1 and [(r["format"], r["error"]) for r in found] == [("cursor", None)]
