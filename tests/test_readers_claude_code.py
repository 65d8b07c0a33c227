"""The Claude Code reader: session files and `claude -p --output-format stream-json`."""

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

from loopwatch._core.events import Attempt, ModelText, Retry, ToolCall, Turn, UserMessage
from loopwatch._readers import ReadError, claude_code, detect, read
from loopwatch._readers._common import iso_seconds
from loopwatch._core.verdict import Action

SESSION = fixture("claude-code", "session.jsonl")
STREAM = fixture("claude-code", "stream.jsonl")


def test_session_file_events_in_order_with_line_refs():
    session, events = events_of(SESSION)
    assert session.format == "claude-code"
    assert session.session == "5b7c1d2e-8f40-4a6b-9c3d-2e1f0a9b8c7d"
    assert session.meta["variant"] == "session"
    assert shape(events) == [
        ("UserMessage", None, "line 3"),  # line 2 is an isMeta caveat: not the user
        ("ModelText", None, "line 4"),
        ("Turn", None, "line 5"),  # msg_01A spans lines 4-5
        ("ToolCall", "Read", "line 5"),
        ("Turn", None, "line 7"),
        ("ToolCall", "Edit", "line 7"),
        ("Turn", None, "line 9"),
        ("ToolCall", "Bash", "line 9"),  # its result (line 10) came before Grep's (line 11)
        ("ToolCall", "Grep", "line 9"),
        ("Retry", None, "line 12"),
        ("ToolCall", "Glob", "line 15"),  # the sub-agent's call
        ("Turn", None, "line 13"),
        ("ToolCall", "Task", "line 13"),
        ("Turn", None, "line 19"),
        ("ToolCall", "Write", "line 19"),
        ("UserMessage", None, "line 21"),  # a text block from the user
        ("Turn", None, "line 22"),
        ("ToolCall", "Edit", "line 22"),
        ("ModelText", None, "line 24"),
        ("Turn", None, "line 24"),
    ]
    assert session.skipped == []


def test_results_join_by_tool_use_id_not_by_order():
    _, events = events_of(SESSION)
    by_name = {c.name: c for c in calls(events)}
    assert by_name["Bash"].call_id == "toolu_01B"
    assert by_name["Bash"].error is True
    assert "AssertionError" in by_name["Bash"].result
    assert by_name["Grep"].call_id == "toolu_01G"
    assert by_name["Grep"].error is False
    assert by_name["Grep"].result.startswith("Found 2 files")
    assert by_name["Read"].input == {"file_path": "/home/dev/shop/cart.py"}
    assert by_name["Task"].result == "There is a helper: util/money.py defines quantize_cents()."


def test_times_come_from_the_result_line():
    _, events = events_of(SESSION)
    read_call = calls(events)[0]
    assert read_call.at == iso_seconds("2025-07-14T09:00:04.148Z")  # line 6, the tool_result
    assert events[0].at == iso_seconds("2025-07-14T09:00:01.037Z")


def test_edits_change_files_unless_they_fail():
    _, events = events_of(SESSION)
    edits = [(c.name, c.error, c.changed) for c in calls(events) if c.name in claude_code.WRITERS]
    assert edits == [
        ("Edit", False, ("/home/dev/shop/cart.py",)),
        ("Write", True, ()),  # <tool_use_error>: file not read yet
        ("Edit", False, ("/home/dev/shop/cart.py",)),
    ]
    assert all(c.changed == () for c in calls(events) if c.name not in claude_code.WRITERS)


def test_sidechain_calls_carry_their_agent_and_nothing_else_leaks():
    _, events = events_of(SESSION)
    agents = {c.name: c.agent for c in calls(events)}
    assert agents["Glob"] == "sidechain-1"
    assert {a for n, a in agents.items() if n != "Glob"} == {None}
    refs = {e.source_ref for e in events if not isinstance(e, ToolCall)}
    assert not refs & {"line 14", "line 16", "line 17"}  # the sub-agent's prompt, result, text


def test_tokens_counted_once_per_message_and_ridden_by_its_first_call():
    session, events = events_of(SESSION)
    turns = [e.tokens for e in events if isinstance(e, Turn)]
    assert turns == [1240, 1620, 1790, 1960, 2070, 2380, 2530]
    by_name = {c.name: c.tokens for c in calls(events) if c.name != "Edit"}
    assert by_name["Grep"] == 1790 and by_name["Bash"] == 0  # Grep is the message's first tool_use
    assert by_name["Glob"] == 830
    assert session.tokens == sum(turns) + 830 + 925  # + the sub-agent's two messages
    assert session.cost is None


