"""The JSON record of a run: what happened and why, in names, counts and times.

Times are seconds relative to the first event. Nothing of the inputs, results or text.
A finding's `message` (its kind, a class of `messages`) and `args` (its names, counts
and seconds) are kept beside its `description`, so a record can be worded again.
"""

from __future__ import annotations

from typing import Any, Protocol

from .config import Config
from .finding import Finding
from .verdict import Verdict

__all__ = ["finding_record", "make_record", "message_record", "verdict_record"]


def message_record(finding: Finding) -> dict[str, Any]:
    """The finding's message as data: `{"message": kind, "args": {...}}`."""
    message = finding.message
    return {
        "message": message.kind,
        "args": {k: list(v) if isinstance(v, tuple) else v for k, v in message.args.items()},
    }


def finding_record(finding: Finding, origin: float) -> dict[str, Any]:
    return {
        "signal": finding.signal,
        "severity": round(finding.severity, 3),
        "period": finding.period,
        "repeats": finding.repeats,
        "tools": list(finding.tools),
        "started_at": round(finding.started_at - origin, 3),
        "detected_at": round(finding.at - origin, 3),
        "started_action": finding.started_index,
        "at_action": finding.index,
        "can_stop": finding.can_stop,
        "description": finding.description,
        **message_record(finding),
    }


def verdict_record(verdict: Verdict, origin: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "signal": verdict.signal,
        "action": verdict.action.value,
        "at": round(verdict.at - origin, 3),
        "at_action": verdict.index,
        "source_ref": verdict.source_ref,
        "description": verdict.description,
    }
    if verdict.finding is not None:
        f = verdict.finding
        out.update(
            period=f.period,
            repeats=f.repeats,
            tools=list(f.tools),
            started_at=round(f.started_at - origin, 3),
            started_action=f.started_index,
            detected_at=round(f.at - origin, 3),
            **message_record(f),
        )
    return out


class Watched(Protocol):
    """What a record is made of: what a `Monitor` counts and remembers (named here, not
    imported: the monitor makes its record, the record does not need the monitor)."""

    config: Config
    events: int
    actions: int
    first_at: float | None
    last_at: float | None
    interventions: list[Verdict]
    interventions_total: int
    stop: Verdict | None
    strongest: dict[str, Finding]

    @property
    def warnings(self) -> int: ...

    def calibration(self) -> dict[str, Any]: ...


def make_record(monitor: Watched) -> dict[str, Any]:
    origin = monitor.first_at or 0.0
    strongest = max(monitor.interventions, key=lambda v: v.action.rank, default=None)
    chosen = monitor.stop or strongest
    return {
        "verdict": verdict_record(chosen, origin) if chosen is not None else None,
        "mode": monitor.config.mode,
        "profile": monitor.config.profile,
        "events": monitor.events,
        "actions": monitor.actions,
        "duration": round((monitor.last_at or origin) - origin, 3),
        "warnings": monitor.warnings,
        "interventions": [verdict_record(v, origin) for v in monitor.interventions],
        "interventions_total": monitor.interventions_total,
        "findings": [finding_record(f, origin) for f in monitor.strongest.values()],
        "calibration": monitor.calibration(),
    }
