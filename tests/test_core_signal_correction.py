"""`correction`: the harness gives one correction again and again."""

from __future__ import annotations

from loopwatch import Action, Correction, ModelText, UserMessage

from core_support import bash, feed, only, severity, strongest


def test_one_correction_n_times_in_a_row_is_a_loop():
    m = only("correction", {"threshold": 3})
    verdicts = feed(m, [Correction("No such tool: str_replace_editor") for _ in range(3)])
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "correction"
    assert verdicts[1].action is Action.WARN


def test_one_correction_n_times_not_in_a_row_is_a_loop_too():
    m = only("correction", {"threshold": 3})
    events = []
    for i in range(3):
        events += [Correction("Please always provide EXACTLY ONE action."), bash(f"ls {i}", "x"), ModelText("Ok.")]
    assert any(v.action is Action.NUDGE for v in feed(m, events))


def test_different_corrections_are_counted_apart():
    m = only("correction", {"threshold": 3})
    feed(m, [Correction(msg) for msg in ("No such tool: X", "Provide exactly one action", "Refused: unsafe")] * 2)
    assert severity(m, "correction") < 1.0


def test_numbers_in_a_correction_are_masked():
    m = only("correction", {"threshold": 3})
    verdicts = feed(m, [Correction(f"Output too long ({n} chars); shorten it") for n in (10233, 20481, 7777)])
    assert verdicts[-1].action is Action.NUDGE


def test_a_user_message_resets_the_counts():
    m = only("correction", {"threshold": 3})
    feed(m, [Correction("No such tool: X"), Correction("No such tool: X"), UserMessage(), Correction("No such tool: X")])
    assert m.strongest["correction"].severity < 1.0
    assert m.calibration()["correction_most"] == 2


def test_kinds_tracked_are_bounded():
    m = only("correction", {"threshold": 3})
    feed(m, [Correction(f"No such tool: {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}") for i in range(600)])
    (signal,) = m._signals
    assert len(signal._counts) <= 64


def test_scattered_corrections_nudge_but_never_block_or_stop():
    # A healthy labelled session drew 15 format corrections spread over a long run.
    m = only("correction", {"threshold": 3}, profile="attended", stop=True)
    events = []
    for i in range(15):
        events += [Correction("Please always provide EXACTLY ONE action."), bash(f"ls {i}", "x")]
    assert strongest(feed(m, events)).rank < Action.BLOCK.rank


def test_corrections_in_a_row_may_stop():
    m = only("correction", {"threshold": 3})
    verdicts = feed(m, [Correction("Please always provide EXACTLY ONE action.") for _ in range(4)])
    assert verdicts[2].action is Action.NUDGE and verdicts[3].action is Action.STOP
