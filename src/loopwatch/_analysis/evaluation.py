"""Measuring detection against hand labels (the format of the corpus' `labels.tsv`).

A label says whether a recorded session loops (`yes`), loops briefly and escapes
(`brief`) or not (`no`), and for loops the step where the circling starts (`onset`)
and its last step (`end`), in the format's own step numbering. Each session is replayed
through a fresh `Monitor`; the step of its first stop (and of its first nudge) is
compared with the label:

- recall: `yes` sessions stopped at or after onset, over all `yes` sessions;
- delay: steps from onset to the stop, median over the caught ones;
- saved: looping steps the stop would have spared (end - stop step), over all looping
  steps (end - onset + 1) of all `yes` sessions;
- early stops: on a `yes` session, at most `EARLY_STEPS` before its onset. The agent
  never escaped that loop, so the stop ended nothing that would have come to good: not
  harm, not a catch either (`judge`);
- false stops (harm): stops on `no` sessions, on `brief` ones (the agent would have
  escaped by itself), and on `yes` sessions further before their onset (they ended the
  work before the loop).

Outcomes (`loopwatch._analysis.outcomes`: did the session solve its task?) need no hand labels:
a stop on a session that succeeded ended successful work (`Harm.stopped`), reported
with whether it came before or after the session's last file change; a nudge there
interrupted it (`Harm.nudged`), and a stop on one that failed spared the rest of it
(`Harm.failed_stopped`, `Harm.saved_steps`).

Each session is replayed by `scan`'s engine (`replay.Agents`), with its source's rules
(`hosts.monitors.monitor_for`) and calibration (`Config.for_source`); configurations
made with `calibration = "none"` are replayed as given. Each agent of a session
(`ToolCall.agent`: CodeR's sub-agents) has its own monitor, as in the live hook and in
`scan`; a sub-agent's stop ends that sub-agent only (`first_interventions`),
and `Harm` says how many stops on successful sessions were a sub-agent's and how many
came after the session's last file change, next to the plain count.

This module knows nothing of the command line; `loopwatch evaluate` prints its results.
"""

from __future__ import annotations

import csv
import os
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .._core.config import Config, params_with
from .._core.monitor import Monitor
from .._core.verdict import Action
from .._files import read_file
from .pool import LOST, file_size, in_order
from .replay import Agents

__all__ = [
    "EARLY_STEPS",
    "Case",
    "Evaluation",
    "Figures",
    "Harm",
    "Interventions",
    "Label",
    "Replay",
    "Replayed",
    "Score",
    "Sweep",
    "SweepSetting",
    "evaluate_detectors",
    "first_interventions",
    "harm",
    "judge",
    "last_write",
    "load_labels",
    "make_cases",
    "only",
    "replay_case",
    "replay_cases",
    "score",
    "sweep_thresholds",
    "with_checked",
    "with_param",
]


@dataclass(frozen=True)
class Label:
    path: str
    label: str  # yes | brief | no
    onset: int | None
    end: int | None
    kind: str = ""


@dataclass(frozen=True)
class Interventions:
    """What one replay of a session did (`first_interventions`): the step and signal of
    its first stop, of its first nudge or stronger (the stop when there was no nudge
    before it), the step of the first stop of the session's own agent, and the
    sub-agent whose stop came first (None when it was the session's own agent)."""

    stop: int | None = None
    stop_signal: str | None = None
    nudge: int | None = None
    nudge_signal: str | None = None
    session_stop: int | None = None
    stop_agent: str | None = None


@dataclass(frozen=True)
class Case:
    """One session to measure: its file (relative to the corpus folder, or absolute),
    its hand label if any, and whether it solved its task (None: unknown)."""

    path: str
    label: Label | None = None
    resolved: bool | None = None


@dataclass(frozen=True)
class Scored:
    """One session under one configuration, as `harm`, `figures` and `bootstrap` score
    it: its case, its length in steps, the steps of its first stop and first nudge, the
    step of the first stop of the session's own agent (None: its own agent was never
    stopped), the sub-agent of the first stop (None: the session's own), and the step of
    its last file change (None: none known)."""

    case: Case
    steps: int
    stop: int | None
    nudge: int | None
    session_stop: int | None = None
    stop_agent: str | None = None
    last_write: int | None = None


