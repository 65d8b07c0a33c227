"""`text_only`: automatic prompts answered with text only, in a row."""

from __future__ import annotations

from core_support import actions, bash, feed, only

from loopwatch import Action, ModelText, Output, UserMessage


def replies(n: int) -> list:
    return [x for _ in range(n) for x in (ModelText("The task is complete."), UserMessage())]


def test_seven_prompts_answered_with_text_only_nudge_and_never_stop():
    m = only("text_only", {"threshold": 7})
    verdicts = feed(m, replies(30))
    prompts = [v for v in verdicts[1::2]]
    assert [v.action for v in prompts[:6]] == [Action.ALLOW] * 6
    assert prompts[6].action is Action.NUDGE
    assert prompts[6].signal == "text_only"
    assert prompts[6].description == "7 prompts in a row were answered with text only and no tool call"
    assert prompts[13].action is Action.NUDGE  # again at each multiple, not at every prompt
    assert prompts[7].action is Action.ALLOW
    assert Action.STOP not in actions(verdicts) and Action.BLOCK not in actions(verdicts)


def test_a_tool_call_ends_the_streak():
    m = only("text_only", {"threshold": 7})
    verdicts = feed(m, replies(5) + [bash("ls", "a.py")] + replies(5))
    assert all(v.action is Action.ALLOW for v in verdicts)


def test_typed_lines_with_no_reply_are_no_streak():
    # `loopwatch run` around a terminal agent: each line a person types is a user message,
    # and the agent's answers are output, never a model reply.
    m = only("text_only", {"threshold": 7})
    verdicts = feed(m, [x for i in range(20) for x in (Output(f"answer {i}\n"), UserMessage())])
    assert all(v.action is Action.ALLOW for v in verdicts)


def test_other_signals_still_forget_their_streaks_at_a_user_message():
    m = only("repeat", {"threshold": 3})
    verdicts = feed(m, [bash("pytest", "1 failed", error=True), UserMessage()] * 4)
    assert all(v.action is Action.ALLOW for v in verdicts)
