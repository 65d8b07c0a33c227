"""The Monitor: the pre-dispatch guard, user turns, modes, time, threads, bounded memory."""

from __future__ import annotations

import pickle
import random
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwatch import (
    Action,
    Attempt,
    Config,
    Correction,
    ModelText,
    Monitor,
    Output,
    Retry,
    ToolCall,
    Turn,
    UserMessage,
)
import loopwatch._core.monitor as monitor_module
from loopwatch import load_config
from loopwatch._configfile import apply_env

from core_support import _at, actions, bash, feed, looping, only, strongest


# -- the pre-dispatch guard -------------------------------------------------------------


def test_the_guard_blocks_a_call_that_repeats_a_nudged_streak_in_the_attended_profile():
    m = only("repeat", {"threshold": 3}, profile="attended")
    assert feed(m, looping(3))[-1].action is Action.NUDGE
    verdict = m.check(Attempt("Bash", {"command": "pytest -x"}, at=10.0))
    assert verdict.action is Action.BLOCK and verdict.signal == "repeat"
    assert isinstance(verdict.tool_result, str) and verdict.tool_result.startswith("loopwatch blocked this call")
    assert "`pytest -x`" in verdict.tool_result
    assert verdict.index == m.actions + 1


def test_the_guard_allows_a_different_call():
    m = only("repeat", {"threshold": 3}, profile="attended")
    feed(m, looping(3))
    assert m.check(Attempt("Bash", {"command": "cat tests/test_a.py"}, at=10.0)).action is Action.ALLOW


def test_the_guard_allows_before_any_nudge():
    m = only("repeat", {"threshold": 3}, profile="attended")
    feed(m, looping(2))
    verdict = m.check(Attempt("Bash", {"command": "pytest -x"}))
    assert verdict.action is Action.ALLOW and verdict.tool_result is None


def test_the_guard_stops_in_the_unattended_profile():
    m = only("repeat", {"threshold": 3}, profile="unattended")
    feed(m, looping(3))
    verdict = m.check(Attempt("Bash", {"command": "pytest -x"}))
    assert verdict.action is Action.STOP and verdict.tool_result
    assert m.stop == verdict._replace(message=None)  # kept without the message


def test_the_guard_uses_the_configured_identity():
    m = only("repeat", {"threshold": 3}, profile="attended", tools={"Bash": {"identity": ["command"]}})
    feed(m, [ToolCall("Bash", {"command": "make", "description": f"try {w}"}, "error 2", error=True) for w in "abc"])
    assert m.check(Attempt("Bash", {"command": "make", "description": "one more time"})).action is Action.BLOCK


def test_the_guard_allows_in_warn_mode_and_for_exempt_tools():
    m = only("repeat", {"threshold": 3}, profile="attended", mode="warn")
    feed(m, looping(5))
    assert m.check(Attempt("Bash", {"command": "pytest -x"})).action is Action.ALLOW
    m = only("repeat", {"threshold": 3}, profile="attended", tools={"Bash": {"role": "exempt"}})
    feed(m, looping(5))
    assert m.check(Attempt("Bash", {"command": "pytest -x"})).action is Action.ALLOW


def test_the_guard_never_raises_on_an_unserializable_input():
    m = only("repeat", {"threshold": 3}, profile="attended")
    feed(m, looping(3))
    assert m.check(Attempt("Bash", {"command": object()})).action is Action.ALLOW


def test_observing_an_attempt_is_the_guard():
    m = only("repeat", {"threshold": 2}, profile="attended")
    feed(m, looping(2))
    assert m.observe(Attempt("Bash", {"command": "pytest -x"})).action is Action.BLOCK


def test_after_a_block_the_streak_keeps_blocking_while_it_repeats():
    m = only("repeat", {"threshold": 3}, profile="attended")
    feed(m, looping(3))
    got = [m.check(Attempt("Bash", {"command": "pytest -x"})).action for _ in range(3)]
    assert got == [Action.BLOCK] * 3


# -- user turns -------------------------------------------------------------------------


def test_a_new_user_message_resets_streaks():
    m = only("repeat", {"threshold": 3})
    verdicts = feed(m, looping(2) + [UserMessage()] + looping(2) + [UserMessage()] + looping(2))
    assert strongest(verdicts).rank < Action.NUDGE.rank


def test_after_a_nudge_a_user_message_starts_the_ladder_again():
    m = only("repeat", {"threshold": 3}, profile="unattended")
    assert feed(m, looping(3))[-1].action is Action.NUDGE
    again = actions(feed(m, [UserMessage()] + looping(3), start=10.0))
    assert again[-1] is Action.NUDGE and Action.STOP not in again


