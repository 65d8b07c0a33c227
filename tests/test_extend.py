"""`loopwatch.extend`: a signal of your own, written and registered with that module alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loopwatch import extend
from loopwatch import Action, Config, ConfigError, Monitor, ToolCall, load_config
from loopwatch.core.signals import SIGNALS
from loopwatch.extend import PROOF, Count, Finding, Message, Signal, SignalParams, Step, register

from core_support import OFF


class Redeployed(Message):
    template = "deployed {count} times without a change in between"
    hint_template = "find out why the deploy is needed again before deploying"

    def __init__(self, count: int) -> None:
        self.count = count


class Params(SignalParams):
    #: deploys in a row, nothing written between them, that earn the nudge
    threshold: Count = 2


class Redeploy(Signal[Params]):
    name = "redeploy_ext"
    grade = PROOF

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self.count = 0
        self.first = 0

    def on_step(self, step: Step) -> Finding | None:
        if step.wrote:
            self.count = 0
            return None
        if step.name != "deploy":
            return None
        self.count += 1
        self.first = self.first if self.count > 1 else step.index
        return Finding(
            signal=self.name,
            severity=self.count / self.params.threshold,
            key=self.first,
            message=Redeployed(self.count),
            repeats=self.count,
            tools=("deploy",),
            started_index=self.first,
            index=step.index,
            at=step.at,
        )


@pytest.fixture
def registered() -> Iterator[type[Redeploy]]:
    before = dict(SIGNALS)
    config_before = Config.make()  # made before the registration
    try:
        yield register(Redeploy)
    finally:
        SIGNALS.clear()
        SIGNALS.update(before)
    assert "redeploy_ext" not in config_before.signals


def deploy(n: int) -> ToolCall:
    return ToolCall("deploy", {"target": f"prod-{n}"}, f"deployed build {n}", at=float(n))


def test_a_registered_signal_fires_in_every_monitor_made_afterwards(registered: type[Redeploy]) -> None:
    m = Monitor(signals=OFF)  # every built-in signal off: only ours can speak
    verdicts = [m.observe(deploy(n)) for n in range(1, 4)]
    assert [v.action for v in verdicts] == [Action.WARN, Action.NUDGE, Action.STOP]
    assert "deployed 2 times without a change" in (verdicts[1].message or "")
    assert m.stop is not None and m.stop.finding is not None and m.stop.finding.signal == "redeploy_ext"


def test_without_registering_it_nothing_fires() -> None:
    m = Monitor(signals=OFF)
    assert {m.observe(deploy(n)).action for n in range(1, 4)} == {Action.ALLOW}


def test_configuration_sets_a_registered_signals_thresholds(registered: type[Redeploy], tmp_path) -> None:
    path = tmp_path / "loopwatch.toml"
    path.write_text("[signals.redeploy_ext]\nthreshold = 3\n")
    config = load_config(path, env={}, signals=OFF)  # the file's threshold, every built-in signal off
    assert config.params("redeploy_ext").threshold == 3
    m = Monitor(config)
    actions = [m.observe(deploy(n)).action for n in range(1, 5)]
    assert actions[1] is not Action.NUDGE and Action.NUDGE in actions  # the nudge comes at 3, not 2
    with pytest.raises(ConfigError):
        Config.make(signals={"redeploy_ext": {"threshold": 1}})  # its Count rule holds


def test_a_configuration_made_before_registering_gives_its_defaults(registered: type[Redeploy]) -> None:
    assert Config.make(signals=OFF).params("redeploy_ext") == Params()


@pytest.mark.parametrize(
    "bad",
    [
        type("Nameless", (Redeploy,), {"name": ""}),
        type("Impostor", (Redeploy,), {"name": "repeat"}),
        type("Graded", (Redeploy,), {"name": "graded_ext", "grade": "hunch"}),
    ],
    ids=["no-name", "built-in-name", "unknown-grade"],
)
def test_register_refuses_a_signal_without_a_name_of_its_own_or_a_grade(bad: type[Redeploy]) -> None:
    before = dict(SIGNALS)
    with pytest.raises(ValueError):
        register(bad)
    assert SIGNALS == before


def test_register_refuses_what_is_not_a_signal() -> None:
    with pytest.raises(TypeError):
        register(Params)  # type: ignore[type-var]  # the mistake under test


def test_a_name_is_registered_once(registered: type[Redeploy]) -> None:
    with pytest.raises(ValueError, match="name of its own"):
        register(Redeploy)


def test_extend_lists_what_it_exports() -> None:
    assert sorted(extend.__all__) == sorted(n for n in vars(extend) if not n.startswith("_") and n != "annotations")
    assert extend.__doc__ and "not" in extend.__doc__
