"""`churn`: few distinct calls in a window and nothing written; nudge, never stop."""

from __future__ import annotations

import pytest

from loopwatch import Action
from loopwatch._core.signals.churn import Params

from core_support import actions, bash, call, feed, only, severity, strongest

WINDOW, DISTINCT = 20, 6


def monitor(**config):
    return only("churn", {"window": WINDOW, "distinct": DISTINCT}, **config)


def busy(n: int, distinct: int = 3):
    """`distinct` different calls in turn, each result new (so no repeat or cycle)."""
    return [bash(f"check-{i % distinct}", f"state {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}") for i in range(n)]


def test_few_distinct_calls_in_a_full_window_is_churn():
    m = monitor()
    verdicts = feed(m, busy(WINDOW))
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "churn"
    assert verdicts[-1].finding.description == f"only 3 distinct calls in the last {WINDOW}, and no file written"


def test_no_finding_before_a_full_window():
    m = monitor()
    verdicts = feed(m, busy(WINDOW - 1, distinct=1))
    assert strongest(verdicts) is Action.ALLOW
    assert "churn" not in m.strongest


def test_no_finding_before_the_default_window():
    m = only("churn")
    feed(m, busy(Params().window - 1, distinct=1))
    assert "churn" not in m.strongest
    feed(m, busy(1, distinct=1))
    assert "churn" in m.strongest


def test_a_file_written_in_the_window_is_progress():
    m = monitor()
    events = busy(WINDOW * 3)
    events[WINDOW - 5 :: 10] = [
        call("Edit", {"path": f"f{i}.py"}, "ok", changed=[f"f{i}.py"]) for i in range(len(events[WINDOW - 5 :: 10]))
    ]
    assert strongest(feed(m, events)) is Action.ALLOW


def test_many_distinct_calls_are_not_churn():
    m = monitor()
    feed(m, busy(WINDOW * 3, distinct=DISTINCT * 2 + 1))
    assert severity(m, "churn") < 0.5


@pytest.mark.parametrize("profile, stop", [("unattended", False), ("attended", False), ("attended", True)])
def test_churn_nudges_once_and_never_blocks_or_stops(profile, stop):
    m = monitor(profile=profile, stop=stop)
    verdicts = feed(m, busy(WINDOW * 10))
    assert actions(verdicts).count(Action.NUDGE) == 1
    assert strongest(verdicts) is Action.NUDGE
    assert m.stop is None


def test_calibration_keeps_the_fewest_distinct_calls_in_a_full_window():
    m = monitor()
    assert m.calibration()["churn_fewest_distinct"] is None
    feed(m, busy(WINDOW, distinct=8) + busy(WINDOW, distinct=4))
    assert m.calibration()["churn_fewest_distinct"] == 4
