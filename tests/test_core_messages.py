"""Findings as message classes: one class per kind, the wording in one place, records
that keep the kind and the arguments (names, counts, seconds) and nothing else."""

from __future__ import annotations

import json

import pytest
from core_support import actions, bash, call, feed, only

from loopwatch import Action, Correction, ModelText, Output, Retry, ToolCall, Turn, UserMessage
from loopwatch._core.finding import Finding
from loopwatch._core.messages import (
    MESSAGES,
    ActionCycle,
    Message,
    ProviderRetries,
    RecurringError,
    RepeatedOutput,
    SameCorrection,
    SameResult,
    duration,
)
from loopwatch._core.signals import SIGNALS
from loopwatch._core.verdict import for_model

SECRET = "s3cr3t-VALUE-9f2"


def test_a_message_renders_its_template_from_its_arguments():
    message = ActionCycle(4, ("Bash", "Read", "Bash", "Bash"), 3, True, 444.0)
    assert (
        message.text()
        == "the same 4-step action cycle (Bash, Bash, Bash, Read) repeated 3 times and begun again over 7m24s"
    )
    assert message.hint().startswith("you have been doing these 4 things over and over")
    assert message.kind == "ActionCycle"
    assert message.args == {
        "period": 4,
        "names": ("Bash", "Read", "Bash", "Bash"),
        "count": 3,
        "begun_again": True,
        "span": 444.0,
    }


def test_under_a_second_no_span_is_said():
    assert SameResult("Bash", 3, 0.4).text() == "the same Bash call returned the same result 3 times in a row"
    assert SameResult("Bash", 3, 1.0).text().endswith(" over 1s")


def test_every_duration_is_worded_one_way():
    """The retry storm said `over 600s` where every other signal said `10m00s`."""
    assert ProviderRetries(8, 600.0).text() == "8 provider retries in a row over 10m00s with no answer"
    assert SameResult("Bash", 3, 600.0).text().endswith(" over 10m00s")
    m = only("retry_storm", {"retries": 5, "window": 60.0})
    verdicts = feed(m, [Retry(reason="529 overloaded") for _ in range(11)], step=60.0)
    assert verdicts[-1].description == f"11 provider retries in a row over {duration(600.0)} with no answer"


@pytest.mark.parametrize(
    "seconds,words",
    [
        (0, "0s"),
        (42, "42s"),
        (59.4, "59s"),
        (60, "1m00s"),
        (554, "9m14s"),
        (3599, "59m59s"),
        (3600, "1h00m"),
        (7380, "2h03m"),
    ],
)
def test_duration(seconds, words):
    assert duration(seconds) == words


def test_the_model_is_told_the_call_it_repeats_by_the_message_class_not_the_signal_name():
    m = only("repeat", {"threshold": 3}, profile="attended")
    nudge = next(v for v in feed(m, [bash("pytest -x", "1 failed") for _ in range(5)]) if v.action is Action.NUDGE)
    assert nudge.message == (
        "loopwatch: you appear to be going in circles: you ran `pytest -x` 3 times and got the "
        "same result each time. Read the result, then change the command, the code or the "
        "approach before running it again."
    )
    # A signal named "repeat" whose message is another kind is not worded as a repeat.
    finding = Finding("repeat", 1.0, 1, SameCorrection(3, 3))
    assert "you ran" not in for_model(finding, Action.NUDGE, "pytest -x")
    # And a message of the repeat kind is, whichever signal made it.
    finding = Finding("custom", 1.0, 1, SameResult("Bash", 3))
    assert "you ran `make` 3 times" in for_model(finding, Action.NUDGE, "make")


def test_the_cycle_names_no_call():
    m = only("cycle", {"repeats": 2, "max_period": 4}, profile="attended")
    rounds = [bash("make", "e", error=True), call("Read", {"file_path": "a.py"}, "x")] * 4
    nudge = next(v for v in feed(m, rounds) if v.action is Action.NUDGE)
    assert nudge.message.startswith(
        "loopwatch: you appear to be going in circles: the same 2-step action cycle (Bash, Read)"
    )
    assert "make" not in nudge.message


