"""The RL rollout readers (verl, SkyRL, rLLM) on fixtures written in their trainers' dump formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwatch._core.events import ModelText, ToolCall, Turn, UserMessage
from loopwatch._readers import HEAD_SIZE, FORMATS, detect, read
from loopwatch._readers._rollout_text import events, messages

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def sessions(path):
    return [(s, list(s.events)) for s in read(str(path))]


@pytest.mark.parametrize(
    "path, fmt",
    [
        ("verl/12.jsonl", "verl"),
        ("skyrl/searchR1_nq.jsonl", "skyrl"),
        ("rllm/episode_hash1a2b3c4d_idtask7_0.json", "rllm"),
        ("rllm/episode_hash9f8e7d6c_idtask9_1.json", "rllm"),
    ],
)
def test_each_dump_is_detected_as_its_format_and_no_other(path, fmt):
    head = (FIXTURES / path).read_bytes()[:HEAD_SIZE]
    assert detect(path, head) == fmt
    others = [name for name in FORMATS if name != fmt and name in ("verl", "skyrl", "rllm")]
    from loopwatch._readers import reader

    assert not any(reader(name).sniff(path, head) for name in others)


def test_verl_lines_are_rollouts_with_their_tool_calls_and_answers():
    found = sessions(FIXTURES / "verl/12.jsonl")
    assert [s.session for s, _ in found] == ["req-a1", "req-a2", "req-a3"]
    assert found[0][0].meta == {"line": 1, "score": 0.0, "step": 12}
    calls = [e for e in found[0][1] if isinstance(e, ToolCall)]
    assert len(calls) == 7
    assert calls[0].name == "code_interpreter" and calls[0].input == {"code": "print(check('grid.txt'))"}
    assert calls[0].result.startswith("Traceback") and calls[0].result.endswith("FileNotFoundError: grid.txt")
    assert calls[0].source_ref == "line 1 turn 0" and calls[1].source_ref == "line 1 turn 2"
    healthy = [e for e in found[1][1] if isinstance(e, ToolCall)]
    assert [c.result for c in healthy] == ["120", "240", "28920"]
    texts = [e.text for e in found[1][1] if isinstance(e, ModelText)]
    assert texts[0] == "Step 1: compute the next value." and texts[-1] == "The answer is \\boxed{28920}."
    assert not any("tool_call" in t or t.startswith("assistant") for t in texts)  # no template residue
    single = found[2][1]
    assert [type(e) for e in single] == [ModelText, Turn]


def test_skyrl_turns_come_from_the_chat_template_and_action_tags_are_calls():
    found = sessions(FIXTURES / "skyrl/searchR1_nq.jsonl")
    calls = [e for e in found[1][1] if isinstance(e, ToolCall)]
    assert [(c.name, c.input) for c in calls] == [
        ("search", "author of The Grand Budapest Hotel"),
        ("search", "Wes Anderson birth year"),
    ]
    assert calls[1].result == "<information>Born May 1, 1969.</information>"
    assert sum(isinstance(e, Turn) for e in found[1][1]) == 3


def test_rllm_one_growing_history_is_read_once_with_its_outcome():
    [(session, evs)] = sessions(FIXTURES / "rllm/episode_hash1a2b3c4d_idtask7_0.json")
    assert (session.session, session.outcome) == ("task7:0", "unresolved")
    calls = [e for e in evs if isinstance(e, ToolCall)]
    assert len(calls) == 6  # not 1 + 2 + ... + 6: the histories overlap
    assert calls[0].input == {"path": "tests/"} and calls[0].result == "1 failed: test_parse (AssertionError)"
    assert calls[-1].result is None  # the last call's answer is not in the episode
    assert calls[0].source_ref == "messages[2]"


def test_rllm_trajectories_of_several_agents_are_sessions_of_their_own():
    found = sessions(FIXTURES / "rllm/episode_hash9f8e7d6c_idtask9_1.json")
    assert [(s.session, s.outcome) for s, _ in found] == [("task9:1/solver", "resolved"), ("task9:1/judge", "resolved")]
    assert [type(e) for e in found[0][1]] == [UserMessage, ModelText, Turn]  # the task, then the reply


def test_several_calls_in_one_turn_get_their_answers_in_order():
    text = (
        '<tool_call>{"name": "read", "arguments": {"f": "a"}}</tool_call>\n'
        '<tool_call>{"name": "read", "arguments": {"f": "b"}}</tool_call>user\n'
        "<tool_response>A</tool_response>\n<tool_response>B</tool_response>\nassistant\nok"
    )
    turns = messages(text)
    assert [t["role"] for t in turns] == ["assistant", "tool", "assistant"]
    calls = [e for e in events(turns) if isinstance(e, ToolCall)]
    assert [(c.input, c.result) for c in calls] == [({"f": "a"}, "A"), ({"f": "b"}, "B")]


def test_a_user_turn_that_answers_no_call_is_a_user_message():
    turns = [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Go on."}]
    assert [type(e) for e in events(turns)] == [ModelText, Turn, UserMessage]


def test_a_tool_call_that_is_not_json_is_kept_as_text():
    calls = [e for e in events(messages("<tool_call>{broken</tool_call>")) if isinstance(e, ToolCall)]
    assert [(c.name, c.input, c.result) for c in calls] == [("tool_call", "{broken", None)]
