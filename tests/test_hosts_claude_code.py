"""`loopwatch._hosts.claude_code` on what the real Claude Code 2.1.197 sent and wrote
(the captures in ../shared/clients/claude-code; skipped when they are absent), and
its wording pinned against loopwatch's own messages."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from loopwatch._core.finding import Finding
from loopwatch._hook.payload import parse
from loopwatch._hook.respond import reply
from loopwatch._hosts.base import Payload
from loopwatch._hosts import claude_code as host
from loopwatch._core.messages import SameResult
from loopwatch._core.monitor import Monitor
from loopwatch._core.session import GuardSession
from loopwatch._core.events import Attempt
from loopwatch._readers.claude_code import StreamParser, read
from loopwatch._core.verdict import Action, for_model

CLIENTS = Path(os.environ.get("LOOPWATCH_CLIENTS") or Path(__file__).resolve().parents[1].parent / "shared" / "clients")
PAYLOADS = CLIENTS / "claude-code" / "payloads"
STREAMS = CLIENTS / "claude-code" / "streams"
needs_captures = pytest.mark.skipif(not PAYLOADS.is_dir(), reason=f"no Claude Code captures in {CLIENTS}")


def payload(name: str):
    return parse((PAYLOADS / f"{name}.json").read_bytes(), "auto")


@needs_captures
def test_a_failed_bash_call_comes_as_post_tool_use_failure_with_its_exit_code():
    p = payload("PostToolUseFailure.Bash")
    assert p.host == "claude-code" and p.agent == ""
    (call,) = p.calls
    assert call.error and not call.interrupted and host.exit_code(call.result) == 2


@needs_captures
def test_a_bash_success_has_stdout_and_stderr_and_no_exit_code():
    p = payload("PostToolUse.Bash")
    (call,) = p.calls
    assert set(call.result) == {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"}
    assert not call.error and not call.interrupted and call.spawned is None


@needs_captures
@pytest.mark.parametrize(
    "name,failed",
    [
        ("PostToolBatch.after-failure", True),
        ("PostToolBatch.after-success", False),
        ("PostToolBatch.after-loopwatch-deny", False),  # the denial text: not a failed run, it never ran
    ],
)
def test_post_tool_batch_items(name, failed):
    (call,) = payload(name).calls
    assert call.error is failed and call.call_id


@needs_captures
def test_a_sub_agent_is_named_by_agent_id_and_by_the_agent_call_that_ran_it():
    spawn = payload("PostToolUse.Agent")
    inner = payload("PostToolUseFailure.Bash.in-subagent")
    assert spawn.agent == "" and spawn.calls[0].spawned == inner.agent == "a42a80f05bd380852"
    assert payload("PreToolUse.Bash.in-subagent").agent == inner.agent


def test_spawned_agent_only_for_the_agent_tools():
    assert host.spawned_agent("Agent", {"agentId": "abc"}) == "abc"
    assert host.spawned_agent("Task", {"agentId": "abc"}) == "abc"
    assert host.spawned_agent("Bash", {"agentId": "abc"}) is None
    assert host.spawned_agent("Agent", "Done") is None


def test_exit_code_reads_only_claude_codes_head():
    assert host.exit_code("Exit code 127\nsh: nope: not found") == 127
    assert host.exit_code("the Exit code 2 was seen") is None
    assert host.exit_code({"stdout": ""}) is None


def test_the_denial_prefixes_are_loopwatchs_own_words():
    finding = Finding("repeat", 1.0, 1, SameResult("Bash", 3))
    session = GuardSession(Monitor())
    session.stop("the same call 3 times")
    refusal = session.before_call(Attempt("Bash", {"command": "ls"}))
    refused = reply(Payload("claude-code", "PreToolUse", "s", "", None), refusal, stopped=session.stopped)
    block = {"is_error": True}
    assert host.loopwatch_denial(block, refused.stdout["hookSpecificOutput"]["permissionDecisionReason"]) == "stop"
    assert host.said_stop(refused.stdout["stopReason"])
    assert host.loopwatch_denial(block, for_model(finding, Action.STOP)) == "stop"
    assert host.loopwatch_denial(block, "Error: " + for_model(finding, Action.BLOCK)) == "block"
    assert host.loopwatch_denial({"is_error": False}, for_model(finding, Action.STOP)) is None
    assert host.loopwatch_denial(block, "Exit code 2\nloopwatch stopped the run") is None
    # Claude Code 2.1.332 puts the hook's name before the reason (seen in its session files).
    assert host.loopwatch_denial(block, "PreToolUse:Bash hook error: " + for_model(finding, Action.STOP)) == "stop"
    assert host.loopwatch_denial(block, "PreToolUse:Bash hook error: another hook said no") is None


def _parse_stream(name: str) -> tuple[StreamParser, list]:
    parser = StreamParser()
    events = []
    for line in (STREAMS / f"{name}.stream.jsonl").read_text().splitlines():
        events += parser.feed(json.loads(line))
    return parser, events + parser.finish()


def _calls(events):
    return [e for e in events if type(e).__name__ == "ToolCall"]


@needs_captures
def test_a_stream_ended_by_loopwatchs_hook_stop():
    parser, events = _parse_stream("fix_loop")
    assert parser.terminal_reason == "hook_stopped" and parser.loopwatch_stopped
    assert parser.denied == 1 and len(_calls(events)) == 3  # the denied call never ran


@needs_captures
@pytest.mark.parametrize("name,denied", [("loop1", 9), ("fix_attended", 9), ("fix_healthy", 0), ("fix_subagent", 1)])
def test_streams_that_ended_by_themselves(name, denied):
    parser, _ = _parse_stream(name)
    assert parser.terminal_reason == "completed" and not parser.loopwatch_stopped
    assert parser.denied == denied


@needs_captures
def test_a_session_file_skips_loopwatchs_denials_too():
    (session,) = read(str(STREAMS / "fix_attended.session.jsonl"))
    calls = _calls(list(session.events))
    assert len(calls) == 3 and all(c.error for c in calls)


def test_a_hook_stop_reason_from_include_hook_events():
    line = {
        "type": "system",
        "subtype": "hook_response",
        "hook_event": "PostToolBatch",
        "stdout": json.dumps({"continue": False, "stopReason": "loopwatch stopped the run: x"}),
        "exit_code": 0,
    }
    assert host.hook_stop_reason(line) == "loopwatch stopped the run: x"
    assert host.hook_stop_reason({**line, "stdout": "{}"}) is None
    result = {"type": "result", "terminal_reason": "hook_stopped"}
    assert host.stopped_by_loopwatch(result, False, ["loopwatch stopped the run: x"])
    assert not host.stopped_by_loopwatch(result, False, ["another hook"])
    assert not host.stopped_by_loopwatch({**result, "terminal_reason": "completed"}, True, [])


def test_the_hook_path_does_not_import_click_rich_or_orjson():
    import subprocess
    import sys

    code = (
        "import sys, loopwatch._hosts.claude_code, loopwatch._hook.payload, loopwatch._hook.guard;"
        "print(sorted(m for m in ('click', 'rich', 'orjson') if m in sys.modules))"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": src}
    ).stdout
    assert out.strip() == "[]"


@needs_captures
def test_the_stop_reason_from_a_session_file(tmp_path):
    session = "16dd752b-aecc-4a37-b686-81c4cfa1c282"  # fix_loop's
    folder = tmp_path / ".claude" / "projects" / "-tmp-work"
    folder.mkdir(parents=True)
    (folder / f"{session}.jsonl").write_bytes((STREAMS / "fix_loop.session.jsonl").read_bytes())
    reason = host.transcript_stop_reason(session, {"HOME": str(tmp_path)})
    assert reason is not None and host.said_stop(reason)
    assert host.transcript_stop_reason(session, {"CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")}) is None
    assert host.transcript_stop_reason("../../etc/passwd", {"HOME": str(tmp_path)}) is None
    (folder / "0000-other.jsonl").write_bytes((STREAMS / "loop1.session.jsonl").read_bytes())
    assert host.transcript_stop_reason("0000-other", {"HOME": str(tmp_path)}) is None  # ended by itself
