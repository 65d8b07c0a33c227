"""Writing the report page (`loopwatch report`, `scan --report`, `evaluate --report`):
the checks made before any work, and the page written, private to the user."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .._core.config import Config
from ._common import fail, progress_bar

if TYPE_CHECKING:
    from .._analysis.evaluation import Label
    from .._analysis.outcomes import Outcomes

__all__ = ["check_page_output", "write_page"]


def check_page_output(path: str, inputs: Iterable[str] = ()) -> None:
    """A one-line error, before any work, when the page cannot be written there (no
    such folder, a link or not a regular file in its place, one of `inputs`: the files
    the command reads, and its other outputs) or Jinja2 is missing."""
    if importlib.util.find_spec("jinja2") is None:
        raise click.UsageError("the HTML report needs Jinja2: pip install 'loopwatch[report]'")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise click.UsageError(f"{path}: no such folder: {folder}")
    from .. import _safefile as safefile

    try:
        safefile.check(path, inputs=inputs)
    except safefile.UnsafeWrite as exc:
        _refuse(str(exc))


def _refuse(message: str) -> NoReturn:
    context = click.get_current_context(silent=True)
    fail(context.info_name if context is not None and context.info_name else "report", message)


def write_page(
    output: str,
    items: Iterable[tuple[str, str]],
    config: Config,
    *,
    labels: list[Label] | None = None,
    outcomes: Outcomes | None = None,
    tables: Iterable[str] = (),
    corpus: str | None = None,
    problems: Iterable[tuple[str, str]] = (),
    format: str | None = None,
    excerpts: bool = False,
    jobs: int | None = None,
    progress: bool = True,
    title: str | None = None,
    inputs: Iterable[str] = (),
) -> int:
    """Replay the files `(path, label)` and write the page to `output`, with their hand
    `labels` (paths relative to `corpus`) and `outcomes` where given, and the agent and
    model columns of the TSV files among `tables`; `problems` are
    `(label, why)` for files that cannot be read at all, listed as such. Returns the
    number of files that could not be read. The page is written by
    `loopwatch._safefile` (private, complete or absent, never over one of `inputs`);
    a disk that cannot take it is one line and exit 2."""
    import tempfile
    from itertools import chain

    from .. import _safefile as safefile
    from .._analysis.outcomes import load_groups
    from .._html import Sources, report_head
    from .._html.page import write_page as write_html
    from .._html.sessions import collect, error_row

    tables = list(tables)
    columns: dict[str, dict[str, str]] = {}
    for column in ("agent", "model"):
        try:
            columns[column] = load_groups(tables, column) if tables else {}
        except (OSError, ValueError):
            columns[column] = {}  # no TSV given has this column: the page leaves it empty
    sources = Sources(labels, corpus or ".", outcomes, columns)
    items = list(items)
    failed = 0

    def counted(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        nonlocal failed
        for row in rows:
            failed += bool(row["error"])
            yield row

    # The sessions are written to the page as they are replayed, their timelines by way
    # of scratch files in a private folder removed at the end: a session of any length
    # is never held.
    try:
        with (
            tempfile.TemporaryDirectory(prefix="loopwatch-report-") as spool,
            progress_bar(len(items), "report", progress, 10) as bar,
            safefile.Output(output, inputs=inputs) as page,
        ):
            rows = collect(
                items, config, sources, format=format, excerpts=excerpts, jobs=jobs, progress=bar.advance, spool=spool
            )
            head = report_head(sources, title=title, excerpts=excerpts)
            write_html(page.stream, head, counted(chain((error_row(label, why) for label, why in problems), rows)))
    except safefile.UnsafeWrite as exc:
        _refuse(str(exc))
    except OSError as exc:
        _refuse(f"{output}: cannot write: {exc.strerror or exc}")
    click.echo(f"wrote {output}", err=True)
    return failed
