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

__all__ = ["PageSummary", "check_page_output", "relative_items", "write_page"]


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
    fail(message)


def relative_items(
    arguments: Iterable[str], items: Iterable[tuple[str, str]], problems: Iterable[tuple[str, str]] = ()
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], str | None]:
    """The files `(path, label)` and the unreadable ones `(label, why)` named on the page
    relative to what was scanned: the folder holding every folder argument and every
    other file. Names are left whole (and the folder None) when only standard input was
    read, or when that folder is the file system's root: relative to `/` says nothing."""
    items, problems = list(items), list(problems)
    folders = [os.path.abspath(a) for a in arguments if a != "-" and os.path.isdir(a)]
    roots = list(folders)
    for path in [p for p, _ in items] + [label for label, _ in problems]:
        if path == "-":
            continue
        full = os.path.abspath(path)
        if not any(full.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders):
            roots.append(os.path.dirname(full))
    if not roots:
        return items, problems, None
    base = os.path.commonpath(roots)
    if os.path.dirname(base) == base:  # the root
        return items, problems, None

    def shown(path: str) -> str:
        return path if path == "-" else os.path.relpath(os.path.abspath(path), base)

    return [(path, shown(path)) for path, _ in items], [(shown(label), why) for label, why in problems], base


class PageSummary:
    """What a page holds, counted as its rows are written: for the line the command
    prints, and its exit status (`failed`)."""

    def __init__(self) -> None:
        self.sessions = self.failed = self.stopped = self.nudged = self.harmed = 0
        self.judged: dict[str, int] = {}

    def add(self, row: dict[str, Any]) -> None:
        self.failed += bool(row["error"])
        if row["format"] is None:
            return
        self.sessions += 1
        self.stopped += row["verdict"] == "stop"
        self.nudged += row["verdict"] == "nudge"
        self.harmed += row["verdict"] == "stop" and row["outcome"] == "succeeded"
        if row["judgement"]:
            self.judged[row["judgement"]] = self.judged.get(row["judgement"], 0) + 1

    def lines(self, output: str, labels: bool, outcomes: bool, root: str | None) -> list[str]:
        from .._analysis.evaluation import HARM, TERMS
        from ._common import plural

        where = f"; paths relative to {root}" if root else ""
        said = [
            f"wrote {output}: {plural(self.sessions, 'session')}{where}",
            f"  {self.stopped} stopped, {self.nudged} nudged only"
            + (f", {plural(self.failed, 'file')} could not be read" if self.failed else ""),
        ]
        if outcomes:
            said.append(f"  {TERMS['succeeded'].name}: {self.harmed}")
        if labels:
            kinds = [(TERMS[key], self.judged.get(TERMS[key].one, 0)) for key in HARM]
            total = sum(n for _, n in kinds)
            said.append(
                f"  {TERMS['false'].name}: {total} ("
                + ", ".join(f"{n} {term.name.removeprefix('stops ')}" for term, n in kinds)
                + f"); caught {self.judged.get('caught', 0)}, missed {self.judged.get('missed', 0)}"
            )
        said.append("  each row opens its session's timeline; a session's own link is the page's #session=...")
        return said


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
    root: str | None = None,
) -> PageSummary:
    """Replay the files `(path, label)` and write the page to `output`, with their hand
    `labels` (paths relative to `corpus`) and `outcomes` where given, and the agent and
    model columns of the TSV files among `tables`; `problems` are
    `(label, why)` for files that cannot be read at all, listed as such; `root`, the
    folder the labels are relative to (said on the page). Says on stderr what the page
    holds, and returns it. The page is written by `loopwatch._safefile` (private,
    complete or absent, never over one of `inputs`); a disk that cannot take it is one
    line and exit 2."""
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
    summary = PageSummary()

    def counted(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            summary.add(row)
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
            head = report_head(sources, title=title, excerpts=excerpts, root=root)
            write_html(page.stream, head, counted(chain((error_row(label, why) for label, why in problems), rows)))
    except safefile.UnsafeWrite as exc:
        _refuse(str(exc))
    except OSError as exc:
        _refuse(f"{output}: cannot write: {exc.strerror or exc}")
    for line in summary.lines(output, labels is not None, outcomes is not None, root):
        click.echo(line, err=True)
    return summary
