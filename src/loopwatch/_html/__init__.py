"""`loopwatch report`: recorded sessions as one self-contained HTML page.

    from loopwatch._html import Sources, report_page
    text = report_page([("runs/a.jsonl", "runs/a.jsonl")], config, Sources())

The page works offline and from an email attachment: its script, style and data are
inline, and its Content-Security-Policy forbids every request. It needs Jinja2 (the
`report` extra), imported only when a page is rendered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._core.config import Config
from .sessions import CALL_FIELDS, Sources, collect

__all__ = ["Sources", "report_data", "report_head", "report_page"]


def report_head(sources: Sources, *, title: str | None = None, excerpts: bool = False) -> dict[str, Any]:
    """The page's facts, all but its sessions (`page.write_page` takes them as they come)."""
    return {
        "title": title or "loopwatch report",
        "excerpts": excerpts,
        "labels": sources.has_labels,
        "outcomes": sources.outcomes is not None,
        "call_fields": list(CALL_FIELDS),
    }


def report_data(
    items: Iterable[tuple[str, str]],
    config: Config,
    sources: Sources,
    *,
    title: str | None = None,
    format: str | None = None,
    excerpts: bool = False,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The page's data: every session of the files `(path, label)`, replayed, held
    (`loopwatch report` streams them to the page instead)."""
    sessions = collect(items, config, sources, format=format, excerpts=excerpts, jobs=jobs, progress=progress)
    return {**report_head(sources, title=title, excerpts=excerpts), "sessions": list(sessions)}


def report_page(items: Iterable[tuple[str, str]], config: Config, sources: Sources, **options: Any) -> str:
    """The HTML page for the files `(path, label)` (`report_data`'s options)."""
    from .page import render

    return render(report_data(items, config, sources, **options))