@dataclass
class Replayed:
    """One case replayed under several configurations: per configuration, what
    `first_interventions` found."""

    case: Case
    error: str | None = None
    steps: int = 0
    format: str | None = None
    results: list[Interventions] = field(default_factory=list)
    last_write: int | None = None  # step of the last call that changed a file

    def item(self, k: int) -> Scored:
        """This session under configuration `k`, as `harm` scores it."""
        r = self.results[k]
        return Scored(self.case, self.steps, r.stop, r.nudge, r.session_stop, r.stop_agent, self.last_write)


def make_cases(labels: list[Label] | None, outcomes: Any, corpus: str, paths: Iterable[str] = ()) -> list[Case]:
    """The sessions to measure: every labelled one, every file `paths` names, and
    (with no paths) every file the outcomes list by path; each with its outcome."""
    seen: dict[str, Case] = {}
    order: list[str] = []

    def add(path: str, label: Label | None) -> None:
        full = os.path.normpath(os.path.join(corpus, path))
        resolved = outcomes.lookup(full) if outcomes is not None else None
        if full in seen:
            if label is not None:
                seen[full] = Case(seen[full].path, label, seen[full].resolved)
            return
        seen[full] = Case(path, label, resolved)
        order.append(full)

    for label in labels or ():
        add(label.path, label)
    given = list(paths)
    for path in given:
        add(os.path.relpath(os.path.abspath(path), corpus) if not os.path.isabs(path) else path, None)
    if not given and outcomes is not None:
        for full in outcomes.paths():
            add(os.path.relpath(full, corpus), None)
    return [seen[full] for full in order]


def load_labels(path: str) -> list[Label]:
    """Read a labels file: tab-separated with a header naming at least `local_path`
    and `label`; `onset_step` and `end_step` are needed for `yes` and `brief`."""
    labels = []
    try:
        text = read_file(path).decode("utf-8", "replace")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    missing = {"local_path", "label"} - set(rows.fieldnames or ())
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    for number, row in enumerate(rows, start=2):
        value = (row.get("label") or "").strip()
        if value not in ("yes", "brief", "no"):
            raise ValueError(f"{path}: line {number}: label {value!r} is not yes, brief or no")
        onset, end = _step(row.get("onset_step")), _step(row.get("end_step"))
        if value != "no" and (onset is None or end is None):
            raise ValueError(f"{path}: line {number}: a {value} label needs onset_step and end_step")
        labels.append(Label(row["local_path"].strip(), value, onset, end, (row.get("kind") or "").strip()))
    return labels


