"""`unchanged`: one check giving the identical result across edits."""

from __future__ import annotations

from core_support import actions, bash, call, feed, only

from loopwatch import Action


def edit(n: int):
    return call("Edit", {"file_path": "app.py", "old": f"v{n}", "new": f"v{n + 1}"}, "ok", changed=["app.py"])


def check(result: str = "AssertionError: url('') != url('a')"):
    return bash("pytest -x tests/test_css.py", result, error=True)


def test_the_identical_result_after_each_of_three_edits_nudges():
    m = only("unchanged", {"rounds": 3})
    verdicts = feed(m, [check(), edit(1), check(), edit(2), check()])
    assert actions(verdicts)[:4] == [Action.ALLOW] * 4  # no warning before the nudge
    assert verdicts[4].action is Action.NUDGE and verdicts[4].signal == "unchanged"
    assert (
        verdicts[4].description
        == "the same Bash call gave the identical result 3 times, with files written between over 4s"
    )
    assert "your edits are not changing what `pytest -x tests/test_css.py` says" in verdicts[4].message


def test_a_result_that_moves_is_progress():
    m = only("unchanged", {"rounds": 3})
    verdicts = feed(
        m,
        [check("a b c failed"), edit(1), check("b c failed"), edit(2), check("c failed"), edit(3), check("b c failed")],
    )
    assert Action.NUDGE not in actions(verdicts) and Action.WARN not in actions(verdicts)


def test_without_a_write_between_it_is_not_a_round():
    # Re-running a check without editing is `repeat`'s business, not this signal's.
    m = only("unchanged", {"rounds": 3})
    read = call("Read", {"file_path": "app.py"}, "body")
    verdicts = feed(m, [check(), read, check(), read, check(), read, check()])
    assert Action.NUDGE not in actions(verdicts) and Action.WARN not in actions(verdicts)
    # and it does not break a streak either
    verdicts = feed(only("unchanged", {"rounds": 3}), [check(), edit(1), check(), check(), edit(2), check()])
    assert verdicts[-1].action is Action.NUDGE


def test_a_writer_tool_counts_as_a_write_without_changed_files():
    m = only("unchanged", {"rounds": 3}, tools={"restyle": {"role": "writer"}})
    restyle = [call("restyle", {"file_path": "app.css", "n": i}, "Successfully modified file") for i in range(3)]
    verdicts = feed(m, [check(), restyle[0], check(), restyle[1], check()])
    assert verdicts[-1].action is Action.NUDGE
    # the same calls with no role: nothing is known to have been written
    verdicts = feed(only("unchanged", {"rounds": 3}), [check(), restyle[0], check(), restyle[1], check()])
    assert Action.NUDGE not in actions(verdicts)
    # a writer by default (`config.WRITERS`) needs no role
    replace = [call("replace", {"file_path": "app.css", "n": i}, "Successfully modified file") for i in range(3)]
    verdicts = feed(only("unchanged", {"rounds": 3}), [check(), replace[0], check(), replace[1], check()])
    assert verdicts[-1].action is Action.NUDGE


def test_it_nudges_and_never_blocks_or_stops_even_calibrated():
    m = only("unchanged", {"rounds": 3}, evidence={"confirm": 1, "second_signal": True})
    events = [check()]
    for n in range(12):
        events += [edit(n), check()]
    verdicts = feed(m, events)
    assert Action.NUDGE in actions(verdicts)
    assert Action.STOP not in actions(verdicts) and Action.BLOCK not in actions(verdicts)


def test_as_shipped_the_fifth_identical_result_across_edits_nudges():
    # 5 runs, chosen out of fold with a margin (`labels/choose_nudges.py`).
    verdicts = feed(
        only("unchanged"), [check(), edit(1), check(), edit(2), check(), edit(3), check(), edit(4), check()]
    )
    assert actions(verdicts) == [Action.ALLOW] * 8 + [Action.NUDGE]
