"""Two grades of evidence: proof stops on its own, suspicion only when corroborated."""

from __future__ import annotations

import pytest
from core_support import OFF, actions, bash, call, feed, looping, only

from loopwatch import Action, Config, Monitor
from loopwatch._core.finding import PROOF, SUSPICION
from loopwatch._core.signals import SIGNALS
from loopwatch._core.signals.base import Signal
from conftest import corpus_label, needs_corpus
from conftest import replay_corpus as replay


def same_error(n: int, start: int = 0) -> list:
    """Varied calls meeting the same error (suspicion)."""
    return [
        bash(f"javac -d out{i} Main.java", "bash: javac: command not found", error=True)
        for i in range(start, start + n)
    ]


def fresh(i: int):
    return bash(f"cat src/mod_{i}.py", f"module {chr(97 + i % 26)} body {i // 26}")


def test_every_signal_declares_a_grade():
    for name, cls in SIGNALS.items():
        assert cls.grade in (PROOF, SUSPICION), name
    assert SIGNALS["repeat"].grade == PROOF and SIGNALS["cycle"].grade == PROOF
    assert SIGNALS["same_error"].grade == SUSPICION and SIGNALS["correction"].grade == SUSPICION
    assert Signal.grade == PROOF  # a signal says otherwise in its own class body


def test_the_monitor_stamps_each_finding_with_its_signals_grade():
    m = only("same_error", {"threshold": 3})
    verdicts = feed(m, same_error(3))
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].finding.grade == SUSPICION
    m = only("repeat", {"threshold": 3})
    assert feed(m, looping(3))[-1].finding.grade == PROOF


def test_proof_stops_on_its_own_with_no_calibration():
    m = only("repeat", {"threshold": 3})  # confirm 0, no second signal: the careful defaults
    assert actions(feed(m, looping(5)))[2:] == [Action.NUDGE, Action.STOP, Action.STOP]


def test_uncalibrated_suspicion_only_nudges():
    m = only("same_error", {"threshold": 3})
    got = actions(feed(m, same_error(30)))
    assert got.count(Action.NUDGE) == 1 and Action.STOP not in got


@pytest.mark.parametrize("confirm", [1, 2, 4])
def test_suspicion_stops_after_confirm_rounds_past_the_nudge(confirm):
    m = only("same_error", {"threshold": 3}, evidence={"confirm": confirm})
    got = actions(feed(m, same_error(3 + confirm + 1)))
    assert got[2] is Action.NUDGE
    assert got[3 : 2 + confirm] == [Action.ALLOW] * (confirm - 1)
    assert got[2 + confirm] is Action.STOP


def test_a_new_success_between_rounds_breaks_the_corroboration():
    # the harm class: searches that find nothing scattered among successful searches
    m = only("same_error", {"threshold": 3}, evidence={"confirm": 2})
    events = same_error(3)
    for i in range(20):
        events += [fresh(i)] + same_error(1, 10 + i)
    got = actions(feed(m, events))
    assert got[2] is Action.NUDGE and Action.STOP not in got


def test_a_replayed_success_between_rounds_is_nothing_new():
    m = only("same_error", {"threshold": 3}, evidence={"confirm": 2})
    events = same_error(3)
    for i in range(3):
        events += [bash("ls", "Main.java")] + same_error(1, 10 + i)
    got = actions(feed(m, [bash("ls", "Main.java")] + events))
    assert Action.STOP in got


def test_a_second_signal_corroborates_suspicion():
    # the same failing call resubmitted (repeat, proof) inside a same_error streak
    signals = {**OFF, "same_error": {"threshold": 3}, "echo": {"turns": 3, "similarity": 0.6}}
    edits = [bash(f"javac -g:{c} Main.java", "bash: javac: command not found", error=True) for c in "abcdefgh"]
    alone = Monitor(signals={**OFF, "same_error": {"threshold": 3}}, evidence={"second_signal": True})
    assert Action.STOP not in actions(feed(alone, edits))
    both = Monitor(signals=signals, evidence={"second_signal": True})
    got = feed(both, edits)
    stops = [v for v in got if v.action is Action.STOP]
    assert stops, actions(got)
    none = Monitor(signals=signals)
    assert Action.STOP not in actions(feed(none, edits))


