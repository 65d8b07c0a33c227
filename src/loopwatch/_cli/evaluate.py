"""`loopwatch evaluate`: what a configuration does to labelled sessions and to
sessions whose outcome is known; with `--folds`, how well thresholds chosen on some
sessions do on the others."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from .._analysis import crossval
from .._analysis.crossval import CrossValidation, show_value
from .._analysis.evaluation import (
    EARLY_STEPS,
    Case,
    Evaluation,
    Figures,
    Replay,
    Replayed,
    evaluate_detectors,
    load_labels,
    make_cases,
    replay_cases,
)
from .._encode import json_bytes
from ._common import config_options, engine_options, make_config, progress_bar, use_ray

if TYPE_CHECKING:
    from .._analysis.evaluation import Label
    from .._analysis.outcomes import Outcomes
    from .._core.config import Config

__all__ = ["corpus_of", "evaluate", "load_inputs"]


def labels_or_usage(path: str | None) -> list[Label] | None:
    """The labels file read, or a one-line usage error."""
    if not path:
        return None
    try:
        return load_labels(path)
    except (OSError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None


def outcomes_or_usage(paths: tuple[str, ...]) -> Outcomes | None:
    """The outcomes files read, or a one-line usage error."""
    from .._analysis.outcomes import load_outcomes

    if not paths:
        return None
    try:
        return load_outcomes(paths)
    except (OSError, ValueError) as exc:
        raise click.UsageError(f"--outcomes: {exc}") from None


def load_inputs(
    labels_path: str | None, outcome_paths: tuple[str, ...], corpus: str | None, paths: tuple[str, ...]
) -> tuple[list[Case], str]:
    """The cases to measure and the folder their paths are relative to; a clear
    usage error for a bad labels or outcomes file."""
    from .paths import expand

    if not labels_path and not outcome_paths:
        raise click.UsageError("give --labels, --outcomes, or both (outcomes alone measure harm and savings)")
    labels = labels_or_usage(labels_path)
    outcomes = outcomes_or_usage(outcome_paths)
    if corpus is None:
        corpus = corpus_of(labels, labels_path, outcome_paths)
    files = []
    for target in expand(paths):
        if target.problem:
            raise click.UsageError(f"{target.path}: {target.problem}")
        if target.path != "-":
            files.append(target.path)
    if paths and not files:
        raise click.UsageError("no session files found in the paths given")
    cases = make_cases(labels, outcomes, corpus, files)
    if not cases:
        raise click.UsageError(
            "no sessions to measure: the outcomes list no session file by path; give the session files too"
        )
    return cases, corpus


def corpus_of(labels: list[Label] | None, labels_path: str | None, outcome_paths: tuple[str, ...]) -> str:
    """The folder the listed paths are relative to, when --corpus is not given: the
    labels' own folder, else the first outcomes folder that holds every labelled
    session (labels kept in a repository, apart from the corpus whose manifest is the
    outcomes), else the first given."""
    anchors = [
        path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        for path in (labels_path, *outcome_paths)
        if path
    ]
    for anchor in anchors if labels else ():
        if all(os.path.isfile(os.path.join(anchor, label.path)) for label in labels or ()):
            return anchor
    return anchors[0]


def _outcome_options(func: Any) -> Any:
    func = click.option(
        "--outcomes",
        "outcome_paths",
        multiple=True,
        type=click.Path(exists=True),
        help="Which sessions solved their task (repeatable): a TSV with a resolved column "
        "(the corpus' MANIFEST.tsv), JSON of session -> resolved, SWE-bench results, "
        "Terminal-Bench results.json, or a folder of results.json files.",
    )(func)
    func = click.option(
        "--labels",
        "labels_path",
        type=click.Path(exists=True, dir_okay=False),
        help="Tab-separated labels: local_path, label (yes|brief|no), onset_step, end_step, ...",
    )(func)
    func = click.option(
        "--corpus",
        type=click.Path(exists=True, file_okay=False),
        help=(
            "Folder the listed paths are relative to (default: the labels' folder, or the "
            "outcomes' folder when it holds every labelled session)."
        ),
    )(func)
    return func


def fold_options(func: Any) -> Any:
    func = click.option(
        "--folds-by",
        metavar="COLUMN",
        help="Hold out whole groups instead: one fold per value of this column of the --labels or "
        "--outcomes TSV (the corpus' MANIFEST.tsv has agent and model), or `folder` (each session "
        "file's folder). Says how a setting chosen on the other agents does on one it never saw.",
    )(func)
    func = click.option(
        "--resamples",
        type=click.IntRange(0, 100_000),
        default=1000,
        show_default=True,
        help="Bootstrap resamples over sessions for the intervals.",
    )(func)
    func = click.option(
        "--margin",
        type=click.IntRange(0, 2),
        default=1,
        show_default=True,
        help="Grid steps between a chosen setting and the nearest unsafe one seen in training.",
    )(func)
    func = click.option("--seed", type=int, default=0, show_default=True, help="Seed of the folds and the bootstrap.")(
        func
    )
    func = click.option(
        "--folds",
        type=click.IntRange(0, 50),
        default=0,
        help="Cross-validate: choose thresholds on K-1 folds, score on the one left out (0: off).",
    )(func)
    return func


def fold_groups(
    folds_by: str | None,
    folds: int,
    cases: list[Case],
    corpus: str,
    labels_path: str | None,
    outcome_paths: tuple[str, ...],
) -> dict[str, str] | None:
    """Each case's group for `--folds-by` (None without it), or a one-line usage error."""
    if folds == 1:
        raise click.UsageError("--folds: 1 fold leaves nothing to score on; use 2 or more (or 0 for none)")
    if not folds_by:
        return None
    if folds:
        raise click.UsageError("give --folds K or --folds-by COLUMN, not both: --folds-by makes one fold per group")
    if folds_by == "folder":
        return {case.path: os.path.dirname(case.path) or "." for case in cases}
    from .._analysis.outcomes import load_groups

    try:
        by_path = load_groups([p for p in (labels_path, *outcome_paths) if p], folds_by)
    except (OSError, ValueError) as exc:
        raise click.UsageError(f"--folds-by: {exc}") from None
    return {case.path: by_path.get(os.path.normpath(os.path.join(corpus, case.path)), "(not listed)") for case in cases}