def _streams():
    """Streams that make each signal find something, with a secret in every input,
    result, text and output line."""
    return {
        "repeat": [bash(f"echo {SECRET}", SECRET) for _ in range(4)],
        "cycle": [bash(f"a {SECRET}", "1"), bash(f"b {SECRET}", "2")] * 3,
        "stagnation": [bash(f"c{i} {SECRET}", str(i)) for i in range(3)] * 10,
        "churn": [bash(f"d{i % 2} {SECRET}", f"{SECRET}{i}") for i in range(25)],
        "echo": [
            bash(
                f"grep -rn {SECRET} src tests docs examples bench x{i}",
                f"error: no match for {SECRET} in src tests docs examples bench {i}",
                error=True,
            )
            for i in range(4)
        ],
        "same_error": [bash(f"e{i} {SECRET}", f"fatal: {SECRET}", error=True) for i in range(7)],
        "correction": [Correction(f"Please use one action {SECRET}") for _ in range(4)],
        "apology": [ModelText(f"I apologize, {SECRET} was wrong.") for _ in range(4)],
        "repeated_lines": [Output(f"retrying {SECRET} in 5s\n") for _ in range(9)],
        "retry_storm": [Retry(reason=SECRET) for _ in range(9)],
        "chanting": [ModelText(f"Let me check {SECRET}. " * 6), Turn()],
        "wedged": [bash(f"cat {SECRET}", f"> cat {SECRET}\n>") for _ in range(4)],
        "unchanged": [
            x
            for i in range(5)
            for x in (
                call("Edit", {"file_path": f"{SECRET}.py", "n": i}, "ok", changed=[f"{SECRET}.py"]),
                bash(f"pytest {SECRET}", f"1 failed: {SECRET}", error=True),
            )
        ],
        "reverify": [
            x
            for _ in range(4)
            for x in (bash(f"cat {SECRET}", SECRET), call("mark_task_complete", {"why": SECRET}, SECRET))
        ],
        "text_only": [bash(f"ls {SECRET}", SECRET)]
        + [x for _ in range(8) for x in (ModelText(f"Done: {SECRET}."), UserMessage())],
    }


def test_every_signal_has_a_stream():
    assert set(_streams()) == set(SIGNALS)


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_every_signal_says_what_it_saw_with_a_message_class_and_its_record_keeps_only_its_arguments(name):
    monitor = only(name)
    feed(monitor, _streams()[name], step=20.0)
    assert name in monitor.strongest, name
    finding = monitor.strongest[name]
    assert type(finding.message) in MESSAGES.values()
    assert finding.description == finding.message.text() and finding.hint == finding.message.hint()
    for value in finding.message.args.values():  # names, counts, seconds, flags
        assert isinstance(value, (str, int, float, bool, tuple))
        assert SECRET not in str(value)
    record = monitor.record()
    kept = next(f for f in record["findings"] if f["signal"] == name)
    assert kept["message"] == finding.message.kind
    assert kept["args"] == json.loads(json.dumps(finding.message.args))
    assert MESSAGES[kept["message"]](**kept["args"]).text() == kept["description"]  # worded again from the record
    assert SECRET not in json.dumps(record)


def test_the_verdict_record_keeps_the_message_too():
    m = only("repeat", {"threshold": 2})
    got = actions(feed(m, [bash("ls", "a") for _ in range(5)]))
    assert got == [Action.ALLOW, Action.NUDGE, Action.ALLOW, Action.ALLOW, Action.STOP]  # a success: the 5th copy
    verdict = m.record()["verdict"]
    assert verdict["message"] == "SameResult" and verdict["args"] == {"tool": "Bash", "count": 5, "span": 4.0}


def test_messages_are_plain_data():
    assert SameResult("Bash", 3, 2.0) == SameResult("Bash", 3, 2.0)
    assert SameResult("Bash", 3, 2.0) != SameResult("Bash", 4, 2.0)
    assert RecurringError("Bash", 3, 3, False) != SameResult("Bash", 3)
    assert len({SameResult("Bash", 3), SameResult("Bash", 3)}) == 1
    assert repr(RepeatedOutput(1, 8, "retry")) == "RepeatedOutput(period=1, count=8, how='retry')"
    assert all(issubclass(cls, Message) and name == cls.__name__ for name, cls in MESSAGES.items())


def test_the_signals_word_nothing_themselves():
    """No signal module writes a sentence for a person or the model: every `Finding`
    gets a message class, and the wording is in `loopwatch._core.messages`."""
    import inspect

    for cls in SIGNALS.values():
        source = inspect.getsource(inspect.getmodule(cls))
        assert "description=" not in source and "hint=" not in source, cls.name
        assert "duration(" not in source, cls.name


def test_a_tool_call_event_is_unchanged_by_wording():
    # the finding's message holds the tool name it was given, never the input
    m = only("repeat", {"threshold": 3})
    feed(m, [ToolCall("run_tests", {"path": SECRET}, "1 failed") for _ in range(3)])
    assert m.strongest["repeat"].message == SameResult("run_tests", 3, 2.0)
