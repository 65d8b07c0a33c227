"""`loopwatch evaluate`: what a configuration does to labelled sessions and to
sessions whose outcome is known; with `--folds`, how well thresholds chosen on some
sessions do on the others."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from .. import _exits as exits
from .._analysis import crossval
from .._analysis.crossval import CrossValidation, show_value
from .._analysis.evaluation import (
    HARM,
    TERMS,
    Case,
    Evaluation,
    Figures,
    Replay,
    evaluate_detectors,
    load_labels,
    make_cases,
    replay_cases,
)
from .._encode import json_bytes
from ._common import (
    CONTEXT,
    BadInput,
    config_options,
    deprecated,
    engine_options,
    format_option,
    jobs_option,
    make_config,
    out_option,
    plural,
    progress_bar,
    use_ray,
)

if TYPE_CHECKING:
    from .._analysis.evaluation import Label
    from .._analysis.outcomes import Outcomes
    from .._core.config import Config

__all__ = ["corpus_of", "evaluate", "load_inputs"]


def labels_or_usage(path: str | None) -> list[Label] | None:
    """The labels file read, or one `Error:` line and exit 2 (a file's mistake, not the
    command line's: no usage block)."""
    if not path:
        return None
    try:
        return load_labels(path)
    except (OSError, ValueError) as exc:
        raise BadInput(str(exc)) from None


def outcomes_or_usage(paths: tuple[str, ...]) -> Outcomes | None:
    """The outcomes files read, or one `Error:` line and exit 2."""
    from .._analysis.outcomes import load_outcomes

    if not paths:
        return None
    try:
        return load_outcomes(paths)
    except (OSError, ValueError) as exc:
        raise BadInput(f"--outcomes: {exc}") from None


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
            raise BadInput(f"{target.path}: {target.problem}")
        if target.path != "-":
            files.append(target.path)
    if paths and not files:
        raise BadInput("no session files found in the paths given")
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


@click.command(context_settings=CONTEXT, epilog=exits.epilog("evaluate"))
@click.argument("paths", nargs=-1, metavar="[FILE]...")
@_outcome_options
@fold_options
@config_options
@format_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every figure, for machines.")
@jobs_option
@engine_options
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@out_option(
    "Also write the sessions as one HTML page, with their labels and outcomes (as `loopwatch report` does).",
    metavar="FILE.html",
)
@deprecated("--report", "-o/--out FILE.html", "report_path", type=click.Path(dir_okay=False))
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
    format_name: str | None,
    as_json: bool,
    jobs: int | None,
    engine: str,
    address: str | None,
    no_progress: bool,
    out_path: str | None,
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
      loopwatch evaluate --labels labels.tsv --outcomes outcomes.tsv
      loopwatch evaluate --outcomes outcomes.tsv --folds 5
      loopwatch evaluate --labels labels.tsv --outcomes outcomes.tsv --folds-by agent
      loopwatch evaluate runs/ --outcomes runs/          # your own runs and their results.json
      loopwatch evaluate --labels labels.tsv -o evaluation.html

    The harm yardstick, in the words every command and the report print:
    false stops are the stops on no, the stops on brief and the stops before the
    onset; an early stop is not harm; a stop on succeeded is the worst outcome.
    """
    if out_path is not None and report_path is not None:
        raise click.UsageError("-o/--out and --report name the same page: give one")
    report_path = out_path or report_path
    config = make_config(config_path, profile or "unattended", mode)
    if format_name is not None:
        from .scan import _check_format

        _check_format(format_name)
    from .paths import named

    inputs = [*named(paths), *[p for p in (labels_path, *outcome_paths, config_path) if p]]
    if report_path is not None:
        from .page_output import check_page_output

        check_page_output(report_path, inputs)
    replay = _engine(engine, address, jobs, format_name)
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
                format=format_name,
                jobs=jobs,
                progress=not no_progress,
                inputs=inputs,
                root=os.path.abspath(corpus),
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
        evaluation = evaluate_detectors(cases, corpus, config, jobs, bar.advance, replay)
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


def _engine(engine: str, address: str | None, jobs: int | None, format_name: str | None) -> Replay:
    """What replays the cases: here on `jobs` processes, or on Ray; every file read as
    `format_name` when given."""
    if not use_ray(engine, address):
        return replay_here(jobs, format_name)
    from .._analysis.ray_engine import replay_cases_ray

    return partial(replay_cases_ray, address=address, format=format_name)


def replay_here(jobs: int | None, format_name: str | None) -> Replay:
    """`replay_cases` on this machine: `jobs` processes (None: one per core)."""
    return partial(replay_cases, jobs=jobs, format=format_name)


def cross_validated(
    cases: list[Case],
    corpus: str,
    config: Config,
    folds: int,
    seed: int,
    margin: int,
    resamples: int,
    jobs: int | None,
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
                jobs,
                bar.advance,
                replay,
            )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


def _pct(ratio: float, places: int = 0) -> str:
    """A ratio as a percentage, from its value rounded as --json gives it."""
    return f"{round(ratio, 4):.{places}%}"


def print_folds(report: CrossValidation) -> None:
    from .table import Column, print_lines, print_table

    by = report.folds_by
    if by:
        split = f"one fold per {by} ({report.folds}), margin {report.margin}"
    else:
        split = f"{report.folds} folds (seed {report.seed}, margin {report.margin})"
    print_lines([f"{plural(report.sessions, 'session')}, {split}, {report.candidates} settings tried per fold"])
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
        (TERMS["no"].name, lambda f: str(f.stop.false_no), interval(TERMS["no"].key)),
        (TERMS["brief"].name, lambda f: str(f.stop.brief_stopped), interval(TERMS["brief"].key)),
        (TERMS["before_onset"].name, lambda f: str(f.stop.before_onset), interval(TERMS["before_onset"].key)),
        (f"{TERMS['early'].name} (not harm)", lambda f: str(f.stop.early_yes), interval(TERMS["early"].key)),
        ("looping steps saved", lambda f: _pct(f.stop.saved), "-"),
        (
            TERMS["succeeded"].name,
            lambda f: f"{f.outcomes.stopped} of {f.outcomes.succeeded}",
            interval(TERMS["succeeded"].key),
        ),
        ("  of them: own agent / sub-agent", _agents, "-"),
        (
            "  of them: before / after last write",
            lambda f: f"{f.outcomes.stopped_before_last_write} / {f.outcomes.stopped_after_last_write}",
            "-",
        ),
        (
            "nudges on succeeded",
            lambda f: f"{f.outcomes.nudged} ({_pct(f.outcomes.nudged_rate, 1)})",
            interval("nudges_on_succeeded_rate", True),
        ),
        (
            "stops on failed",
            lambda f: f"{f.outcomes.failed_stopped} of {f.outcomes.failed}",
            interval("stops_on_failed"),
        ),
    ]
    print_table(
        "out of fold (chosen on the other folds) vs the configuration as given",
        [Column(""), Column("out of fold", True), Column("95% interval", True), Column("as configured", True)],
        [[title, cell(oof), ci, cell(given)] for title, cell, ci in rows],
    )
    lines = ["chosen per fold:"]
    for fold in report.per_fold:
        name = f"{by} {fold.group}" if fold.group is not None else f"fold {fold.fold}"
        lines.append(f"  {name} ({plural(fold.sessions, 'session')}): " + _values(fold.chosen))
        if fold.figures is not None:
            lines.append("    held out: " + _held(fold.figures))
    lines.append("chosen on all sessions: " + _values(report.chosen))
    paths = oof.outcomes.stopped_paths + oof.stop.false_paths
    if paths:
        lines.append(f"out-of-fold {TERMS['succeeded'].name} and {TERMS['false'].name}:")
        lines += [f"  {path}" for path in paths]
    print_lines(lines)
    _print_errors(report.errors)


def _print_errors(errors: Sequence[tuple[str, str]]) -> None:
    """The sessions that could not be read, on stderr, as `scan` lists them."""
    for path, error in errors:
        click.echo(f"error {path}: {error}", err=True)


def _held(figures: Figures) -> str:
    """One group's own out-of-fold figures, on one line."""
    stop, out = figures.stop, figures.outcomes
    parts = []
    if stop.yes:
        delay = "-" if stop.median_delay is None else f"{stop.median_delay:g}"
        parts.append(
            f"recall {stop.caught}/{stop.yes}, delay {delay}, {TERMS['before_onset'].name} {stop.before_onset} "
            f"({TERMS['early'].name} {stop.early_yes})"
        )
    if stop.no:
        parts.append(f"{TERMS['no'].name} {stop.false_no} of {stop.no}")
    if stop.brief:
        parts.append(f"{TERMS['brief'].name} {stop.brief_stopped} of {stop.brief}")
    if out.succeeded:
        parts.append(f"{TERMS['succeeded'].name} {out.stopped} of {out.succeeded}, nudged {out.nudged}")
    if out.failed:
        parts.append(f"stops on failed {out.failed_stopped} of {out.failed}")
    return "; ".join(parts) or "no labelled session and no outcome"


def _agents(figures: Figures) -> str:
    o = figures.outcomes
    return f"{o.stopped_session} / {o.stopped_sub_agent}"


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={show_value(v)}" for k, v in values.items())


def _meanings(keys: tuple[str, ...]) -> list[str]:
    """The yardstick's words shown above, each with what it means (`TERMS`: the same
    words and meanings as calibrate's and the report page's)."""
    return [f"  {TERMS[key].name}: {TERMS[key].meaning}" for key in keys] + [""]


def _print(report: Evaluation) -> None:
    from .table import Column, print_lines, print_table

    all_ = report.detectors["all"]
    if report.labelled:
        stop = all_.stop
        print_lines(
            [
                (
                    f"{plural(report.labelled, 'labelled session')}: {plural(stop.yes, 'loop')} (yes), {stop.brief} brief, "
                    f"{stop.no} never looped (no)"
                )
            ]
        )
        for act in ("stop", "nudge"):
            terms = [TERMS[key].of(act) for key in ("false", *HARM, "early")]
            catching: list[list[str]] = []
            harmful: list[list[str]] = []
            for name, figures in report.detectors.items():
                f = figures.stop if act == "stop" else figures.nudge
                delay = "-" if f.median_delay is None else f"{f.median_delay:g}"
                catching.append([name, _pct(f.recall), f"{f.caught}/{f.yes}", delay, _pct(f.saved)])
                harmful.append(
                    [name, *map(str, (f.false_stops, f.false_no, f.brief_stopped, f.before_onset, f.early_yes))]
                )
            print_table(
                f"first {act}: loops caught",
                [Column("detector"), *(Column(t, True) for t in ("recall", "caught", "median delay", "saved"))],
                catching,
            )
            print_table(
                f"first {act}: harm by the labels ({terms[-1].name}: not harm)",
                [Column("detector"), *(Column(t.name, True) for t in terms)],
                harmful,
            )
        print_lines(_meanings(("false", *HARM, "early")))
    out = all_.outcomes
    if out.succeeded or out.failed:
        print_lines(
            [
                (
                    f"{plural(report.with_outcome, 'session')} with a known outcome: {out.succeeded} solved their task, "
                    f"{out.failed} failed"
                )
            ]
        )
        harm_rows: list[list[str]] = []
        saved_rows: list[list[str]] = []
        for name, figures in report.detectors.items():
            o = figures.outcomes
            harm_rows.append(
                [
                    name,
                    f"{o.stopped} ({_pct(o.stopped_rate, 1)})",
                    _agents(figures),
                    f"{o.stopped_before_last_write} / {o.stopped_after_last_write}",
                    f"{o.nudged} ({_pct(o.nudged_rate, 1)})",
                ]
            )
            saved_rows.append([name, f"{o.failed_stopped}/{o.failed}", _pct(o.saved)])
        print_table(
            "by outcome: harm",
            [
                Column("detector"),
                Column(TERMS["succeeded"].name, True),
                Column("(own / sub-agent)", True),
                Column("(before / after write)", True),
                Column("nudges on succeeded", True),
            ],
            harm_rows,
        )
        print_table(
            "by outcome: savings",
            [Column("detector"), Column("stops on failed", True), Column("failed steps saved", True)],
            saved_rows,
        )
        print_lines(_meanings(("succeeded",)))
    lines: list[str] = []
    if out.stopped_paths:
        lines.append(f"{TERMS['succeeded'].name} (whole detector):")
        lines += [f"  {path}" for path in out.stopped_paths]
    if all_.stop.false_paths:
        lines.append(f"{TERMS['false'].name} (whole detector):")
        lines += [f"  {path}" for path in all_.stop.false_paths]
    print_lines(lines)
    _print_errors(report.errors)
