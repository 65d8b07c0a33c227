"""The Codex reader: rollout files (current and older) and `codex exec --json`."""

from __future__ import annotations

import orjson
import pytest
from readers_support import (
    EVENTS_JSONL,
    calls,
    claims,
    corpus_samples,
    events_of,
    fixture,
    foreign_fixtures,
    one_session,
    shape,
    stop_of,
)

from loopwatch._core.events import Attempt, Retry, ToolCall, Turn
from loopwatch._readers import ReadError, codex, detect
from loopwatch._readers._common import iso_seconds
from loopwatch._core.verdict import Action

ROLLOUT = fixture("codex", "rollout.jsonl")
EXEC = fixture("codex", "exec.jsonl")


def test_rollout_events_in_order_with_line_refs():
    session, events = events_of(ROLLOUT)
    assert (session.format, session.session) == ("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
    assert session.meta["variant"] == "rollout"
    assert session.meta["model"] == "gpt-5-codex"
    assert shape(events) == [
        ("UserMessage", None, "line 3"),  # line 2 is the injected <environment_context>
        ("Turn", None, "line 8"),
        ("ToolCall", "shell", "line 7"),
        ("Turn", None, "line 11"),
        ("ToolCall", "shell", "line 10"),
        ("ModelText", None, "line 14"),
        ("Turn", None, "line 16"),
        ("ToolCall", "apply_patch", "line 15"),
        ("Retry", None, "line 18"),
        ("Turn", None, "line 20"),
        ("ToolCall", "local_shell", "line 19"),
        ("ModelText", None, "line 23"),
        ("ToolCall", "shell", "line 22"),  # never answered: emitted at the end
    ]
    assert session.skipped == []


def test_calls_join_outputs_by_call_id_and_read_exit_codes():
    _, events = events_of(ROLLOUT)
    found = {c.call_id: c for c in calls(events)}
    a1 = found["call_A1"]
    assert a1.input == {
        "command": ["bash", "-lc", "rg -n health src"],
        "workdir": "/home/dev/api",
        "timeout_ms": 120000,
    }
    assert a1.result.startswith("src/routes.py:12:")  # the older JSON output, unwrapped
    assert a1.error is False
    assert found["call_A2"].error is True  # "Exit code: 1"
    assert found["call_A4"].error is False and found["call_A4"].input["command"][-1].startswith("python -m pytest")
    assert found["call_A5"].result is None
    assert found["call_A1"].at == iso_seconds("2025-10-02T14:00:05.265Z")  # the output's time


def test_apply_patch_changes_the_files_it_names_unless_rejected():
    _, events = events_of(ROLLOUT)
    patch = next(c for c in calls(events) if c.name == "apply_patch")
    assert (patch.error, patch.changed) == (False, ("src/routes.py",))
    _, looping = events_of(fixture("codex", "looping.jsonl"))
    assert {(c.error, c.changed) for c in calls(looping)} == {(True, ())}  # "verification failed", no exit code


def test_tokens_from_token_count_events():
    session, events = events_of(ROLLOUT)
    assert [e.tokens for e in events if isinstance(e, Turn)] == [5200, 5800, 6100, 6500]
    assert [c.tokens for c in calls(events)] == [5200, 5800, 6100, 6500, None]
    assert session.tokens == 23600  # the last total_token_usage


def test_repeated_token_counts_are_not_new_turns():
    parser = codex.StreamParser()
    line = {
        "timestamp": "2025-10-02T14:00:00Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"total_token_usage": {"total_tokens": 900}, "last_token_usage": {"total_tokens": 900}},
        },
    }
    assert len(parser.feed(line)) == 1
    assert parser.feed(line) == []  # the same totals again (a rate-limit update)
    assert parser.feed({**line, "payload": {"type": "token_count", "info": None}}) == []
    assert parser.tokens == 900


