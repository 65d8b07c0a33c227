"""`correction`: the harness gives one correction again and again."""

from __future__ import annotations

from loopwatch import Action, Correction, ModelText, UserMessage

from core_support import actions, bash, call, feed, only, severity, strongest


def test_one_correction_n_times_in_a_row_is_a_loop():
    m = only("correction", {"threshold": 3})
    verdicts = feed(m, [Correction("No such tool: str_replace_editor") for _ in range(3)])
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "correction"
    assert verdicts[1].action is Action.WARN


def test_the_same_invented_tool_scattered_between_other_calls_ends_the_run():
    # "no such tool: X" for the same X, in a row or not: the same rejected call resubmitted
    m = only("correction", {"threshold": 3})
    events = []
    for i in range(4):
        events += [Correction("No such tool: str_replace_editor"), bash(f"ls {i}", f"listing {i}"), ModelText("Ok.")]
    verdicts = [v for v in feed(m, events) if v.signal == "correction"]
    assert [v.action for v in verdicts if v.action.rank >= Action.NUDGE.rank] == [Action.NUDGE, Action.STOP]
    assert verdicts[-1].finding.grade == "proof"


def test_an_invented_tool_refused_in_a_tool_result_counts_as_its_correction():
    # Claude Code answers a call to a tool that does not exist with an error result
    m = only("correction", {"threshold": 3})
    refusal = "<tool_use_error>Error: No such tool available: FileSearch</tool_use_error>"
    events = []
    for i in range(4):
        events += [call("FileSearch", {"q": f"x{i}"}, refusal, error=True), bash(f"ls {i}", f"listing {i}")]
    assert Action.STOP in actions(feed(m, events))


def test_generic_format_corrections_scattered_are_at_most_a_warning():
    # the gemini-3-pro sessions draw up to 15 over a long run, and solve their task
    m = only("correction", {"threshold": 3}, evidence={"confirm": 1, "second_signal": True})
    events = []
    for i in range(15):
        events += [Correction("Please always provide EXACTLY ONE action."), bash(f"ls {i}", f"listing {i}")]
    assert strongest(feed(m, events)) is Action.WARN


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
    feed(
        m, [Correction("No such tool: X"), Correction("No such tool: X"), UserMessage(), Correction("No such tool: X")]
    )
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


def test_format_corrections_in_a_row_nudge_once_and_never_stop_even_corroborated():
    # In the shared corpus every session with many format corrections in a row (up to 8,
    # and the one runaway, 9) solved its task: the harness corrects, the model recovers.
    m = only("correction", {"threshold": 3}, evidence={"confirm": 1, "second_signal": True})
    verdicts = feed(m, [Correction("Please always provide EXACTLY ONE action.") for _ in range(12)])
    assert [v.action for v in verdicts if v.action.rank >= Action.NUDGE.rank] == [Action.NUDGE]
    assert verdicts[2].action is Action.NUDGE and verdicts[2].finding.grade == "suspicion"
