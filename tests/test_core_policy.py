"""The policy: one ladder per streak, throttled warnings, profiles and modes."""

from __future__ import annotations

import pytest

from loopwatch import Action, Config, Finding, Monitor
from loopwatch._core.config import LADDERS
from loopwatch._core.messages import FewDistinct
from loopwatch._core.policy import ESCALATE_WITHIN, Policy

from core_support import actions, bash, feed, looping, only, strongest

THRESHOLD = 4


def ladder_of(**config) -> list[Action]:
    m = only("repeat", {"threshold": THRESHOLD}, **config)
    return actions(feed(m, looping(THRESHOLD + 4)))


def test_warn_from_half_the_threshold_then_nudge_at_the_threshold():
    got = ladder_of(profile="unattended")
    half = THRESHOLD // 2
    assert got[: half - 1] == [Action.ALLOW] * (half - 1)
    assert got[half - 1] is Action.WARN
    assert got[THRESHOLD - 1] is Action.NUDGE
    assert Action.NUDGE not in got[: THRESHOLD - 1]


def test_unattended_climbs_nudge_then_stop():
    assert ladder_of(profile="unattended")[THRESHOLD - 1 :] == [Action.NUDGE] + [Action.STOP] * 4


def test_attended_climbs_nudge_then_block():
    assert ladder_of(profile="attended")[THRESHOLD - 1 :] == [Action.NUDGE] + [Action.BLOCK] * 4


def test_attended_with_stop_climbs_nudge_block_stop():
    assert ladder_of(profile="attended", stop=True)[THRESHOLD - 1 :] == [Action.NUDGE, Action.BLOCK] + [Action.STOP] * 3


def test_the_ladders_are_the_documented_ones():
    assert Config.make(profile="unattended").ladder == LADDERS["unattended"] == ("nudge", "stop")
    assert Config.make(profile="attended").ladder == ("nudge", "block")
    assert Config.make(profile="attended", stop=True).ladder == ("nudge", "block", "stop")
    assert Config.make(profile="unattended", stop=True).ladder == ("nudge", "stop")


def progress(n: int):
    return [bash(f"cat src/mod_{i}.py", f"module {chr(97 + i % 26)}{i // 26}") for i in range(n)]


def test_a_new_streak_starts_at_the_bottom():
    m = only("repeat", {"threshold": THRESHOLD}, profile="unattended")
    first = actions(feed(m, looping(THRESHOLD)))
    other = actions(feed(m, progress(ESCALATE_WITHIN + 1) + looping(THRESHOLD, "ruff check"), start=100.0))
    assert first[-1] is Action.NUDGE and other[-1] is Action.NUDGE
    assert Action.STOP not in other


def test_a_new_streak_soon_after_a_nudge_starts_one_rung_up():
    """The model ignored the nudge and circles again in another shape."""
    m = only("repeat", {"threshold": THRESHOLD}, profile="unattended")
    assert actions(feed(m, looping(THRESHOLD)))[-1] is Action.NUDGE
    other = actions(feed(m, progress(ESCALATE_WITHIN - THRESHOLD) + looping(THRESHOLD, "ruff check"), start=100.0))
    assert other[-1] is Action.STOP and Action.NUDGE not in other


def test_the_message_for_each_rung_says_what_happened():
    m = only("repeat", {"threshold": 2}, profile="attended", stop=True)
    nudge, block, stop = feed(m, looping(4))[1:]
    assert nudge.message.startswith("loopwatch: you appear to be going in circles")
    assert block.message.startswith("loopwatch blocked this call")
    assert stop.message.startswith("loopwatch stopped the run")
    assert block.tool_result == block.message and nudge.tool_result is None


def finding(signal="churn", severity=1.0, key=1, **kw) -> Finding:
    return Finding(signal=signal, severity=severity, key=key, message=FewDistinct(3, 20), **kw)


@pytest.mark.parametrize("ladder", [{"profile": "unattended"}, {"profile": "attended", "stop": True}])
def test_a_finding_that_cannot_stop_or_block_only_nudges_once(ladder):
    policy = Policy(Config.make(**ladder))
    got = [
        policy.decide([finding(can_stop=False, can_block=False)], float(t), lambda f, a: "m").action for t in range(10)
    ]
    assert got[0] is Action.NUDGE
    assert Action.STOP not in got and Action.BLOCK not in got
    assert got.count(Action.NUDGE) == 1


def test_a_finding_that_cannot_block_goes_from_nudge_to_stop_when_stopping_is_allowed():
    policy = Policy(Config.make(profile="attended", stop=True))
    got = [policy.decide([finding(can_block=False)], float(t), lambda f, a: "m").action for t in range(3)]
    assert got == [Action.NUDGE, Action.STOP, Action.STOP]


