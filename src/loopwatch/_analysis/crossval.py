"""Cross-validation: thresholds chosen on some sessions, measured on others.

A threshold chosen as "the most aggressive value with no false stop" on a sample fits
the sample; measured on the sessions it was chosen on, it looks better than it is. Here
the sessions are split into K folds (stratified by label and outcome, shuffled with a
seed); for each fold a setting is chosen on the other K-1 and scored on the one left
out, and the out-of-fold figures are those scores put together. Intervals come from a
bootstrap over sessions (resampled with replacement, seeded).

The choice (`choose`), on the sessions it may see:
1. no stop on a session that solved its task (the worst outcome), or, when every
   setting of the grid makes some such stop, no more than the fewest any setting makes
   (the floor, reported); with `margin` 1, every setting one step more aggressive on
   any single axis must keep to that too (the shipped value is one step back from the
   edge the sample shows, not on it). The margin takes a step back wherever the grid
   has one: a value at an axis' most aggressive end has no step beyond it to show it is
   off the edge, so it is not shipped; one at its most conservative end has nothing
   further back, so the margin asks nothing more of that axis. Were that not so, an
   axis whose first step is the edge (`repeat.threshold` 4, with 3 stopping sessions
   that succeeded) would shut out every setting of the grid, whatever the other axes,
   and the choice would fall to the grid's first point, suspicion never stopping. If
   no setting keeps the margin at all, the floor alone decides;
2. then the most loops caught, less `FALSE_STOP_COST` per false stop (`judge`: on a
   healthy session, on a loop the agent escaped, or well before a loop's onset): a
   false stop on a session that failed anyway ended no successful work, but it must
   buy 5 loops to be accepted;
3. then the shortest median delay, the fewest nudges on successful sessions, the most
   failed sessions stopped (what outcomes alone can say), and the more conservative
   setting (the grid's order).

Deterministic for a seed. This module knows nothing of the command line.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import tomli_w

from .._core.config import Config
from .evaluation import Case, Figures, Replay, Replayed, Scored, harm, judge, replay_cases, score, with_param

__all__ = [
    "GRID",
    "Candidate",
    "CrossValidation",
    "Fold",
    "assign_folds",
    "bootstrap",
    "calibration_toml",
    "candidates",
    "choose",
    "cross_validate",
    "cross_validated",
    "figures",
    "show_value",
]

#: The axes tuned, each from its most conservative value to its most aggressive. The
#: thresholds that decide stops (repeat and same_error) and the evidence rule; the
#: others keep their documented defaults (they catch few loops alone: BENCHMARKS.md).
#: `confirm` steps back from 4 by doubling, so a margin can be kept past a harmless
#: streak that goes on a few rounds past its nudge: a Terminal-Bench session that
#: solved its task typed 6 commands into a wedged terminal past the nudge, and with
#: nothing beyond 4 the margin could only fall back to 0 (suspicion never stops).
GRID: dict[str, list[Any]] = {
    "signals.repeat.threshold": [4, 3],
    "signals.same_error.threshold": [8, 7, 6, 5, 4],
    "evidence.confirm": [0, 16, 8, 4, 3, 2, 1],
    "evidence.second_signal": [False, True],
}


class Candidate:
    """One point of the grid: `values` (dotted key -> value), `position` (index on
    each axis) and the `config` it makes."""

    __slots__ = ("config", "position", "values")

    def __init__(self, values: dict[str, Any], position: tuple[int, ...], config: Config) -> None:
        self.values, self.position, self.config = values, position, config

    def label(self) -> str:
        return ", ".join(f"{k}={show_value(v)}" for k, v in self.values.items())


def apply(config: Config, values: dict[str, Any]) -> Config:
    """`config` with dotted keys set (`signals.same_error.threshold`, `evidence.confirm`)."""
    for key, value in values.items():
        parts = key.split(".")
        if parts[0] == "signals" and len(parts) == 3:
            config = with_param(config, parts[1], parts[2], value)
        elif parts[0] == "evidence" and len(parts) == 2:
            config = config._replace(**{parts[1]: value})
        else:
            raise ValueError(f"not a tunable key: {key}")
    return config


def candidates(base: Config, grid: dict[str, list[Any]] | None = None) -> list[Candidate]:
    """Every point of the grid, applied to `base` with its calibration switched off
    (the candidate is replayed exactly as given)."""
    grid = GRID if grid is None else grid
    axes = list(grid)
    base = base._replace(calibration="none")
    out = []
    for position in itertools.product(*(range(len(grid[a])) for a in axes)):
        values = {a: grid[a][i] for a, i in zip(axes, position)}
        out.append(Candidate(values, position, apply(base, values)))
    return out


def assign_folds(cases: Sequence[Case], k: int, seed: int) -> list[int]:
    """A fold (0..k-1) per case: stratified by (label, outcome) so each fold gets its
    share of loops and of successes, shuffled with `seed`."""
    rng = random.Random(seed)
    strata: dict[tuple[str, bool | None], list[int]] = {}
    for i, case in enumerate(cases):
        strata.setdefault((case.label.label if case.label else "", case.resolved), []).append(i)
    folds = [0] * len(cases)
    offset = 0
    for key in sorted(strata, key=repr):
        members = strata[key]
        rng.shuffle(members)
        for j, i in enumerate(members):
            folds[i] = (offset + j) % k
        offset += len(members)
    return folds


class _Row:
    """One case's verdicts under every candidate, reduced to what the choice needs."""

    __slots__ = ("agents", "case", "last_write", "nudges", "session_stops", "steps", "stops")

    def __init__(self, replayed: Replayed) -> None:
        self.case = replayed.case
        self.steps = replayed.steps
        self.stops = [r.stop for r in replayed.results]
        self.nudges = [r.nudge for r in replayed.results]
        self.session_stops = [r.session_stop for r in replayed.results]
        self.agents = [r.stop_agent for r in replayed.results]
        self.last_write = replayed.last_write

    def item(self, c: int) -> Scored:
        """This case under candidate `c`, as `figures` and `harm` score it."""
        return Scored(
            self.case,
            self.steps,
            self.stops[c],
            self.nudges[c],
            self.session_stops[c],
            self.agents[c],
            self.last_write,
        )


