"""`loopwatch report`: recorded sessions as one self-contained HTML page (and the page
`scan --report` and `evaluate --report` write). The scan's terminal table is
`cli/report.py`; the page itself is `loopwatch.html`."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable

import click

from ..core.config import Config
from ._common import config_options, make_config, progress_bar
from .evaluate import labels_or_usage, load_inputs, outcomes_or_usage

__all__ = ["check_page_output", "report", "write_page"]


def check_page_output(path: str) -> None:
    """A one-line usage error, before any work, when the page cannot be written there
    or Jinja2 is missing."""
    if importlib.util.find_spec("jinja2") is None:
        raise click.UsageError("the HTML report needs Jinja2: pip install 'loopwatch[report]'")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise click.UsageError(f"{path}: no such folder: {folder}")


def write_page(
    output: str,
    items: Iterable[tuple[str, str]],
    config: Config,
    *,
    labels_path: str | None = None,
    outcome_paths: tuple[str, ...] = (),
    corpus: str | None = None,
    problems: Iterable[tuple[str, str]] = (),
    format: str | None = None,
    excerpts: bool = False,
    jobs: int | None = None,
    progress: bool = True,
    title: str | None = None,
) -> int:
    """Replay the files `(path, label)` and write the page to `output`; the labels' paths
    are relative to `corpus` (default: the labels file's folder); `problems` are
    `(label, why)` for files that cannot be read at all, listed as such. Returns the
    number of files that could not be read."""
    from ..analysis.outcomes import load_groups
    from ..html import Sources, report_data
    from ..html.page import render, write
    from ..html.sessions import error_row

    labels = labels_or_usage(labels_path)
    outcomes = outcomes_or_usage(outcome_paths)
    tables = [p for p in (labels_path, *outcome_paths) if p]
    columns: dict[str, dict[str, str]] = {}
    for column in ("agent", "model"):
        try:
            columns[column] = load_groups(tables, column) if tables else {}
        except (OSError, ValueError):
            columns[column] = {}  # no TSV given has this column: the page leaves it empty
    if corpus is None:
        corpus = os.path.dirname(os.path.abspath(labels_path)) if labels_path else "."
    sources = Sources(labels, corpus, outcomes, columns)
    items = list(items)
    with progress_bar(len(items), "report", progress, 10) as bar:
        data = report_data(items, config, sources, title=title, format=format, excerpts=excerpts, jobs=jobs, progress=bar.advance)
    data["sessions"] = [error_row(label, why) for label, why in problems] + data["sessions"]
    try:
        write(output, render(data))
    except OSError as exc:
        raise click.UsageError(f"{output}: cannot write: {exc.strerror or exc}") from None
    click.echo(f"wrote {output}", err=True)
    return sum(1 for s in data["sessions"] if s["error"])


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, metavar="[FILE]...")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False), help="The HTML file to write.")
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Hand labels, as `evaluate` takes them: the page lists the loops missed and the false stops.",
)
@click.option(
    "--outcomes",
    "outcome_paths",
    multiple=True,
    type=click.Path(exists=True),
    help="Which sessions solved their task, as `evaluate` takes them (repeatable): stops on "
    "successful sessions are listed first. A TSV's agent and model columns group the sessions.",
)
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False),
    help="Without FILE: the folder the labels' and outcomes' paths are relative to.",
)
@click.option("--excerpts", is_flag=True, help="Include the start of each tool input and result (off: names, digests, counts, times only).")
@click.option("--open", "open_page", is_flag=True, help="Open the page in the web browser when written.")
@click.option("--title", help="The page's title (default: loopwatch report).")
@config_options
@click.option("--format", "format_name", help="Read every file as this format instead of detecting it.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Processes to use (default: one per core).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def report(
    paths: tuple[str, ...],
    output: str,
    labels_path: str | None,
    outcome_paths: tuple[str, ...],
    corpus: str | None,
    excerpts: bool,
    open_page: bool,
    title: str | None,
    config_path: str | None,
    profile: str | None,
    mode: str | None,
    format_name: str | None,
    jobs: int | None,
    no_progress: bool,
) -> None:
    """Write recorded sessions as one HTML page, to look at in a browser or to send.

    FILE is what `scan` takes (files, folders, globs); without FILE, the sessions the
    --labels and --outcomes files list. Each session is replayed as `scan` replays
    it. The page has the totals, the sessions grouped by agent and by model, a
    table to sort and filter, and for each session a timeline: one mark per tool
    call (the same call, the same colour), repeated results, the loop's stretch to the
    nudge and the stop, model text, retries and corrections on the same axis.

    The page is one file: it works offline and from an email attachment, and makes
    no request (its Content-Security-Policy forbids any). Like every record of
    loopwatch it holds names, digests, counts and times, never tool inputs or
    results, unless you ask for --excerpts (then shown as text, never as markup).

    \b
    Examples:
      loopwatch report runs/ -o report.html --open
      loopwatch report --labels ../shared/corpus/labels.tsv --outcomes ../shared/corpus/MANIFEST.tsv -o corpus.html
      loopwatch scan runs/ --report report.html       # the same page, after the scan

    Exit status: 0 the page was written, 2 bad usage or a file could not be read
    (the page is written all the same, the file listed with its error).
    """
    from .paths import expand

    check_page_output(output)
    config = make_config(config_path, profile or "unattended", mode)
    if format_name is not None:
        from .scan import _check_format

        _check_format(format_name)
    problems: list[tuple[str, str]] = []
    items: list[tuple[str, str]] = []
    if paths:
        for target in expand(paths):
            if target.problem:
                problems.append((target.label, target.problem))
            else:
                items.append((target.path, target.label))
    elif labels_path or outcome_paths:
        cases, corpus = load_inputs(labels_path, outcome_paths, corpus, ())
        items = [(os.path.join(corpus, case.path), case.path) for case in cases]
    else:
        raise click.UsageError("give the session files (FILE...), or --labels or --outcomes that list them")
    failed = write_page(
        output,
        items,
        config,
        labels_path=labels_path,
        outcome_paths=outcome_paths,
        corpus=corpus,
        problems=problems,
        format=format_name,
        excerpts=excerpts,
        jobs=jobs,
        progress=not no_progress,
        title=title,
    )
    if open_page:
        import pathlib
        import webbrowser

        webbrowser.open(pathlib.Path(output).resolve().as_uri())
    sys.exit(2 if failed else 0)
