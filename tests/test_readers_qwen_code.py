"""Qwen Code session files (`loopwatch._readers.qwen_code`) and its `-o stream-json`
output (Claude Code's line format, read by the Claude Code reader), on files the real
CLI wrote in runs driven by a scripted model (tests/fixtures/qwen-code: the scripted
content only, paths replaced by a placeholder)."""

from __future__ import annotations

import json

import pytest
from readers_support import calls, events_of, fixture, head

from loopwatch._core.events import Attempt, ModelText, Turn, UserMessage
from loopwatch._core.messages import without_told
from loopwatch._readers import detect

STOPPED = fixture("qwen-code", "stopped-0.24.4.jsonl")
HEALTHY = fixture("qwen-code", "healthy-0.23.4.jsonl")
SUBAGENT = fixture("qwen-code", "subagent-stopped-0.24.4.jsonl")
PARENT = fixture("qwen-code", "subagent-parent-0.24.4.jsonl")
STREAM = fixture("claude-code", "qwen-code-0.24.4-stream-stopped.jsonl")  # Claude Code's format


@pytest.mark.parametrize(
    "path,fmt",
    [
        (STOPPED, "qwen-code"),
        (HEALTHY, "qwen-code"),
        (SUBAGENT, "qwen-code"),
        (PARENT, "qwen-code"),
        (STREAM, "claude-code"),
    ],
)
def test_each_file_is_its_format_by_its_shape(path, fmt):
    assert detect(path, head(path)) == fmt


@pytest.mark.parametrize("name", ["session.jsonl", "looping.jsonl", "stream.jsonl"])
def test_claude_code_files_are_not_taken_for_qwens(name):
    path = fixture("claude-code", name)
    assert detect(path, head(path)) == "claude-code"


def test_a_healthy_run_is_its_thirteen_calls_with_their_failures_and_writes():
    session, events = events_of(HEALTHY)
    assert session.format == "qwen-code" and session.session == json.loads(open(HEALTHY).readline())["sessionId"]
    done = calls(events)
    assert [c.name for c in done] == ["run_shell_command"] * 8 + [
        "write_file",
        "run_shell_command",
        "read_file",
        "edit",
        "run_shell_command",
    ]
    assert [c.error for c in done] == [False] * 9 + [True, False, False, False]  # the test failed once (exit 1)
    assert done[8].changed == ("/PLACEHOLDER/test_calc.py",) and done[11].changed == ("/PLACEHOLDER/test_calc.py",)
    assert all(c.call_id and c.at is not None and c.agent is None for c in done)
    assert [type(e) for e in events].count(UserMessage) == 1
    assert any(isinstance(e, ModelText) for e in events) and any(isinstance(e, Turn) for e in events)
    assert session.tokens and session.meta["version"] == "0.23.4"


def test_a_run_loopwatch_stopped_is_three_calls_and_the_refused_one():
    _, events = events_of(STOPPED)
    done = calls(events)
    assert len(done) == 3 and all(c.error for c in done)
    # the nudge Qwen appended to the third result is loopwatch's, not the call's
    assert len({c.result for c in done}) == 1 and "loopwatch" not in done[2].result
    (refused,) = [e for e in events if isinstance(e, Attempt)]
    assert refused.call_id == "call_4_3" and refused.input["command"] == "ls /nonexistent-dir-xyz"


def test_a_sub_agents_file_is_its_own_agent():
    _, events = events_of(SUBAGENT)
    done = calls(events)
    assert len(done) == 3 and {c.agent for c in done} == {"general-purpose-call_1_0"}
    assert [e.agent for e in events if isinstance(e, Attempt)] == ["general-purpose-call_1_0"]
    assert any(isinstance(e, ModelText) for e in events)  # the file's one agent: its text is kept


def test_the_parent_of_a_background_sub_agent_has_one_call_and_no_prompt_from_qwens_notices():
    _, events = events_of(PARENT)
    assert [c.name for c in calls(events)] == ["agent"]
    assert [type(e) for e in events].count(UserMessage) == 1


def test_qwens_stream_json_reads_as_claude_codes_with_the_same_calls():
    session, events = events_of(STREAM)
    done = calls(events)
    assert session.format == "claude-code" and len(done) == 3
    assert len({c.result for c in done}) == 1
    assert [e.call_id for e in events if isinstance(e, Attempt)] == ["call_4_3"]