def _harmful(row: _Row, c: int) -> bool:
    """A stop on a session that solved its task: the worst outcome."""
    return row.stops[c] is not None and row.case.resolved is True


def _false(row: _Row, c: int) -> bool:
    """A stop the labels call false (`judge`): on a healthy (`no`) session, on a loop
    the agent escaped (`brief`), or well before a loop's onset (on a session that did
    not succeed: those are `_harmful` already)."""
    case = row.case
    if case.resolved is True or case.label is None:
        return False
    return judge(case.label, row.stops[c]) == "false"


def _unsafe(row: _Row, c: int) -> bool:
    return _harmful(row, c) or _false(row, c)


#: Loops a false stop (on a healthy session, or before the onset, on a session that
#: did not succeed) must buy to be accepted: 5, the protocol's count of rounds for a
#: stretch that is a loop however it ends. A stop on a session that succeeded is never
#: traded: it is held at the least any setting of the grid makes.
FALSE_STOP_COST = 5


def _merit(rows: Sequence[_Row], c: int) -> tuple[float, ...]:
    caught = 0
    delays = []
    nudged = 0
    failed_stopped = 0
    false = 0
    for row in rows:
        case, stop = row.case, row.stops[c]
        label = case.label
        if label is not None and judge(label, stop) == "caught":
            assert stop is not None and label.onset is not None
            caught += 1
            delays.append(stop - label.onset)
        if case.resolved is True and (stop is not None or row.nudges[c] is not None):
            nudged += 1
        if case.resolved is False and stop is not None:
            failed_stopped += 1
        false += _false(row, c)
    delay = statistics.median(delays) if delays else 0.0
    return (caught - FALSE_STOP_COST * false, -delay, -nudged, failed_stopped)


def choose(rows: Sequence[_Row], cands: Sequence[Candidate], margin: int = 1) -> int:
    """The index of the candidate chosen on `rows` (see the module docstring)."""
    harmful = [sum(1 for row in rows if _harmful(row, c)) for c in range(len(cands))]
    floor = min(harmful, default=0)  # what no setting of the grid avoids (0 when one is safe)
    where = {cand.position: c for c, cand in enumerate(cands)}

    def kept(cand: Candidate) -> bool:
        """Is `cand` `margin` steps back from the harm edge on every axis it can step back on?
        A step past the grid's end is not known to be safe."""
        return not any(
            n is None or harmful[n] > floor
            for a in range(len(cand.position))
            if cand.position[a] > 0  # the most conservative value has nothing further back to ship
            for step in range(1, margin + 1)
            for n in [where.get(cand.position[:a] + (cand.position[a] + step,) + cand.position[a + 1 :])]
        )

    safe = [c for c in range(len(cands)) if harmful[c] <= floor]
    pool = [c for c in safe if kept(cands[c])] or safe
    return max(pool, key=lambda c: (_merit(rows, c), -c), default=0)  # ties: the grid's order


