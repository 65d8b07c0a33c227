"""The chat reader: OpenAI and Anthropic message lists."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
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

from loopwatch._core.events import ModelText, ToolCall, Turn, UserMessage
from loopwatch._readers import ReadError, chat, detect
from loopwatch._readers.jsonio import keys_at
from loopwatch._core.verdict import Action

OPENAI = fixture("chat", "openai.json")
ANTHROPIC = fixture("chat", "anthropic.json")


def test_openai_messages_in_order_with_refs():
    session, events = events_of(OPENAI)
    assert (session.format, session.session) == ("chat", "conv-7d2f")
    assert shape(events) == [
        ("UserMessage", None, "messages[1]"),  # [0] is the system prompt
        ("Turn", None, "messages[2]"),
        ("ToolCall", "run_shell", "messages[2]"),
        ("ModelText", None, "messages[4]"),
        ("Turn", None, "messages[4]"),
        ("ToolCall", "read_file", "messages[4]"),  # its tool message came first
        ("ToolCall", "run_shell", "messages[4]"),
        ("Turn", None, "messages[7]"),
        ("ToolCall", "run_shell", "messages[7]"),  # the legacy function_call
        ("ModelText", None, "messages[9]"),
        ("Turn", None, "messages[9]"),
        ("UserMessage", None, "messages[10]"),
        ("Turn", None, "messages[11]"),
        ("ToolCall", "write_file", "messages[11]"),  # never answered: emitted at the end
    ]


def test_openai_tool_messages_join_by_tool_call_id():
    _, events = events_of(OPENAI)
    found = {c.call_id: c for c in calls(events)}
    assert found["call_a1"].input == {"cmd": "make build"}  # arguments decoded
    assert found["call_a1"].error is True  # the tool message's is_error
    assert found["call_a2"].result.startswith("ls: cannot access")
    assert found["call_a3"].result.startswith("CC=gcc")
    assert found["call_a4"].result is None
    legacy = calls(events)[3]
    assert (legacy.call_id, legacy.input, legacy.result.endswith("gcc -o app main.o")) == (
        None,
        {"cmd": "./configure && make build"},
        True,
    )


def test_openai_usage_gives_tokens():
    session, events = events_of(OPENAI)
    assert [e.tokens for e in events if isinstance(e, Turn)] == [833, 1038, None, 1230, None]
    assert {c.call_id: c.tokens for c in calls(events)} == {
        "call_a1": 833,
        "call_a3": 0,
        "call_a2": 1038,
        None: None,
        "call_a4": None,
    }
    assert session.tokens == 833 + 1038 + 1230


def test_anthropic_blocks_as_a_bare_list():
    session, events = events_of(ANTHROPIC)
    assert session.session == "anthropic"
    assert shape(events) == [
        ("UserMessage", None, "[0]"),
        ("ModelText", None, "[1]"),
        ("Turn", None, "[1]"),
        ("ToolCall", "grep", "[1]"),
        ("Turn", None, "[3]"),
        ("ToolCall", "edit", "[3]"),
        ("ToolCall", "edit", "[3]"),
        ("UserMessage", None, "[5]"),  # text, not a tool result: the user speaking
        ("ModelText", None, "[6]"),
        ("Turn", None, "[6]"),
    ]
    edits = [(c.call_id, c.error, c.result) for c in calls(events) if c.name == "edit"]
    assert edits == [
        ("toolu_b2", False, "Edited src/api.ts (1 replacement)"),  # text blocks joined
        ("toolu_b3", True, "Permission denied: src/page.tsx is read-only"),
    ]
    assert session.tokens == 692 + 850 + 914


def test_a_non_message_entry_is_skipped_and_counted(tmp_path):
    messages = json.load(open(ANTHROPIC))
    messages.insert(2, ["not", "a", "message"])
    path = tmp_path / "c.json"
    path.write_text(json.dumps(messages))
    session, events = events_of(str(path))
    assert session.skipped == ["[2]: not a message object"]
    assert len(calls(events)) == 3


def test_a_truncated_file_is_a_clear_error(tmp_path):
    path = tmp_path / "c.json"
    path.write_bytes(open(OPENAI, "rb").read()[:700])
    with pytest.raises(ReadError, match="not valid JSON"):
        list(chat.read(str(path)))


@pytest.mark.parametrize("data", [{"conversation": []}, [{"id": 1}, {"id": 2}], "text", {"messages": "no"}])
def test_not_a_chat_file_raises_a_clear_error(tmp_path, data):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReadError, match="not a chat-message list"):
        list(chat.read(str(path)))


@pytest.mark.parametrize("name", ["openai.json", "anthropic.json", "looping.json"])
def test_sniff_claims_its_own_files(name):
    path = fixture("chat", name)
    assert claims("chat", path)
    assert detect(path, open(path, "rb").read()) == "chat"


def test_sniff_a_messages_object_cut_by_the_head():
    data = json.dumps(
        {"model": "gpt-4o", "metadata": {"a": {"b": 1}}, "messages": [{"role": "user", "content": "x" * 70000}]}
    ).encode()
    assert claims("chat", "c.json", data[:65536])


def test_sniff_refuses_a_mini_swe_agent_trajectory_whose_format_key_is_past_the_head():
    data = json.dumps(
        {
            "info": {"exit_status": "Submitted", "submission": "x" * 70000},
            "messages": [{"role": "system", "content": "You are a helpful assistant"}],
            "trajectory_format": "mini-swe-agent-1",
        }
    ).encode()
    assert not claims("chat", "run.json", data[:65536])


@pytest.mark.parametrize("path", foreign_fixtures("chat") + corpus_samples())
def test_sniff_leaves_other_formats_alone(path):
    assert not claims("chat", path)


def test_sniff_leaves_json_lines_alone():
    assert not claims("chat", "events.jsonl", EVENTS_JSONL)
    two_chats = b'{"messages": [{"role": "user", "content": "a"}]}\n{"messages": [{"role": "user", "content": "b"}]}\n'
    assert not claims("chat", "c.jsonl", two_chats)


def test_a_looping_chat_is_stopped():
    stop = stop_of(one_session(fixture("chat", "looping.json")))
    assert stop is not None and stop.action is Action.STOP
    # A chat transcript flags no failure, so the same result is stopped from its 5th copy.
    assert stop.source_ref == "messages[10]"


def test_healthy_chats_are_not_stopped():
    assert stop_of(one_session(OPENAI)) is None
    assert stop_of(one_session(ANTHROPIC)) is None


def test_event_types_are_core_events():
    _, events = events_of(OPENAI)
    assert {type(e) for e in events} == {UserMessage, ModelText, Turn, ToolCall}


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=10), _json_values, max_size=6), st.booleans())
def test_keys_at_finds_the_top_level_keys_of_any_object(obj, pretty):
    data = json.dumps(obj, indent=1 if pretty else None).encode()
    assert keys_at(data, 1) == list(obj)


GEMINI = fixture("chat", "gemini-contents.json")


def test_gemini_contents():
    """The conversation Gemini CLI 0.61.0 sent the model after four identical failing
    calls (what its `/chat save` checkpoints hold): each `functionCall` answered by the
    `functionResponse` of the same id, a failure read from the exit code in its text."""
    session, events = events_of(GEMINI)
    assert session.format == "chat"
    found = calls(events)
    assert [c.name for c in found] == ["run_shell_command"] * 4
    assert all(c.error and "Exit Code: 2" in c.result for c in found)
    assert len({c.result for c in found}) == 1  # the process group of each run is no part of it
    assert [e.source_ref for e in events if isinstance(e, UserMessage)] == ["[0]"]
    assert stop_of(events) is not None


def test_gemini_calls_without_ids_are_answered_in_order(tmp_path):
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"text": "thinking", "thought": True},
                {"functionCall": {"name": "read_file", "args": {"file_path": "a"}}},
                {"functionCall": {"name": "read_file", "args": {"file_path": "b"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
                {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}},
            ],
        },
    ]
    path = tmp_path / "checkpoint-x.json"
    path.write_text(json.dumps(contents))
    _, events = events_of(str(path))
    found = calls(events)
    assert [(c.input, c.result, c.error) for c in found] == [
        ({"file_path": "a"}, "A", False),
        ({"file_path": "b"}, "no such file", True),
    ]
    assert not any(isinstance(e, ModelText) for e in events)  # a thought is not the model's text