def test_a_sub_agents_own_file_reports_it_as_the_main_agent(tmp_path):
    base = {"isSidechain": True, "agentId": "a3f9c2e1", "sessionId": "s-1", "userType": "external", "version": "2.0.61"}
    lines = [
        {
            **base,
            "parentUuid": None,
            "uuid": "u1",
            "type": "user",
            "timestamp": "2025-11-02T10:00:00Z",
            "message": {"role": "user", "content": "Count the TODOs."},
        },
        {
            **base,
            "parentUuid": "u1",
            "uuid": "u2",
            "type": "assistant",
            "timestamp": "2025-11-02T10:00:02Z",
            "message": {
                "id": "msg_x",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Searching."},
                    {"type": "tool_use", "id": "toolu_x", "name": "Grep", "input": {"pattern": "TODO"}},
                ],
            },
        },
        {
            **base,
            "parentUuid": "u2",
            "uuid": "u3",
            "type": "user",
            "timestamp": "2025-11-02T10:00:03Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "12 matches"}],
            },
        },
    ]
    path = tmp_path / "agent-a3f9c2e1.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    _, events = events_of(str(path))
    assert [type(e) for e in events] == [UserMessage, ModelText, Turn, ToolCall]
    assert calls(events)[0].agent == "a3f9c2e1"


def test_stream_json():
    session, events = events_of(STREAM)
    assert session.meta["variant"] == "stream-json"
    assert session.session == "c0ffee00-1111-4222-8333-444455556666"
    assert session.meta["model"] == "claude-sonnet-4-20250514"
    assert [(c.name, c.source_ref, c.error, c.agent) for c in calls(events)] == [
        ("Bash", "line 3", True, None),
        ("Grep", "line 7", False, "toolu_03T"),  # inside the Task call's sub-agent
        ("Task", "line 5", False, None),
        ("Edit", "line 11", False, None),
    ]
    assert calls(events)[-1].changed == ("/work/app/app/main.py",)
    assert all(e.at is None for e in events)  # stream-json has no timestamps
    assert session.cost == pytest.approx(0.0421)
    assert session.outcome == "success"
    # msg_03A's two lines repeat its usage with a growing output count: counted once, at its largest
    assert [e.tokens for e in events if isinstance(e, Turn)] == [930, 1140, 1345, 1415]


def test_broken_lines_are_skipped_counted_and_the_rest_read(tmp_path):
    lines = open(SESSION, "rb").read().splitlines(keepends=True)
    lines.insert(7, b'{"type": "assistant", "message": {\n')  # becomes line 8
    lines.insert(12, b"\x1b[31mnot json at all\n")  # becomes line 13
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"".join(lines))
    session, events = events_of(str(path))
    assert session.skipped == ["line 8: not JSON", "line 13: not JSON"]
    assert [c.name for c in calls(events)] == [c.name for c in calls(events_of(SESSION)[1])]


def test_a_cut_file_keeps_the_unanswered_call(tmp_path):
    data = open(SESSION, "rb").read()
    cut = data.index(b'"toolu_01E"', data.index(b'"tool_result"', data.index(b'"toolu_01E"')) - 100)
    path = tmp_path / "cut.jsonl"
    path.write_bytes(data[:cut])  # ends inside line 8, the Edit's result
    session, events = events_of(str(path))
    assert session.skipped == ["line 8: not JSON (cut off)"]
    edit = calls(events)[-1]
    assert (edit.name, edit.result, edit.source_ref, edit.changed) == ("Edit", None, "line 7", ())


@pytest.mark.parametrize("content", [b"", b"\n\n", b"not json\n{broken\n", b'{"type": "summary"}\n'])
def test_not_a_claude_file_raises_a_clear_error(tmp_path, content):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(ReadError, match="not a Claude Code session"):
        list(claude_code.read(str(path)))


def test_a_codex_rollout_is_refused():
    with pytest.raises(ReadError, match="not a Claude Code session"):
        list(claude_code.read(fixture("codex", "rollout.jsonl")))


