"""`Guard`: the facade hand-written harnesses (and every adapter) use."""

from __future__ import annotations

import gc
import os
import queue
import subprocess
import sys
import threading
import tracemalloc
import weakref
from pathlib import Path

import pytest
from core_support import OFF
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Action, Guard, drop

FAILED = "FAILED tests/test_x.py::test_a - AssertionError"
SRC = str(Path(__file__).resolve().parents[1] / "src")


def python(code: str) -> str:
    """Run `code` in a fresh interpreter that imports this checkout's loopwatch."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def attended(**kw) -> Guard:
    """nudge, block, stop; only the repeat signal, threshold 3 (stated here)."""
    signals = {**OFF, "repeat": {"threshold": 3}}
    return Guard(profile="attended", stop=True, signals=signals, env={}, clock=None, **kw)


def run_call(guard: Guard, name: str, args, result, call_id: str, **kw):
    """What a harness does: ask, run (or not), report. Returns (before, after)."""
    before = guard.before_call(name, args, call_id=call_id)
    shown = before.tool_result if before.blocks else result
    after = guard.after_call(name, args, shown, call_id=call_id, **kw)
    return before, after


def test_ladder_nudge_then_block_then_stop():
    guard = attended()
    seen = []
    for i in range(6):
        before, after = run_call(guard, "Bash", {"command": "pytest"}, FAILED, f"c{i}", error=True)
        seen.append((before.action, after.action))
    A, N, B, S = Action.ALLOW, Action.NUDGE, Action.BLOCK, Action.STOP
    assert seen == [(A, A), (A, A), (A, N), (B, A), (S, A), (S, A)]
    assert guard.stopped and "3 times in a row" in guard.stopped


def test_nudge_and_block_messages_are_for_the_model():
    guard = attended()
    for i in range(2):
        run_call(guard, "Bash", {"command": "pytest -x"}, FAILED, f"c{i}")
    _, nudge = run_call(guard, "Bash", {"command": "pytest -x"}, FAILED, "c2")
    assert nudge.message.startswith("loopwatch: you appear to be going in circles")
    assert "pytest -x" in nudge.message and nudge.tool_result is None
    block = guard.before_call("Bash", {"command": "pytest -x"}, call_id="c3")
    assert block.blocks and block.tool_result.startswith("loopwatch blocked this call")
    assert block.reason and "pytest" not in block.reason  # the person's line names no input


def test_blocked_call_reported_afterwards_is_not_a_completed_call():
    guard = attended()
    for i in range(3):
        run_call(guard, "Bash", {"command": "pytest"}, FAILED, f"c{i}")
    assert guard.monitor.actions == 3
    block = guard.before_call("Bash", {"command": "pytest"}, call_id="c3")
    assert block.action is Action.BLOCK
    # The framework reports the blocked call with the block message as its result.
    assert guard.after_call("Bash", {"command": "pytest"}, block.tool_result, call_id="c3").action is Action.ALLOW
    assert guard.monitor.actions == 3
    # Had it been counted, its different result would have ended the streak and let this run.
    assert guard.before_call("Bash", {"command": "pytest"}, call_id="c4").action is Action.STOP


def test_blocked_call_without_ids_is_recognised_by_its_input():
    guard = attended()
    for _ in range(3):
        run_call(guard, "Bash", {"command": "pytest"}, FAILED, None)
    block = guard.before_call("Bash", {"command": "pytest"})
    assert block.action is Action.BLOCK
    guard.after_call("Bash", {"command": "pytest"}, block.tool_result)
    assert guard.monitor.actions == 3
    # Another call reported with no block behind it is counted.
    guard.after_call("Read", {"path": "a.py"}, "text")
    assert guard.monitor.actions == 4


def test_non_consecutive_repeats_are_not_a_streak():
    guard = attended()
    for i in range(8):
        # validate, fix, validate, fix, ...: each fix a different edit that changes a file
        before, after = run_call(guard, "Bash", {"command": "pytest"}, FAILED, f"t{i}")
        assert (before.action, after.action) == (Action.ALLOW, Action.ALLOW)
        before, after = run_call(guard, "Edit", {"path": "a.py", "new": f"v{i}"}, "ok", f"e{i}", changed=["a.py"])
        assert (before.action, after.action) == (Action.ALLOW, Action.ALLOW)
    assert guard.stopped is None


def test_key_function_lets_a_cosmetic_argument_not_hide_a_repeat():
    def calls(guard: Guard, tool: str = "run_tests"):
        return [
            run_call(guard, tool, {"command": "pytest", "description": f"run the tests, try {i}"}, FAILED, f"c{i}")[
                1
            ].action
            for i in range(3)
        ]

    assert calls(attended()) == [Action.ALLOW] * 3  # every input differs: a tool of the user's own
    assert calls(attended(keys={"run_tests": drop("description")}))[-1] is Action.NUDGE
    # A host's tool needs no key function: Bash's description identifies nothing by default.
    assert calls(attended(), "Bash")[-1] is Action.NUDGE


def test_a_key_function_that_raises_does_not_disarm_the_guard():
    guard = attended(keys={"Bash": lambda value: value["command"]})  # KeyError on other inputs
    actions = [run_call(guard, "Bash", {"cmd": "pytest"}, FAILED, f"c{i}")[1].action for i in range(3)]
    assert actions[-1] is Action.NUDGE


def test_user_message_lifts_a_stop_and_restarts_streaks():
    guard = attended()
    for i in range(5):
        run_call(guard, "Bash", {"command": "pytest"}, FAILED, f"c{i}")
    assert guard.stopped
    assert guard.before_call("Read", {"path": "a.py"}).action is Action.STOP  # refused once stopped
    guard.user()
    assert guard.stopped is None
    assert guard.before_call("Bash", {"command": "pytest"}, call_id="d0").action is Action.ALLOW


def test_unattended_nudges_then_stops():
    guard = Guard(signals={**OFF, "repeat": {"threshold": 3}}, env={}, clock=None)
    actions = []
    for i in range(5):
        before, after = run_call(guard, "Bash", {"command": "pytest"}, FAILED, f"c{i}", error=True)
        actions.append(before.action if before.blocks else after.action)
    assert actions == [Action.ALLOW, Action.ALLOW, Action.NUDGE, Action.STOP, Action.STOP]


def test_unattended_the_same_unflagged_result_is_stopped_from_its_fifth_copy():
    """Failure text the harness does not flag is, to the guard, the same success again:
    nudged at the threshold, stopped from the 5th copy."""
    guard = Guard(signals={**OFF, "repeat": {"threshold": 3}}, env={}, clock=None)
    actions = []
    for i in range(6):
        before, after = run_call(guard, "Bash", {"command": "pytest"}, FAILED, f"c{i}")
        actions.append(before.action if before.blocks else after.action)
    assert actions == [Action.ALLOW, Action.ALLOW, Action.NUDGE, Action.ALLOW, Action.STOP, Action.STOP]


def test_block_decided_after_the_call_ran_is_a_nudge_saying_so():
    guard = attended()  # a harness that never asks before_call
    actions = [guard.after_call("Bash", {"command": "pytest"}, FAILED, call_id=f"c{i}") for i in range(4)]
    assert [a.action for a in actions] == [Action.ALLOW, Action.ALLOW, Action.NUDGE, Action.NUDGE]
    assert actions[-1].message.startswith("loopwatch: this call ran, but you are still going in circles")
    assert actions[-1].verdict.action is Action.BLOCK


def test_clock_is_the_callers_or_monotonic():
    now = [100.0]
    guard = Guard(clock=lambda: now[0], env={})
    guard.after_call("Bash", {"command": "ls"}, "a")
    now[0] = 130.0
    guard.after_call("Bash", {"command": "ls"}, "a")
    assert (guard.monitor.first_at, guard.monitor.last_at) == (100.0, 130.0)
    guard.after_call("Bash", {"command": "ls"}, "a", at=500.0)  # an explicit time wins
    assert guard.monitor.last_at == 500.0
    import time

    before = time.monotonic()
    default = Guard()
    default.turn()
    assert before <= default.monitor.last_at <= time.monotonic()


def test_passing_both_a_monitor_and_a_config_is_refused():
    from loopwatch import Monitor

    with pytest.raises(TypeError):
        Guard(Monitor(), profile="attended")


def test_text_and_turns_reach_the_monitor():
    guard = Guard(signals={**OFF, "chanting": {"repeats": 3}}, env={}, clock=None)
    sentence = "I will now carefully re-run the full test suite to check whether the fix worked. "
    assert guard.text(sentence * 2).action is Action.ALLOW
    decisions = [guard.text(sentence, chunk=True) for _ in range(6)] + [guard.turn()]
    assert any(d.action is not Action.ALLOW for d in decisions)


_ops = st.lists(
    st.tuples(st.sampled_from(["Bash", "Read"]), st.sampled_from(["a", "b"]), st.sampled_from(["ok", "no"])),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_ops)
def test_property_only_calls_that_ran_are_counted(ops):
    guard = attended()
    ran = 0
    for i, (name, arg, result) in enumerate(ops):
        before = guard.before_call(name, {"x": arg}, call_id=str(i))
        if before.blocks:
            guard.after_call(name, {"x": arg}, before.tool_result, call_id=str(i))
        else:
            ran += 1
            guard.after_call(name, {"x": arg}, result, call_id=str(i))
    assert guard.monitor.actions == ran


FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "langgraph",
    "agents",
    "openai",
    "pydantic_ai",
    "mcp",
    "opentelemetry",
    "claude_agent_sdk",
    "click",
    "rich",
    "orjson",
)


def test_import_loopwatch_leaves_the_guard_until_it_is_used():
    code = (
        "import sys, loopwatch; before = 'loopwatch._guard' in sys.modules; "
        "from loopwatch import Guard; print(before, 'loopwatch._guard' in sys.modules, 'Guard' in dir(loopwatch))"
    )
    assert python(code).split() == ["False", "True", "True"]


@pytest.mark.parametrize("module", ["loopwatch", "loopwatch.adapters"])
def test_import_loads_no_framework(module):
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = python(code).split()
    assert "loopwatch" in out and not set(FRAMEWORKS) & set(out), set(FRAMEWORKS) & set(out)


ADAPTERS = {
    "langchain": "langchain",
    "openai_agents": "agents",
    "pydantic_ai": "pydantic_ai",
    "mcp_proxy": "mcp",
    "otel": "opentelemetry",
    "claude_agent_sdk": "claude_agent_sdk",
}


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_an_adapter_without_its_framework_says_which_extra_to_install(adapter):
    # The framework made unimportable, as when its extra is not installed.
    code = (
        f"import sys; sys.modules[{ADAPTERS[adapter]!r}] = None\n"
        f"try:\n    import loopwatch.adapters.{adapter}\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    out = python(code)
    assert "pip install 'loopwatch[" in out, out


# -- one guard, many runs -------------------------------------------------------------------


class RunContext:
    """Stands for what a framework keeps for exactly one run (weakly referenceable)."""


def loop_once(guard: Guard, run, tool: str, n: int, **kw) -> list[Action]:
    return [
        run_call(guard.for_run(run, **kw), tool, {"path": "tests"}, FAILED, f"{run}-{i}")[0].action for i in range(n)
    ]


def test_runs_are_watched_apart_and_a_stop_stays_in_its_run():
    guard = attended()
    for i in range(5):  # two runs, interleaved call by call
        loop_once(guard, "a", "run_tests", 1)
        loop_once(guard, "b", "read_file", 1)
    assert guard.for_run("a").stopped and guard.for_run("b").stopped
    assert loop_once(guard, "c", "run_tests", 1) == [Action.ALLOW]  # a new run starts clean
    assert guard.stopped is None and guard.monitor.actions == 0  # the settings watch no run
    assert guard.for_run("a", "sub").stopped is None  # each agent of a run on its own


def test_finished_runs_are_released():
    guard = attended()
    context = RunContext()
    loop_once(guard, 1, "run_tests", 5, lifetime=context)
    loop_once(guard, 2, "run_tests", 2)
    assert guard.live_runs == 2
    del context  # the framework let go of the run
    guard.end_run(2)
    assert guard.live_runs == 0


@pytest.mark.slow
def test_ten_thousand_runs_leave_memory_flat():
    guard = attended()

    def serve(runs: range) -> None:
        for i in runs:
            context = RunContext()
            guard.for_run(i, lifetime=context)  # released with its context
            loop_once(guard, i, "run_tests", 2)
            loop_once(guard, -i - 1, "read_file", 1)
            guard.end_run(-i - 1)  # released at its end

    serve(range(1000))
    tracemalloc.start()
    after_1000 = tracemalloc.get_traced_memory()[0]
    serve(range(1000, 10000))
    grown = tracemalloc.get_traced_memory()[0] - after_1000
    tracemalloc.stop()
    assert guard.live_runs == 0
    # One run's guard and monitor take some 7 KiB: 9,000 runs kept would be over 60 MiB.
    assert grown < 256 * 1024, grown


def test_runs_never_ended_are_bounded():
    guard = attended()
    for i in range(3000):
        loop_once(guard, i, "run_tests", 1)
    assert guard.live_runs == 1024
    # The latest runs kept their state (the 4th call in a row is blocked); the oldest were let go.
    assert loop_once(guard, 2999, "run_tests", 3) == [Action.ALLOW, Action.ALLOW, Action.BLOCK]
    assert loop_once(guard, 0, "run_tests", 1) == [Action.ALLOW] and guard.live_runs == 1024


def test_a_guard_around_one_monitor_watches_one_run():
    from loopwatch import Monitor

    guard = Guard(Monitor())
    assert not guard.serves_runs
    with pytest.raises(TypeError, match="watches one run"):
        guard.for_run("a")


class CollectingLock:
    """The guard's lock, with a full garbage collection each time it is taken: what a
    collection that happens to run inside any of the guard's locked sections does.
    Waited for by the thread that holds it (where a real lock blocks that thread for
    ever), it counts the re-entry and raises instead; a try that does not wait is
    refused, as a real lock refuses it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self.reentered = 0

    def acquire(self, blocking: bool = True) -> bool:
        if self._owner == threading.get_ident():
            if not blocking:
                return False
            self.reentered += 1
            raise RuntimeError("the guard's lock was waited for by the thread holding it")
        if not self._lock.acquire(blocking):
            return False
        self._owner = threading.get_ident()
        gc.collect()
        return True

    def release(self) -> None:
        self._owner = None
        self._lock.release()

    def __enter__(self) -> CollectingLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_a_collection_inside_the_guard_never_waits_on_the_guards_own_lock():
    guard = attended()
    lock = guard._lock = CollectingLock()
    gc.disable()  # the finished run's context goes in the collection inside the lock, and only there
    try:
        context = RunContext()
        context.itself = context  # a cycle: only a collection frees it
        loop_once(guard, "finished", "run_tests", 1, lifetime=context)
        del context
        guard.for_run("next")  # holds the lock while it makes the run's guard; the collection runs then
    finally:
        gc.enable()
    assert lock.reentered == 0
    assert guard.live_runs == 1  # the finished run was released all the same