def test_a_user_message_resets_every_signal():
    m = Monitor(
        signals={
            "cycle": {"repeats": 3},
            "correction": {"threshold": 3},
            "apology": {"threshold": 3},
            "repeated_lines": {"repeats": 3},
        }
    )
    half = (
        [bash("a", "1"), bash("b", "2")] * 2
        + [Correction("No such tool: X")] * 2
        + [ModelText("Sorry.")] * 2
        + [Output("same\n")] * 2
    )
    verdicts = feed(m, half + [UserMessage()] + half)
    assert strongest(verdicts).rank < Action.NUDGE.rank


# -- modes ------------------------------------------------------------------------------


def everything_looping():
    return (
        looping(10)
        + [bash("a", "1"), bash("b", "2"), bash("c", "3")] * 6
        + [Correction("No such tool: X")] * 5
        + [ModelText("Sorry, again.")] * 5
        + [Output("connection refused\n")] * 12
        + [Retry()] * 12
        + [Attempt("Bash", {"command": "pytest -x"})]
    )


@pytest.mark.parametrize("env", [{"LOOPWATCH_MODE": "off"}, {}, {"LOOPWATCH_MODE": "OFF"}])
def test_mode_off_allows_everything_but_keeps_calibration(env):
    config = Config.make(profile="attended", stop=True, mode="enforce" if env else "off")
    m = Monitor(apply_env(config, env))
    verdicts = feed(m, everything_looping(), step=30.0)
    assert set(actions(verdicts)) == {Action.ALLOW}
    assert m.warnings == 0 and m.interventions == [] and m.stop is None
    figures = m.calibration()
    assert figures["repeat_most"] == 10
    assert figures["cycle_most"] == 6 and figures["cycle_period"] == 3
    assert figures["correction_most"] == 5 and figures["apology_most"] == 5
    assert figures["lines_most"] == 12 and figures["retry_longest"] == 12
    assert figures["stagnation_actions"] > 0
    assert figures["churn_fewest_distinct"] is not None
    assert m.record()["calibration"] == figures


def test_the_environment_overrides_the_mode_where_it_is_read(monkeypatch):
    monkeypatch.setenv("LOOPWATCH_MODE", "off")
    m = Monitor(load_config(mode="enforce", start="/"))
    assert m.config.mode == "off"
    assert set(actions(feed(m, everything_looping()))) == {Action.ALLOW}
    assert Monitor(mode="enforce").config.mode == "enforce"  # the core itself reads none


def test_the_same_stream_is_stopped_in_enforce_mode():
    m = Monitor(Config.make())
    feed(m, everything_looping(), step=30.0)
    assert m.stop is not None


# -- time and events --------------------------------------------------------------------


def test_missing_times_count_as_one_second_apart():
    m = Monitor()
    for event in [Turn(at=5.0), Turn(), Turn(), ModelText("hi")]:
        m.observe(event)
    assert (m.first_at, m.last_at) == (5.0, 8.0)
    assert m.record()["duration"] == 3.0


def test_events_never_go_back_in_time():
    m = Monitor()
    for at in (10.0, 20.0, 15.0, 25.0):
        m.observe(Turn(at=at))
    assert m.last_at == 25.0 and m.record()["duration"] == 15.0


def test_a_verdict_carries_its_source_ref():
    m = only("repeat", {"threshold": 2})
    verdict = feed(m, [ToolCall("Bash", {"command": "ls"}, "a", source_ref=f"line {i}") for i in (3, 4)])[-1]
    assert verdict.action is Action.NUDGE and verdict.source_ref == "line 4"


def test_an_unknown_event_is_refused():
    with pytest.raises(TypeError, match="not a loopwatch event"):
        Monitor().observe({"type": "tool"})


def test_counts_events_and_actions():
    m = Monitor(tools={"TodoWrite": {"role": "exempt"}})
    feed(m, [bash("ls"), ToolCall("TodoWrite"), Turn(), Retry(), bash("pwd")])
    assert (m.events, m.actions) == (5, 2)


def test_a_monitor_is_safe_to_share_between_threads():
    m = Monitor()
    errors = []

    def work(t: int):
        try:
            for i in range(500):
                m.observe(bash(f"cmd {t}-{i % 5}", f"out {i % 3}", at=float(i)))
                m.check(Attempt("Bash", {"command": f"cmd {t}-0"}))
        except Exception as exc:  # noqa: BLE001  # pragma: no cover - any failure, reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert m.events == 4 * 1000 and m.actions == 4 * 500


# -- bounded memory ---------------------------------------------------------------------


def state_size(monitor: Monitor) -> int:
    """Pickled size of everything the monitor holds (the lock aside)."""
    return len(pickle.dumps({k: v for k, v in vars(monitor).items() if k != "_lock"}))


