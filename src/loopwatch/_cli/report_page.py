"""`loopwatch report`: recorded sessions as one self-contained HTML page. The page is
written by `page_output` (for `scan --report` and `evaluate --report` too) and made
by `loopwatch._html`; the scan's terminal table is `_cli/report.py`."""

from __future__ import annotations

import os
import sys

import click

from .. import _exits as exits
from ._common import CONTEXT, config_options, deprecated, format_option, jobs_option, make_config, out_option
from .evaluate import labels_or_usage, load_inputs, outcomes_or_usage
from .page_output import check_page_output, relative_items, write_page

__all__ = ["report"]


@click.command(context_settings=CONTEXT, epilog=exits.epilog("report"))
@click.argument("paths", nargs=-1, metavar="[FILE]...")
@out_option("The HTML file to write (required).", metavar="FILE.html")
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
@click.option(
    "--open", "open_page", is_flag=True, help="Open the page in the web browser when written (or say it cannot)."
)
@click.option("--title", help="The page's title (default: loopwatch report).")
@config_options
@format_option
@jobs_option
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@deprecated("--output", "-o/--out", "output", type=click.Path(dir_okay=False))
def report(
    paths: tuple[str, ...],
    out_path: str | None,
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
    output: str | None,
) -> None:
    """Write recorded sessions as one HTML page, to look at in a browser or to send.

    FILE is what `scan` takes (files, folders, globs); without FILE, the sessions the
    --labels and --outcomes files list. Each session is replayed as `scan` replays
    it. The page has the totals, the sessions grouped by agent and by model, a
    table to sort and filter, and for each session a timeline: one mark per tool
    call (the same call, the same colour), repeated results, the loop's stretch to the
    nudge and the stop, model text, retries and corrections on the same axis. Paths
    are shown relative to the folder scanned; a row opens its session, whose own
    link is the page's address with #session=... (to send, or to bookmark).

    The page is one file: it works offline and from an email attachment, and makes
    no request (its Content-Security-Policy forbids any). Like every record of
    loopwatch it holds names, digests, counts and times, never tool inputs or
    results, unless you ask for --excerpts (then shown as text, never as markup).

    \b
    Examples:
      loopwatch report runs/ -o report.html --open
      loopwatch report --labels labels.tsv --outcomes outcomes.tsv -o corpus.html
      loopwatch scan runs/ -o report.html       # the same page, after the scan

    A file that cannot be read is listed on the page with its error, and makes the
    exit status 2 all the same.
    """
    from .paths import expand, named

    if out_path is not None and output is not None:
        raise click.UsageError("-o/--out and --output name the same page: give one")
    output = out_path or output
    if output is None:
        raise click.UsageError("Missing option '-o' / '--out': the HTML file to write.")

    inputs = [*named(paths), *[p for p in (labels_path, *outcome_paths, config_path) if p]]
    check_page_output(output, inputs)
    config = make_config(config_path, profile or "unattended", mode)
    if format_name is not None:
        from .scan import _check_format

        _check_format(format_name)
    problems: list[tuple[str, str]] = []
    items: list[tuple[str, str]] = []
    root: str | None = None
    if paths:
        for target in expand(paths):
            if target.problem:
                problems.append((target.label, target.problem))
            else:
                items.append((target.path, target.label))
        items, problems, root = relative_items(paths, items, problems)
    elif labels_path or outcome_paths:
        cases, corpus = load_inputs(labels_path, outcome_paths, corpus, ())
        items = [(os.path.join(corpus, case.path), case.path) for case in cases]
        root = os.path.abspath(corpus)
    else:
        raise click.UsageError("give the session files (FILE...), or --labels or --outcomes that list them")
    if corpus is None and labels_path:  # the labels' paths are relative to their file
        corpus = os.path.dirname(os.path.abspath(labels_path))
    written = write_page(
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
        root=root,
    )
    if open_page:
        _open(output)
    sys.exit(2 if written.failed else 0)


def _open(path: str) -> None:
    """Open the page in the web browser; when none starts, say so, with the page's address."""
    import pathlib
    import webbrowser

    address = pathlib.Path(path).resolve().as_uri()
    try:
        opened = webbrowser.open(address)
    except webbrowser.Error:
        opened = False
    if not opened:
        click.echo(f"could not open a web browser here; open {address} in one", err=True)
