"""`loopwatch.rollouts`: a batch scored in process, and verl's reward function with loop fields beside the reward."""

from __future__ import annotations

import contextlib
import io
import sys
import types
from pathlib import Path

import pytest

from loopwatch.rollouts import compute_score, loop_fields, score, score_one, with_loop_fields
from docs_support import section

PAGE = Path(__file__).resolve().parent.parent / "docs" / "rollouts.md"

LOOP = (
    '<tool_call>{"name": "run", "arguments": {"cmd": "pytest -x"}}</tool_call>user\n'
    "<tool_response>1 failed</tool_response>\nassistant\n"
) * 6


def test_the_documented_example_runs_and_prints_what_the_page_says():
    (block,) = [b for b in section(PAGE, "RL rollouts") if b.lang == "python"]
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(block.text, str(PAGE), "exec"), scope)  # noqa: S102 - the page's own example, run as written
    assert out.getvalue() == block.prints
    assert len(scope["kept"]) == 1 and scope["kept"][0] is scope["batch"][1]


def test_the_reward_is_left_as_the_scorer_gave_it_loop_or_not():
    def base(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
        return {"score": 0.75, "acc": True, "seen": (data_source, ground_truth, extra_info, kwargs)}

    scored = with_loop_fields(base)
    looping = scored("src", LOOP, "gt", {"index": 3}, sandbox_fusion_url="u")
    healthy = scored("src", "The answer is 4.", "gt")
    assert looping["score"] == healthy["score"] == 0.75
    assert looping["acc"] is True and looping["seen"] == ("src", "gt", {"index": 3}, {"sandbox_fusion_url": "u"})
    assert (looping["loop_stopped"], looping["loop_signal"]) == (1, "repeat")
    assert (healthy["loop_stopped"], healthy["loop_signal"], healthy["loop_actions"]) == (0, "", 0)
    assert set(looping) - {"score", "acc", "seen"} == set(healthy) - {"score", "acc", "seen"}
    # numbers and one string, always: verl averages them per data source
    assert all(isinstance(v, int) for k, v in healthy.items() if k.startswith("loop_") and k != "loop_signal")


def test_compute_score_uses_verls_default_scorer(monkeypatch):
    calls = []

    def default_compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
        calls.append((data_source, ground_truth))
        return 1.0

    module = types.ModuleType("verl.utils.reward_score")
    module.default_compute_score = default_compute_score
    for name in ("verl", "verl.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "verl.utils.reward_score", module)
    result = compute_score("openai/gsm8k", LOOP, "42")
    assert calls == [("openai/gsm8k", "42")]
    assert result["score"] == 1.0 and result["loop_stopped"] == 1


def test_compute_score_without_verl_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "verl", None)
    with pytest.raises(ImportError, match="with_loop_fields"):
        compute_score("s", "text", "gt")


def test_a_batch_may_mix_message_lists_strings_and_dicts():
    results = score([LOOP, {"response": LOOP}, {"messages": [{"role": "assistant", "content": "hi"}]}, "plain"])
    assert [r.stopped for r in results] == [True, True, False, False]
    assert [r.session for r in results] == ["0", "1", "2", "3"]
    assert loop_fields(results[0]) == loop_fields(results[1])


def test_structured_tool_calls_are_paired_with_their_answers():
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c", "function": {"name": "ls", "arguments": "{}"}}],
    }
    names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]  # numbers alone are volatile: the same result
    answers = [{"role": "tool", "tool_call_id": "c", "content": f"{name}.py"} for name in names]
    varied = [m for a in answers for m in (call, a)]
    result = score_one(varied)
    assert result.actions == 6 and not result.stopped  # the same call, a new answer each time: progress


def test_anything_else_is_a_type_error():
    with pytest.raises(TypeError, match="rollout"):
        score_one(42)
    with pytest.raises(TypeError, match="messages"):
        score_one({"text": "x"})
