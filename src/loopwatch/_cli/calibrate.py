"""`loopwatch calibrate`: the figures behind each threshold, per session and overall."""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import click
import tomli_w

from .._analysis.crossval import CrossValidation, calibration_toml
from .._analysis.evaluation import Sweep, only, sweep_thresholds, with_checked
from .._analysis.replay import replay_files
from .._core.config import Config, ConfigError
from ._common import config_options, fail, format_option, make_config, plural, progress_bar
from .evaluate import (
    corpus_of,
    cross_validated,
    fold_groups,
    fold_options,
    labels_or_usage,
    load_inputs,
    outcomes_or_usage,
    print_folds,
    print_json,
)
from .paths import expand, named

if TYPE_CHECKING:
    from .._analysis.outcomes import Outcomes

__all__ = ["calibrate"]

#: Figures shown per session in the table (all are in --json).
_COLUMNS = (
    ("repeat_most", "repeat"),
    ("cycle_most", "cycle"),
    ("cycle_period", "period"),
    ("stagnation_actions", "stagn."),
    ("same_error_most", "same err"),
    ("correction_most_in_row", "corr."),
    ("lines_most", "lines"),
    ("retry_longest", "retries"),
)
#: Characters of a session's name shown in the table.
_NAME_WIDTH = 48


