"""`echo`: the same call keeps getting much the same back; flag, never stop."""

from __future__ import annotations

import pytest

from loopwatch import Action, Monitor

from core_support import actions, bash, call, feed, only, severity, strongest

WORDS = "the build cache is stale for target core and the worker pool is idle waiting".split()


def status(word: str) -> str:
    """Fifteen words, the last one varying: similarity of consecutive results > 0.9."""
    return " ".join(WORDS + [word])


def test_similar_results_for_n_turns_are_echo():
    m = only("echo", {"turns": 3, "similarity": 0.9})
    verdicts = feed(m, [bash("status", status(w)) for w in ("alpha", "beta", "gamma")])
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "echo"
    assert verdicts[-1].finding.repeats == 3


def test_a_counter_like_noted_2_in_the_draft_still_reads_as_the_same():
    m = only("echo", {"turns": 3, "similarity": 0.9})
    verdicts = feed(m, [call("Note", {"text": "remember the deadline"}, f"noted ({i} in the draft)") for i in (2, 3, 4)])
    assert verdicts[-1].action is Action.NUDGE


def test_below_the_similarity_is_not_echo():
    m = only("echo", {"turns": 3, "similarity": 0.99})
    feed(m, [bash("status", status(w)) for w in ("alpha", "beta", "gamma", "delta")])
    assert severity(m, "echo") == 0.0


def test_different_results_are_not_echo():
    m = only("echo", {"turns": 2, "similarity": 0.9})
    feed(m, [bash("cat notes", " ".join(f"{w}{i}x" for w in WORDS)) for i in "abcdef"])
    assert severity(m, "echo") == 0.0


def test_git_add_of_several_files_is_progress():
    m = only("echo", {"turns": 2, "similarity": 0.5})
    verdicts = feed(m, [bash(f"git add src/mod_{c}.py", "") for c in "abcdefghijklmnop"])
    assert strongest(verdicts) is Action.ALLOW
    every = Monitor(env={})  # all signals, default thresholds
    assert strongest(feed(every, [bash(f"git add src/mod_{c}.py", "") for c in "abcdefghijklmnopqrstuvwxyz"])).rank < Action.NUDGE.rank


def test_sibling_files_with_near_identical_contents_are_progress():
    body = "[tool.ruff]\nline-length = 100\nselect = ['E', 'F', 'I']\n# package: {}\n"
    events = [call("Read", {"file_path": f"packages/{p}/pyproject.toml"}, body.format(p))
              for p in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")]
    m = only("echo", {"turns": 2, "similarity": 0.5})
    assert strongest(feed(m, events)) is Action.ALLOW
    every = Monitor(env={})
    assert strongest(feed(every, events)).rank < Action.NUDGE.rank


@pytest.mark.parametrize("profile, stop", [("unattended", False), ("attended", True)])
def test_echo_never_blocks_or_stops(profile, stop):
    m = only("echo", {"turns": 2, "similarity": 0.9}, profile=profile, stop=stop)
    verdicts = feed(m, [bash("status", status(f"w{c}")) for c in "abcdefghijklmnopqrst"])
    assert Action.NUDGE in actions(verdicts)
    assert strongest(verdicts) is Action.NUDGE


def test_a_poller_is_not_echo():
    m = only("echo", {"turns": 2}, tools={"Status": {"role": "poller"}})
    feed(m, [call("Status", {}, status(w)) for w in ("alpha", "beta", "gamma", "delta")])
    assert severity(m, "echo") == 0.0