def test_held_suspicion_takes_the_next_rung_not_the_last():
    m = only("same_error", {"threshold": 3}, profile="attended", stop=True, evidence={"confirm": 2})
    got = actions(feed(m, same_error(10)))
    # nudged at the 3rd, held at the 4th, corroborated at the 5th: block, then stop
    assert got[2:7] == [Action.NUDGE, Action.ALLOW, Action.BLOCK, Action.STOP, Action.STOP]


def test_a_calibration_applies_only_to_keys_the_configuration_does_not_set():
    profile = {"signals": {"same_error": {"threshold": 5}}, "evidence": {"confirm": 3, "second_signal": True}}
    mine = Config.make(signals={"same_error": {"threshold": 9}})
    applied = mine.with_calibration(profile, "test")
    assert applied.signals["same_error"].threshold == 9
    assert applied.confirm == 3 and applied.second_signal is True and applied.calibrated == "test"
    given = Config.make(evidence={"confirm": 1}).with_calibration(profile, "test")
    assert given.confirm == 1 and given.signals["same_error"].threshold == 5


def test_an_unknown_source_keeps_the_careful_defaults():
    config = Config.make()
    assert config.for_source("no-such-format") is config
    assert config.confirm == 0 and config.second_signal is False
    assert Config.make(calibration="none").for_source("swe-agent").calibrated == ""


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"evidence": {"confirm": -1}}, "evidence.confirm"),
        ({"evidence": {"confirm": True}}, "evidence.confirm"),
        ({"evidence": {"second_signal": "yes"}}, "evidence.second_signal"),
        ({"evidence": {"confrim": 2}}, "did you mean 'confirm'"),
        ({"calibration": "always"}, "calibration"),
    ],
)
def test_bad_evidence_settings_are_refused_clearly(bad, message):
    from loopwatch._core.config import ConfigError

    with pytest.raises(ConfigError, match=message):
        Config.make(bad)


def test_varied_searches_answered_no_match_with_no_error_flag_are_a_same_result_loop():
    # Claude Code's Grep answers "No files found" and flags no error
    searches = [call("Grep", {"pattern": f"def handler_{w}"}, "No files found") for w in "abcdefghij"]
    m = only("same_error", {"threshold": 4}, evidence={"confirm": 2})
    got = actions(feed(m, searches))
    assert got[3] is Action.NUDGE and Action.STOP in got
    # the same searches finding things are progress
    found = [call("Grep", {"pattern": f"def handler_{w}"}, f"src/{w}.py") for w in "abcdefghij"]
    assert max(a.rank for a in actions(feed(only("same_error", {"threshold": 4}, evidence={"confirm": 2}), found))) == 0


@pytest.mark.parametrize(
    "answer, nothing",
    [
        ('Found 0 matches for "makeChild" in /repo', True),
        ("0 files found", True),
        ('Found 34 matches for "makeChild" in /repo: /repo/src/JsonFactory.java (5 matches)', False),
        ('Found 1 matches for "handlers.py" in /repo: /repo/handlers.py', False),
        ("3 files found", False),
    ],
)
def test_a_counted_answer_is_nothing_found_only_when_its_count_is_zero(answer, nothing):
    # SWE-agent's search_dir/search_file/find_file answer "Found N matches"; normalized,
    # every N is `#`, and searches that found 34 matches were failures with nothing found
    from loopwatch._core.step import make_step

    step = make_step(1, "search_dir", {"command": 'search_dir "makeChild"'}, answer, False, (), 0.0)
    assert step.empty is nothing and (step.failure is not None) is nothing


