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
- false stops: stops on `no` sessions, and stops on `yes` sessions before their onset;
- stops on `brief` sessions (premature: the agent would have escaped by itself).

This module knows nothing of the command line; `loopwatch evaluate` prints its results.
"""

from __future__ import annotations

import csv
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable

from .config import Config
from .monitor import Monitor
from .verdict import Action

__all__ = ["Label", "Outcome", "Score", "first_interventions", "load_labels", "load_session", "only", "replay_labelled", "score", "with_param"]


@dataclass(frozen=True)
class Label:
    path: str
    label: str  # yes | brief | no
    onset: int | None
    end: int | None
    kind: str = ""


@dataclass
class Outcome:
    """One labelled session replayed: the steps of its first stop and first nudge."""

    label: Label
    stop_step: int | None = None
    stop_signal: str | None = None
    nudge_step: int | None = None
    nudge_signal: str | None = None
    steps: int = 0
    error: str | None = None
    signals: dict[str, int] = field(default_factory=dict)  # signal -> step of its first stop


def load_labels(path: str) -> list[Label]:
    """Read a labels file: tab-separated with a header naming at least `local_path`
    and `label`; `onset_step` and `end_step` are needed for `yes` and `brief`."""
    labels = []
    with open(path, newline="", encoding="utf-8") as fh:
        rows = csv.DictReader(fh, delimiter="\t")
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


def load_session(label: Label, corpus: str) -> tuple[list[Any], dict[str, int]]:
    """The events of a labelled session and its map from source_ref to step number."""
    from .readers import ReadError, read

    sessions = list(read(os.path.join(corpus, label.path)))
    if not sessions:
        raise ReadError("no session in file")
    session = sessions[0]
    return list(session.events), session.meta.get("step_of", {})


def replay_labelled(label: Label, corpus: str, config: Config, by_signal: bool = False) -> Outcome:
    """Replay one labelled session. With `by_signal`, also note the step at which each
    signal alone would first have stopped it (its own ladder, the others silent)."""
    from .readers import ReadError

    outcome = Outcome(label)
    try:
        events, step_of = load_session(label, corpus)
    except (ReadError, OSError) as exc:
        outcome.error = str(exc)
        return outcome
    outcome.steps = len(step_of)
    outcome.stop_step, outcome.stop_signal, outcome.nudge_step, outcome.nudge_signal = first_interventions(events, config, step_of)
    if by_signal:
        for name in config.signals:
            step, _, _, _ = first_interventions(events, only(config, name), step_of)
            if step is not None:
                outcome.signals[name] = step
    return outcome


#: The parameter that switches each signal off when set to 0.
SWITCH = {
    "repeat": "threshold", "cycle": "repeats", "stagnation": "replays", "churn": "window",
    "echo": "turns", "same_error": "threshold", "correction": "threshold", "apology": "threshold",
    "repeated_lines": "repeats", "retry_storm": "retries", "chanting": "repeats",
}


def only(config: Config, name: str) -> Config:
    """The configuration with every signal but `name` switched off."""
    signals = {
        other: params if other == name else params._replace(**{SWITCH[other]: 0})
        for other, params in config.signals.items()
    }
    return config._replace(signals=signals)


def with_param(config: Config, signal: str, field_name: str, value: Any) -> Config:
    signals = dict(config.signals)
    signals[signal] = signals[signal]._replace(**{field_name: value})
    return config._replace(signals=signals)


def first_interventions(events: Iterable[Any], config: Config, step_of: dict[str, int]) -> tuple[int | None, str | None, int | None, str | None]:
    """Replay: (step, signal) of the first stop, then of the first nudge or stronger."""
    monitor = Monitor(config)
    stop = nudge = None
    for event in events:
        verdict = monitor.observe(event)
        if verdict.action is Action.STOP and stop is None:
            stop = verdict
            break
        if verdict.action.rank >= Action.NUDGE.rank and nudge is None:
            nudge = verdict

    def step(v):
        return None if v is None else step_of.get(v.source_ref or "")

    if nudge is None:
        nudge = stop
    return step(stop), stop.signal if stop else None, step(nudge), nudge.signal if nudge else None


@dataclass
class Score:
    yes: int = 0
    caught: int = 0
    delays: list[int] = field(default_factory=list)
    looping_steps: int = 0
    saved_steps: int = 0
    false_no: int = 0
    early_yes: int = 0
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
        return self.false_no + self.early_yes

    def as_dict(self) -> dict[str, Any]:
        return {
            "yes": self.yes,
            "caught": self.caught,
            "recall": round(self.recall, 4),
            "median_delay": self.median_delay,
            "saved": round(self.saved, 4),
            "false_stops": self.false_stops,
            "false_stops_on_no": self.false_no,
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
            result.brief_stopped += step is not None
        else:
            result.yes += 1
            assert label.onset is not None and label.end is not None
            result.looping_steps += label.end - label.onset + 1
            if step is None:
                continue
            if step < label.onset:
                result.early_yes += 1
                result.false_paths.append(label.path)
                continue
            result.caught += 1
            result.delays.append(step - label.onset)
            result.saved_steps += max(0, label.end - step)
    return result


def _replay_configs(task: tuple[Label, str, list[Config]]) -> tuple[Label, str | None, list[tuple]]:
    from .readers import ReadError

    label, corpus, configs = task
    try:
        events, step_of = load_session(label, corpus)
    except (ReadError, OSError) as exc:
        return label, str(exc), []
    return label, None, [first_interventions(events, config, step_of) for config in configs]


def replay_many(labels: list[Label], corpus: str, configs: list[Config], jobs: int | None = None, progress: Any = None) -> list[tuple[Label, str | None, list[tuple]]]:
    """Replay every labelled session under every configuration, in parallel.

    Returns, per label in order, (label, read error or None, one
    `first_interventions` tuple per configuration). `progress(n)` is called as
    sessions finish."""
    tasks = [(label, corpus, configs) for label in labels]
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1:
        results = []
        for task in tasks:
            results.append(_replay_configs(task))
            if progress:
                progress(1)
        return results
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        results = []
        for result in pool.map(_replay_configs, tasks, chunksize=4):
            results.append(result)
            if progress:
                progress(1)
        return results


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
