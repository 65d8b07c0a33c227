"""`reverify`: the task declared complete again and again, with more checks between."""

from __future__ import annotations

from core_support import actions, bash, call, feed, only

from loopwatch import Action, ModelText, UserMessage


def done(name: str = "mark_task_complete"):
    return call(name, {}, "")


def rounds(n: int, name: str = "mark_task_complete") -> list:
    """`n` rounds of: cat the answer, curl the page, declare the task complete."""
    return [
        x for _ in range(n) for x in (bash("cat /app/result.txt", "42"), bash("curl -s localhost", "ok"), done(name))
    ]


def test_the_third_claim_after_more_checks_nudges_and_never_blocks_or_stops():
    m = only("reverify", {"rounds": 3})
    verdicts = feed(m, rounds(6))
    claims = verdicts[2::3]
    assert [v.action for v in claims[:2]] == [Action.ALLOW] * 2  # nothing said before: no warning either
    assert claims[2].action is Action.NUDGE
    assert claims[2].signal == "reverify"
    assert (
        claims[2].description == "the task was declared complete 3 times (mark_task_complete), checked again after each"
    )
    assert Action.STOP not in actions(verdicts) and Action.BLOCK not in actions(verdicts)
    assert m.calibration()["reverify_most"] == 6


def test_the_confirmation_right_after_a_claim_is_the_same_round():
    # terminus asks for a second mark_task_complete to confirm: claim, confirm, twice over, is 2 rounds
    m = only("reverify", {"rounds": 3})
    verdicts = feed(m, (rounds(1) + [done()]) * 2)
    assert all(v.action is Action.ALLOW for v in verdicts)
    assert m.calibration()["reverify_most"] == 2
    assert feed(m, rounds(1))[-1].action is Action.NUDGE  # the third round


def test_a_file_written_since_the_last_claim_starts_the_count_again():
    m = only("reverify", {"rounds": 3})
    edit = call("Edit", {"file_path": "a.py", "old": "x", "new": "y"}, "ok", changed=["a.py"])
    verdicts = feed(m, rounds(2) + [edit] + rounds(2))
    assert all(v.action is Action.ALLOW for v in verdicts)
    assert feed(m, rounds(1))[-1].action is Action.NUDGE


def test_the_count_survives_the_harness_prompts():
    # an "are you sure?" or "please continue" arrives as a user message: the streak spans it
    m = only("reverify", {"rounds": 3})
    prompt = [ModelText("The task is complete."), UserMessage()]
    verdicts = feed(m, rounds(1) + prompt + rounds(1) + prompt + rounds(1))
    assert verdicts[-1].action is Action.NUDGE


def test_other_tools_and_other_completion_tools_are_no_rounds():
    m = only("reverify", {"rounds": 3})
    verdicts = feed(m, rounds(3, name="done_thinking"))  # not a completion tool
    assert all(v.action is Action.ALLOW for v in verdicts)
    m = only("reverify", {"rounds": 3})
    verdicts = feed(m, rounds(1, "finish") + rounds(1, "submit") + rounds(1, "finish"))
    assert all(v.action is Action.ALLOW for v in verdicts)  # another completion tool starts again
    assert feed(only("reverify", {"rounds": 3}), rounds(3, "finish"))[-1].action is Action.NUDGE


def test_as_shipped_the_fourth_claim_nudges():
    # 4 rounds, chosen out of fold with a margin (`labels/choose_nudges.py`): 3 claims
    # with checks between are what one resolved session in five of some harnesses does.
    claims = feed(only("reverify"), rounds(4))[2::3]
    assert [v.action for v in claims] == [Action.ALLOW] * 3 + [Action.NUDGE]