def test_no_match_searches_scattered_among_successes_never_stop():
    m = only("same_error", {"threshold": 3}, evidence={"confirm": 2})
    events = []
    for i in range(15):
        events += [call("Grep", {"pattern": f"name_{i}"}, "No files found"), fresh(i)]
    assert Action.STOP not in actions(feed(m, events))


def missing(tool: str, n: int) -> list:
    """Varied calls of a missing program (a same_error streak of its own per program)."""
    return [bash(f"{tool} -q build{i}", f"bash: {tool}: command not found", error=True) for i in range(n)]


def test_suspicion_circling_again_right_after_an_unheeded_nudge_stops():
    """Nudged about `javac`, the model goes on to `mvn` with nothing succeeding in between:
    the new streak's conclusive finding is one round past that nudge (confirm 1)."""
    m = only("same_error", {"threshold": 3}, evidence={"confirm": 1})
    got = actions(feed(m, missing("javac", 3) + missing("mvn", 3)))
    assert got[2] is Action.NUDGE and got[3:5] == [Action.ALLOW, Action.ALLOW] and got[5] is Action.STOP


def test_a_new_success_after_the_nudge_gives_the_new_streak_its_own_nudge():
    m = only("same_error", {"threshold": 3}, evidence={"confirm": 1})
    got = actions(feed(m, missing("javac", 3) + [fresh(0)] + missing("mvn", 4)))
    assert got[2] is Action.NUDGE and got[6] is Action.NUDGE and got[7] is Action.STOP


def test_circling_again_after_a_nudge_is_one_round_judged_by_confirm():
    """One round past the nudge: enough for confirm 1, not for confirm 2 (the new streak
    then gets its own nudge); uncalibrated suspicion still only nudges."""
    for evidence in ({"confirm": 2}, {}):
        m = only("same_error", {"threshold": 3}, evidence=evidence)
        got = actions(feed(m, missing("javac", 3) + missing("mvn", 3)))
        assert got[2] is Action.NUDGE and got[5] is Action.NUDGE, evidence


# -- on the real corpus -----------------------------------------------------------------

MSB = "swe-agent-traj/msb-java/20240825_SWE-agent_"


@needs_corpus
@pytest.mark.parametrize(
    "path, nudge, stop, signal",
    [
        # the same rejected edit x4 (nudged), then nearly the same rejected edits (onset 34; was 42)
        ("swe-agent-traj/coder-swebench-lite/matplotlib__matplotlib-25079.traj", 37, 39, "echo"),
        # search_dir rewordings, all "No matches found": two wordings, two streaks (onset 26; was 44)
        (MSB + "doubao-pro-128k/fasterxml__jackson-databind-4365.traj", 42, 43, "same_error"),
        # Java pasted into a .py with 'edit 1:1', rejected each time, nudged, resubmitted (onset 2; was 8)
        (MSB + "doubao-pro-128k/fasterxml__jackson-core-1208.traj", 4, 7, "echo"),
    ],
)
def test_labelled_loops_of_the_corpus_circling_on_after_a_nudge_stop_sooner(path, nudge, stop, signal):
    label = corpus_label(path)
    got = replay(path)
    assert label.label == "yes" and label.onset <= got.stop <= label.end
    assert (got.nudge, got.stop, got.stop_signal) == (nudge, stop, signal)


@needs_corpus
def test_a_new_success_after_a_nudge_in_the_corpus_still_gives_the_next_streak_its_own_nudge():
    """gemini-3-pro corrected on its format (nudged at step 30), then something new
    succeeds and it apologises: suspicion after progress, so a nudge, never a stop."""
    got = replay("mini-swe-agent-traj-json/swebv-gemini-3-pro/mwaskom__seaborn-3069.traj.json")
    assert got.stop is None and (got.nudge, got.nudge_signal) == (30, "correction")
