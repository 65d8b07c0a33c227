"""One params type for every signal: fields declared with their rules, `enabled` and
`check()` from the declarations, and the messages config has always given."""

from __future__ import annotations

from typing import Annotated

import pytest

from loopwatch import ConfigError, Monitor
from loopwatch._core.signals import SIGNALS, Signal
from loopwatch._core.signals.params import Between, Count, Seconds, SignalParams, Size

#: (signal, setting, value, the message config gave before the shared type).
REFUSED = [
    (
        "repeat",
        "threshold",
        1,
        "threshold: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off",
    ),
    ("repeat", "threshold", -1, "threshold: must be 0 (off) or 2 or more"),
    ("echo", "turns", 1, "turns: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off"),
    ("echo", "similarity", 1.5, "similarity: 1.5 is not in (0, 1]"),
    ("echo", "similarity", 0.0, "similarity: 0.0 is not in (0, 1]"),
    ("chanting", "max_period", 0, "max_period: must be between 1 and 16"),
    ("chanting", "max_period", 17, "max_period: must be between 1 and 16"),
    ("repeated_lines", "max_period", 17, "max_period: must be between 1 and 16"),
    ("repeated_lines", "min_span", -1.0, "min_span: seconds must be >= 0"),
    ("cycle", "max_period", 1, "max_period: must be between 2 and 16 (0 turns it off)"),
    ("cycle", "max_period", 17, "max_period: must be between 2 and 16 (0 turns it off)"),
    ("cycle", "repeats", 1, "repeats: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off"),
    ("churn", "window", 1, "window: must be 0 (off) or 2 or more calls"),
    ("churn", "window", -3, "window: must be 0 (off) or 2 or more calls"),
    ("churn", "distinct", 20, "distinct: must be between 1 and window - 1 (0 turns it off)"),
    ("retry_storm", "window", -1.0, "window: seconds must be >= 0"),
    (
        "retry_storm",
        "retries",
        1,
        "retries: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off",
    ),
    ("stagnation", "window", -1.0, "window: seconds must be >= 0 (0 turns it off)"),
    ("stagnation", "replays", 1, "replays: must be 0 (off) or 2 or more"),
    ("stagnation", "memory", 15, "memory: at least 16 actions"),
    (
        "same_error",
        "threshold",
        1,
        "threshold: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off",
    ),
    ("correction", "threshold", -2, "threshold: must be 0 (off) or 2 or more"),
    (
        "apology",
        "threshold",
        1,
        "threshold: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off",
    ),
]


@pytest.mark.parametrize("signal,key,value,message", REFUSED)
def test_config_refuses_with_the_same_messages(signal, key, value, message):
    with pytest.raises(ConfigError) as caught:
        Monitor(signals={signal: {key: value}})
    assert str(caught.value) == f"signals.{signal}.{message}"


#: (signal, settings, on?) The switches: a 0 turns the signal off, and only a switch does.
SWITCHES = [
    ("repeat", {"threshold": 0}, False),
    ("repeat", {"threshold": 2}, True),
    ("cycle", {"repeats": 0}, False),
    ("cycle", {"max_period": 0}, False),
    ("cycle", {"max_period": 2}, True),
    ("stagnation", {"window": 0.0}, False),
    ("stagnation", {"replays": 0}, False),
    ("stagnation", {"memory": 16}, True),
    ("churn", {"window": 0}, False),
    ("churn", {"distinct": 0}, False),
    ("churn", {"distinct": 1}, True),
    ("echo", {"turns": 0}, False),
    ("echo", {"similarity": 1.0}, True),
    ("same_error", {"threshold": 0}, False),
    ("correction", {"threshold": 0}, False),
    ("apology", {"threshold": 0}, False),
    ("repeated_lines", {"repeats": 0}, False),
    ("repeated_lines", {"min_span": 0.0}, True),
    ("retry_storm", {"retries": 0}, False),
    ("retry_storm", {"window": 0.0}, True),
    ("chanting", {"repeats": 0}, False),
]


@pytest.mark.parametrize("signal,settings,on", SWITCHES)
def test_enabled_comes_from_the_declared_switches(signal, settings, on):
    params = Monitor(signals={signal: settings}).config.params(signal)
    assert params.enabled is on
    assert params.check() is None


@pytest.mark.parametrize("signal", sorted(SIGNALS))
def test_off_turns_each_signal_off_and_only_that_one(signal):
    """`Params.off()` is what a configuration that leaves one signal on is built from
    (the test helpers and `bench/core.py`): valid, and the signal off."""
    config = Monitor(signals={signal: SIGNALS[signal].Params.off()}).config
    assert config.params(signal).enabled is False and config.params(signal).check() is None
    assert all(config.params(other).enabled for other in SIGNALS if other != signal)


def test_every_signal_declares_only_its_fields():
    for name, cls in SIGNALS.items():
        assert issubclass(cls, Signal) and issubclass(cls.Params, SignalParams), name
        own = vars(cls.Params)
        assert "enabled" not in own and "check" not in own, name  # from the base, not written again
        assert cls.Params._fields and all(field in own for field in cls.Params._fields), name
        assert cls.Params().enabled and cls.Params().check() is None, name  # the defaults are valid


class Demo(SignalParams):
    #: a count threshold
    threshold: Count = 3
    #: a bounded number that can turn the signal off
    period: Annotated[int, Between(2, 8, off=True)] = 4
    #: seconds, with no rule of a switch
    window: Annotated[float, Seconds()] = 1.5
    #: no rule at all
    flag: bool = False
    #: a size counted in lines
    lines: Annotated[int, Size("lines")] = 10


def test_a_params_type_declared_outside_gets_the_same_behaviour():
    params = Demo()
    assert Demo._fields == ("threshold", "period", "window", "flag", "lines")
    assert params == Demo(3, 4, 1.5, False, 10) == Demo(lines=10)
    assert params._replace(threshold=5) == Demo(threshold=5) and params.threshold == 3
    assert repr(Demo(flag=True)) == "Demo(threshold=3, period=4, window=1.5, flag=True, lines=10)"
    assert hash(params) == hash(Demo())
    assert params.enabled and not Demo(period=0).enabled and not Demo(period=1).enabled and not Demo(lines=0).enabled
    assert Demo(window=0.0).enabled  # not a switch
    assert Demo(threshold=1).check() == (
        "threshold: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off"
    )
    assert Demo(period=9).check() == "period: must be between 2 and 8 (0 turns it off)"
    assert Demo(window=float("nan")).check() == "window: seconds must be >= 0"
    assert Demo(lines=1).check() == "lines: must be 0 (off) or 2 or more lines"
    with pytest.raises(AttributeError):
        params.threshold = 4  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field"):
        Demo(nope=1)  # type: ignore[call-arg]


def test_a_field_without_a_default_is_refused_when_declared():
    with pytest.raises(TypeError, match="every field needs a default"):

        class Broken(SignalParams):
            threshold: Count


def test_the_signal_base_is_generic_over_its_params():
    from loopwatch._core.signals.repeat import Params, Repeat

    assert Repeat.Params is Params
    assert Repeat(Params(threshold=4)).params.threshold == 4
