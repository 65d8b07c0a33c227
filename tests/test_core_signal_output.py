"""Signals over unstructured output, provider retries and streamed text:
`repeated_lines`, `retry_storm`, `chanting`."""

from __future__ import annotations

import pytest

from loopwatch import Action, ModelText, Output, Retry, Turn
from loopwatch._core.signals.repeated_lines import Params as LinesParams

from core_support import bash, feed, only, severity, strongest

# -- repeated_lines ---------------------------------------------------------------------


@pytest.mark.parametrize("repeats", [3, 8])
def test_a_line_repeated_n_times_in_a_row_is_a_loop(repeats):
    m = only("repeated_lines", {"repeats": repeats})
    verdicts = feed(m, [Output(f"Retrying request (attempt {i})...\n") for i in range(repeats)])
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "repeated_lines"
    assert all(v.action.rank < Action.NUDGE.rank for v in verdicts[:-1])


def test_the_default_is_documented_in_params():
    m = only("repeated_lines")
    n = LinesParams().repeats
    verdicts = feed(m, [Output(b"connection refused, retrying\n") for _ in range(n)])
    assert verdicts[-1].action is Action.NUDGE
    assert verdicts[-2].action is not Action.NUDGE


def test_a_cycle_of_lines_with_a_moving_counter_is_a_loop():
    m = only("repeated_lines", {"repeats": 4, "max_period": 5})
    block = 'Traceback (most recent call last):\n  File "app.py", line {n}, in main\nValueError: bad port\n'
    verdicts = feed(m, [Output(block.format(n=100 + i)) for i in range(4)])
    assert verdicts[-1].action is Action.NUDGE
    assert verdicts[-1].finding.period == 3


def test_a_cycle_longer_than_max_period_is_not_a_loop():
    m = only("repeated_lines", {"repeats": 3, "max_period": 5})
    block = "".join(f"step {w} done\n" for w in ("one", "two", "three", "four", "five", "six"))
    feed(m, [Output(block) for _ in range(10)])
    assert severity(m, "repeated_lines") == 0.0


def test_lines_split_over_many_reads_still_repeat():
    m = only("repeated_lines", {"repeats": 4})
    data = "waiting for lock on db.sqlite\r\n" * 4
    verdicts = feed(m, [Output(data[i : i + 7], at=i * 0.5) for i in range(0, len(data), 7)])
    assert strongest(verdicts) is Action.NUDGE


def test_one_burst_of_exact_lines_with_no_failure_only_warns_and_with_one_nudges():
    """One command's output at once (`> hit wall` answers to one batch of moves): data,
    a warning at most. The same burst saying a failure is worth a nudge; neither is
    proof."""
    rows = only("repeated_lines", {"repeats": 8})
    actions = {v.action for v in feed(rows, [Output("> hit wall\n" * 20, at=3.0)])}
    assert Action.WARN in actions and Action.NUDGE not in actions
    failing = only("repeated_lines", {"repeats": 8})
    actions = {v.action for v in feed(failing, [Output("ValueError: bad row\n" * 20, at=3.0)])}
    assert Action.NUDGE in actions and Action.STOP not in actions


def test_progress_bars_never_repeat():
    m = only("repeated_lines", {"repeats": 2})
    frames = "".join(f"Downloading [{'=' * k}>{' ' * (20 - k)}] {k * 5}%\r" for k in range(20)) * 10
    frames += "".join("Downloading [====================] 100%\r" for _ in range(20))
    verdicts = feed(m, [Output(frames[i : i + 64]) for i in range(0, len(frames), 64)])
    assert strongest(verdicts) is Action.ALLOW
    assert severity(m, "repeated_lines") == 0.0


def test_pytest_dots_never_repeat():
    m = only("repeated_lines", {"repeats": 2})
    lines = "".join(f"{'.' * 60} [{p:3d}%]\n" for p in range(1, 100)) + "....F....s....x\n" * 20 + "=" * 70 + "\n"
    assert strongest(feed(m, [Output(lines)])) is Action.ALLOW
    assert severity(m, "repeated_lines") == 0.0


def test_output_lines_never_block():
    m = only("repeated_lines", {"repeats": 2}, profile="attended", stop=True)
    verdicts = feed(m, [Output("same line\n") for _ in range(20)])
    assert Action.BLOCK not in {v.action for v in verdicts}
    assert Action.STOP in {v.action for v in verdicts}


