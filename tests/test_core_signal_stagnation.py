"""`stagnation`: for a window of time, no action the run had not already done."""

from __future__ import annotations

from loopwatch import Action
from loopwatch._core.signals.stagnation import Params

from core_support import bash, call, feed, only, severity, strongest

WINDOW, REPLAYS = 60.0, 6


def monitor(**params):
    return only("stagnation", {"window": WINDOW, "replays": REPLAYS, **params})


def replay_stream(n: int):
    """Three distinct actions, then replays of them."""
    base = [bash("ls", "a.py"), bash("cat a.py", "x = 1"), bash("pytest", "1 failed", error=True)]
    return [base[i % 3] for i in range(n)]


def test_replays_filling_the_window_are_a_loop():
    m = monitor()
    verdicts = feed(m, replay_stream(3 + 12), step=10.0)  # 12 replays over 120 s
    assert severity(m, "stagnation") >= 1.0
    first = next(v for v in verdicts if v.action is Action.NUDGE)
    assert first.signal == "stagnation"
    assert first.finding.repeats >= REPLAYS
    assert first.finding.at - first.finding.started_at >= WINDOW


def test_one_long_tool_call_is_never_stagnation():
    m = monitor()
    verdicts = feed(m, [bash("make all", "done"), bash("make all", "done")], step=10 * 3600.0)
    assert strongest(verdicts) is Action.ALLOW
    assert severity(m, "stagnation") < 0.5


def test_a_few_slow_replays_are_below_the_floor():
    m = monitor()
    feed(m, replay_stream(3 + REPLAYS - 1), step=3600.0)
    assert severity(m, "stagnation") < 1.0


def test_many_fast_replays_within_the_window_are_not_yet_a_loop():
    m = monitor()
    feed(m, replay_stream(3 + 100), step=0.1)  # 100 replays in 10 s
    assert severity(m, "stagnation") < 1.0


def test_a_new_action_restarts_the_window():
    without = monitor()
    feed(without, replay_stream(3 + 5) + replay_stream(6), step=10.0)
    assert severity(without, "stagnation") >= 1.0
    m = monitor()
    feed(m, replay_stream(3 + 5) + [bash("git log -1", "commit abc")] + replay_stream(5), step=10.0)
    assert severity(m, "stagnation") < 1.0


def test_writing_a_file_counts_as_something_new():
    m = monitor()
    write = call("Write", {"file_path": "a.py", "content": "x"}, "ok", changed=["a.py"])
    events = []
    for i in range(40):
        events += [bash("pytest", "1 failed", error=True), write]
    feed(m, events, step=10.0)
    assert severity(m, "stagnation") < 0.5


def test_the_floor_default_is_cycle_evidence():
    """Documented default: replays = longest cycle (5) x cycle repeats (3)."""
    from loopwatch._core.signals.cycle import Params as CycleParams

    assert Params().replays == CycleParams().max_period * CycleParams().repeats


def test_memory_of_seen_actions_is_bounded():
    m = monitor(memory=16)
    feed(m, [bash(f"echo {i}", f"line {chr(97 + i % 26)}{i}") for i in range(2000)])
    (signal,) = m._signals
    assert len(signal._seen) <= 16
    assert len(signal._names) <= 64


def test_calibration_keeps_the_longest_stretch():
    m = monitor(window=10_000.0)
    feed(m, replay_stream(3 + 7), step=5.0)
    figures = m.calibration()
    assert figures["stagnation_actions"] == 7
    assert figures["stagnation_seconds"] == 35.0


def test_the_same_call_with_a_new_result_is_a_new_action():
    m = monitor()
    feed(
        m,
        [bash("tail -1 build.log", f"compiling module {chr(97 + i % 26)}{chr(97 + i // 26)}") for i in range(200)],
        step=10.0,
    )
    assert "stagnation" not in m.strongest