@click.command()
@click.argument("paths", nargs=-1)
@_outcome_options
@fold_options
@config_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every figure, for machines.")
@click.option("--jobs", type=int, default=0, help="Worker processes (default: one per core).")
@engine_options
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Also write the sessions as one HTML page, with their labels and outcomes (as `loopwatch report` does).",
)
def evaluate(
    paths: tuple[str, ...],
    labels_path: str | None,
    outcome_paths: tuple[str, ...],
    corpus: str | None,
    folds: int,
    folds_by: str | None,
    seed: int,
    margin: int,
    resamples: int,
    config_path: str | None,
    profile: str | None,
    mode: str | None,
    as_json: bool,
    jobs: int,
    engine: str,
    address: str | None,
    no_progress: bool,
    report_path: str | None,
) -> None:
    """Measure detection on recorded sessions: against hand labels, and against
    outcomes (which sessions solved their task).

    Each session is replayed as recorded, with its source's calibration as `scan`
    uses it; the step of loopwatch's first stop (and first nudge) is compared with
    its label and its outcome. With labels: recall (loops stopped at or after their
    onset), median delay from onset to stop, share of looping steps saved, false stops
    (on `no` sessions, and before a loop's onset), stops on `brief` loops. With
    outcomes (no labels needed): stops and nudges on sessions that solved their task,
    which loopwatch would have ended or interrupted while they were succeeding, and
    stops on those that failed, with the share of their steps a stop would have saved.
    Of the stops on successful sessions it also says how many stopped the session's
    own agent and how many a sub-agent (each agent of a multi-agent session, as CodeR's,
    is replayed with its own monitor; a stopped sub-agent ends, the session goes on),
    and how many came after the session's last file change (they ended no work that
    reached the files); every one of them is counted in the plain figure all the same.

    With --folds K the sessions are split into K folds (stratified, seeded): for each
    fold, thresholds and the evidence rule are chosen on the other K-1 (no stop on a
    successful session beyond the fewest any setting makes, also one grid step more
    aggressive with --margin 1; then the most loops caught, less 5 per stop on a healthy
    session or before an onset; then the shortest delay) and scored on the fold left out.
    The figures printed are those out-of-fold scores, with bootstrap intervals, and the
    setting each fold chose. With --folds-by COLUMN each group (an agent, a model) is
    one fold instead: the setting scored on an agent was chosen without any session of
    it, as defaults shipped before you ran your agent were; each group's own figures
    are printed too.

    \b
    Examples:
      loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes ../shared/corpus/MANIFEST.tsv
      loopwatch evaluate --outcomes ../shared/corpus/MANIFEST.tsv --folds 5
      loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes ../shared/corpus/MANIFEST.tsv --folds-by agent
      loopwatch evaluate runs/ --outcomes runs/          # your own runs and their results.json
    """
    config = make_config(config_path, profile or "unattended", mode)
    from .paths import named

    inputs = [*named(paths), *[p for p in (labels_path, *outcome_paths, config_path) if p]]
    if report_path is not None:
        from .page_output import check_page_output

        check_page_output(report_path, inputs)
    replay = _engine(engine, address, jobs)
    cases, corpus = load_inputs(labels_path, outcome_paths, corpus, paths)
    groups = fold_groups(folds_by, folds, cases, corpus, labels_path, outcome_paths)

    def page() -> None:
        if report_path is not None:
            from .page_output import write_page

            items = [(os.path.join(corpus, case.path), case.path) for case in cases]
            write_page(
                report_path,
                items,
                config,
                labels=labels_or_usage(labels_path),
                outcomes=outcomes_or_usage(outcome_paths),
                tables=[p for p in (labels_path, *outcome_paths) if p],
                corpus=corpus,
                jobs=jobs or None,
                progress=not no_progress,
                inputs=inputs,
            )

    if folds or groups is not None:
        report = cross_validated(
            cases, corpus, config, folds, seed, margin, resamples, jobs, no_progress, groups, folds_by, replay
        )
        if as_json:
            print_json(report.as_json())
        else:
            print_folds(report)
        page()
        sys.exit(2 if report.errors else 0)
    with progress_bar(len(cases), "replaying", not no_progress) as bar:
        evaluation = evaluate_detectors(cases, corpus, config, jobs or None, bar.advance, replay)
    if as_json:
        print_json(evaluation.as_json())
    else:
        _print(evaluation)
    page()
    sys.exit(2 if evaluation.errors else 0)


