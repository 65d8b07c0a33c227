"""`repeat`: the same call with the same result, consecutively."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Action, Attempt, Monitor, ToolCall
from loopwatch._core.finding import PROOF, SUSPICION
from loopwatch._core.signals.repeat import STOP_ROUNDS, failed
from loopwatch._core.signals.repeat import Params as RepeatParams
from loopwatch._core.step import make_step

from core_support import actions, bash, call, feed, looping, only, severity, strongest
from conftest import corpus_label, needs_corpus
from conftest import replay_corpus as replay


@pytest.mark.parametrize("threshold", [2, 3, 5])
def test_the_same_call_and_result_in_a_row_is_a_loop_at_the_threshold(threshold):
    monitor = only("repeat", {"threshold": threshold})
    verdicts = feed(monitor, [bash("pytest -x", "1 failed: test_a", error=True) for _ in range(threshold)])
    assert verdicts[-1].action is Action.NUDGE
    assert verdicts[-1].signal == "repeat"
    assert all(v.action.rank < Action.NUDGE.rank for v in verdicts[:-1])
    finding = verdicts[-1].finding
    assert (finding.repeats, finding.period, finding.tools) == (threshold, 1, ("Bash",))
    assert (finding.started_index, finding.index) == (1, threshold)


def test_the_nudge_names_the_call_and_says_what_to_do():
    monitor = only("repeat", {"threshold": 4})
    verdict = feed(monitor, [bash("pytest -x", "1 failed", error=True) for _ in range(4)])[-1]
    assert "`pytest -x` 4 times" in verdict.message
    assert "same" in verdict.message and "Read the result" in verdict.message


def test_a_changing_result_is_polling_and_restarts_the_streak():
    monitor = only("repeat", {"threshold": 3})
    verdicts = feed(monitor, [bash("kubectl get pods", f"pod-{'abcdefghij'[i]} Pending") for i in range(10)])
    assert strongest(verdicts) is Action.ALLOW
    assert severity(monitor, "repeat") == 0.0


def test_non_consecutive_repeats_never_count():
    """validate, fix, validate, fix, validate is progress, even when the validation
    says the same thing and the fix is not known to have written anything."""
    monitor = only("repeat", {"threshold": 2})
    events = []
    for i in range(20):
        events.append(bash("make check", "2 errors", error=True))
        events.append(call("Edit", {"path": "a.py", "old": f"v{i}", "new": f"v{i + 1}"}, "ok"))
    assert strongest(feed(monitor, events)) is Action.ALLOW
    assert monitor.calibration()["repeat_most"] == 1


def test_rerunning_the_tests_after_different_edits_never_stops():
    events = []
    for i in range(30):
        events.append(bash("pytest -x", "FAILED tests/test_a.py::test_x - assert 1 == 2", error=True))
        events.append(
            call(
                "Edit",
                {"file_path": "src/a.py", "old_string": f"x = {i}", "new_string": f"x = {i + 1}"},
                "The file src/a.py has been updated.",
                changed=["src/a.py"],
            )
        )
    monitor = Monitor()  # every signal on, default thresholds
    verdicts = feed(monitor, events, step=20.0)
    assert strongest(verdicts).rank < Action.BLOCK.rank
    assert monitor.stop is None


def test_a_poller_is_not_counted():
    monitor = only("repeat", {"threshold": 2}, tools={"BashOutput": {"role": "poller"}})
    verdicts = feed(monitor, [call("BashOutput", {"id": "b1"}, "still running") for _ in range(10)])
    assert strongest(verdicts) is Action.ALLOW


def test_a_different_call_breaks_the_streak():
    monitor = only("repeat", {"threshold": 3})
    events = [bash("ls", "a"), bash("ls", "a"), bash("pwd", "/"), bash("ls", "a"), bash("ls", "a")]
    assert strongest(feed(monitor, events)).rank < Action.NUDGE.rank
    assert monitor.calibration()["repeat_most"] == 2


def test_the_description_says_how_long():
    monitor = only("repeat", {"threshold": 3})
    verdict = feed(monitor, [bash("ls", "a") for _ in range(3)], step=30.0)[-1]
    assert verdict.description == "the same Bash call returned the same result 3 times in a row over 1m00s"


def test_threshold_zero_turns_it_off():
    monitor = only("repeat", {"threshold": 0})
    assert strongest(feed(monitor, [bash("ls", "a") for _ in range(50)])) is Action.ALLOW
    assert "repeat" not in {s.name for s in monitor._signals}


def test_a_tool_call_with_a_structured_result_repeats_too():
    monitor = only("repeat", {"threshold": 3})
    events = [ToolCall("Api", {"q": 1, "page": 2}, {"items": [], "total": 0}) for _ in range(3)]
    assert actions(feed(monitor, events))[-1] is Action.NUDGE


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 6), st.data())
def test_property_inserting_a_new_action_breaks_a_repeat(threshold, data):
    stream = [bash("pytest -x", "1 failed", error=True) for _ in range(threshold)]
    at = data.draw(st.integers(1, threshold - 1), label="insert at")
    broken = stream[:at] + [bash("cat tests/test_a.py", "def test_a(): ...")] + stream[at:]
    monitor = only("repeat", {"threshold": threshold})
    assert strongest(feed(monitor, broken)).rank < Action.NUDGE.rank
    assert severity(monitor, "repeat") < 1.0


# -- near copies: a shifted line range with the identical result; the same edit re-applied --

BODY = "    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)\n    public static AEnum fromString(String s) {\n"
VIEW = "[File: /repo/TestCases.java (82 lines total)]\n75:    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)\n"
REJECTED = "Your proposed edit has introduced new syntax error(s).\nERRORS:\n- E999 SyntaxError: invalid syntax\n"


def edit(command: str, result: str = VIEW, *, wrote: bool = True, error: bool = False) -> ToolCall:
    return call("edit", {"command": command}, result, changed=["/repo/TestCases.java"] if wrote else (), error=error)


def rejected(command: str) -> ToolCall:
    return edit(command, REJECTED, wrote=False, error=True)


def test_an_edit_rejected_again_at_a_shifted_range_is_a_near_copy():
    """`edit 1:1`, `edit 1:6`, `edit 1:1`, ... the same body, the same rejection each time
    (the protocol's "resubmitted with a shifted line range"): each a near copy of the
    last, suspicion, so with no calibration it only nudges."""
    monitor = only("repeat", {"threshold": 4})
    verdicts = feed(monitor, [rejected(f"edit 1:{1 + 5 * (i % 2)}\n" + BODY) for i in range(8)])
    got = actions(verdicts)
    assert got.index(Action.NUDGE) == 3 and got.count(Action.NUDGE) == 1 and Action.STOP not in got
    finding = verdicts[3].finding
    assert finding.grade == SUSPICION and (finding.repeats, finding.started_index, finding.index) == (4, 1, 4)
    assert finding.description.startswith("nearly the same edit call got much the same result 4 times in a row")


def test_a_near_copy_stops_when_corroborated_by_one_more_round():
    monitor = only("repeat", {"threshold": 4}, evidence={"confirm": 1})  # the measured calibrations' rule
    got = actions(feed(monitor, [rejected(f"edit 1:{1 + 5 * (i % 2)}\n" + BODY) for i in range(6)]))
    assert got[3] is Action.NUDGE and got[4] is Action.STOP


def test_identical_copies_after_a_near_copy_are_proof_again_and_stop_no_later():
    """A near copy before a run of identical ones never weakens it: once the identical
    run alone reaches the threshold it is proof (uncalibrated, it stops), no later than
    the same run with no near copy before it."""
    first = rejected("edit 1:1\n" + BODY)
    run = [rejected("edit 1:6\n" + BODY) for _ in range(5)]
    with_near = actions(feed(only("repeat", {"threshold": 4}), [first, *run]))
    without = actions(feed(only("repeat", {"threshold": 4}), [bash("ls", "a.py"), *run]))
    assert without.index(Action.STOP) == 5
    assert with_near[:5] == [Action.ALLOW, Action.WARN, Action.ALLOW, Action.NUDGE, Action.STOP]


def test_applied_edits_that_differ_in_a_number_pair_are_no_near_copies():
    """A success's result has its digits masked: the same body applied at `10:10`, then
    `11:11`, ... (a sweep through the file) masks alike and comes back alike ("File
    updated", with another line count), but each edit changed the file: never a copy."""
    events = [
        call(
            "edit",
            {"command": f"edit {10 + i}:{10 + i}\n    lr = sched(1, 2)\nend_of_edit"},
            f"File updated. [File: /p/train.py ({120 + i} lines total)]",
            changed=["/p/train.py"],
        )
        for i in range(8)
    ]
    assert shifted_alike(events[0], events[1])
    monitor = only("repeat", {"threshold": 2})
    assert strongest(feed(monitor, events)) is Action.ALLOW
    assert monitor.calibration()["repeat_most"] == 1


def test_the_identical_edit_re_applied_growing_the_file_is_a_near_copy():
    """The identical edit applied again and again, each time changing the file (it
    pastes its lines again: only the line count moves): a near copy, suspicion."""
    events = [
        edit("edit 493:496\n" + BODY, "[File: /repo/JsonWriter.java]\n" + "public JsonWriter value()\n" * (i + 1))
        for i in range(5)
    ]
    verdicts = feed(only("repeat", {"threshold": 4}), events)
    assert actions(verdicts)[3] is Action.NUDGE
    assert verdicts[3].finding.grade == SUSPICION
    assert verdicts[3].finding.description.startswith("the same edit call got much the same result 4 times")


def test_an_identical_streak_stays_proof_and_stops_on_its_own():
    monitor = only("repeat", {"threshold": 4})  # no calibration: only proof stops
    verdicts = feed(monitor, [edit("edit 75:81\n" + BODY, error=True, wrote=False) for _ in range(5)])
    assert verdicts[3].finding.grade == PROOF and actions(verdicts)[4] is Action.STOP


def shifted_alike(a: ToolCall, b: ToolCall) -> bool:
    """Do two calls differ and mask to the same `Step.shifted` (the premise of a test)?"""
    from loopwatch._core.step import make_step

    x, y = (make_step(1, c.name, c.input, c.result, c.error, (), 0.0) for c in (a, b))
    return x.call != y.call and x.shifted == y.shifted


def test_pages_read_at_shifted_ranges_are_progress():
    """`view a.py 10:20` then `view a.py 11:21`, each page another text: never a copy.
    A one-line command's range is not even masked (no body follows it, `step.py`); a
    rejected edit at a shifted range that is told something else each time is no copy
    either: only the identical message makes it one."""
    events = [call("view", {"command": f"view a.py {10 + i}:{20 + i}"}, f"text {'abcdefgh'[i]}") for i in range(8)]
    assert not shifted_alike(events[0], events[1])
    edits = [
        call("edit", {"command": f"edit {10 + i}:{20 + i}\n    x = 1\nend_of_edit"}, f"E999 {w}", error=True)
        for i, w in enumerate(["IndentationError", "SyntaxError", "NameError", "TypeError"])
    ]
    assert shifted_alike(edits[0], edits[1])
    assert strongest(feed(only("repeat", {"threshold": 2}), edits)) is Action.ALLOW
    monitor = only("repeat", {"threshold": 2})
    assert strongest(feed(monitor, events)) is Action.ALLOW
    assert monitor.calibration()["repeat_most"] == 1


def test_a_shifted_search_that_finds_nothing_is_no_copy():
    """An empty answer ("No matches found") counts only for the identical call: ranges
    searched in vain one after another are a search being moved, not a copy."""
    events = [
        call("search", {"command": f"search_file a.py {i}:{i + 9}", "pattern": "foo\nbar"}, "No matches found")
        for i in range(1, 9)
    ]
    assert shifted_alike(events[0], events[1])
    monitor = only("repeat", {"threshold": 2})
    assert strongest(feed(monitor, events)) is Action.ALLOW


def test_a_different_body_at_the_same_range_is_another_edit():
    events = [edit(f"edit 75:81\n    value = {i}\n") for i in range(8)]
    monitor = only("repeat", {"threshold": 2})
    assert strongest(feed(monitor, events)) is Action.ALLOW


def test_the_identical_call_with_a_changing_result_that_wrote_nothing_is_still_polling():
    """Only a call that changed files both times is "re-applied": the same command
    with a changing result and no write is waiting, as before."""
    events = [call("edit", {"command": "edit 75:81\n" + BODY}, f"view {'abcdefgh'[i]}") for i in range(8)]
    assert strongest(feed(only("repeat", {"threshold": 2}), events)) is Action.ALLOW


# -- on the real corpus -----------------------------------------------------------------

MSB = "swe-agent-traj/msb-java/20240825_SWE-agent_"


@needs_corpus
@pytest.mark.parametrize(
    "path, stop",
    [
        # the identical 'edit 493:496' applied 29 times, 5 lines more each time (onset 7; was 20)
        (MSB + "deepseek-coder-v2/google__gson-1093.traj", 11),
        # 'edit 1:1' then 'edit 1:6' rejected with the same preview, then resubmitted (onset 5; was 10)
        (MSB + "doubao-pro-128k/fasterxml__jackson-core-729.traj", 9),
    ],
)
def test_labelled_loops_of_the_corpus_that_begin_with_a_near_copy_are_stopped_sooner(path, stop):
    label = corpus_label(path)
    got = replay(path)
    assert label.label == "yes" and label.onset <= got.stop <= label.end
    assert (got.stop, got.stop_signal) == (stop, "repeat")


@needs_corpus
@pytest.mark.parametrize(
    "path",
    [
        # two near copies in a row (the only ones outside a labelled loop), then other work (labelled no)
        MSB + "doubao-pro-128k/fasterxml__jackson-databind-4486.traj",
    ],
)
def test_a_pair_of_near_copies_in_healthy_work_of_the_corpus_is_not_stopped(path):
    label = corpus_label(path)
    assert label.label == "no" and replay(path).stop is None


# -- time: waiting is not circling ---------------------------------------------------------


def _at_times(events, times):
    return [e._replace(at=t) for e, t in zip(events, times)]


def test_the_same_call_an_hour_apart_is_waiting_and_never_blocked():
    """The same check every hour, same answer: at most a warning, and the next copy runs."""
    m = only("repeat", {"threshold": 3}, profile="attended")
    verdicts = feed(m, _at_times(looping(5), [i * 3600.0 for i in range(5)]))
    assert strongest(verdicts) is Action.WARN
    assert m.check(Attempt("Bash", {"command": "pytest -x"}, at=5 * 3600.0)).action is Action.ALLOW
    assert m.strongest["repeat"].severity < 1 and "over 2h00m" in m.strongest["repeat"].description


def test_a_poll_every_two_minutes_is_never_stopped_unattended():
    m = only("repeat", {"threshold": 3}, profile="unattended")
    polls = [bash("gh run view 42", "in_progress  CI  main  push  42") for _ in range(30)]
    verdicts = feed(m, _at_times(polls, [i * 120.0 for i in range(30)]))
    assert strongest(verdicts) is Action.WARN


def test_a_burst_of_identical_failing_calls_two_seconds_apart_is_still_a_loop():
    m = only("repeat", {"threshold": 3}, profile="unattended")
    verdicts = feed(m, _at_times(looping(5), [i * 2.0 for i in range(5)]))
    assert actions(verdicts)[2:] == [Action.NUDGE, Action.STOP, Action.STOP]


def test_one_long_pause_in_a_burst_is_still_a_loop():
    """Most gaps short: the run circled, paused once (a slow model answer), circled on."""
    m = only("repeat", {"threshold": 3}, profile="unattended")
    verdicts = feed(m, _at_times(looping(5), [0.0, 3.0, 600.0, 603.0, 606.0]))
    assert Action.STOP in actions(verdicts)


def test_gaps_just_under_the_wait_are_circling_and_at_it_waiting():
    wait = RepeatParams().wait
    under = only("repeat", {"threshold": 3}, profile="unattended")
    assert Action.STOP in actions(feed(under, _at_times(looping(5), [i * (wait - 1) for i in range(5)])))
    at = only("repeat", {"threshold": 3}, profile="unattended")
    assert strongest(feed(at, _at_times(looping(5), [i * wait for i in range(5)]))) is Action.WARN


def test_without_times_nothing_changes():
    """Events with no time are placed a second apart: the verdicts of a timeless source
    are those of a one-second pace."""
    timeless = only("repeat", {"threshold": 3}, profile="unattended")
    paced = only("repeat", {"threshold": 3}, profile="unattended")
    got = [timeless.observe(e) for e in looping(6)]
    assert actions(got) == actions(feed(paced, looping(6)))
    assert Action.STOP in actions(got)


def test_identical_empty_results_are_suspicion_and_only_nudge():
    """Nothing came back: a keystroke, or a call whose output the source did not record
    (every call but a step's last in Terminal-Bench 2.0). No evidence the world is as it
    was: a nudge, never a stop without a calibration's corroboration."""
    presses = [call("bash_command", {"cmd": "C-c"}, "") for _ in range(8)]
    monitor = only("repeat", {"threshold": 3}, profile="unattended")
    verdicts = feed(monitor, presses)
    assert strongest(verdicts) is Action.NUDGE
    assert verdicts[2].finding.grade == SUSPICION
    failing = [call("bash_command", {"cmd": "C-c"}, "", error=True) for _ in range(4)]
    assert Action.STOP in actions(feed(only("repeat", {"threshold": 3}, profile="unattended"), failing))


def unattended_repeat() -> Monitor:
    return only("repeat", {"threshold": 3}, profile="unattended")


def test_the_same_success_stops_only_from_the_fifth_copy():
    """A file re-read, a confirmation echoed, a `NOOP`: identical successes nudge at the
    threshold and end a run only from the protocol's 5th copy (a run may be verifying,
    or idle once done); the same failure is stopped at the threshold's next copy."""
    reads = [bash("cat /app/meeting.ics", "BEGIN:VCALENDAR\nEND:VCALENDAR") for _ in range(6)]
    got = actions(feed(unattended_repeat(), reads))
    assert got[2:5] == [Action.NUDGE, Action.ALLOW, Action.STOP]
    assert got.index(Action.STOP) + 1 == STOP_ROUNDS == 5
    assert actions(feed(unattended_repeat(), looping(4)))[2:] == [Action.NUDGE, Action.STOP]


def test_failure_text_its_source_does_not_flag_is_a_success_to_the_rule():
    """The source's flag decides, not words that sound like failure: the same unflagged
    `FAILED ...` line is nudged at the threshold and stopped from its 5th copy."""
    failing = [bash("pytest", "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12") for _ in range(5)]
    assert actions(feed(unattended_repeat(), failing))[2:] == [Action.NUDGE, Action.ALLOW, Action.STOP]
    flagged = [bash("pytest", "FAILED tests/test_cart.py::test_total", error=True) for _ in range(4)]
    assert actions(feed(unattended_repeat(), flagged))[2:] == [Action.NUDGE, Action.STOP]


@pytest.mark.parametrize(
    ("result", "error", "is_failure"),
    [
        ("All 12 tests passed", True, True),
        ("All 12 tests passed", False, False),
        ("bash: NOOP: command not found", False, False),
        ("FAILED tests/test_x.py::test_a - AssertionError", False, False),
    ],
)
def test_a_failure_is_what_its_source_flags(result, error, is_failure):
    assert failed(make_step(1, "Bash", {"command": "x"}, result, error, (), 0.0)) is is_failure


def test_where_a_person_watches_the_same_success_is_blocked_then_stopped_from_the_fifth_attempt():
    """A blocked attempt is a round too: nudge, block, stop, as for a failure, though a
    blocked call never completes (the streak's count of completed copies stays at 3)."""
    monitor = only("repeat", {"threshold": 3}, profile="attended", stop=True)
    got = []
    for _ in range(3):
        got.append(monitor.check(Attempt("Bash", {"command": "cat a.txt"})).action)
        got.append(monitor.observe(bash("cat a.txt", "A")).action)
    assert got[-1] is Action.NUDGE and all(a.rank < Action.NUDGE.rank for a in got[:-1])
    attempts = [monitor.check(Attempt("Bash", {"command": "cat a.txt"})).action for _ in range(3)]
    assert attempts == [Action.BLOCK, Action.STOP, Action.STOP]


def test_unattended_the_fifth_attempt_at_the_same_success_is_stopped_before_it_runs():
    monitor = unattended_repeat()
    got = []
    for _ in range(4):
        got.append(monitor.check(Attempt("Bash", {"command": "cat a.txt"})).action)
        got.append(monitor.observe(bash("cat a.txt", "A")).action)
    assert Action.STOP not in got and got[5] is Action.NUDGE  # the 3rd copy nudged, the 4th ran
    assert monitor.check(Attempt("Bash", {"command": "cat a.txt"})).action is Action.STOP


def test_a_new_streak_soon_after_a_nudge_waits_for_the_fifth_copy_of_a_success():
    """Nudged, then circling again in another shape: a failure streak starts a rung up
    (stopped at its threshold), a success streak still needs its 5th copy."""
    nudged = [bash("cat a.txt", "A") for _ in range(3)]
    again = [bash("echo done", "done") for _ in range(5)]
    got = actions(feed(unattended_repeat(), nudged + again))
    assert got[2] is Action.NUDGE and got.index(Action.STOP) == 3 + STOP_ROUNDS - 1
    failing = actions(feed(unattended_repeat(), nudged + looping(3)))
    assert failing.index(Action.STOP) == 3 + 3 - 1