@pytest.mark.parametrize(
    "path,actions,stopped_at",
    [(STOPPED, 3, 4), (STREAM, 3, 4), (SUBAGENT, 3, 4), (HEALTHY, 13, None)],
)
def test_scan_replays_what_the_live_hook_did(tmp_path, path, actions, stopped_at):
    from click.testing import CliRunner

    from loopwatch._cli import cli

    done = CliRunner().invoke(cli, ["scan", "--json", path], catch_exceptions=False)
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row["actions"] == actions
    assert (row["verdict"] or {}).get("at_action") == stopped_at
    assert (row["verdict"] or {}).get("action", "stop") == "stop"


def test_without_told_leaves_a_result_that_only_quotes_loopwatch():
    told = "loopwatch: you appear to be going in circles: you ran `x` 3 times. Change it."
    assert without_told(f"Exit Code: 2\n\n{told}") == "Exit Code: 2"
    assert without_told("grep said:\n\nloopwatch is a tool") == "grep said:\n\nloopwatch is a tool"
    assert without_told(told) == told


def _state_folder(tmp_path):
    """A `~/.qwen` as Qwen Code 0.24.4 leaves it (headless and interactive runs): two
    transcripts among 17 entries of its settings, records, caches and a project's
    bookkeeping (13 at its top, a project's 2, a chat's runtime file, a sub-agent's meta)."""
    from pathlib import Path

    qwen = tmp_path / ".qwen"
    project = qwen / "projects" / "-PLACEHOLDER"
    files = {
        "settings.json": '{"general": {"enableAutoUpdate": false}}',
        "settings.json.loopwatch.bak": "{}",
        "installation_id": "6c1f",
        "output-language.md": "English",
        "usage_record.jsonl": '{"ts": 1, "tokens": 15}\n',
        "usage/token-usage-2026-12.jsonl": '{"model": "m", "input": 10}\n',
        "extension-store/state.json": '{"installed": []}',
        "extensions/extension-enablement.json": "{}",
        "tmp/0f3a/logs.json": "[]",
        "tmp/0f3a/scheduled_tasks.lock": "",
        "trustedFolders.json": "{}",
        "tip_history.json": "{}",
        "memories/MEMORY.md": "# memory",
        "updates/npm/ab/versions/0.24.4/package.json": "{}",
        "updates/npm/ab/versions/0.24.4/dist/index.json": "{}",
        "projects/-PLACEHOLDER/meta.json": "{}",
        "projects/-PLACEHOLDER/extract-cursor.json": "{}",
        "projects/-PLACEHOLDER/chats/s1.runtime.json": '{"pid": 1}',
        "projects/-PLACEHOLDER/subagents/s1/agent-general-purpose-call_1_0.meta.json": '{"agentId": "x"}',
    }
    for name, text in files.items():
        path = qwen / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (project / "chats" / "s1.jsonl").write_bytes(Path(STOPPED).read_bytes())
    (project / "subagents" / "s1" / "agent-general-purpose-call_1_0.jsonl").write_bytes(Path(SUBAGENT).read_bytes())
    return qwen


@pytest.mark.slow
def test_a_scan_of_qwens_state_folder_reads_its_transcripts_and_leaves_the_rest_out(tmp_path):
    import subprocess
    import sys

    qwen = _state_folder(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--json", str(qwen)], capture_output=True, text=True, timeout=120
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 1, done.stderr  # 1: a loop found (the stopped run's), nothing unreadable
    assert sorted(row["path"].rsplit("/", 1)[1] for row in rows) == ["agent-general-purpose-call_1_0.jsonl", "s1.jsonl"]
    assert all(row.get("error") is None for row in rows) and sum(row["actions"] for row in rows) == 6
    assert "Left out by name: 17 files and folders of Qwen Code's state" in done.stderr, done.stderr


def test_a_transcript_named_with_its_state_folder_is_read_once(tmp_path):
    from loopwatch._cli.paths import LeftOut, expand

    qwen = _state_folder(tmp_path)
    transcript = qwen / "projects" / "-PLACEHOLDER" / "chats" / "s1.jsonl"
    left_out = LeftOut()
    found = [t.path for t in expand([str(qwen), str(transcript), str(qwen / "settings.json")], left_out)]
    assert found.count(str(transcript)) == 1 and str(qwen / "settings.json") in found  # named: read
    assert len(found) == 3 and left_out == {"Qwen Code": 17}


def test_a_folder_without_qwens_marks_is_walked_as_any_other(tmp_path):
    from loopwatch._cli.paths import expand

    corpus = tmp_path / "corpus"
    (corpus / "projects" / "a" / "chats").mkdir(parents=True)
    (corpus / "projects" / "a" / "meta.json").write_text("{}")
    (corpus / "projects" / "a" / "chats" / "s.jsonl").write_text("{}")
    (corpus / "settings.json").write_text("{}")
    assert len(list(expand([str(corpus)]))) == 3