def print_json(report: dict[str, Any]) -> None:
    """`--json`, by `loopwatch._encode`: any name, any number."""
    sys.stdout.buffer.write(json_bytes(report, indent=True) + b"\n")
    sys.stdout.buffer.flush()


def _engine(engine: str, address: str | None, jobs: int) -> Callable[..., list[Replayed]]:
    if not use_ray(engine, address):
        return partial(replay_cases, jobs=jobs or None)
    from .._analysis.ray_engine import replay_cases_ray

    return partial(replay_cases_ray, address=address)


def cross_validated(
    cases: list[Case],
    corpus: str,
    config: Config,
    folds: int,
    seed: int,
    margin: int,
    resamples: int,
    jobs: int,
    no_progress: bool,
    groups: dict[str, str] | None = None,
    folds_by: str | None = None,
    replay: Replay | None = None,
) -> CrossValidation:
    """`analysis.crossval.cross_validated` with a progress bar; a one-line usage error
    when the folds cannot be made. `replay` is `replay_cases` or its Ray twin."""
    cands = crossval.candidates(config)
    with progress_bar(len(cases), f"replaying under {len(cands) + 1} settings", not no_progress) as bar:
        try:
            return crossval.cross_validated(
                cases,
                corpus,
                config,
                cands,
                folds,
                seed,
                margin,
                resamples,
                groups,
                folds_by,
                jobs or None,
                bar.advance,
                replay,
            )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