@click.command()
@click.argument("paths", nargs=-1)
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Labels (as for `evaluate`): adds, per signal and threshold, the recall and false stops it gives.",
)
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False),
    help=(
        "Folder the label paths are relative to (default: the labels file's folder, or the "
        "outcomes' folder when it holds every labelled session)."
    ),
)
@click.option(
    "--outcomes",
    "outcome_paths",
    multiple=True,
    type=click.Path(exists=True),
    help="Which sessions solved their task (as for `evaluate`); with --folds, harm is part of the choice.",
)
@click.option(
    "--write-profile",
    "profile_out",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Write a loopwatch.toml for this agent: console repeats alike once numbers are masked may end "
    "its runs, above the most its healthy sessions showed.",
)
@click.option(
    "--windows", default="12,20,30", show_default=True, help="Churn windows (calls) for the distinct-calls table."
)
@fold_options
@click.option(
    "--write",
    "write_path",
    type=click.Path(dir_okay=False),
    help="With --folds: write the setting chosen on all sessions as a TOML calibration (load it with --config).",
)
@config_options
@format_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object, for machines.")
@click.option("--jobs", type=int, default=0, help="Worker processes (default: one per core).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def calibrate(
    paths: tuple[str, ...],
    labels_path: str | None,
    outcome_paths: tuple[str, ...],
    corpus: str | None,
    profile_out: str | None,
    windows: str,
    folds: int,
    folds_by: str | None,
    seed: int,
    margin: int,
    resamples: int,
    write_path: str | None,
    config_path: str | None,
    profile: str | None,
    mode: str | None,
    format_name: str | None,
    as_json: bool,
    jobs: int,
    no_progress: bool,
) -> None:
    """Show the figures a person needs to choose thresholds.

    For each session (files, folders, globs; or the labelled files when only --labels
    is given): the most consecutive repeats of a call, of a cycle (and its period), the
    longest stretch of replayed actions, the most times one error came back, the most
    corrections in a row, the most repeats of an output line cycle, the longest retry
    streak, and the fewest distinct calls in any churn window with no file written, for
    each window size in --windows (as a peer chose its churn window: a healthy session
    shows more distinct calls than a runaway).

    With --labels, for each threshold of each signal (alone), the recall and the false
    stops it would give on the labelled sessions, and the most aggressive setting with
    zero false stops (in sample: it fits the sample; see --folds).

    With --folds K (and --labels and/or --outcomes): the thresholds and the evidence
    rule chosen by cross-validation, as `evaluate --folds` measures them: chosen on K-1
    folds, scored on the one left out, with bootstrap intervals; then the setting chosen
    on every session, which --write saves as a TOML calibration with its out-of-fold
    evidence in comments. Load it with `--config FILE` (or copy its tables into
    loopwatch.toml): its keys override any built-in calibration. --folds-by COLUMN
    holds out one group (an agent, a model) per fold instead, as `evaluate` does.

    With --write-profile, a configuration for the agent these recordings are of. A raw
    console (`loopwatch run` on plain output, terminal recordings) only warns about
    lines that repeat once their numbers are masked (log templates, tables): nothing
    says they are a loop. Measured on healthy runs of one agent (all the sessions
    given, or those --outcomes marks resolved), the profile lets such repeats end a
    run from one copy more than the most any healthy session printed in a row.

    \b
    Examples:
      loopwatch calibrate runs/
      loopwatch calibrate --labels ../shared/corpus/labels.tsv --json
      loopwatch calibrate casts/ --outcomes casts/MANIFEST.tsv --write-profile loopwatch.toml
      loopwatch calibrate runs/ --outcomes runs/ --folds 5 --write calibration.toml
    """
    config = make_config(config_path, profile or "unattended", mode)
    inputs = [*named(paths), *[p for p in (labels_path, *outcome_paths, config_path) if p]]
    for option, path in (("--write", write_path), ("--write-profile", profile_out)):
        if path is not None:
            _check_output(option, path, [*inputs, *(p for p in (write_path, profile_out) if p and p != path)])
    if write_path and not (folds or folds_by):
        raise click.UsageError(
            "--write needs --folds K or --folds-by COLUMN: a calibration is written with its out-of-fold evidence"
        )
    if folds or folds_by:
        cases, corpus = load_inputs(labels_path, outcome_paths, corpus, paths)
        groups = fold_groups(folds_by, folds, cases, corpus, labels_path, outcome_paths)
        validation = cross_validated(
            cases, corpus, config, folds, seed, margin, resamples, jobs, no_progress, groups, folds_by
        )
        if write_path:
            _write(write_path, validation, inputs)
        if as_json:
            print_json(validation.as_json())
        else:
            print_folds(validation)
            if write_path:
                click.echo(f"wrote {write_path}")
        sys.exit(2 if validation.errors else 0)
    try:
        sizes = [int(w) for w in windows.split(",") if w.strip()]
    except ValueError:
        raise click.UsageError(f"--windows: expected whole numbers separated by commas, got {windows!r}") from None
    if any(w < 2 for w in sizes):
        raise click.UsageError("--windows: each window must be at least 2 calls")
    try:
        passes = _passes(config, sizes)
    except ConfigError as exc:
        raise click.UsageError(f"--windows: {exc}") from None
    labels = labels_or_usage(labels_path)
    if labels_path:
        corpus = corpus or corpus_of(labels, labels_path, outcome_paths)
    if not paths and labels is None:
        raise click.UsageError("give files or folders to calibrate on, or --labels")
    outcomes = outcomes_or_usage(outcome_paths)
    problems: list[str] = []
    if paths:
        items = []
        for target in expand(paths):
            if target.problem:
                problems.append(f"{target.label}: {target.problem}")
            elif target.path == "-":
                problems.append("-: calibrate reads files, not standard input")
            else:
                items.append((target.path, target.label))
    else:
        assert labels is not None and corpus is not None, "no paths: --labels was given, and the corpus with it"
        items = [(os.path.join(corpus, label.path), label.path) for label in labels]
    sessions = _sessions(items, passes, sizes, jobs, no_progress, format_name)
    problems += [f"{row['path']}: {row['error']}" for row in sessions if row["error"]]
    sessions = [row for row in sessions if not row["error"]]
    if not sessions:
        # Nothing to show: one line (the first problem; the count of the others).
        more = f" (and {plural(len(problems) - 1, 'more file')})" if len(problems) > 1 else ""
        fail("calibrate", f"no session could be read: {problems[0]}{more}" if problems else "no session found")
    report: dict[str, Any] = {"sessions": sessions}
    if problems:
        report["unreadable"] = problems
    sweeps: dict[str, Sweep] = {}
    if labels is not None:
        assert corpus is not None, "the corpus is set with --labels"
        with progress_bar(len(labels), "sweeping thresholds", not no_progress) as bar:
            sweeps = sweep_thresholds(labels, corpus, config, jobs or None, bar.advance)
        report["thresholds"] = {name: sweep.as_json() for name, sweep in sweeps.items()}
    if profile_out is not None:
        report["profile"] = _write_profile(profile_out, report["sessions"], outcomes, inputs)
    if as_json:
        print_json(report)
    else:
        _print(report, sweeps, sizes)
        if "profile" in report:
            written = report["profile"]
            click.echo(
                f"wrote {written['path']}: masked console repeats may end a run from {written['repeats']} copies "
                f"in a row ({written['healthy_sessions']} healthy sessions, at most {written['lines_most']})"
            )
    for problem in problems:
        click.echo(f"loopwatch calibrate: cannot read {problem}", err=True)
    if problems:
        sys.exit(2)


def _passes(config: Config, sizes: list[int]) -> list[Config]:
    """The configurations replayed: every signal quiet, then churn alone at each window
    size (checked as a configuration file's settings are: ConfigError)."""
    quiet = config._replace(mode="off")
    churn = only(quiet, "churn")
    distinct = churn.signals["churn"].distinct
    return [quiet] + [with_checked(churn, "churn", window=w, distinct=min(distinct, w - 1)) for w in sizes]


def _sessions(
    items: list[tuple[str, str]],
    passes: list[Config],
    sizes: list[int],
    jobs: int,
    no_progress: bool,
    format_name: str | None,
) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    with progress_bar(len(items) * len(passes), "calibrating", not no_progress) as bar:
        for k, cfg in enumerate(passes):
            for results in replay_files(items, cfg, format_name, jobs=jobs or None):
                for result in results:
                    key = f"{result.path}#{result.session}"
                    row = rows.setdefault(
                        key,
                        {
                            "path": result.path,
                            "session": result.session,
                            "actions": result.actions,
                            "error": result.error,
                            "calibration": {},
                            "churn_fewest_distinct": {},
                        },
                    )
                    if k == 0:
                        row["calibration"] = result.calibration or {}
                    else:
                        row["churn_fewest_distinct"][str(sizes[k - 1])] = (result.calibration or {}).get(
                            "churn_fewest_distinct"
                        )
                bar.advance()
    return list(rows.values())


