"""Replaying recorded sessions through fresh monitors: what loopwatch would have done.

    from loopwatch._analysis.replay import replay_file
    for result in replay_file("runs/task-7.traj", config):
        print(result.verdict, result.saved)

The one replay engine (`Agents`: one monitor per agent, made by
`hosts.monitors.monitor_for` for the session's source) of `loopwatch scan`, `evaluate`,
`calibrate` and the report, in this process, on a pool (`pool.in_order`) or on Ray
(`ray_engine`). `replay` feeds a session in order, to the end (calibration figures cover
the whole session, and `interventions_after_stop` counts what came after a stop).
`verdict` is the first stop of any agent; `saved` is what stopping there would have
spared: the actions after it (a sub-agent's own, when a sub-agent was stopped), and
tokens and cost where the format records them.

Bad input never raises here: a file that cannot be read becomes one result with
`error` set, and a reader that fails half-way keeps what it had read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, BinaryIO

from .._core.config import Config
from .._core.events import ToolCall, Turn
from .._core.finding import Finding
from .._core.monitor import MAX_INTERVENTIONS, Monitor
from .._core.record import finding_record, verdict_record
from .._core.step import Step
from .._core.verdict import Action, Verdict
from .._hosts.monitors import monitor_for
from .._readers import ReadError, Session, open_stdin, read
from .pool import LOST, file_size, in_order

__all__ = [
    "Agents",
    "SessionResult",
    "replay",
    "replay_file",
    "replay_files",
    "replay_steps",
]

_MAX_SKIPPED = 100  # skipped-line messages kept per session; the rest are counted
# Source refs of the latest counted actions kept while replaying, to name where a
# pattern began (`started_ref`) when it is reported. A streak is reported soon after it
# starts (the default thresholds are a few calls; a churn window is 20 calls), so 4,096
# cover any configuration seen; keeping one ref per action instead held 36 MiB at 300k
# events and 67 MiB at 1.2M. A start further back is reported without its ref.
_REFS_KEPT = 4096


@dataclass
class SessionResult:
    """What replaying one session gave.

    `verdict` is the first stop (a `record.verdict_record` dict plus `started_ref`, the
    `source_ref` of the action where the pattern began), or None. `interventions`
    lists every nudge, block and stop up to and including the first stop (a run
    stopped there would have ended); `interventions_after_stop` counts the rest.
    `refs[i]` is the `source_ref` of counted tool call `i + 1` (the numbering of `at_action` and
    `started_action`; exempt tools are not counted), so callers can map actions to
    steps; kept only when asked for (`keep_refs`), as it grows with the session. `saved` is None without a stop, else `{"actions", "tokens", "cost",
    "estimated"}`: tokens and cost are summed from the events after the stop where
    they carry figures, else prorated by actions from the session's totals
    (`estimated: true`), else None. `not_transcript` is True when the file was read
    but no reader recognised its format (a folder walk may ignore such files).
    """

    path: str
    format: str | None = None
    session: str | None = None
    actions: int = 0
    events: int = 0
    verdict: dict[str, Any] | None = None
    interventions: list[dict[str, Any]] = field(default_factory=list)
    interventions_after_stop: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    calibration: dict[str, Any] = field(default_factory=dict)
    saved: dict[str, Any] | None = None
    tokens: int | None = None
    cost: float | None = None
    outcome: str | None = None
    skipped: list[str] = field(default_factory=list)
    error: str | None = None
    not_transcript: bool = False
    refs: list[str | None] = field(default_factory=list, repr=False)

    @property
    def stopped(self) -> bool:
        return self.verdict is not None

    def as_json(self) -> dict[str, Any]:
        """The `scan --json` object (everything but `refs` and `not_transcript`)."""
        return {
            "path": self.path,
            "format": self.format,
            "session": self.session,
            "actions": self.actions,
            "verdict": self.verdict,
            "interventions": self.interventions,
            "interventions_after_stop": self.interventions_after_stop,
            "findings": self.findings,
            "calibration": self.calibration,
            "saved": self.saved,
            "tokens": self.tokens,
            "cost": self.cost,
            "outcome": self.outcome,
            "skipped": self.skipped,
            "error": self.error,
        }


class Agents:
    """One session's events through one monitor per agent: the replay engine of
    `scan`, `evaluate`, `calibrate` and the report, on this machine or on Ray.

    Each agent (`ToolCall.agent`; events without one belong to the session's own agent,
    the one that acts first) has its own monitor, made by `hosts.monitors.monitor_for`
    for the session's source, as the live hook gives each sub-agent its own: a streak
    never runs across two agents. A stop ends the agent it stops (CodeR's Manager goes
    on after a sub-agent's `exit_cost`); the session's own agent's stop ends the run.
    Actions are numbered across the session (`at_action`, `started_action` of the
    verdicts kept here), whatever agent made them.

    Every event may be fed (`observe`), ended agents' too: `scan` replays to the end,
    for its calibration figures; `evaluate` skips ended agents and stops at the
    session's stop. What an ended agent did is only counted
    (`interventions_after_stop`)."""

    def __init__(self, source: str | None, config: Config, make: Callable[..., Monitor] = Monitor) -> None:
        self.source = source
        self.config = config
        self._make = make
        self.monitors: dict[str | None, Monitor] = {}
        self.root: str | None = None
        self.actions = 0  # counted tool calls, all agents
        self.interventions: list[Verdict] = []  # nudges, blocks and stops of agents not ended, in order
        self.interventions_total = 0
        self.stop: Verdict | None = None  # the first stop, of any agent
        self.stop_agent: str | None = None  # whose: None for the session's own agent
        self.session_stop: Verdict | None = None  # the session's own agent's first stop: the run ends
        self.monitor: Monitor | None = None  # the monitor of the latest event
        self.agent: str | None = None  # and its agent
        self._ended: set[str | None] = set()
        # Per agent, the session number of its n-th counted call at [n] ([0]: the count
        # when it began); kept only once a second agent acts (one agent: the same numbers).
        self._numbers: dict[str | None, list[int]] = {}

    @property
    def events(self) -> int:
        return sum(m.events for m in self.monitors.values())

    @property
    def first_at(self) -> float | None:
        return min((m.first_at for m in self.monitors.values() if m.first_at is not None), default=None)

    def agent_of(self, event: Any) -> str | None:
        agent = getattr(event, "agent", None)
        if not self.monitors:
            return agent
        return self.root if agent is None else agent

    def ended(self, agent: str | None) -> bool:
        """Has `agent` been stopped (or the whole run, with the session's own agent)?"""
        return self.session_stop is not None or agent in self._ended

    def observe(self, event: Any) -> Verdict:
        """Feed one event to its agent's monitor; its verdict, numbered for the session."""
        agent = self.agent_of(event)
        monitor = self.monitors.get(agent)
        if monitor is None:
            if not self.monitors:
                self.root = agent
            elif not self._numbers:  # a second agent: from now on, numbers differ
                self._numbers = {a: list(range(m.actions + 1)) for a, m in self.monitors.items()}
            monitor = self.monitors[agent] = monitor_for(self.source, self.config, make=self._make)
            if self._numbers:
                self._numbers[agent] = [self.actions]
        ended = self.ended(agent)
        if self._numbers and getattr(event, "at", None) is None:
            # No time recorded: a monitor counts a second per event (its own clock);
            # the session's clock counts every agent's, as one monitor's would.
            monitor.last_at = max(m.last_at for m in self.monitors.values() if m.last_at is not None)
        actions, noted, total = monitor.actions, len(monitor.interventions), monitor.interventions_total
        verdict = monitor.observe(event)
        if monitor.actions != actions:
            self.actions += monitor.actions - actions
            if self._numbers:
                self._numbers[agent].append(self.actions)
        self.monitor, self.agent = monitor, agent
        if monitor.interventions_total != total:
            self.interventions_total += monitor.interventions_total - total
            if not ended:
                for kept in monitor.interventions[noted:]:
                    if len(self.interventions) < MAX_INTERVENTIONS:
                        self.interventions.append(self.numbered(agent, kept))
        if monitor.stop is not None and not ended:
            stop = self.numbered(agent, monitor.stop)
            self._ended.add(agent)
            if self.stop is None:
                self.stop, self.stop_agent = stop, (None if agent == self.root else agent)
            if agent == self.root:
                self.session_stop = stop
        return self.numbered(agent, verdict)

    def numbered(self, agent: str | None, verdict: Verdict) -> Verdict:
        """`verdict` of `agent`'s monitor, its actions numbered for the session."""
        if not self._numbers or verdict.action is Action.ALLOW:
            return verdict
        finding = verdict.finding
        if finding is not None:
            finding = self._finding(agent, finding)
        return verdict._replace(index=self._number(agent, verdict.index), finding=finding)

    def findings(self) -> list[Finding]:
        """Per signal, the strongest finding of any agent (the first agent's on a tie)."""
        strongest: dict[str, Finding] = {}
        for agent, monitor in self.monitors.items():
            for signal, finding in monitor.strongest.items():
                best = strongest.get(signal)
                if best is None or finding.severity > best.severity:
                    strongest[signal] = self._finding(agent, finding) if self._numbers else finding
        return list(strongest.values())

    def calibration(self) -> dict[str, Any]:
        """The calibration figures of the session: per figure, the largest of any agent's
        (a threshold fires on the agent that reaches it), the fewest for
        `churn_fewest_distinct`, the sum of `apology_total`."""
        if not self.monitors:  # nothing was read: the figures of a monitor that saw nothing
            return monitor_for(self.source, self.config, make=self._make).calibration()
        figures: dict[str, Any] = {}
        for monitor in self.monitors.values():
            for key, value in monitor.calibration().items():
                if key not in figures or figures[key] is None:
                    figures[key] = value
                elif value is None:
                    continue
                elif key == "apology_total":
                    figures[key] += value
                elif key == "churn_fewest_distinct":
                    figures[key] = min(figures[key], value)
                else:
                    figures[key] = max(figures[key], value)
        return figures

    def after(self, verdict: Verdict, agent: str | None) -> int:
        """Actions after `verdict` that its stop would have spared: every later action of
        the run for the session's own agent, the sub-agent's own for a sub-agent."""
        if agent is None or not self._numbers:
            return max(0, self.actions - verdict.index)
        numbers = self._numbers[agent]
        return sum(1 for n in numbers[1:] if n > verdict.index)

    def _number(self, agent: str | None, index: int) -> int:
        numbers = self._numbers[agent]
        return numbers[index] if 0 <= index < len(numbers) else index

    def _finding(self, agent: str | None, finding: Finding) -> Finding:
        return finding._replace(
            index=self._number(agent, finding.index), started_index=self._number(agent, finding.started_index)
        )


def replay(
    session: Session,
    config: Config,
    path: str = "",
    *,
    keep_refs: bool = False,
    make_monitor: Callable[..., Monitor] = Monitor,
    on_event: Callable[[Any, Verdict, Agents, bool], None] | None = None,
) -> SessionResult:
    """Feed one session to `Agents` (a fresh monitor per agent) to the end and collect
    the result. Exceptions raised while its events are consumed are caught: the result
    keeps what was replayed and says in `error` what went wrong and where (the reader,
    or the replay of an event it read).
    Memory does not grow with the session: only the latest refs are kept (all of them
    with `keep_refs`). The monitors get the built-in calibration of the session's
    format, if loopwatch has one (`Config.for_source`); `make_monitor` makes them, and
    `on_event(event, verdict, agents, ended)` is told of each event (`replay_steps`)."""
    agents = Agents(session.format, config.for_source(session.format), make_monitor)
    recent: deque[str | None] = deque(maxlen=None if keep_refs else _REFS_KEPT)
    started: dict[int, str | None] = {}  # started action -> its ref, noted when reported
    noted = 0  # interventions whose start has been noted
    after_tokens = after_cost = None  # figures carried by events after the stop
    error = None
    reading, number = True, 0  # reading: False while the event the reader gave (the number-th) is replayed
    try:
        for number, event in enumerate(session.events, 1):
            reading = False
            agent = agents.agent_of(event)
            ended = agents.ended(agent)
            before = agents.actions
            verdict = agents.observe(event)
            if on_event is not None:
                on_event(event, verdict, agents, ended)
            if agents.actions != before and (keep_refs or agents.session_stop is None or not ended):
                recent.append(event.source_ref)  # nothing after the run's end is reported
            if len(agents.interventions) != noted:
                for kept in agents.interventions[noted:]:
                    index = kept.finding.started_index if kept.finding is not None else 0
                    started.setdefault(index, _recent_ref(recent, agents.actions, index))
                noted = len(agents.interventions)
            if (
                ended
                and agents.stop is not None
                and agents.stop_agent in (None, agent)
                and type(event) in (ToolCall, Turn)
            ):
                if event.tokens is not None:
                    after_tokens = (after_tokens or 0) + event.tokens
                if event.cost is not None:
                    after_cost = (after_cost or 0.0) + event.cost
            reading = True
    except ReadError as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not end a scan of thousands of files
        where = f"reader failed at event {agents.events + 1}" if reading else f"replay failed at event {number}"
        error = f"{where}: {type(exc).__name__}: {exc}"

    result = SessionResult(
        path=path,
        format=session.format,
        session=session.session,
        actions=agents.actions,
        events=agents.events,
        tokens=session.tokens,
        cost=session.cost,
        outcome=session.outcome,
        skipped=_capped(session.skipped),
        error=error,
        refs=list(recent) if keep_refs else [],
    )
    if error is None and agents.events == 0 and session.skipped:
        result.error = f"no readable events ({len(session.skipped)} lines skipped)"
    origin = agents.first_at or 0.0
    result.interventions = [_with_start(verdict_record(v, origin), started) for v in agents.interventions]
    result.interventions_after_stop = agents.interventions_total - len(agents.interventions)
    result.findings = [finding_record(f, origin) for f in agents.findings()]
    result.calibration = agents.calibration()
    if agents.stop is not None:
        result.verdict = _with_start(verdict_record(agents.stop, origin), started)
        spared = agents.after(agents.stop, agents.stop_agent)
        result.saved = _saved(result, spared, after_tokens, after_cost)
    return result


def replay_file(
    path: str,
    config: Config,
    format: str | None = None,
    *,
    label: str | None = None,
    keep_refs: bool = False,
    stream: BinaryIO | None = None,
) -> list[SessionResult]:
    """Every session in one file, replayed; `-` is standard input, read as it comes.
    `label` is the path reported in results (default: `path`); `stream`, the file's
    content when it was read elsewhere (a Ray worker gets bytes). Never raises for bad
    input: an unreadable file is one result with `error` set."""
    label = path if label is None else label
    results: list[SessionResult] = []
    reading = True  # False while a session the reader gave is replayed
    try:
        stream = open_stdin() if path == "-" else stream
        for session in read(path, format, stream):
            reading = False
            results.append(replay(session, config, label, keep_refs=keep_refs))
            reading = True
    except ReadError as exc:
        message = str(exc)
        results.append(
            SessionResult(path=label, format=format, error=message, not_transcript=message.startswith("unknown format"))
        )
    except OSError as exc:
        results.append(SessionResult(path=label, format=format, error=f"cannot read: {exc.strerror or exc}"))
    except Exception as exc:  # noqa: BLE001 - see replay(): never end a scan on one bad file
        where = "reader failed" if reading else "replay failed"
        results.append(SessionResult(path=label, format=format, error=f"{where}: {type(exc).__name__}: {exc}"))
    if not results:
        results.append(SessionResult(path=label, format=format, error="no session in this file"))
    return results


def replay_steps(
    session: Session,
    config: Config,
    path: str = "",
    *,
    excerpts: bool = False,
    on_note: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[SessionResult, list[dict[str, Any]]]:
    """`replay`, and what happened at each event, in order: one dict per event with
    its `kind` (`call` for a counted tool call, `exempt` for one that is not counted,
    else `text`, `correction`, `retry`, `output`, `turn`, `user`, `attempt`), `step`
    (tool calls counted so far: a call's own number, as `at_action` counts it),
    `after_stop` (its agent, or the run, would have ended before it), `ref` (its
    `source_ref`), and for a counted call its `tool`, `call` (digest of the tool and its
    identifying input), `action` (of the call and its result), `error` and `at` (seconds
    from the first event); `verdict` (`{"action", "signal", "description",
    "started_action"}`) when the event drew a warning, nudge, block or stop up to its
    agent's first stop. Names, digests, counts and times only; with `excerpts`, a call's
    `input` and `result` too (the start of each, as text). With `on_note`, each dict is
    handed to it as it is made and none is kept (the list returned is empty): a session
    of any length is noted in bounded memory."""
    noted: list[dict[str, Any]] = []
    keep = noted.append if on_note is None else on_note

    def note(event: Any, verdict: Verdict, agents: Agents, ended: bool) -> None:
        monitor = agents.monitor
        step = monitor.step if isinstance(monitor, _Noting) else None
        kind = _KINDS.get(type(event).__name__, type(event).__name__.lower())
        entry: dict[str, Any] = {"kind": kind, "step": agents.actions, "after_stop": ended}
        entry["ref"] = getattr(event, "source_ref", None)
        if kind == "call" and step is None:
            entry["kind"] = "exempt"
            entry["tool"] = event.name
        elif step is not None:
            entry.update(
                tool=step.name,
                call=step.call.hex()[:12],
                action=step.action.hex()[:12],
                error=bool(event.error),
                at=round(step.at - (agents.first_at or 0.0), 3),
            )
            if excerpts:
                entry.update(input=_excerpt(event.input), result=_excerpt(event.result))
        if verdict.action is not Action.ALLOW and not ended:
            entry["verdict"] = {
                "action": verdict.action.value,
                "signal": verdict.signal,
                "description": verdict.description,
                "started_action": verdict.finding.started_index if verdict.finding is not None else None,
            }
        keep(entry)

    result = replay(session, config, path, make_monitor=_Noting, on_event=note)
    return result, noted


_EXCERPT = 600  # characters of a tool input or result kept with --excerpts
_KINDS = {"ToolCall": "call", "ModelText": "text", "UserMessage": "user"}


class _Noting(Monitor):
    """A monitor that keeps the step of the latest counted call, for `replay_steps`."""

    step: Step | None = None

    def _digest(self, call: ToolCall, rule: Any, at: float) -> Step:
        self.step = super()._digest(call, rule, at)
        return self.step

    def observe(self, event: Any) -> Verdict:
        self.step = None
        return super().observe(event)


def _excerpt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    else:
        import json

        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def replay_files(
    items: Iterable[tuple[str, str]], config: Config, format: str | None = None, jobs: int | None = None
) -> Iterator[list[SessionResult]]:
    """Replay many files, each `(path, label)`, yielding each file's results in the
    order given, as soon as they are ready, on `jobs` processes at most
    (`pool.in_order`: a window of files held at a time, largest first, a dead worker's
    files reported as errors). Standard input (`-`) is always read in this process."""
    return in_order(
        partial(_replay_item, config=config, format=format),
        items,
        jobs,
        lost=lambda item: [SessionResult(path=item[1], format=format, error=LOST)],
        size=lambda item: file_size(item[0]),
        here=lambda item: item[0] == "-",
    )


def _replay_item(item: tuple[str, str], config: Config, format: str | None) -> list[SessionResult]:
    return replay_file(item[0], config, format, label=item[1])


def _with_start(record: dict[str, Any], started: dict[int, str | None]) -> dict[str, Any]:
    action = record.get("started_action")
    record["started_ref"] = started.get(action) if action else None
    return record


def _recent_ref(recent: deque[str | None], actions: int, action: int) -> str | None:
    """The ref of counted action `action`, when it is among the `recent` ones (the
    last of which is action `actions`)."""
    offset = actions - action
    return recent[len(recent) - 1 - offset] if 0 <= offset < len(recent) else None


def _saved(result: SessionResult, actions: int, tokens: int | None, cost: float | None) -> dict[str, Any]:
    estimated = False
    if tokens is None and cost is None and result.actions and (result.tokens is not None or result.cost is not None):
        # No per-step figures: prorate the session's totals. Later steps carry a
        # longer context and cost more, so this underestimates.
        share = actions / result.actions
        tokens = round(result.tokens * share) if result.tokens is not None else None
        cost = round(result.cost * share, 6) if result.cost is not None else None
        estimated = True
    return {"actions": actions, "tokens": tokens, "cost": cost, "estimated": estimated}


def _capped(messages: Iterable[str]) -> list[str]:
    messages = list(messages)
    if len(messages) <= _MAX_SKIPPED:
        return messages
    return messages[:_MAX_SKIPPED] + [f"... and {len(messages) - _MAX_SKIPPED} more lines skipped"]
