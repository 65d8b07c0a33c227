"""`repeat`: the same call with the same result, consecutively."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Action, Monitor, ToolCall

from core_support import actions, bash, call, feed, only, severity, strongest


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
