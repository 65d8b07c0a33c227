"""`text_only`: automatic prompts answered with text only, in a row."""

from __future__ import annotations

from core_support import actions, bash, feed, only

from loopwatch import Action, ModelText, Output, UserMessage


def replies(n: int) -> list:
    return [x for _ in range(n) for x in (ModelText("The task is complete."), UserMessage())]


def test_seven_prompts_answered_with_text_only_nudge_once_and_stop_only_corroborated():
    m = only("text_only", {"threshold": 7})
    verdicts = feed(m, replies(30))
    prompts = [v for v in verdicts[1::2]]
    assert [v.action for v in prompts[:6]] == [Action.ALLOW] * 6
    assert prompts[6].action is Action.NUDGE
    assert prompts[6].signal == "text_only"
    assert prompts[6].description == "7 replies in a row were text only, with no tool call"
    # the streak and its rung outlast the prompts it is made of: one nudge, then held
    assert actions(verdicts).count(Action.NUDGE) == 1
    assert Action.STOP not in actions(verdicts) and Action.BLOCK not in actions(verdicts)  # confirm 0: never
    # corroborated by rounds: each report past the nudge (every 7 more prompts) is one
    m = only("text_only", {"threshold": 7}, evidence={"confirm": 2})
    prompts = feed(m, replies(30))[1::2]
    assert prompts[6].action is Action.NUDGE
    assert [v.action for v in prompts[7:20]] == [Action.ALLOW] * 13  # 14th prompt: one round held
    assert prompts[20].action is Action.STOP  # 21st: two rounds past the nudge
    assert prompts[20].signal == "text_only"


def test_replies_with_no_prompt_recorded_between_count_too():
    # a terminal harness re-prompts with the screen, which some recordings drop: the
    # replies follow one another with nothing between
    m = only("text_only", {"threshold": 6})
    verdicts = feed(m, [ModelText(f"Analysis: the container only allows writes to /app ({i}).") for i in range(8)])
    assert [v.action for v in verdicts[:6]] == [Action.ALLOW] * 6
    assert verdicts[6].action is Action.NUDGE  # the 7th reply answers the 6th: 6 rounds
    assert m.calibration()["text_only_most"] == 7
    # a reply, a call, a reply: the model acted in between
    acting = [x for i in range(8) for x in (ModelText(f"Next step {i}."), bash(f"ls /app/{i}", "a.py"))]
    assert all(v.action is Action.ALLOW for v in feed(only("text_only", {"threshold": 6}), acting))


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