def _write_profile(
    path: str, sessions: list[dict[str, Any]], outcomes: Outcomes | None, inputs: list[str]
) -> dict[str, Any]:
    """Write the profile (see the command's help); return what it says, for the report."""
    healthy = [
        row for row in sessions if not row["error"] and (outcomes is None or outcomes.lookup(row["path"]) is True)
    ]
    if not healthy:
        raise click.UsageError("--write-profile: no healthy session to measure (none read, or none resolved = yes)")
    most = max(int(row["calibration"].get("lines_most") or 0) for row in healthy)
    # One copy more than any healthy run showed, and never below the default.
    from .._core.signals.repeated_lines import Params

    repeats = max(most + 1, Params().repeats)
    text = (
        f"# Written by `loopwatch calibrate` from {len(healthy)} healthy sessions"
        f"{' (resolved = yes in the outcomes)' if outcomes is not None else ''}.\n"
        f"# The most copies in a row of an output line cycle, numbers masked, in any of them: {most}.\n"
        "# Such repeats may end a run from one copy more.\n"
    ) + tomli_w.dumps({"signals": {"repeated_lines": {"repeats": repeats, "masked_can_stop": True}}})
    _write_file("--write-profile", path, text, inputs, replace=False)
    return {"path": path, "healthy_sessions": len(healthy), "lines_most": most, "repeats": repeats}


def _print(report: dict[str, Any], sweeps: dict[str, Sweep], sizes: list[int]) -> None:
    from rich.table import Table

    from .terminal import console as make_console

    console = make_console(width=None if sys.stdout.isatty() else 140)
    table = Table(
        title="per session (most in a row; churn: fewest distinct calls in a window with no write)",
        title_justify="left",
    )
    table.add_column("session")
    table.add_column("calls", justify="right")
    for _, title in _COLUMNS:
        table.add_column(title, justify="right")
    for w in sizes:
        table.add_column(f"W={w}", justify="right")
    sessions = report["sessions"]
    per_file = Counter(row["path"] for row in sessions)
    for row in sessions:
        figures = row["calibration"]
        cells = [_cell(figures.get(key)) for key, _ in _COLUMNS]
        churn = [_cell(row["churn_fewest_distinct"].get(str(w))) for w in sizes]
        table.add_row(_name(row, per_file[row["path"]] > 1), str(row["actions"]), *cells, *churn)
    console.print(table)
    for name, sweep in sweeps.items():
        table = Table(
            title=f"{name}.{sweep.parameter} (default {sweep.default}; most aggressive with no false stop: "
            f"{_cell(sweep.most_aggressive_without_false_stops)})",
            title_justify="left",
        )
        for column in ("value", "recall", "caught", "false stops", "median delay", "saved", "on brief"):
            table.add_column(column, justify="right")
        for s in sweep.settings:
            table.add_row(
                str(s.value),
                f"{s.recall:.0%}",
                str(s.caught),
                str(s.false_stops),
                "-" if s.median_delay is None else f"{s.median_delay:g}",
                f"{s.saved:.0%}",
                str(s.stops_on_brief),
            )
        console.print(table)


def _write(path: str, report: CrossValidation, inputs: list[str]) -> None:
    text = calibration_toml(report, "loopwatch calibrate " + " ".join(sys.argv[1:]))
    _write_file("--write", path, text, inputs)


def _check_output(option: str, path: str, inputs: list[str]) -> None:
    """One line and exit 2, before any work, when `path` cannot be written (see
    `loopwatch._safefile`), is one of `inputs` or (`--write-profile`) exists."""
    from .. import _safefile as safefile

    try:
        safefile.check(path, inputs=inputs)
    except safefile.UnsafeWrite as exc:
        fail("calibrate", f"{option} {exc}")
    if option == "--write-profile" and os.path.lexists(path):
        fail("calibrate", f"{option} {path}: exists; remove it or name another file")


def _write_file(option: str, path: str, text: str, inputs: list[str], replace: bool = True) -> None:
    """The file, whole or not at all, by `loopwatch._safefile` (private; never over
    an existing profile); what goes wrong is one line and exit 2."""
    from .. import _safefile as safefile

    try:
        safefile.write(path, text, replace=replace, inputs=inputs)
    except safefile.UnsafeWrite as exc:
        fail("calibrate", f"{option} {exc}")
    except OSError as exc:
        fail("calibrate", f"{option} {path}: cannot write: {exc.strerror or exc}")


def _name(row: dict[str, Any], several: bool) -> str:
    """A row's name: its file as given (its end, when long: many runs share a file name,
    as `agent.log`, or a session id, as one task run by several models), and the
    session when the file holds several."""
    name: str = row["path"] + (f" [{row['session']}]" if several and row["session"] else "")
    return name if len(name) <= _NAME_WIDTH else "…" + name[-(_NAME_WIDTH - 1) :]


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)