def test_a_run_whose_lifetime_goes_while_the_guard_is_idle_is_released_at_once():
    guard = attended()
    context = RunContext()
    run_guard = weakref.ref(guard.for_run("job", lifetime=context))
    del context
    assert run_guard() is None  # nothing of the run outlives it, with no call to the guard since


def test_a_run_id_used_again_is_not_ended_by_the_earlier_runs_lifetime():
    guard = attended()
    first = RunContext()
    loop_once(guard, "job", "run_tests", 1, lifetime=first)
    guard.end_run("job")
    second = RunContext()
    assert loop_once(guard, "job", "run_tests", 3, lifetime=second) == [Action.ALLOW] * 3
    del first  # the earlier run's context goes: that ends the earlier run, not this one
    assert loop_once(guard, "job", "run_tests", 1, lifetime=second) == [Action.BLOCK]


class HeldQueue(queue.SimpleQueue):
    """The guard's queue of runs whose lifetime went, whose `put` waits for `release`:
    a finalizer caught after it fired and before it reported (in another thread)."""

    def __init__(self, progress: threading.Event) -> None:
        self.progress = progress
        self.reporting = threading.Event()
        self.release = threading.Event()

    def put(self, item, block=True, timeout=None):
        self.reporting.set()
        self.progress.set()
        self.release.wait()
        super().put(item)


