"""`loopwatch.extend`: a signal of your own, written and registered with that module alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loopwatch import extend
from loopwatch import Action, Config, ConfigError, Monitor, ToolCall, load_config
from loopwatch._core.signals import SIGNALS
from loopwatch.extend import register

from core_support import OFF
from extend_example import DeployParams, Redeploy


class RedeployExt(Redeploy):
    name = "redeploy_ext"


@pytest.fixture
def registered() -> Iterator[type[RedeployExt]]:
    before = dict(SIGNALS)
    config_before = Config.make()  # made before the registration
    try:
        yield register(RedeployExt)
    finally:
        SIGNALS.clear()
        SIGNALS.update(before)
    assert "redeploy_ext" not in config_before.signals


def deploy(n: int) -> ToolCall:
    return ToolCall("deploy", {"target": f"prod-{n}"}, f"deployed build {n}", at=float(n))


def test_a_registered_signal_fires_in_every_monitor_made_afterwards(registered: type[RedeployExt]) -> None:
    m = Monitor(signals=OFF)  # every built-in signal off: only ours can speak
    verdicts = [m.observe(deploy(n)) for n in range(1, 4)]
    assert [v.action for v in verdicts] == [Action.WARN, Action.NUDGE, Action.STOP]
    assert "deployed 2 times without a change" in (verdicts[1].message or "")
    assert m.stop is not None and m.stop.finding is not None and m.stop.finding.signal == "redeploy_ext"


def test_without_registering_it_nothing_fires() -> None:
    m = Monitor(signals=OFF)
    assert {m.observe(deploy(n)).action for n in range(1, 4)} == {Action.ALLOW}


def test_configuration_sets_a_registered_signals_thresholds(registered: type[RedeployExt], tmp_path) -> None:
    path = tmp_path / "loopwatch.toml"
    path.write_text("[signals.redeploy_ext]\nthreshold = 3\n")
    config = load_config(path, env={}, signals=OFF)  # the file's threshold, every built-in signal off
    assert config.params("redeploy_ext").threshold == 3
    m = Monitor(config)
    actions = [m.observe(deploy(n)).action for n in range(1, 5)]
    assert actions[1] is not Action.NUDGE and Action.NUDGE in actions  # the nudge comes at 3, not 2
    with pytest.raises(ConfigError):
        Config.make(signals={"redeploy_ext": {"threshold": 1}})  # its Count rule holds


def test_a_configuration_made_before_registering_gives_its_defaults(registered: type[RedeployExt]) -> None:
    assert Config.make(signals=OFF).params("redeploy_ext") == DeployParams()


@pytest.mark.parametrize(
    "bad",
    [
        type("Nameless", (RedeployExt,), {"name": ""}),
        type("Impostor", (RedeployExt,), {"name": "repeat"}),
        type("Graded", (RedeployExt,), {"name": "graded_ext", "grade": "hunch"}),
    ],
    ids=["no-name", "built-in-name", "unknown-grade"],
)
def test_register_refuses_a_signal_without_a_name_of_its_own_or_a_grade(bad: type[RedeployExt]) -> None:
    before = dict(SIGNALS)
    with pytest.raises(ValueError):
        register(bad)
    assert SIGNALS == before


def test_register_refuses_what_is_not_a_signal() -> None:
    with pytest.raises(TypeError):
        register(DeployParams)  # type: ignore[type-var]  # the mistake under test


def test_a_name_is_registered_once(registered: type[RedeployExt]) -> None:
    with pytest.raises(ValueError, match="name of its own"):
        register(RedeployExt)


def test_extend_lists_what_it_exports() -> None:
    assert sorted(extend.__all__) == sorted(n for n in vars(extend) if not n.startswith("_") and n != "annotations")
    assert extend.__doc__ and "not" in extend.__doc__