def _pct(ratio: float, places: int = 0) -> str:
    """A ratio as a percentage, from its value rounded as --json gives it."""
    return f"{round(ratio, 4):.{places}%}"


def print_folds(report: CrossValidation) -> None:
    from rich.table import Table
    from rich.text import Text

    from . import terminal

    console = terminal.console(width=None if sys.stdout.isatty() else 120)
    by = report.folds_by
    if by:
        split = f"one fold per {by} ({report.folds}), margin {report.margin}"
    else:
        split = f"{report.folds} folds (seed {report.seed}, margin {report.margin})"
    console.print(f"{report.sessions} sessions, {split}, {report.candidates} settings tried per fold")
    table = Table(title="out of fold (chosen on the other folds) vs the configuration as given", title_justify="left")
    for column in ("", "out of fold", "95% interval", "as configured"):
        table.add_column(column, justify="left" if not column else "right")
    oof, iv = report.out_of_fold, report.intervals
    assert report.configured is not None, "cross_validated measures the configuration as given"
    given = report.configured

    def interval(key: str, percent: bool = False) -> str:
        if key not in iv:
            return "-"
        low, high = iv[key]
        return f"{low:.0%} - {high:.0%}" if percent else f"{low:g} - {high:g}"

    rows: list[tuple[str, Callable[[Figures], str], str]] = [
        (
            "recall of loops",
            lambda f: f"{_pct(f.stop.recall)} ({f.stop.caught}/{f.stop.yes})",
            interval("recall", True),
        ),
        (
            "median delay, onset to stop",
            lambda f: "-" if f.stop.median_delay is None else f"{f.stop.median_delay:g}",
            interval("median_delay"),
        ),
        (
            f"stops before onset (more than {EARLY_STEPS} steps)",
            lambda f: str(f.stop.before_onset),
            interval("stops_before_onset"),
        ),
        ("stops on healthy (no)", lambda f: str(f.stop.false_no), interval("false_stops_on_no")),
        ("stops on brief", lambda f: str(f.stop.brief_stopped), interval("stops_on_brief")),
        (
            f"early stops (within {EARLY_STEPS} of onset: not harm)",
            lambda f: str(f.stop.early_yes),
            interval("early_stops_on_yes"),
        ),
        ("looping steps saved", lambda f: _pct(f.stop.saved), "-"),
        (
            "stops on succeeded",
            lambda f: f"{f.outcomes.stopped} of {f.outcomes.succeeded}",
            interval("stops_on_succeeded"),
        ),
        ("  of them: session's own agent / sub-agent", _agents, "-"),
        (
            "  of them: before / after the last file change",
            lambda f: f"{f.outcomes.stopped_before_last_write} / {f.outcomes.stopped_after_last_write}",
            "-",
        ),
        (
            "nudged, succeeded",
            lambda f: f"{f.outcomes.nudged} ({_pct(f.outcomes.nudged_rate, 1)})",
            interval("nudges_on_succeeded_rate", True),
        ),
        (
            "stops on failed",
            lambda f: f"{f.outcomes.failed_stopped} of {f.outcomes.failed}",
            interval("stops_on_failed"),
        ),
    ]
    for title, cell, ci in rows:
        table.add_row(title, cell(oof), ci, cell(given))
    console.print(table)
    console.print("chosen per fold:")
    for fold in report.per_fold:
        name = f"{by} {fold.group}" if fold.group is not None else f"fold {fold.fold}"
        console.print(f"  {name} ({fold.sessions} sessions): " + _values(fold.chosen))
        if fold.figures is not None:
            console.print("    held out: " + _held(fold.figures))
    console.print("chosen on all sessions: " + _values(report.chosen))
    paths = oof.outcomes.stopped_paths + oof.stop.false_paths
    if paths:
        console.print("out-of-fold stops on succeeded, healthy or before onset:")
        for path in paths:
            console.print(f"  {path}")
    for path, error in report.errors:
        console.print(Text.assemble(("could not read", "red"), f" {path}: {error}"))