def test_exec_command_end_supplies_a_missing_exit_code():
    parser = codex.StreamParser()
    item = {"type": "function_call", "name": "shell", "arguments": '{"command": ["make"]}', "call_id": "c1"}
    wrap = lambda kind, payload: {"timestamp": "2025-10-02T14:00:00Z", "type": kind, "payload": payload}
    parser.feed(wrap("response_item", item), "line 1")
    parser.feed(wrap("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 2}))
    [call] = parser.feed(
        wrap("response_item", {"type": "function_call_output", "call_id": "c1", "output": "make: *** No targets."})
    )
    assert (call.error, call.input, call.source_ref) == (True, {"command": ["make"]}, "line 1")


@pytest.mark.parametrize(
    "output, error",
    [
        ('{"output": "ok", "metadata": {"exit_code": 0, "duration_seconds": 0.2}}', False),
        ('{"output": "boom", "metadata": {"exit_code": 127, "duration_seconds": 0.0}}', True),
        ("Exit code: 0\nWall time: 3 seconds\nOutput:\nExit code: 1 printed by the program", False),
        ("Chunk ID: 7a1f\nWall time: 0.5 seconds\nProcess exited with code 1\nOutput:\nnope", True),
        ({"content": "sandbox denied", "success": False}, True),
        ([{"type": "input_text", "text": "from an MCP tool"}], False),
    ],
)
def test_output_forms(output, error):
    parser = codex.StreamParser()
    parser.feed({"type": "function_call", "name": "t", "arguments": "{}", "call_id": "c"})
    [call] = parser.feed({"type": "function_call_output", "call_id": "c", "output": output})
    assert call.error is error


def test_a_call_loopwatchs_hook_refused_is_an_attempt_it_never_ran():
    # As Codex 0.171.0 writes it in a rollout (../shared/clients/codex/rollouts/c4-*).
    parser = codex.StreamParser()
    parser.feed({"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls x"}', "call_id": "c"})
    refused = "Command blocked by PreToolUse hook: loopwatch stopped the run: you ran `ls x` 3 times"
    [attempt] = parser.feed({"type": "function_call_output", "call_id": "c", "output": refused})
    assert attempt == Attempt("exec_command", {"cmd": "ls x"}, call_id="c")
    # Another hook's refusal is a call's failed output, as before.
    parser.feed({"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls y"}', "call_id": "d"})
    other = "Command blocked by PreToolUse hook: policy says no"
    [call] = parser.feed({"type": "function_call_output", "call_id": "d", "output": other})
    assert isinstance(call, ToolCall) and call.result == other


def test_exec_json():
    session, events = events_of(EXEC)
    assert (session.session, session.meta["variant"]) == ("0199b0c1-d2e3-7f40-9152-63748596a7b8", "exec-json")
    assert [(c.name, c.source_ref, c.error, c.changed) for c in calls(events)] == [
        ("command_execution", "line 4", True, ()),  # ref: its item.started line
        ("file_change", "line 6", False, ("/src/proj/src/main.rs",)),
        ("command_execution", "line 7", False, ()),
        ("docs.search", "line 9", False, ()),
    ]
    assert calls(events)[0].input == {"command": "bash -lc 'cargo build'"}
    assert [type(e).__name__ for e in events][-2:] == ["ModelText", "Turn"]
    assert session.tokens == 24110 + 812
    assert all(e.at is None for e in events)


def test_older_rollout_of_bare_items():
    session, events = events_of(fixture("codex", "legacy.jsonl"))
    assert session.session == "4c0b8d3e-1f2a-4b5c-9d6e-7f8091a2b3c4"
    assert shape(events) == [
        ("UserMessage", None, "line 2"),
        ("ToolCall", "shell", "line 4"),
        ("ModelText", None, "line 6"),
    ]
    assert calls(events)[0].result == "README.md\nsrc\n"


def test_broken_lines_are_skipped_counted_and_the_rest_read(tmp_path):
    lines = open(ROLLOUT, "rb").read().splitlines(keepends=True)
    lines.insert(4, b"[1, 2, 3]\n")  # line 5: JSON, but not an object
    lines.insert(9, b'{"timestamp": "2025-10-02T14:00:05Z", "type": \n')  # line 10
    path = tmp_path / "rollout-broken.jsonl"
    path.write_bytes(b"".join(lines))
    session, events = events_of(str(path))
    assert session.skipped == ["line 5: not a JSON object", "line 10: not JSON"]
    assert [c.call_id for c in calls(events)] == [c.call_id for c in calls(events_of(ROLLOUT)[1])]


def test_a_cut_file_keeps_the_unanswered_call(tmp_path):
    data = open(ROLLOUT, "rb").read()
    line_13 = data.index(b'"call_id":"call_A2","output"')
    path = tmp_path / "rollout-cut.jsonl"
    path.write_bytes(data[:line_13])
    session, events = events_of(str(path))
    assert session.skipped == ["line 13: not JSON (cut off)"]
    assert [(c.call_id, c.result) for c in calls(events)][-1] == ("call_A2", None)


@pytest.mark.parametrize("content", [b"", b"garbage\n", b'{"type": "message", "role": "user"}\n{"a": 1}\n'])
def test_not_a_codex_file_raises_a_clear_error(tmp_path, content):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(ReadError, match="not a Codex rollout"):
        list(codex.read(str(path)))


def test_a_claude_session_is_refused():
    with pytest.raises(ReadError, match="not a Codex rollout"):
        list(codex.read(fixture("claude-code", "session.jsonl")))


@pytest.mark.parametrize("name", ["rollout.jsonl", "looping.jsonl", "exec.jsonl", "exec-looping.jsonl", "legacy.jsonl"])
def test_sniff_claims_its_own_files(name):
    path = fixture("codex", name)
    assert claims("codex", path)
    assert detect(path, open(path, "rb").read()) == "codex"


def test_sniff_reads_a_first_line_longer_than_the_head():
    line = orjson.dumps(
        {
            "timestamp": "2025-10-02T14:00:00Z",
            "type": "session_meta",
            "payload": {"id": "x", "instructions": "y" * 70000},
        }
    )
    assert claims("codex", "rollout.jsonl", line[:65536])


@pytest.mark.parametrize("path", foreign_fixtures("codex") + corpus_samples())
def test_sniff_leaves_other_formats_alone(path):
    assert not claims("codex", path)


def test_sniff_leaves_the_generic_events_jsonl_alone():
    assert not claims("codex", "events.jsonl", EVENTS_JSONL)


@pytest.mark.parametrize("name, ref", [("looping.jsonl", "line 13"), ("exec-looping.jsonl", "line 9")])
def test_a_looping_session_is_stopped(name, ref):
    stop = stop_of(one_session(fixture("codex", name)))
    assert stop is not None and stop.action is Action.STOP
    assert stop.source_ref == ref  # the 4th identical call


def test_healthy_sessions_are_not_stopped():
    assert stop_of(one_session(ROLLOUT)) is None
    assert stop_of(one_session(EXEC)) is None


def test_stream_parser_fed_line_by_line_gives_what_read_gives():
    for path in (ROLLOUT, EXEC):
        parser = codex.StreamParser()
        events = []
        for number, raw in enumerate(open(path, "rb"), 1):
            events.extend(parser.feed(orjson.loads(raw), f"line {number}"))
        events.extend(parser.finish())
        assert events == list(one_session(path))
    assert parser.feed(["not", "a", "dict"]) == []


def test_stream_parser_attempts_come_before_their_calls():
    parser = codex.StreamParser(attempts=True)
    events = []
    for number, raw in enumerate(open(fixture("codex", "exec-looping.jsonl"), "rb"), 1):
        events.extend(parser.feed(orjson.loads(raw), f"line {number}"))
    kinds = [type(e) for e in events if isinstance(e, (Attempt, ToolCall))]
    assert kinds == [Attempt, ToolCall] * 6
    assert events[0] == Attempt(
        "command_execution", {"command": "bash -lc 'npm test'"}, call_id="item_0", source_ref="line 3"
    )


def test_stream_errors_are_retries():
    _, events = events_of(ROLLOUT)
    [retry] = [e for e in events if isinstance(e, Retry)]
    assert retry.reason.startswith("stream disconnected")
