"""`loopwatch report`: recorded sessions as one self-contained HTML page. The page is
written by `page_output` (for `scan --report` and `evaluate --report` too) and made
by `loopwatch._html`; the scan's terminal table is `_cli/report.py`."""

from __future__ import annotations

import os
import sys

import click

from ._common import config_options, format_option, make_config
from .evaluate import labels_or_usage, load_inputs, outcomes_or_usage
from .page_output import check_page_output, write_page

__all__ = ["report"]


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
@click.option(
    "--excerpts",
    is_flag=True,
    help="Include the start of each tool input and result (off: names, digests, counts, times only).",
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in the web browser when written.")
@click.option("--title", help="The page's title (default: loopwatch report).")
@config_options
@format_option
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
    from .paths import expand, named

    inputs = [*named(paths), *[p for p in (labels_path, *outcome_paths, config_path) if p]]
    check_page_output(output, inputs)
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
    if corpus is None and labels_path:  # the labels' paths are relative to their file
        corpus = os.path.dirname(os.path.abspath(labels_path))
    failed = write_page(
        output,
        items,
        config,
        labels=labels_or_usage(labels_path),
        outcomes=outcomes_or_usage(outcome_paths),
        tables=[p for p in (labels_path, *outcome_paths) if p],
        corpus=corpus,
        problems=problems,
        format=format_name,
        excerpts=excerpts,
        jobs=jobs,
        progress=not no_progress,
        title=title,
        inputs=inputs,
    )
    if open_page:
        import pathlib
        import webbrowser

        webbrowser.open(pathlib.Path(output).resolve().as_uri())
    sys.exit(2 if failed else 0)