def test_calibration_keeps_the_most_line_repeats():
    m = only("repeated_lines", {"repeats": 50})
    feed(m, [Output("a line\nanother line\n") for _ in range(6)] + [Output("end\n")])
    assert m.calibration()["lines_most"] == 6
    assert m.calibration()["lines_period"] == 2


# -- retry_storm ------------------------------------------------------------------------


def test_retries_in_a_row_spanning_the_window_are_a_storm():
    m = only("retry_storm", {"retries": 5, "window": 60.0})
    verdicts = feed(m, [Retry(reason="529 overloaded") for _ in range(5)], step=20.0)
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "retry_storm"


def test_a_fast_burst_of_retries_is_not_yet_a_storm():
    m = only("retry_storm", {"retries": 5, "window": 60.0})
    feed(m, [Retry() for _ in range(50)], step=0.5)  # 25 s
    assert severity(m, "retry_storm") < 1.0


def test_a_completed_turn_ends_the_streak():
    m = only("retry_storm", {"retries": 3, "window": 10.0})
    feed(m, [Retry(), Retry(), Turn(), Retry(), Retry(), Turn()] * 5, step=20.0)
    assert severity(m, "retry_storm") < 1.0
    assert m.calibration()["retry_longest"] == 2


def test_an_action_between_ends_the_streak():
    m = only("retry_storm", {"retries": 3, "window": 10.0})
    feed(m, [Retry(), Retry(), bash("ls", "a"), Retry(), Retry(), bash("ls", "b")] * 5, step=20.0)
    assert severity(m, "retry_storm") < 1.0


# -- chanting ---------------------------------------------------------------------------


def test_a_passage_repeated_within_one_response_is_chanting():
    m = only("chanting", {"repeats": 4})
    verdicts = feed(m, [ModelText("Let me check the file. ", chunk=True) for _ in range(4)] + [Turn()])
    assert any(v.action is Action.NUDGE and v.signal == "chanting" for v in verdicts)


def test_repeats_across_responses_are_not_chanting():
    m = only("chanting", {"repeats": 3})
    feed(m, [ModelText("Let me check the file. I will look again.") for _ in range(10)])
    assert severity(m, "chanting") < 1.0


def test_repeated_code_tables_and_bullet_lists_are_not_chanting():
    m = only("chanting", {"repeats": 3})
    text = (
        "Here is the diff.\n```\nx = 1\nx = 1\nx = 1\nx = 1\n```\n"
        + "| file | status |\n" * 6
        + "- check the file\n" * 6
        + "That is all.\n"
    )
    feed(m, [ModelText(text)])
    assert "chanting" not in m.strongest


def test_a_numbered_checklist_is_not_chanting():
    m = only("chanting", {"repeats": 4})
    feed(m, [ModelText("Status:\n" + "".join(f"{i}. Done\n" for i in range(1, 9)))])
    assert "chanting" not in m.strongest


# -- what a raw console can prove --------------------------------------------------------

ACCESS_LOG = (
    "\x1b[92m{t} - openhands:INFO\x1b[0m: local_runtime.py:340 - [runtime 77bbf874-e8b1] Server: "
    'INFO:     127.0.0.1:{port} - "POST /execute_action HTTP/1.1" 200 OK\n'
)


def test_a_log_of_progress_alike_only_once_numbers_are_masked_only_warns():
    """OpenHands' runtime access log, one line per action, each `200 OK` (the shape
    that stopped 95 of 110 solved Terminal-Bench runs, then nudged 105): a warning for
    the person, never a nudge for the model, never a stop."""
    m = only("repeated_lines", {"repeats": 8})
    lines = [Output(ACCESS_LOG.format(t=f"19:30:{i:02d}", port=46000 + i * 7), at=i * 10.0) for i in range(60)]
    actions = {v.action for v in feed(m, lines)}
    assert Action.WARN in actions and Action.NUDGE not in actions and Action.STOP not in actions
    assert "alike once numbers are masked" in m.strongest["repeated_lines"].description


@pytest.mark.parametrize(
    "template", ["ConnectionRefusedError: 127.0.0.1:{}", "Error: connect ECONNREFUSED 127.0.0.1:{}"]
)
def test_a_masked_repeat_with_a_failure_in_it_nudges_but_never_stops(template):
    """The same failure with a moving number (a port, a timeout) is worth a nudge;
    masked, it is still no proof."""
    m = only("repeated_lines", {"repeats": 8})
    lines = [Output(template.format(46000 + i * 7) + "\n", at=i * 10.0) for i in range(60)]
    actions = {v.action for v in feed(m, lines)}
    assert Action.NUDGE in actions and Action.STOP not in actions


