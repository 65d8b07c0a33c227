"""Shared helpers for the core tests: monitors with one signal on, events, verdicts.

Thresholds are always passed explicitly (the lead is still tuning the defaults), so
a test states the threshold it depends on.
"""

from __future__ import annotations

from typing import Any, Iterable

from loopwatch import Action, Monitor, ToolCall, Verdict
from loopwatch._core.signals import SIGNALS

#: Parameters that turn each signal off (each signal's own `Params.off()`).
OFF: dict[str, dict[str, Any]] = {name: cls.Params.off() for name, cls in SIGNALS.items()}


def only(signal: str, params: dict[str, Any] | None = None, **config: Any) -> Monitor:
    """A monitor with every signal off but `signal` (with `params`)."""
    assert signal in SIGNALS, signal
    signals = {**OFF, signal: dict(params or {})}
    return Monitor(signals=signals, **config)


def call(
    name: str = "Bash",
    input: Any = None,
    result: Any = "",
    *,
    error: bool = False,
    changed: Iterable[str] = (),
    at: float | None = None,
    **kw: Any,
) -> ToolCall:
    return ToolCall(name, input, result, error=error, changed=tuple(changed), at=at, **kw)


def bash(command: str, result: Any = "", **kw: Any) -> ToolCall:
    return call("Bash", {"command": command}, result, **kw)


def looping(n: int, command: str = "pytest -x") -> list[ToolCall]:
    """`n` identical failing test runs."""
    return [bash(command, "1 failed", error=True) for _ in range(n)]


def feed(monitor: Monitor, events: Iterable[Any], *, start: float = 0.0, step: float = 1.0) -> list[Verdict]:
    """Observe each event; events without a time get `start + i * step`."""
    out = []
    for i, event in enumerate(events):
        if getattr(event, "at", 0) is None:
            event = _at(event, start + i * step)
        out.append(monitor.observe(event))
    return out


def actions(verdicts: Iterable[Verdict]) -> list[Action]:
    return [v.action for v in verdicts]


def strongest(verdicts: Iterable[Verdict]) -> Action:
    return max((v.action for v in verdicts), key=lambda a: a.rank, default=Action.ALLOW)


def severity(monitor: Monitor, signal: str) -> float:
    """The strongest severity `signal` reported so far (0.0 when it never reported)."""
    finding = monitor.strongest.get(signal)
    return 0.0 if finding is None else finding.severity


def _at(event: Any, at: float) -> Any:
    if hasattr(event, "_replace"):  # events are NamedTuples
        return event._replace(at=at)
    from dataclasses import replace

    return replace(event, at=at)