def container_sizes(obj, seen=None, path="monitor") -> dict[str, int]:
    """Length of every list, dict, set and deque reachable from `obj`, by path."""
    from collections import deque

    seen = set() if seen is None else seen
    out: dict[str, int] = {}
    if id(obj) in seen:
        return out
    seen.add(id(obj))
    if isinstance(obj, (list, tuple, set, frozenset, deque, dict)):
        if not isinstance(obj, tuple):
            out[path] = len(obj)
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for k, v in items:
            if (
                isinstance(v, (list, tuple, set, frozenset, deque, dict))
                or hasattr(v, "__dict__")
                or hasattr(v, "__slots__")
            ):
                out.update(container_sizes(v, seen, f"{path}[]"))
        return out
    attrs = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    for slots in (getattr(c, "__slots__", ()) for c in type(obj).__mro__):
        for name in (slots,) if isinstance(slots, str) else slots:
            if hasattr(obj, name):
                attrs[name] = getattr(obj, name)
    for name, value in attrs.items():
        if name in ("_lock", "config", "params") or isinstance(value, (str, bytes, int, float, type)) or value is None:
            continue
        out.update(container_sizes(value, seen, f"{path}.{name}"))
    return out


def mixed_stream(n: int, seed: int = 7):
    """Random-ish events of every kind: new calls, repeats, cycles, errors, text, output."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.random()
        word = f"w{i:x}".replace("0", "g")  # a fresh word the normalizer keeps apart
        if k < 0.45:
            cmd = f"cmd {rng.randrange(12)}" if rng.random() < 0.6 else f"cmd {word}"
            out.append(
                bash(
                    cmd,
                    f"result {rng.choice('abc')} {word if rng.random() < 0.3 else ''}",
                    error=rng.random() < 0.3,
                    at=float(i),
                )
            )
        elif k < 0.55:
            out.append(
                ModelText(
                    rng.choice(["Sorry, trying again.", f"Reading {word}.", "Let me check. Let me check."]),
                    at=float(i),
                    chunk=rng.random() < 0.5,
                )
            )
        elif k < 0.75:
            out.append(Output(rng.choice(["retrying\n", f"built {word}\n", "50% done\r", "partial "]), at=float(i)))
        elif k < 0.8:
            out.append(Retry(at=float(i)))
        elif k < 0.86:
            out.append(Turn(at=float(i)))
        elif k < 0.9:
            out.append(Correction(rng.choice(["No such tool: X", f"bad format {word}"]), at=float(i)))
        elif k < 0.9005:
            out.append(UserMessage(at=float(i)))
        else:
            out.append(Attempt("Bash", {"command": f"cmd {rng.randrange(12)}"}, at=float(i)))
    return out


@pytest.mark.slow
def test_memory_stays_bounded_however_long_the_run(monkeypatch):
    monkeypatch.setattr(monitor_module, "MAX_INTERVENTIONS", 50)  # reach every cap early
    m = Monitor(Config.make(signals={"stagnation": {"memory": 512}}))
    events = mixed_stream(50_000)
    pickled, items, largest = [], [], {}
    for i, event in enumerate(events, 1):
        m.observe(event)
        if i % 10_000 == 0:
            sizes = container_sizes(m)
            pickled.append(state_size(m))
            items.append(sum(sizes.values()))
            for path, n in sizes.items():
                largest[path] = max(largest.get(path, 0), n)
    assert m.interventions_total > 50  # the stream did loop, so every cap was reached
    assert largest["monitor._signals[]._seen"] == 512  # and the stagnation memory filled
    # flat: it fluctuates as streaks come and go, but does not grow with the run
    assert max(pickled) <= 1.2 * pickled[0], pickled
    assert max(items) <= 1.2 * items[0], items
    assert max(largest.values()) <= 512, largest


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from("tcoarnux"), st.integers(0, 3), st.booleans()), min_size=1, max_size=12))
def test_property_memory_is_bounded_for_any_stream_shape(pattern):
    """Cycle a random pattern of events (some varying with a counter) for 6,000 events:
    each kind of event comes at least every 12 events, so a container that kept one
    entry per event of any kind would pass the bound."""

    def make(kind, n, vary, i):
        tag = f"v{i:x}".replace("0", "g") if vary else "same"
        return {
            "t": lambda: bash(f"cmd {n} {tag}", f"out {n}", error=vary),
            "c": lambda: Correction(f"fix {tag}"),
            "o": lambda: Output(f"line {n} {tag}\n"),
            "a": lambda: Attempt("Bash", {"command": f"cmd {n} {tag}"}),
            "r": lambda: Retry(),
            "n": lambda: Turn(),
            "u": lambda: ModelText(f"Sorry {tag}. Again {tag}.", chunk=vary),
            "x": lambda: Output(f"{tag} partial "),
        }[kind]()

    from unittest import mock

    m = Monitor(Config.make(signals={"stagnation": {"memory": 256}}))
    largest: dict[str, int] = {}
    with mock.patch.object(monitor_module, "MAX_INTERVENTIONS", 100):
        for i in range(6000):
            kind, n, vary = pattern[i % len(pattern)]
            event = make(kind, n, vary, i)
            m.observe(_at(event, float(i)))
            if i % 1000 == 999:
                for path, size in container_sizes(m).items():
                    largest[path] = max(largest.get(path, 0), size)
    assert max(largest.values(), default=0) <= 256, largest