def test_a_calibrated_profile_lets_masked_repeats_stop():
    m = only("repeated_lines", {"repeats": 8, "masked_can_stop": True})
    lines = [Output(ACCESS_LOG.format(t=f"19:30:{i:02d}", port=46000 + i * 7), at=i * 10.0) for i in range(60)]
    assert Action.STOP in {v.action for v in feed(m, lines)}


def test_an_exact_repeat_over_time_stops_but_one_burst_of_it_does_not():
    over_time = only("repeated_lines", {"repeats": 8})
    verdicts = feed(over_time, [Output("Could not resolve host: api.example.com\n", at=i * 2.0) for i in range(20)])
    assert Action.STOP in {v.action for v in verdicts}
    # a maze's rows in an assertion diff: one command's output, all at once
    burst = only("repeated_lines", {"repeats": 8})
    verdicts = feed(burst, [Output("E         ##################\n" * 40, at=3.0)])
    assert Action.STOP not in {v.action for v in verdicts}
    assert "(close together: too quick for an agent's rounds)" in burst.strongest["repeated_lines"].description


def test_a_retry_message_stops_even_in_a_burst():
    m = only("repeated_lines", {"repeats": 8})
    lines = [Output(f"Request failed (attempt {i}), retrying in 0.{i % 10}s\n", at=i * 0.005) for i in range(20)]
    assert Action.STOP in {v.action for v in feed(m, lines)}


def test_a_failing_cycle_over_time_stops_but_a_listing_of_failures_does_not():
    cycle = only("repeated_lines", {"repeats": 8})
    rounds = [
        Output(f"[step {i}] running tests/test_parser.py\nE   AssertionError: expected {i}\n", at=i * 3.0)
        for i in range(20)
    ]
    assert Action.STOP in {v.action for v in feed(cycle, rounds)}
    # one line per failed test, numbers masked: a pytest summary, not a loop
    listing = only("repeated_lines", {"repeats": 8})
    rows = [Output(f"FAILED tests/test_cases.py::test_case_{i} - AssertionError\n", at=i * 3.0) for i in range(20)]
    assert Action.STOP not in {v.action for v in feed(listing, rows)}


def test_min_span_must_be_seconds():
    from loopwatch import ConfigError

    for bad in (-1.0, float("nan")):
        with pytest.raises(ConfigError, match="min_span"):
            only("repeated_lines", {"min_span": bad})


# -- time: a heartbeat is waiting ----------------------------------------------------------


def test_a_heartbeat_line_every_0_8_s_only_warns_however_long():
    m = only("repeated_lines", {"repeats": 8})
    beats = [Output("Waiting for the model to respond...\n", at=i * 0.8) for i in range(200)]
    verdicts = feed(m, beats)
    assert strongest(verdicts) is Action.WARN
    assert "a heartbeat, waiting" in m.strongest["repeated_lines"].description


def test_a_flood_of_one_line_over_time_still_stops():
    """Copies read together (a tight loop printing), the reads going on: not a heartbeat."""
    m = only("repeated_lines", {"repeats": 8})
    reads = [Output("Waiting for the model to respond...\n" * 50, at=i * 0.8) for i in range(20)]
    assert Action.STOP in {v.action for v in feed(m, reads)}


def test_a_line_alone_at_the_pace_of_an_agents_rounds_still_stops():
    m = only("repeated_lines", {"repeats": 8})
    high = LinesParams().beat_max
    lines = [Output("Waiting for the model to respond...\n", at=i * high) for i in range(20)]
    assert Action.STOP in {v.action for v in feed(m, lines)}


def test_a_failing_line_every_0_8_s_is_no_heartbeat():
    m = only("repeated_lines", {"repeats": 8})
    lines = [Output("Error: connect ECONNREFUSED 127.0.0.1:5432\n", at=i * 0.8) for i in range(20)]
    assert Action.STOP in {v.action for v in feed(m, lines)}


def test_a_heartbeat_between_two_other_lines_is_a_cycle_not_a_heartbeat():
    """Only a line alone is a heartbeat: a two-line cycle repeated exactly over time stays proof."""
    m = only("repeated_lines", {"repeats": 8})
    lines = [Output("Waiting for the model to respond...\nchecking job 7\n", at=i * 0.8) for i in range(20)]
    assert Action.STOP in {v.action for v in feed(m, lines)}