def figures(items: Iterable[Scored]) -> Figures:
    """Label and outcome figures for scored sessions: a stop counts as a nudge too."""
    items = list(items)
    labelled = [(item.case.label, item.stop) for item in items if item.case.label is not None]
    nudged = [
        (item.case.label, item.nudge if item.nudge is not None else item.stop)
        for item in items
        if item.case.label is not None
    ]
    return Figures(stop=score(labelled), nudge=score(nudged), outcomes=harm(items))


def _summary(items: list[Scored]) -> dict[str, float]:
    f = figures(items)
    stop, out = f.stop, f.outcomes
    delay = stop.median_delay
    return {  # the ratios rounded as reported
        "recall": round(stop.recall, 4),
        "median_delay": delay if delay is not None else float("nan"),
        "early_stops_on_yes": stop.early_yes,
        "stops_before_onset": stop.before_onset,
        "false_stops_on_no": stop.false_no,
        "stops_on_brief": stop.brief_stopped,
        "stops_on_succeeded": out.stopped,
        "nudges_on_succeeded_rate": round(out.nudged_rate, 4),
        "stops_on_failed": out.failed_stopped,
    }


def bootstrap(items: list[Scored], n: int = 1000, seed: int = 0) -> dict[str, list[float]]:
    """95% percentile intervals of the summary figures, resampling sessions."""
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {}
    size = len(items)
    if not size:
        return {}
    for _ in range(n):
        sample = [items[rng.randrange(size)] for _ in range(size)]
        for key, value in _summary(sample).items():
            draws.setdefault(key, []).append(value)
    out = {}
    for key, values in draws.items():
        values = sorted(v for v in values if not math.isnan(v))  # NaN: no caught loop in that draw
        if values:
            out[key] = [values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]]
    return out


@dataclass(frozen=True)
class Fold:
    """One fold: the setting chosen on the others and how many sessions it was scored
    on; held out by group (`--folds-by`), the group and its own figures."""

    fold: int
    sessions: int
    chosen: dict[str, Any]
    group: str | None = None
    figures: Figures | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fold": self.fold, "sessions": self.sessions, "chosen": self.chosen}
        if self.group is not None:
            out["group"] = self.group
            out["figures"] = self.figures.as_json() if self.figures is not None else None
        return out


@dataclass(frozen=True)
class CrossValidation:
    """Thresholds chosen on K-1 folds and scored on the one left out: the figures out
    of fold with bootstrap intervals, each fold's choice, the choice on every session
    and its figures in sample; from `cross_validated`, also the grid, the figures of
    the configuration as given and the sessions that could not be read."""

    folds: int
    seed: int
    margin: int
    sessions: int
    candidates: int
    out_of_fold: Figures
    intervals: dict[str, list[float]]
    per_fold: tuple[Fold, ...]
    chosen: dict[str, Any]
    in_sample: Figures
    grid: dict[str, list[Any]] | None = None
    configured: Figures | None = None  # the configuration as given (calibrations applied), not tuned
    errors: tuple[tuple[str, str], ...] = ()  # (path, why it could not be read)
    folds_by: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "folds": self.folds,
            "seed": self.seed,
            "margin": self.margin,
            "sessions": self.sessions,
            "candidates": self.candidates,
            "out_of_fold": self.out_of_fold.as_json(),
            "intervals": self.intervals,
            "per_fold": [fold.as_json() for fold in self.per_fold],
            "chosen": self.chosen,
            "in_sample": self.in_sample.as_json(),
            "grid": self.grid,
            "configured": self.configured.as_json() if self.configured is not None else None,
            "errors": [{"path": path, "error": error} for path, error in self.errors],
            "folds_by": self.folds_by,
        }