@pytest.mark.parametrize("name", ["session.jsonl", "looping.jsonl", "stream.jsonl", "stream-looping.jsonl"])
def test_sniff_claims_its_own_files(name):
    path = fixture("claude-code", name)
    assert claims("claude-code", path)
    assert detect(path, open(path, "rb").read()) == "claude-code"


def test_sniff_reads_a_first_line_longer_than_the_head():
    big = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "s",
        "uuid": "u",
        "type": "user",
        "message": {"role": "user", "content": "x" * 100_000},
    }
    assert claims("claude-code", "s.jsonl", orjson.dumps(big)[:65536])
    assert not claims("claude-code", "s.jsonl", b'{"note": "' + b"x" * 65536)


@pytest.mark.parametrize("path", foreign_fixtures("claude-code") + corpus_samples())
def test_sniff_leaves_other_formats_alone(path):
    assert not claims("claude-code", path)


def test_sniff_leaves_the_generic_events_jsonl_alone():
    assert not claims("claude-code", "events.jsonl", EVENTS_JSONL)


@pytest.mark.parametrize("name", ["looping.jsonl", "stream-looping.jsonl"])
def test_a_looping_session_is_stopped(name):
    stop = stop_of(one_session(fixture("claude-code", name)))
    assert stop is not None and stop.action is Action.STOP
    assert stop.source_ref == "line 8"  # the 4th identical call


def test_a_healthy_session_is_not_stopped():
    assert stop_of(one_session(SESSION)) is None
    assert stop_of(one_session(STREAM)) is None


def test_stream_parser_fed_line_by_line_gives_what_read_gives():
    parser = claude_code.StreamParser()
    events = []
    for number, raw in enumerate(open(STREAM, "rb"), 1):
        events.extend(parser.feed(orjson.loads(raw), f"line {number}"))
    events.extend(parser.finish())
    assert events == list(one_session(STREAM))
    assert (parser.session_id, parser.outcome) == ("c0ffee00-1111-4222-8333-444455556666", "success")
    assert parser.feed("not a dict") == [] and parser.feed(None) == []


def test_stream_parser_attempts_come_before_their_calls():
    parser = claude_code.StreamParser(attempts=True)
    events = []
    for number, raw in enumerate(open(fixture("claude-code", "stream-looping.jsonl"), "rb"), 1):
        events.extend(parser.feed(orjson.loads(raw), f"line {number}"))
    kinds = [type(e) for e in events if isinstance(e, (Attempt, ToolCall))]
    assert kinds == [Attempt, ToolCall] * 7
    first = next(e for e in events if isinstance(e, Attempt))
    assert (first.name, first.call_id, first.source_ref) == ("Edit", "toolu_040", "line 2")


def test_stream_parser_finish_returns_unanswered_calls_and_the_open_turn():
    parser = claude_code.StreamParser()
    assert parser.feed({"type": "system", "subtype": "init", "session_id": "s"}) == []
    opened = parser.feed(
        {
            "type": "assistant",
            "session_id": "s",
            "message": {
                "id": "m1",
                "role": "assistant",
                "usage": {"input_tokens": 10, "output_tokens": 5},
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "sleep 600"}}],
            },
        },
        "line 2",
    )
    assert opened == []
    rest = parser.finish()
    assert [type(e) for e in rest] == [Turn, ToolCall]
    assert (rest[1].result, rest[1].source_ref, rest[1].tokens) == (None, "line 2", 15)
    assert parser.finish() == []


def test_api_errors_are_retries():
    parser = claude_code.StreamParser()
    out = parser.feed(
        {
            "type": "system",
            "subtype": "api_error",
            "uuid": "u",
            "sessionId": "s",
            "error": {"message": "Overloaded"},
            "retryAttempt": 2,
        },
        "line 9",
    )
    assert out == [Retry(reason="Overloaded", source_ref="line 9")]


def test_read_through_the_registry_by_name():
    sessions = list(read(SESSION, "claude-code"))
    assert [s.session for s in sessions] == ["5b7c1d2e-8f40-4a6b-9c3d-2e1f0a9b8c7d"]


def test_read_from_a_stream_as_from_stdin():
    import io

    stream = io.BufferedReader(io.BytesIO(open(STREAM, "rb").read()))
    [session] = list(read("-", stream=stream))
    assert session.format == "claude-code"
    assert [c.name for c in calls(list(session))] == ["Bash", "Grep", "Task", "Edit"]