def _step(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def _load(path: str, corpus: str) -> tuple[list[Any], dict[str, int], str]:
    from .._readers import ReadError, read

    sessions = list(read(os.path.join(corpus, path)))
    if not sessions:
        raise ReadError("no session in file")
    session = sessions[0]
    events = list(session.events)
    step_of = session.meta.get("step_of") or {}
    if not step_of:  # formats without their own step numbers: count tool calls (rejected ones too)
        rejected = set(session.meta.get("rejected_calls") or ())
        refs = [
            getattr(e, "source_ref", None)
            for e in events
            if type(e).__name__ == "ToolCall" or (rejected and getattr(e, "source_ref", None) in rejected)
        ]
        step_of = {ref: n for n, ref in enumerate(dict.fromkeys(r for r in refs if r), start=1)}
    return events, step_of, session.format


#: The parameter that switches each signal off when set to 0.
SWITCH = {
    "repeat": "threshold",
    "cycle": "repeats",
    "stagnation": "replays",
    "churn": "window",
    "echo": "turns",
    "same_error": "threshold",
    "correction": "threshold",
    "apology": "threshold",
    "repeated_lines": "repeats",
    "retry_storm": "retries",
    "chanting": "repeats",
    "wedged": "turns",
    "text_only": "threshold",
    "unchanged": "rounds",
    "reverify": "rounds",
}


def only(config: Config, name: str) -> Config:
    """The configuration with every signal but `name` switched off."""
    signals = {
        other: params if other == name else params._replace(**{SWITCH[other]: 0})
        for other, params in config.signals.items()
    }
    # set here, so a source's calibration does not switch them back on
    given = config.given | {f"signals.{other}.{SWITCH[other]}" for other in signals if other != name}
    return config._replace(signals=signals, given=given)


def with_param(config: Config, signal: str, field_name: str, value: Any) -> Config:
    signals = dict(config.signals)
    signals[signal] = signals[signal]._replace(**{field_name: value})
    return config._replace(signals=signals, given=config.given | {f"signals.{signal}.{field_name}"})


def with_checked(config: Config, signal: str, **values: Any) -> Config:
    """`config` with some of one signal's settings changed, checked as a configuration
    file's are (ConfigError, naming the setting, for a value no monitor could use): for
    settings taken from a command's options."""
    signals = dict(config.signals)
    signals[signal] = params_with(f"signals.{signal}", signals[signal], values)
    return config._replace(signals=signals, given=config.given | {f"signals.{signal}.{name}" for name in values})


class _Replayer(Monitor):
    """A monitor that takes each call's digest from a cache shared by the replays of
    one session (digesting is most of a replay's cost; it depends only on the events
    and the tool rules, which the configurations compared share)."""

    def __init__(self, config: Config, cache: dict[int, Any], **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._cache = cache

    def _digest(self, call: Any, rule: Any, at: float) -> Any:
        key = id(call)
        step = self._cache.get(key)
        if step is None or step.index != self.actions or step.at != at:
            step = self._cache[key] = super()._digest(call, rule, at)
        return step


def first_interventions(
    events: Iterable[Any],
    config: Config,
    step_of: dict[str, int],
    cache: dict[int, Any] | None = None,
    source: str | None = None,
) -> Interventions:
    """Replay (`replay.Agents`, as `scan` replays): the steps and signals of the first
    stop and the first nudge or stronger, the step of the first stop of the session's
    own agent and the sub-agent whose stop came first (`Interventions`).

    Each agent has its own monitor for `source` (`ToolCall.agent`; the session's own
    agent is the one that acts first, the Manager of a CodeR run). A sub-agent's stop
    ends that sub-agent only: what it does later is not counted, and the others are
    replayed on, until the session's own agent is stopped. The first stop of any agent is the one
    scored (recall, harm, the choice of settings): the work a stopped sub-agent would
    have done is lost with it.
    `cache` (one dict per list of events, kept while they live) shares call digests
    between replays of the same events under configurations with the same tool rules."""
    make: Callable[..., Monitor] = Monitor if cache is None else partial(_Replayer, cache=cache)
    agents = Agents(source, config, make)
    nudge = None
    for event in events:  # a stopped sub-agent's events too: they keep the session's clock, as in `scan`
        stopped = agents.stop is not None
        verdict = agents.observe(event)
        if agents.session_stop is not None:
            break
        if nudge is None and not stopped and Action.NUDGE.rank <= verdict.action.rank < Action.STOP.rank:
            nudge = verdict
    stop = agents.stop

    def step(v: Any) -> int | None:
        if v is None:
            return None
        # a verdict whose event has no step number still happened: fall back to its
        # tool-call count (never lose a stop)
        return step_of.get(v.source_ref or "") or max(1, v.index)

    if nudge is None:
        nudge = stop
    return Interventions(
        stop=step(stop),
        stop_signal=stop.signal if stop else None,
        nudge=step(nudge),
        nudge_signal=nudge.signal if nudge else None,
        session_stop=step(agents.session_stop),
        stop_agent=agents.stop_agent,
    )


def last_write(events: Iterable[Any], step_of: dict[str, int]) -> int | None:
    """The step of the session's last call that changed a file (`ToolCall.changed`),
    None if none did: a stop after it ended no work that reached the files."""
    last = None
    for event in events:
        if getattr(event, "changed", None) and getattr(event, "source_ref", None) in step_of:
            last = step_of[event.source_ref]
    return last


#: How many steps before a `yes` loop's labelled onset a stop is early rather than
#: false. The onset is the first occurrence of the repeated action (PROTOCOL.md); a
#: detector may see the circle forming a round ahead of it (a 2- or 3-step cycle's
#: round, labellers agreeing within a step). The agent never escaped that loop, so such
#: a stop ends nothing that would have come to good. Further ahead, it ended the work
#: before the loop: a false stop.
EARLY_STEPS = 3


def judge(label: Label, step: int | None) -> str | None:
    """What a label makes of a stop (or nudge) at `step`: None when there was none;
    `caught` at or after a loop's onset; `early` at most EARLY_STEPS before the onset
    of a loop the agent never escaped (not harm); else `false` (harm): on a session
    that never looped (`no`), on one that escaped (`brief`), or further before a
    loop's onset."""
    if step is None:
        return None
    if label.label != "yes" or label.onset is None:
        return "false"
    if step >= label.onset:
        return "caught"
    return "early" if label.onset - step <= EARLY_STEPS else "false"


@dataclass
class Score:
    yes: int = 0
    caught: int = 0
    delays: list[int] = field(default_factory=list)
    looping_steps: int = 0
    saved_steps: int = 0
    false_no: int = 0
    early_yes: int = 0  # within EARLY_STEPS before the onset: not harm
    before_onset: int = 0  # further before the onset: harm
    brief: int = 0
    brief_stopped: int = 0
    no: int = 0
    false_paths: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.caught / self.yes if self.yes else 0.0

    @property
    def median_delay(self) -> float | None:
        return statistics.median(self.delays) if self.delays else None

    @property
    def saved(self) -> float:
        return self.saved_steps / self.looping_steps if self.looping_steps else 0.0

    @property
    def false_stops(self) -> int:
        """The stops the labels call harm: on `no`, on `brief`, and well before an onset."""
        return self.false_no + self.brief_stopped + self.before_onset

    def as_dict(self) -> dict[str, Any]:
        return {
            "yes": self.yes,
            "caught": self.caught,
            "recall": round(self.recall, 4),
            "median_delay": self.median_delay,
            "saved": round(self.saved, 4),
            "false_stops": self.false_stops,
            "false_stops_on_no": self.false_no,
            "stops_before_onset": self.before_onset,
            "early_stops_on_yes": self.early_yes,
            "no": self.no,
            "brief": self.brief,
            "stops_on_brief": self.brief_stopped,
            "false_paths": self.false_paths,
        }


def score(pairs: Iterable[tuple[Label, int | None]]) -> Score:
    """Score (label, step of the intervention or None) pairs."""
    result = Score()
    for label, step in pairs:
        if label.label == "no":
            result.no += 1
            if step is not None:
                result.false_no += 1
                result.false_paths.append(label.path)
        elif label.label == "brief":
            result.brief += 1
            if step is not None:
                result.brief_stopped += 1
                result.false_paths.append(label.path)
        else:
            result.yes += 1
            assert label.onset is not None and label.end is not None
            result.looping_steps += label.end - label.onset + 1
            verdict = judge(label, step)
            if verdict == "early":
                result.early_yes += 1
                continue
            if verdict == "false":
                result.before_onset += 1
                result.false_paths.append(label.path)
                continue
            if step is None:
                continue
            result.caught += 1
            result.delays.append(step - label.onset)
            result.saved_steps += max(0, label.end - step)
    return result


def replay_case(case: Case, corpus: str, configs: list[Config]) -> Replayed:
    """One case replayed under each configuration (`first_interventions`); a file that
    cannot be read is a `Replayed` with `error` set."""
    from .._readers import ReadError

    try:
        events, step_of, source = _load(case.path, corpus)
    except (ReadError, OSError) as exc:
        return Replayed(case, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a reader bug must not end an evaluation of hundreds of files
        return Replayed(case, error=f"reader failed: {type(exc).__name__}: {exc}")
    cache: dict[int, Any] = {}
    results = []
    for config in configs:
        if cache and config.tools != configs[0].tools:
            cache = {}
        results.append(first_interventions(events, config.for_source(source), step_of, cache, source))
    return Replayed(case, None, len(step_of), source, results, last_write(events, step_of))


#: What replays the cases: `(cases, corpus, configs, progress=...)` to one `Replayed` per
#: case, in order (`replay_cases` here, bound to its jobs; `ray_engine.replay_cases_ray`).
Replay = Callable[..., "list[Replayed]"]


def replay_cases(
    cases: list[Case], corpus: str, configs: list[Config], jobs: int | None = None, progress: Any = None
) -> list[Replayed]:
    """Replay every case under every configuration, in parallel (`jobs` processes,
    default one per core; `pool.in_order`), in the order given. `progress(n)` is called
    as sessions finish."""
    results = []
    for result in in_order(
        partial(replay_case, corpus=corpus, configs=configs),
        cases,
        jobs,
        lost=lambda case: Replayed(case, error=LOST),
        size=lambda case: file_size(os.path.join(corpus, case.path)),
    ):
        results.append(result)
        if progress:
            progress(1)
    return results


def replay_many(
    labels: list[Label], corpus: str, configs: list[Config], jobs: int | None = None, progress: Any = None
) -> list[tuple[Label, str | None, list[Interventions]]]:
    """`replay_cases` for labelled sessions: per label, (label, read error or None,
    what `first_interventions` found under each configuration)."""
    done = replay_cases([Case(label.path, label) for label in labels], corpus, configs, jobs, progress)
    return [(label, r.error, r.results) for label, r in zip(labels, done)]


@dataclass
class Harm:
    """What stops and nudges did to sessions with a known outcome."""

    succeeded: int = 0
    stopped: int = 0  # stops on sessions that solved their task: the worst outcome
    nudged: int = 0  # sessions that solved their task and were nudged (or stopped)
    failed: int = 0
    failed_stopped: int = 0
    failed_steps: int = 0
    saved_steps: int = 0  # steps after the stop, on the sessions that failed
    stopped_paths: list[str] = field(default_factory=list)
    #: Of `stopped`: those where the first stop was a sub-agent's (its session went on
    #: without it), those where the session's own agent was stopped (at any point), and
    #: those where the stop came after the session's last file change (it ended no work
    #: that reached the files; a sub-agent's later edits included). Shown next to
    #: `stopped`, never instead of it.
    stopped_sub_agent: int = 0
    stopped_session: int = 0
    stopped_after_last_write: int = 0
    stopped_before_last_write: int = 0  # the rest of `stopped` left the files unknown

    @property
    def stopped_rate(self) -> float:
        return self.stopped / self.succeeded if self.succeeded else 0.0

    @property
    def nudged_rate(self) -> float:
        return self.nudged / self.succeeded if self.succeeded else 0.0

    @property
    def saved(self) -> float:
        return self.saved_steps / self.failed_steps if self.failed_steps else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "succeeded": self.succeeded,
            "stops_on_succeeded": self.stopped,
            "stops_on_succeeded_rate": round(self.stopped_rate, 4),
            "nudges_on_succeeded": self.nudged,
            "nudges_on_succeeded_rate": round(self.nudged_rate, 4),
            "failed": self.failed,
            "stops_on_failed": self.failed_stopped,
            "failed_steps_saved": round(self.saved, 4),
            "stopped_succeeded_paths": self.stopped_paths,
            "stops_on_succeeded_by_sub_agent": self.stopped_sub_agent,
            "stops_on_succeeded_of_session_agent": self.stopped_session,
            "stops_on_succeeded_after_last_write": self.stopped_after_last_write,
            "stops_on_succeeded_before_last_write": self.stopped_before_last_write,
        }


def harm(items: Iterable[Scored]) -> Harm:
    """Score sessions by outcome; sessions with no known outcome are left out."""
    result = Harm()
    for item in items:
        case, steps, stop, nudge = item.case, item.steps, item.stop, item.nudge
        session_stop, agent, written = item.session_stop, item.stop_agent, item.last_write
        if case.resolved is True:
            result.succeeded += 1
            if stop is not None:
                result.stopped += 1
                result.stopped_paths.append(case.path)
                result.stopped_sub_agent += agent is not None
                result.stopped_session += session_stop is not None
                result.stopped_after_last_write += written is not None and stop >= written  # the stopped call ran
                result.stopped_before_last_write += written is not None and stop < written
            if nudge is not None or stop is not None:
                result.nudged += 1
        elif case.resolved is False:
            result.failed += 1
            result.failed_steps += steps
            if stop is not None:
                result.failed_stopped += 1
                result.saved_steps += max(0, steps - stop)
    return result


#: Thresholds tried for each signal by `sweep` (the parameter of `SWITCH`). Churn is
#: left out: it never stops.
SWEEP = {
    "repeat": [2, 3, 4, 5, 6, 8],
    "cycle": [2, 3, 4, 5],
    "stagnation": [4, 6, 8, 10, 15, 20],
    "echo": [2, 3, 4, 5, 6],
    "same_error": [2, 3, 4, 5, 6, 7, 8, 10],
    "correction": [2, 3, 4, 6, 8],
    "apology": [2, 3, 4, 6],
    "repeated_lines": [3, 4, 6, 8, 12],
    "retry_storm": [3, 5, 8, 12],
    "chanting": [2, 3, 4, 6],
}


@dataclass(frozen=True)
class Figures:
    """What one configuration did to a set of sessions: its first stops and first
    nudges scored against the labels, and its stops and nudges by outcome."""

    stop: Score
    nudge: Score
    outcomes: Harm

    def as_json(self) -> dict[str, Any]:
        return {"stop": self.stop.as_dict(), "nudge": self.nudge.as_dict(), "outcomes": self.outcomes.as_dict()}


@dataclass(frozen=True)
class Evaluation:
    """`evaluate_detectors`: the whole detector (`all`) and each signal alone, on every
    session that could be read; the sessions that could not, with why."""

    sessions: int
    labelled: int
    with_outcome: int
    errors: tuple[tuple[str, str], ...]  # (path, why it could not be read)
    detectors: dict[str, Figures]  # "all", then one per signal

    def as_json(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "labelled": self.labelled,
            "with_outcome": self.with_outcome,
            "errors": [{"path": path, "error": error} for path, error in self.errors],
            "detectors": {name: figures.as_json() for name, figures in self.detectors.items()},
        }


def evaluate_detectors(
    cases: list[Case],
    corpus: str,
    config: Config,
    jobs: int | None = None,
    progress: Any = None,
    replay: Replay | None = None,
) -> Evaluation:
    """Replay every case under `config` and under each of its signals alone, and score
    each against the labels and the outcomes. `replay` replays the cases (default:
    `replay_cases` on `jobs` processes here; the Ray engine's twin on a cluster)."""
    names = list(config.signals)
    configs = [config] + [only(config, name) for name in names]
    results = (replay or partial(replay_cases, jobs=jobs))(cases, corpus, configs, progress=progress)
    ok = [r for r in results if not r.error]
    labelled = [(r.case.label, r) for r in ok if r.case.label is not None]
    detectors = {}
    for k, name in enumerate(["all"] + names):
        detectors[name] = Figures(
            stop=score((label, r.results[k].stop) for label, r in labelled),
            nudge=score((label, r.results[k].nudge) for label, r in labelled),
            outcomes=harm(r.item(k) for r in ok),
        )
    return Evaluation(
        sessions=len(cases),
        labelled=sum(1 for c in cases if c.label is not None),
        with_outcome=sum(1 for c in cases if c.resolved is not None),
        errors=tuple((r.case.path, r.error) for r in results if r.error),
        detectors=detectors,
    )


@dataclass(frozen=True)
class SweepSetting:
    """One threshold of one signal alone, scored on the labelled sessions (ratios
    rounded to 4 places, as reported)."""

    value: int
    recall: float
    caught: int
    false_stops: int
    median_delay: float | None
    saved: float
    stops_on_brief: int

    def as_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "recall": self.recall,
            "caught": self.caught,
            "false_stops": self.false_stops,
            "median_delay": self.median_delay,
            "saved": self.saved,
            "stops_on_brief": self.stops_on_brief,
        }


@dataclass(frozen=True)
class Sweep:
    """The thresholds of one signal's switching parameter (`SWITCH`), each tried with
    the other signals off, and the most aggressive with no false stop (in sample)."""

    parameter: str
    default: int
    settings: tuple[SweepSetting, ...]

    @property
    def most_aggressive_without_false_stops(self) -> int | None:
        """The most loops caught with no false stop, then the lowest threshold."""
        safe = [s for s in self.settings if s.false_stops == 0 and s.caught > 0]
        best = max(safe, key=lambda s: (s.caught, -s.value), default=None)
        return best.value if best else None

    def as_json(self) -> dict[str, Any]:
        return {
            "parameter": self.parameter,
            "default": self.default,
            "settings": [s.as_json() for s in self.settings],
            "most_aggressive_without_false_stops": self.most_aggressive_without_false_stops,
        }


def sweep_thresholds(
    labels: list[Label], corpus: str, config: Config, jobs: int | None = None, progress: Any = None
) -> dict[str, Sweep]:
    """Each signal of `config` alone at each threshold of `SWEEP`, scored on the
    labelled sessions that could be read."""
    grid = [(name, value) for name, values in SWEEP.items() for value in values if name in config.signals]
    configs = [with_param(only(config, name), name, SWITCH[name], value) for name, value in grid]
    results = replay_many(labels, corpus, configs, jobs, progress)
    settings: dict[str, list[SweepSetting]] = {}
    for k, (name, value) in enumerate(grid):
        s = score((label, r[k].stop) for label, error, r in results if not error)
        settings.setdefault(name, []).append(
            SweepSetting(
                value=value,
                recall=round(s.recall, 4),
                caught=s.caught,
                false_stops=s.false_stops,
                median_delay=s.median_delay,
                saved=round(s.saved, 4),
                stops_on_brief=s.brief_stopped,
            )
        )
    return {
        name: Sweep(SWITCH[name], getattr(config.signals[name], SWITCH[name]), tuple(found))
        for name, found in settings.items()
    }