def test_the_strongest_rung_wins_among_findings():
    policy = Policy(Config.make(profile="unattended"))
    policy.decide([finding("repeat", key=7)], 0.0, lambda f, a: "m")  # nudged
    verdict = policy.decide(
        [finding("churn", key=1, can_stop=False, can_block=False), finding("repeat", key=7)], 1.0, lambda f, a: "m"
    )
    assert verdict.action is Action.STOP and verdict.signal == "repeat"


# -- warnings ---------------------------------------------------------------------------


def warn_times(verdicts) -> list[float]:
    return [v.at for v in verdicts if v.action is Action.WARN]


@pytest.mark.parametrize("warn_every", [120.0, 30.0])
def test_warnings_are_throttled_plus_one_when_conclusive(warn_every):
    m = only("repeat", {"threshold": 10}, mode="warn", warn_every=warn_every)
    verdicts = feed(m, looping(1000), step=1.0)
    times = warn_times(verdicts)
    assert strongest(verdicts) is Action.WARN  # mode warn: never more
    assert m.warnings == len(times)
    assert times[0] == 4.0  # half of 10 copies: the 5th call
    assert times[1] == 9.0  # conclusive: the 10th call, despite the throttle
    gaps = [b - a for a, b in zip(times[1:], times[2:])]
    assert all(g >= warn_every for g in gaps)
    assert len(times) <= 2 + 1000 / warn_every


def test_the_default_throttle_is_120_seconds():
    assert Config().warn_every == 120.0 == Config.make().warn_every


def test_warnings_are_never_one_per_event():
    m = only("churn", {"window": 20, "distinct": 2}, mode="enforce")
    events = [bash(f"q{i % 4}", f"r{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}") for i in range(2000)]
    verdicts = feed(m, events, step=1.0)
    assert 1 <= m.warnings <= 2 + 2000 / 120
    assert len(warn_times(verdicts)) == m.warnings


def test_the_warning_callback_gets_each_warning():
    seen = []
    m = Monitor(signals={"repeat": {"threshold": 10}}, mode="warn", on_warning=seen.append)
    verdicts = feed(m, looping(300))
    assert seen == [v for v in verdicts if v.action is Action.WARN]
    assert len(seen) >= 2


def test_a_warning_callback_that_raises_is_not_called_again():
    calls = []

    def broken(verdict):
        calls.append(verdict)
        raise RuntimeError("display is gone")

    m = Monitor(signals={"repeat": {"threshold": 10}}, mode="warn", on_warning=broken)
    verdicts = feed(m, looping(300))
    assert len(calls) == 1
    assert m.warnings == len(warn_times(verdicts)) >= 2  # warnings still counted and returned


def test_off_mode_decides_nothing():
    policy = Policy(Config.make(mode="off"))
    assert policy.decide([finding("repeat", severity=5.0)], 0.0, lambda f, a: "m").action is Action.ALLOW
    assert policy.warnings == 0


def test_warn_mode_never_nudges():
    m = only("repeat", {"threshold": 3}, mode="warn")
    assert strongest(feed(m, looping(50))) is Action.WARN


def test_streaks_remembered_are_bounded():
    policy = Policy(Config.make())
    for key in range(5000):
        policy.decide([finding("repeat", key=key)], float(key), lambda f, a: "m")
    assert len(policy._rungs) <= 256


def test_conclusive_warnings_remembered_are_bounded():
    m = only("repeat", {"threshold": 2}, mode="warn")
    feed(
        m,
        [
            bash(f"probe {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{i // 676}", "same")
            for i in range(4000)
            for _ in (0, 1)
        ],
    )
    assert len(m._policy._warned_conclusive) <= 256


def test_a_reset_keeps_only_the_streaks_of_the_signals_it_is_told_to_keep():
    # a user message ends every streak but those made of, or outlasting, user messages
    policy = Policy(Config.make(profile="unattended"))
    kept, ended = finding(signal="text_only", key=1), finding(signal="churn", key=2)
    assert policy.decide([kept, ended], 0.0, lambda f, a: "m").action is Action.NUDGE
    policy.reset(keep=frozenset({"text_only"}))
    # the kept streak is still at its rung (a proof finding climbs to the stop); the
    # other starts from the bottom again (a nudge)
    assert policy.decide([kept], 1.0, lambda f, a: "m").action is Action.STOP
    assert policy.decide([ended], 2.0, lambda f, a: "m").action is Action.NUDGE
    policy.reset()
    assert policy.decide([kept], 3.0, lambda f, a: "m").action is Action.NUDGE