def _held(figures: Figures) -> str:
    """One group's own out-of-fold figures, on one line."""
    stop, out = figures.stop, figures.outcomes
    parts = []
    if stop.yes:
        delay = "-" if stop.median_delay is None else f"{stop.median_delay:g}"
        parts.append(
            f"recall {stop.caught}/{stop.yes}, delay {delay}, before onset {stop.before_onset} (early {stop.early_yes})"
        )
    if stop.no:
        parts.append(f"on healthy {stop.false_no} of {stop.no}")
    if stop.brief:
        parts.append(f"on brief {stop.brief_stopped} of {stop.brief}")
    if out.succeeded:
        parts.append(f"stops on succeeded {out.stopped} of {out.succeeded}, nudged {out.nudged}")
    if out.failed:
        parts.append(f"stops on failed {out.failed_stopped} of {out.failed}")
    return "; ".join(parts) or "no labelled session and no outcome"


def _agents(figures: Figures) -> str:
    o = figures.outcomes
    return f"{o.stopped_session} / {o.stopped_sub_agent}"


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={show_value(v)}" for k, v in values.items())


def _print(report: Evaluation) -> None:
    from rich.table import Table
    from rich.text import Text

    from . import terminal

    console = terminal.console(width=None if sys.stdout.isatty() else 120)
    all_ = report.detectors["all"]
    if report.labelled:
        stop = all_.stop
        console.print(
            f"{report.labelled} labelled sessions: {stop.yes} loops (yes), {stop.brief} brief, {stop.no} healthy (no)"
        )
        for what in ("stop", "nudge"):
            table = Table(title=f"first {what}", title_justify="left")
            false = "false stops" if what == "stop" else "false nudges"
            for column in (
                "detector",
                "recall",
                "caught",
                "median delay",
                "saved",
                false,
                "(on no / brief / before onset)",
                "early (not harm)",
            ):
                table.add_column(column, justify="left" if column == "detector" else "right")
            for name, figures in report.detectors.items():
                f = figures.stop if what == "stop" else figures.nudge
                delay = "-" if f.median_delay is None else f"{f.median_delay:g}"
                table.add_row(
                    name,
                    _pct(f.recall),
                    f"{f.caught}/{f.yes}",
                    delay,
                    _pct(f.saved),
                    str(f.false_stops),
                    f"{f.false_no} / {f.brief_stopped} / {f.before_onset}",
                    str(f.early_yes),
                )
            console.print(table)
    out = all_.outcomes
    if out.succeeded or out.failed:
        console.print(
            f"{report.with_outcome} sessions with a known outcome: {out.succeeded} solved their task, {out.failed} failed"
        )
        table = Table(title="by outcome", title_justify="left")
        for column in (
            "detector",
            "stops on succeeded",
            "(own agent / sub-agent)",
            "(before / after last write)",
            "nudged, succeeded",
            "stops on failed",
            "failed steps saved",
        ):
            table.add_column(column, justify="left" if column == "detector" else "right")
        for name, figures in report.detectors.items():
            o = figures.outcomes
            table.add_row(
                name,
                f"{o.stopped} ({_pct(o.stopped_rate, 1)})",
                _agents(figures),
                f"{o.stopped_before_last_write} / {o.stopped_after_last_write}",
                f"{o.nudged} ({_pct(o.nudged_rate, 1)})",
                f"{o.failed_stopped}/{o.failed}",
                _pct(o.saved),
            )
        console.print(table)
        if out.stopped_paths:
            console.print("stopped although they solved their task (whole detector):")
            for path in out.stopped_paths:
                console.print(f"  {path}")
    if all_.stop.false_paths:
        console.print("false stops (whole detector):")
        for path in all_.stop.false_paths:
            console.print(f"  {path}")
    for path, error in report.errors:
        console.print(Text.assemble(("could not read", "red"), f" {path}: {error}"))