def cross_validate(
    replayed: Sequence[Replayed],
    cands: Sequence[Candidate],
    k: int = 5,
    seed: int = 0,
    margin: int = 1,
    resamples: int = 1000,
    groups: dict[str, str] | None = None,
) -> CrossValidation:
    """Choose on K-1 folds, score on the one left out; figures out of fold with
    bootstrap intervals, each fold's choice, and the choice on every session.

    With `groups` (a case's path -> its group, e.g. the agent that made it) each group
    is one fold and `k` is ignored: the setting scored on an agent was chosen without
    any session of it, and each fold's own figures are reported with it."""
    rows = [_Row(r) for r in replayed if r.error is None]
    if groups is not None:
        names = sorted({groups.get(row.case.path, "") for row in rows})
        if len(names) < 2:
            raise ValueError("folds-by: every session is in one group; holding it out leaves nothing to choose on")
        index = {name: i for i, name in enumerate(names)}
        fold_of = [index[groups.get(row.case.path, "")] for row in rows]
        k = len(names)
    else:
        if k < 2:
            raise ValueError("folds: at least 2")
        if len(rows) < k:
            raise ValueError(f"folds: {k} folds need at least {k} readable sessions, got {len(rows)}")
        fold_of = assign_folds([r.case for r in rows], k, seed)
    out_of_fold: list[Scored] = []
    chosen = []
    for fold in range(k):
        train = [row for row, f in zip(rows, fold_of) if f != fold]
        c = choose(train, cands, margin)
        held = [row.item(c) for row, f in zip(rows, fold_of) if f == fold]
        if groups is not None:
            chosen.append(Fold(fold, len(held), cands[c].values, names[fold], figures(held)))
        else:
            chosen.append(Fold(fold, len(held), cands[c].values))
        out_of_fold += held
    final = choose(rows, cands, margin)
    return CrossValidation(
        folds=k,
        seed=seed,
        margin=margin,
        sessions=len(rows),
        candidates=len(cands),
        out_of_fold=figures(out_of_fold),
        intervals=bootstrap(out_of_fold, resamples, seed),
        per_fold=tuple(chosen),
        chosen=cands[final].values,
        in_sample=figures(row.item(final) for row in rows),
    )


def cross_validated(
    cases: list[Case],
    corpus: str,
    config: Config,
    cands: Sequence[Candidate],
    folds: int,
    seed: int = 0,
    margin: int = 1,
    resamples: int = 1000,
    groups: dict[str, str] | None = None,
    folds_by: str | None = None,
    jobs: int | None = None,
    progress: Any = None,
    replay: Replay | None = None,
) -> CrossValidation:
    """Replay every case under every candidate (`candidates(config)`) and under
    `config` as given, then cross-validate (one fold per group with `groups`, named
    by `folds_by`). A ValueError says why the folds cannot be made. `replay` replays
    the cases (default: `replay_cases` on `jobs` processes here)."""
    configs = [c.config for c in cands] + [config]
    results = (replay or partial(replay_cases, jobs=jobs))(cases, corpus, configs, progress=progress)
    errors = tuple((r.case.path, r.error) for r in results if r.error)
    shipped = [r.item(len(r.results) - 1) for r in results if not r.error]
    for r in results:
        r.results = r.results[:-1]
    report = cross_validate(results, cands, folds, seed, margin, resamples, groups)
    return replace(report, grid=GRID, configured=figures(shipped), errors=errors, folds_by=folds_by)


def show_value(value: Any) -> str:
    """A setting's value as TOML writes it (`true`, `4`, a string quoted and escaped),
    for the lines that name it: a calibration file's comments among them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return tomli_w.dumps({"v": value}).partition(" = ")[2].rstrip("\n")
    return str(value)


def calibration_toml(report: CrossValidation, command: str) -> str:
    """The setting chosen on every session as a loopwatch TOML file, its out-of-fold
    evidence in comments; `command` is the command line that made it."""
    stop, out = report.out_of_fold.stop, report.out_of_fold.outcomes
    split = (
        f"one fold per {report.folds_by} ({report.folds})"
        if report.folds_by
        else f"{report.folds} folds, seed {report.seed}"
    )
    lines = [
        "# loopwatch calibration, chosen by cross-validation on your own runs.",
        f"# written by: {command}",
        f"# {report.sessions} sessions, {split}, margin {report.margin}.",
        "# Out of fold (chosen on the other folds, scored on the one left out):",
    ]
    if stop.yes:
        delay = "-" if stop.median_delay is None else f"{stop.median_delay:g}"
        lines.append(
            f"#   recall {round(stop.recall, 4):.0%} ({stop.caught}/{stop.yes}), median delay {delay}, "
            f"stops before onset {stop.before_onset} (early {stop.early_yes}), "
            f"on healthy {stop.false_no}, on brief {stop.brief_stopped}"
        )
    if out.succeeded or out.failed:
        lines.append(
            f"#   stops on succeeded {out.stopped} of {out.succeeded}, "
            f"nudged {out.nudged}, stops on failed {out.failed_stopped} of {out.failed}"
        )
    lines.append(
        "# Per fold: "
        + "; ".join(
            ", ".join(f"{k.split('.')[-1]}={show_value(v)}" for k, v in fold.chosen.items()) for fold in report.per_fold
        )
    )
    tables: dict[str, dict[str, Any]] = {}
    for key, value in report.chosen.items():
        head, _, name = key.rpartition(".")
        tables.setdefault(head, {})[name] = value
    document: dict[str, Any] = {}
    for head in sorted(tables):
        where = document
        for part in head.split("."):
            where = where.setdefault(part, {})
        where.update(tables[head])
    return "\n".join(lines) + "\n\n" + tomli_w.dumps(document)
