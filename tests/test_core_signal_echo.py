"""`echo`: alike calls keep getting much the same back.

Identical calls, or near-identical calls that all failed, are a loop (may stop);
near-identical calls that succeeded (`git add a.py`, `git add b.py`; sibling files)
are progress: flagged, never blocked or stopped."""

from __future__ import annotations

import pytest

from loopwatch import Action, Monitor

from core_support import actions, bash, call, feed, only, severity, strongest

WORDS = "the build cache is stale for target core and the worker pool is idle waiting".split()
SIMILAR = {"turns": 3, "similarity": 0.9}


def status(word: str) -> str:
    """Fifteen words, the last one varying: similarity of consecutive results > 0.9."""
    return " ".join(WORDS + [word])


def test_the_same_call_with_similar_results_for_n_turns_is_echo():
    m = only("echo", SIMILAR)
    verdicts = feed(m, [bash("status", status(w)) for w in ("alpha", "beta", "gamma")])
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "echo"
    assert verdicts[-1].finding.repeats == 3


def test_the_same_call_with_similar_results_may_stop():
    # the same call, results alike but not the same: suspicion, stops when corroborated
    events = [bash("status", status(w)) for w in ("alpha", "beta", "gamma", "delta")]
    m = only("echo", SIMILAR, profile="unattended", evidence={"confirm": 1})
    assert feed(m, events)[-1].action is Action.STOP
    assert strongest(feed(only("echo", SIMILAR, profile="unattended"), events)) is Action.NUDGE


def test_the_same_call_with_the_same_result_is_repeats_business():
    """ "noted (2 in the draft)", "noted (3 in the draft)" read as the same: a repeat."""
    events = [call("Note", {"text": "remember the deadline"}, f"noted ({i} in the draft)") for i in (2, 3, 4)]
    m = only("echo", SIMILAR)
    assert strongest(feed(m, events)) is Action.ALLOW
    m = only("repeat", {"threshold": 3})
    assert feed(m, events)[-1].action is Action.NUDGE


def test_below_the_similarity_is_not_echo():
    m = only("echo", {"turns": 3, "similarity": 0.99})
    feed(m, [bash("status", status(w)) for w in ("alpha", "beta", "gamma", "delta")])
    assert severity(m, "echo") == 0.0


def test_different_results_are_not_echo():
    m = only("echo", {"turns": 2, "similarity": 0.9})
    feed(m, [bash("cat notes", " ".join(f"{w}{i}x" for w in WORDS)) for i in "abcdef"])
    assert severity(m, "echo") == 0.0


@pytest.mark.parametrize("profile, stop", [("unattended", False), ("attended", True)])
def test_git_add_of_several_files_is_never_blocked_or_stopped(profile, stop):
    events = [bash(f"git add src/mod_{c}.py", "") for c in "abcdefghijklmnopqrstuvwxyz"]
    m = only("echo", {"turns": 2, "similarity": 0.5}, profile=profile, stop=stop)
    assert strongest(feed(m, events)).rank < Action.BLOCK.rank
    every = Monitor(profile=profile, stop=stop)  # all signals, default thresholds
    assert strongest(feed(every, events)).rank < Action.BLOCK.rank


@pytest.mark.parametrize("profile, stop", [("unattended", False), ("attended", True)])
def test_sibling_files_with_near_identical_contents_are_never_blocked_or_stopped(profile, stop):
    body = "[tool.ruff]\nline-length = 100\nselect = ['E', 'F', 'I']\n# package: {}\n"
    events = [
        call("Read", {"file_path": f"packages/{p}/pyproject.toml"}, body.format(p))
        for p in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
    ]
    m = only("echo", {"turns": 2, "similarity": 0.5}, profile=profile, stop=stop)
    assert strongest(feed(m, events)).rank < Action.BLOCK.rank
    every = Monitor(profile=profile, stop=stop)
    assert strongest(feed(every, events)).rank < Action.BLOCK.rank


def test_near_identical_calls_that_all_fail_alike_may_stop():
    """The same edit rejected by the same check, resubmitted with trivial changes."""
    m = only("echo", {"turns": 3, "similarity": 0.5}, profile="unattended", evidence={"confirm": 1})
    events = [
        call("Edit", {"file_path": "a.py", "old_string": "x = 1", "new_string": f"x = {v}"}, status(w), error=True)
        for v, w in (("2", "alpha"), ("3", "beta"), ("4", "gamma"), ("5", "delta"))
    ]
    assert Action.STOP in actions(feed(m, events))
    # near-identical is suspicion: uncorroborated, only the nudge
    m = only("echo", {"turns": 3, "similarity": 0.5}, profile="unattended")
    assert strongest(feed(m, events)) is Action.NUDGE


def test_a_poller_is_not_echo():
    m = only("echo", {"turns": 2}, tools={"Status": {"role": "poller"}})
    feed(m, [call("Status", {}, status(w)) for w in ("alpha", "beta", "gamma", "delta")])
    assert severity(m, "echo") == 0.0


def test_near_identical_calls_that_succeed_are_only_a_warning():
    # the same operation on sibling targets: no loop by the labelling protocol
    m = only("echo", {"turns": 3, "similarity": 0.5}, evidence={"confirm": 1, "second_signal": True})
    events = [
        call("Edit", {"file_path": f"pkg/mod_{w}.py", "old_string": "x = 1", "new_string": "x = 2"}, status(w))
        for w in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
    ]
    assert strongest(feed(m, events)) is Action.WARN