def test_a_finalizer_that_reports_after_its_run_was_ended_and_the_id_reused_ends_nothing():
    guard = attended()
    progress = threading.Event()  # set when the finalizer reports, or when the collector is done
    guard._gone = gone = HeldQueue(progress)
    first = [RunContext()]
    loop_once(guard, "job", "run_tests", 1, lifetime=first[0])

    def collect() -> None:
        first.clear()  # the earlier context goes, in another thread
        progress.set()

    collector = threading.Thread(target=collect)
    collector.start()
    progress.wait()
    if not gone.reporting.is_set():
        collector.join()
        pytest.fail("the lifetime's finalizer did its work itself instead of reporting to the guard's queue")
    # Its finalizer fired and has not reported yet: too late for end_run to detach it.
    guard.end_run("job")
    second = RunContext()
    assert loop_once(guard, "job", "run_tests", 3, lifetime=second) == [Action.ALLOW] * 3
    gone.release.set()
    collector.join()
    assert loop_once(guard, "job", "run_tests", 1, lifetime=second) == [Action.BLOCK]


def test_a_run_keyed_by_its_contexts_address_starts_clean_when_a_new_context_takes_it():
    guard = attended()  # the OpenAI Agents adapter keys a run by `id()` of what lives as long as it
    context = RunContext()
    assert loop_once(guard, "address", "run_tests", 4, lifetime=context)[-1] == Action.BLOCK
    del context  # gone: a new run's context may now have the same address
    assert loop_once(guard, "address", "run_tests", 1, lifetime=RunContext()) == [Action.ALLOW]


@pytest.mark.parametrize("known", [False, True], ids=["new-run", "known-run"])
def test_a_lifetime_that_cannot_be_weakly_referenced_is_refused_before_anything_is_kept(known):
    guard = attended()
    if known:
        guard.for_run("job")
    for _ in range(2):  # the same answer each time
        with pytest.raises(TypeError, match=r"lifetime=.*weakly referenced.*int"):
            guard.for_run("job", lifetime=42)
        assert guard.live_runs == int(known)
