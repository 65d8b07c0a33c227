"""`cycle`: a short cycle of actions repeated at the tail, in O(max period) per step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Action
from loopwatch.core.periodic import TailCycles
from loopwatch.core.signals.cycle import Params

from core_support import bash, call, feed, only, severity, strongest


def server_round(i: int = 0):
    """kill the server, start it, curl it, read the log: the same results each round."""
    return [
        bash("pkill -f 'python app.py'", ""),
        bash("python app.py &", "[1] 4242"),
        bash("curl -s localhost:8000/health", "curl: (7) Failed to connect to localhost port 8000", error=True),
        call("Read", {"file_path": "app.log"}, "Traceback ... ImportError: cannot import name 'db'"),
    ]


@pytest.mark.parametrize("repeats", [2, 3, 4])
def test_a_four_step_cycle_is_a_loop_after_the_given_copies(repeats):
    monitor = only("cycle", {"repeats": repeats, "max_period": 5})
    events = [e for i in range(repeats) for e in server_round(i)]
    verdicts = feed(monitor, events, step=10.0)
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "cycle"
    assert all(v.action.rank < Action.NUDGE.rank for v in verdicts[:-1])
    finding = verdicts[-1].finding
    assert (finding.period, finding.repeats) == (4, repeats)
    assert finding.started_index == 1 and finding.index == 4 * repeats
    assert finding.description.startswith("the same 4-step action cycle (Bash, Bash, Bash, Read) repeated")


def test_the_default_is_three_copies():
    repeats = Params().repeats
    monitor = only("cycle")  # default parameters: the documented behaviour
    verdicts = feed(monitor, [e for i in range(repeats) for e in server_round(i)])
    assert verdicts[-1].action is Action.NUDGE
    assert verdicts[-1].finding.repeats == repeats


def test_warns_from_half_the_copies():
    monitor = only("cycle", {"repeats": 4})
    verdicts = feed(monitor, [e for i in range(2) for e in server_round(i)])
    assert verdicts[-1].action is Action.WARN


@pytest.mark.parametrize("period", [2, 3, 4, 5])
def test_periods_up_to_the_maximum_are_found(period):
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    events = [bash(f"step-{k}", f"out {chr(97 + k)}") for _ in range(3) for k in range(period)]
    assert feed(monitor, events)[-1].finding.period == period


def test_a_longer_cycle_than_the_maximum_is_not_a_cycle():
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    events = [bash(f"step-{k}", f"out {chr(97 + k)}") for _ in range(6) for k in range(6)]
    assert strongest(feed(monitor, events)) is Action.ALLOW
    assert severity(monitor, "cycle") == 0.0


def test_a_changing_result_breaks_the_cycle():
    """The cycle is over actions (call and result): the same calls getting new results are progress."""
    monitor = only("cycle", {"repeats": 3})
    events = []
    for i in range(6):
        events += [bash("make", f"built target {chr(97 + i)}"), bash("./run", f"answer {chr(97 + i)}")]
    assert strongest(feed(monitor, events)) is Action.ALLOW


def test_the_shortest_period_wins():
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    events = [bash(c, c.upper()) for c in "abababababab"]  # also 4-periodic
    finding = feed(monitor, events)[-1].finding
    assert finding.period == 2 and finding.repeats == 6


def test_a_plain_repeat_is_not_a_cycle():
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, [bash("ls", "a") for _ in range(20)])) is Action.ALLOW


def test_only_the_last_max_period_actions_are_kept():
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    feed(monitor, [bash(f"c{i % 7}", "r") for i in range(5000)])
    (signal,) = monitor._signals
    assert len(signal._tail._tail) <= 5
    assert len(signal._recent) <= 5 * 3 + 5


def test_calibration_keeps_the_most_copies_and_their_period():
    monitor = only("cycle", {"repeats": 9})
    feed(monitor, [e for i in range(5) for e in server_round(i)] + [bash("x", "y")])
    assert monitor.calibration()["cycle_most"] == 5
    assert monitor.calibration()["cycle_period"] == 4


# -- TailCycles against a naive rescan --------------------------------------------------


def naive(seq: list, max_period: int, min_period: int) -> tuple[int, int]:
    """(period, copies) by rescanning: for each period the longest p-periodic tail;
    a period whose stretch is as periodic under a divisor belongs to the divisor; most
    copies win, the shortest period among equals."""

    def run(p):
        m = 0
        while m + p < len(seq) and seq[-1 - m] == seq[-1 - m - p]:
            m += 1
        return m

    runs = {p: run(p) for p in range(1, max_period + 1)}
    best = (0, 0)
    for p in range(min_period, max_period + 1):
        m = runs[p]
        if m == 0 or any(p % d == 0 and runs[d] >= m for d in range(1, p)):
            continue
        copies = (m + p) // p
        if copies > best[1]:
            best = (p, copies)
    return best


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=40), st.integers(1, 6), st.integers(1, 2))
def test_property_tail_cycles_match_a_rescan(seq, max_period, min_period):
    tail = TailCycles(max_period)
    for i, item in enumerate(seq):
        period, copies, length = tail.push(item, min_period=min(min_period, max_period))
        prefix = seq[: i + 1]
        assert (period, copies) == naive(prefix, max_period, min(min_period, max_period))
        if copies:
            stretch = prefix[-length:]
            assert length == len(stretch) and copies == length // period
            assert all(stretch[k] == stretch[k - period] for k in range(period, length))


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5), st.data())
def test_property_inserting_a_new_action_breaks_a_cycle(period, data):
    repeats = 3
    pattern = [bash(f"cmd-{k}", f"result {chr(97 + k)}") for k in range(period)]
    stream = pattern * repeats
    whole = only("cycle", {"repeats": repeats, "max_period": 5})
    assert feed(whole, stream)[-1].action is Action.NUDGE  # the stream alone is a loop
    at = data.draw(st.integers(1, len(stream) - 1), label="insert at")
    broken = stream[:at] + [bash("git status", "nothing new here")] + stream[at:]
    monitor = only("cycle", {"repeats": repeats, "max_period": 5})
    assert strongest(feed(monitor, broken)).rank < Action.NUDGE.rank
    assert severity(monitor, "cycle") < 1.0


def test_the_nudge_names_the_cycle_and_says_what_to_do_instead():
    monitor = only("cycle", {"repeats": 3})
    verdict = feed(monitor, [e for i in range(3) for e in server_round(i)])[-1]
    assert verdict.message.startswith(
        "loopwatch: you appear to be going in circles: the same 4-step action cycle "
        "(Bash, Bash, Bash, Read) repeated 3 times"
    )
    assert "try a different approach" in verdict.message
    assert verdict.finding.tools == ("Bash", "Read")  # most repeated first
