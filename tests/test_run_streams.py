"""Structured agent streams: claude stream-json and codex exec --json as real events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwatch import ModelText, Output, ToolCall, Turn
from loopwatch._supervise.streams import EventSource, detect

from _run_helpers import agent, assert_nothing_left, loopwatch

pytestmark = pytest.mark.slow

SESSION = {"session_id": "s1"}


def jl(*objs) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def claude_call(n: int, command: str = "ls", result: str = "a.py", error: bool = False) -> bytes:
    tid = f"toolu_{n}"
    return jl(
        {
            "type": "assistant",
            **SESSION,
            "message": {"content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}]},
        },
        {
            "type": "user",
            **SESSION,
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tid,
                        "content": [{"type": "text", "text": result}],
                        "is_error": error,
                    }
                ]
            },
        },
    )


def feed_all(source: EventSource, data: bytes, piece: int = 7) -> list:
    """Feed in small pieces, so lines and even UTF-8 characters are split across reads."""
    events = []
    for i in range(0, len(data), piece):
        events += source.feed(data[i : i + piece], "stdout", at=float(i))
    return events + source.finish(at=float(len(data)))


def test_claude_stream_tool_use_and_result_joined_by_id():
    data = jl({"type": "system", "subtype": "init", **SESSION, "tools": ["Bash"]})
    data += jl({"type": "assistant", **SESSION, "message": {"content": [{"type": "text", "text": "Let me look."}]}})
    data += claude_call(1, "ls", "a.py") + claude_call(2, "pytest", "1 failed", error=True)
    data += jl(
        {
            "type": "result",
            "subtype": "success",
            **SESSION,
            "total_cost_usd": 0.25,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )
    source = EventSource("auto")
    events = feed_all(source, data)
    assert source.format == "claude-stream"
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, c.input, c.result, c.error, c.call_id) for c in calls] == [
        ("Bash", {"command": "ls"}, "a.py", False, "toolu_1"),
        ("Bash", {"command": "pytest"}, "1 failed", True, "toolu_2"),
    ]
    assert [e.text for e in events if isinstance(e, ModelText)] == ["Let me look."]
    assert [e for e in events if isinstance(e, Turn)]  # each answered request is a turn
    assert not [e for e in events if isinstance(e, Output)]


def test_claude_result_without_its_call_is_skipped_not_invented():
    data = jl(
        {
            "type": "user",
            **SESSION,
            "message": {"content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]},
        }
    )
    assert feed_all(EventSource("claude-stream"), data) == []


def test_codex_items_become_tool_calls():
    item = {
        "id": "item_1",
        "type": "command_execution",
        "command": "bash -lc ls",
        "aggregated_output": "",
        "exit_code": None,
        "status": "in_progress",
    }
    data = jl(
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.started", "item": item},
        {
            "type": "item.completed",
            "item": {**item, "aggregated_output": "a.py\n", "exit_code": 0, "status": "completed"},
        },
        {
            "type": "item.completed",
            "item": {**item, "id": "item_2", "aggregated_output": "boom", "exit_code": 2, "status": "failed"},
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_3",
                "type": "file_change",
                "changes": [{"path": "src/a.py", "kind": "update"}],
                "status": "completed",
            },
        },
        {"type": "item.completed", "item": {"id": "item_4", "type": "agent_message", "text": "Done."}},
        {"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 20}},
    )
    source = EventSource("auto")
    events = feed_all(source, data)
    assert source.format == "codex-json"
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.name, c.error, c.changed) for c in calls] == [
        ("command_execution", False, ()),
        ("command_execution", True, ()),
        ("file_change", False, ("src/a.py",)),
    ]
    assert calls[0].input == {"command": "bash -lc ls"} and calls[0].result == "a.py\n"
    assert [e.text for e in events if isinstance(e, ModelText)] == ["Done."]
    assert [e.tokens for e in events if isinstance(e, Turn)] == [120]


def test_codex_function_call_and_output_joined_by_call_id():
    data = jl(
        {
            "type": "response_item",
            "timestamp": "2025-10-01T12:00:00.000Z",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "call_id": "c1",
                "arguments": json.dumps({"command": ["bash", "-lc", "make"]}),
            },
        },
        {
            "type": "response_item",
            "timestamp": "2025-10-01T12:00:01.000Z",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": json.dumps({"output": "make: *** Error 2", "metadata": {"exit_code": 2}}),
            },
        },
    )
    source = EventSource("auto")
    calls = [e for e in feed_all(source, data) if isinstance(e, ToolCall)]
    assert source.format == "codex-json"
    assert len(calls) == 1
    assert calls[0].input == {"command": ["bash", "-lc", "make"]}
    assert calls[0].result == "make: *** Error 2" and calls[0].error is True


def test_plain_output_is_not_mistaken_for_a_stream():
    data = b'Hello\n{"not": "an agent event"}\nline 3\nline 4\nline 5\nmore\n'
    source = EventSource("auto")
    events = feed_all(source, data)
    assert source.format == "lines"
    assert b"".join(e.data for e in events) == data  # every byte reaches the monitor, once


def test_auto_decides_at_the_end_of_a_short_output():
    source = EventSource("auto")
    assert source.feed(b"just one line\n", "stdout", 0.0) == []  # held: undecided
    events = source.finish(1.0)
    assert source.format == "lines" and [e.data for e in events] == [b"just one line\n"]


def test_non_json_lines_inside_a_stream_are_plain_output_and_stderr_always_is():
    source = EventSource("claude-stream")
    events = feed_all(source, b"Warning: something\n" + claude_call(1))
    assert isinstance(events[0], Output) and events[0].data == b"Warning: something\n"
    assert any(isinstance(e, ToolCall) for e in events[1:])
    assert source.feed(b"err\n", "stderr", 0.0) == [Output(b"err\n", "stderr", 0.0)]


def test_detect_shapes():
    assert detect({"type": "system", "subtype": "init", "session_id": "x"}) == "claude-stream"
    assert detect({"type": "item.completed", "item": {}}) == "codex-json"
    assert detect({"type": "system"}) is None
    assert detect([1, 2]) is None


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="unknown events format"):
        EventSource("jsonl")


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


@needs_proc
def test_a_looping_claude_stream_session_is_ended_with_86(tmp_path):
    ran = loopwatch(tmp_path, agent("claude_stream_loop"))
    assert ran.status == 86
    record = ran.record
    assert record["events_format"] == "claude-stream"
    verdict = record["loop"]["verdict"]
    assert verdict["tools"] == ["Bash"] and verdict["action"] == "stop"
    assert verdict["signal"] != "repeated_lines"  # real tool calls, not lines
    # Stopped at the 3rd to 19th call; how many more the agent wrote before the signal
    # landed depends on how busy the machine is, so only the decision's place is bounded.
    assert 3 <= verdict["at_action"] < 20 and record["loop"]["actions"] >= verdict["at_action"]
    # the JSON went through untouched for whoever reads it
    for line in ran.stdout.splitlines():
        json.loads(line)
    assert_nothing_left(ran)


@needs_proc
def test_a_looping_codex_session_is_ended_with_86(tmp_path):
    ran = loopwatch(tmp_path, agent("codex_json_loop"))
    assert ran.status == 86
    assert ran.record["events_format"] == "codex-json"
    assert ran.record["loop"]["verdict"]["tools"] == ["command_execution"]
    assert_nothing_left(ran)


@needs_proc
def test_a_looping_cursor_stream_session_is_ended_with_86(tmp_path):
    """A stream of the shape Cursor's documentation gives (the real CLI was never run):
    told from Claude Code's by structure, its calls read as calls, the run ended."""
    ran = loopwatch(tmp_path, agent("cursor_stream_loop"))
    assert ran.status == 86
    assert ran.record["events_format"] == "cursor-stream"
    verdict = ran.record["loop"]["verdict"]
    assert verdict["tools"] == ["shell"] and verdict["action"] == "stop" and verdict["signal"] != "repeated_lines"
    assert_nothing_left(ran)


