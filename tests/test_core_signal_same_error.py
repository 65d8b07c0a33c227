"""`same_error`: the same normalized error although the calls vary; a write resets it."""

from __future__ import annotations

from loopwatch import Action

from core_support import bash, call, feed, only, severity, strongest

ERROR = "ModuleNotFoundError: No module named 'yaml'"


def variations(n: int):
    return [bash(f"python -m app --flag-{chr(97 + i)}", ERROR, error=True) for i in range(n)]


def test_the_same_error_from_varying_calls_is_a_loop():
    m = only("same_error", {"threshold": 4})
    verdicts = feed(m, variations(4))
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "same_error"
    assert verdicts[-1].finding.description.startswith("the same Bash error came back 4 times from 4 different calls")
    assert verdicts[1].action is Action.WARN  # half the threshold


def test_counts_need_not_be_consecutive():
    m = only("same_error", {"threshold": 3})
    events = []
    for i, e in enumerate(variations(3)):
        events += [e, bash(f"ls dir{chr(97 + i)}", "a.py b.py")]
    assert any(v.action is Action.NUDGE for v in feed(m, events))


def test_a_successful_write_resets_the_count():
    m = only("same_error", {"threshold": 3})
    events = []
    for i, e in enumerate(variations(10)):
        events.append(e)
        if i % 2:
            events.append(call("Edit", {"file_path": "req.txt", "n": i}, "ok", changed=["req.txt"]))
    assert strongest(feed(m, events)).rank < Action.NUDGE.rank


def test_a_configured_writer_resets_the_count_and_a_failed_one_does_not():
    events = []
    for i, e in enumerate(variations(6)):
        events += [e, call("Write", {"file_path": "setup.cfg", "n": i}, "ok")]
    m = only("same_error", {"threshold": 3}, tools={"Write": {"role": "writer"}})
    assert strongest(feed(m, events)).rank < Action.NUDGE.rank
    failed = [e if e.name == "Bash" else call("Write", e.input, "denied", error=True) for e in events]
    m = only("same_error", {"threshold": 3}, tools={"Write": {"role": "writer"}})
    assert any(v.action is Action.NUDGE and v.signal == "same_error" for v in feed(m, failed))


def test_errors_differing_only_in_counters_and_echoed_arguments_are_the_same():
    m = only("same_error", {"threshold": 3})
    events = [
        bash(f"grep -rn {p} src", f'grep: line {n}: No matches found for "{p}"', error=True)
        for p, n in (("parse_header", 11301), ("read_config", 11316), ("load_yaml", 11331))
    ]
    assert feed(m, events)[-1].action is Action.NUDGE


def test_different_errors_are_counted_apart():
    m = only("same_error", {"threshold": 3})
    errors = ["ImportError: yaml", "KeyError: 'name'", "PermissionError: /etc/hosts"]
    feed(m, [bash(f"run {chr(97 + i)}", errors[i % 3], error=True) for i in range(6)])
    assert severity(m, "same_error") < 1.0


def test_successful_calls_are_not_errors():
    m = only("same_error", {"threshold": 2})
    feed(m, [bash(f"echo {chr(97 + i)}", "same output") for i in range(10)])
    assert severity(m, "same_error") == 0.0


def test_tracked_errors_are_bounded():
    m = only("same_error", {"threshold": 3})
    feed(
        m,
        [
            bash("x", f"error kind {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676)}", error=True)
            for i in range(5000)
        ],
    )
    (signal,) = m._signals
    assert len(signal._errors) <= 256
    assert all(len(calls) <= 64 for _, _, calls in signal._errors.values())


def test_a_missing_program_is_not_excused_by_writes():
    # Editing a file cannot install javac: five labelled runaways alternate edits with it.
    m = only("same_error", {"threshold": 3})
    events = []
    for i in range(3):
        events += [
            call("Edit", {"file_path": "T.java", "n": i}, "ok", changed=["T.java"]),
            bash("javac T.java", f"/bin/bash: line {100 + i}: javac: command not found", error=True),
        ]
    verdicts = feed(m, events)
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "same_error"


def test_an_ordinary_error_is_excused_by_writes():
    m = only("same_error", {"threshold": 3})
    events = []
    for i in range(3):
        events += [
            call("Edit", {"file_path": "t.py", "n": i}, "ok", changed=["t.py"]),
            bash("python t.py", "AssertionError: expected 3", error=True),
        ]
    assert strongest(feed(m, events)).rank < Action.WARN.rank