def test_cursor_stream_lines_are_calls_and_claude_codes_init_is_not_cursors():
    init = {"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/w", "session_id": "c", "model": "m"}
    assert detect(init) == "cursor-stream"
    assert detect({**init, "tools": ["Bash"]}) == "claude-stream"
    args = {"command": "ls /nope"}
    data = jl(
        init,
        {"type": "tool_call", "subtype": "started", "call_id": "c1", "tool_call": {"shellToolCall": {"args": args}}},
        {
            "type": "tool_call",
            "subtype": "completed",
            "call_id": "c1",
            "tool_call": {"shellToolCall": {"args": args, "result": {"success": {"exitCode": 2, "stderr": "no"}}}},
        },
    )
    source = EventSource("auto")
    events = feed_all(source, data)
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert source.format == "cursor-stream" and call.name == "shell" and call.error and call.at is not None


@needs_proc
def test_forcing_lines_on_a_stream_reads_it_as_plain_output(tmp_path):
    ran = loopwatch(tmp_path, agent("claude_stream_loop"), "--events", "lines")
    assert ran.record["events_format"] == "lines"
    assert ran.record["loop"]["actions"] == 0
    # still caught, by its lines: call and result, masked counters, a 2-line cycle
    assert ran.status == 86
    assert ran.record["loop"]["verdict"]["signal"] == "repeated_lines"
    assert ran.record["loop"]["verdict"]["period"] == 2


@pytest.mark.parametrize("pty", [False, True])
def test_a_huge_cursor_count_in_the_output_is_no_traceback(tmp_path, pty):
    """A CSI sequence with a 5,000-digit count (issue 24: a traceback in `run`)."""
    import sys

    code = "import sys; sys.stdout.write('building\\x1b[' + '9' * 5000 + 'Cdone\\n' + 'ok\\n')"
    ran = loopwatch(tmp_path, [sys.executable, "-c", code], *(["--pty"] if pty else []))
    assert ran.status == 0, ran.stderr[-800:]
    assert b"Traceback" not in ran.stderr
    assert b"ok" in ran.stdout
