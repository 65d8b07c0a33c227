"""What `scan` prints for a person: the table of looping sessions, the totals, and the
files it could not read. `Totals` also decides the exit status."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from .._analysis.replay import SessionResult
from ._common import plural
from .paths import LeftOut

__all__ = ["Totals", "first_block", "print_problems", "print_table"]


@dataclass
class Totals:
    """Running totals over a scan. Every file that could not be read is in `failed`
    and makes the exit status 2, a file found by walking a folder in no format
    loopwatch knows included: a `.jsonl`, `.json` or `.traj` there is meant to be a
    session (harness side files are left out by name before, see `paths`), and one
    loopwatch cannot read (a byte-order mark once made six formats unreadable) must
    not pass as a clean scan."""

    files: int = 0
    sessions: int = 0
    actions: int = 0
    stopped: int = 0
    nudged_only: int = 0
    saved_actions: int = 0
    saved_tokens: int | None = None
    saved_cost: float | None = None
    estimated: bool = False
    failed: list[SessionResult] = field(default_factory=list)
    skipped: list[SessionResult] = field(default_factory=list)  # sessions with unreadable lines
    multi: set[str] = field(default_factory=set)  # files holding several sessions
    #: Entries of agent CLIs' state folders left out by name, by whose state.
    left_out: LeftOut = field(default_factory=LeftOut)

    def add_file(self, results: list[SessionResult], counted: bool = True) -> list[SessionResult]:
        """Count one file's results (`counted`: a path that names no file is no file
        scanned); return them, to report."""
        self.files += counted
        if len(results) > 1:
            self.multi.add(results[0].path)
        for result in results:
            self._add(result)
        return results

    def _add(self, result: SessionResult) -> None:
        if result.error is not None:
            self.failed.append(result)
        if result.skipped:
            self.skipped.append(result)
        if result.format is None:  # nothing was read
            return
        self.sessions += 1
        self.actions += result.actions
        if result.verdict is not None:
            self.stopped += 1
            saved = result.saved or {}
            self.saved_actions += saved.get("actions", 0)
            if saved.get("tokens") is not None:
                self.saved_tokens = (self.saved_tokens or 0) + saved["tokens"]
            if saved.get("cost") is not None:
                self.saved_cost = (self.saved_cost or 0.0) + saved["cost"]
            self.estimated = self.estimated or bool(saved.get("estimated"))
        elif result.interventions:
            self.nudged_only += 1

    @property
    def exit_status(self) -> int:
        if self.failed:
            return 2
        return 1 if self.stopped else 0


def _console(stderr: bool = False) -> Any:
    from .terminal import console

    stream = sys.stderr if stderr else sys.stdout
    # Piped output is read by people too (in CI logs): wide enough for paths, unless
    # $COLUMNS says how wide (`get_terminal_size` reads it first).
    width = None if stream.isatty() else shutil.get_terminal_size((200, 24)).columns
    return console(stderr, width)


def _at(action: int | None, ref: str | None, after: bool = False) -> str:
    """`action 5` and where it is in the file; a stop comes after its action (or
    after a message that followed it, which `ref` then names)."""
    if not action:
        return ref or "-"
    return f"{'after ' if after else ''}action {action}" + (f"\n{ref}" if ref else "")


def first_block(result: SessionResult) -> dict[str, Any] | None:
    """The first block, for a session that was not stopped (the attended profile)."""
    return next((i for i in result.interventions if i["action"] == "block"), None)


def _short(path: str) -> str:
    """A path relative to the working folder when it is inside it (tables are narrow)."""
    if not os.path.isabs(path):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _saved_text(result: SessionResult) -> str:
    saved = result.saved or {}
    parts = [f"{saved.get('actions', 0)} of {result.actions} actions"]
    approx = "~" if saved.get("estimated") else ""
    if saved.get("tokens") is not None:
        parts.append(f"{approx}{_count(saved['tokens'])} tokens")
    if saved.get("cost") is not None:
        parts.append(f"{approx}${saved['cost']:.2f}")
    return "\n".join(parts)


def _count(n: int) -> str:
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


#: Below this many columns the sessions are listed, not tabled: the table's five
#: short columns and their borders take about 110, and a path needs some room.
_TABLE_MIN_WIDTH = 140


def print_table(rows: list[SessionResult], totals: Totals) -> None:
    """The sessions that looped, then the totals, on stdout."""
    console = _console()
    if rows and console.width < _TABLE_MIN_WIDTH:
        _print_list(console, rows, totals)
    elif rows:
        _print_rows(console, rows, totals)
    for line in summary(totals):
        console.print(line)


def _cells(result: SessionResult, totals: Totals) -> tuple[str, ...]:
    """A looping session: name, signal, where the loop began, where it was stopped,
    what was wasted after, and what loopwatch saw."""
    verdict = result.verdict or first_block(result)
    assert verdict is not None, "a row is a session stopped or blocked"
    name = _short(result.path) + (f"\n[{result.session}]" if result.path in totals.multi else "")
    wasted = _saved_text(result) if result.verdict else "(blocked; not stopped)"
    return (
        name,
        verdict["signal"],
        _at(verdict.get("started_action"), verdict.get("started_ref")),
        _at(verdict["at_action"], verdict["source_ref"], after=True),
        wasted,
        verdict["description"] or "",
    )


def _print_rows(console: Any, rows: list[SessionResult], totals: Totals) -> None:
    from rich.table import Table

    table = Table(show_lines=True)
    names = [_short(r.path) for r in rows]
    # Paths first, in what the short columns leave: the description wraps instead.
    wide = min(max(map(len, names)), 80, console.width - 110)
    table.add_column("session", style="bold", overflow="fold", min_width=wide)
    for title in ("signal", "loop began", "stopped at", "wasted after the stop"):
        table.add_column(title)
    table.add_column("what loopwatch saw", ratio=1, min_width=30)
    for result in rows:
        table.add_row(*_cells(result, totals))
    console.print(table)


def _print_list(console: Any, rows: list[SessionResult], totals: Totals) -> None:
    """The table's rows as short paragraphs, for a narrow terminal."""
    import textwrap

    width = console.width
    for result in rows:
        name, signal, began, stopped, wasted, saw = _cells(result, totals)
        console.print(name.replace("\n", " "), style="bold")
        lines = [f"{signal}: {saw}", f"loop began at {_inline(began)}"]
        if result.verdict:
            lines[-1] += f"; stopped {_inline(stopped)}"
            lines.append(f"wasted after the stop: {wasted.replace(chr(10), ', ')}")
        else:
            lines.append(wasted)
        for line in lines:
            text = textwrap.fill(line, width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
            console.print(text, soft_wrap=True)
        console.print()


def _inline(where: str) -> str:
    """`action 5\nline 16` (a table cell) as `action 5 (line 16)`."""
    action, newline, ref = where.partition("\n")
    return f"{action} ({ref})" if newline else action


def summary(totals: Totals) -> list[str]:
    """The totals, in sentences."""
    unread = f"; {len(totals.failed)} could not be read" if totals.failed else ""
    lines = [
        (
            f"Scanned {plural(totals.files, 'file')}: {plural(totals.sessions, 'session')}, "
            f"{plural(totals.actions, 'action')}{unread}."
        )
    ]
    lines.extend(left_out_lines(totals))
    if totals.stopped:
        share = f" ({totals.saved_actions / totals.actions:.0%} of all)" if totals.actions else ""
        lines.append(
            f"Loops found: {plural(totals.stopped, 'session')} would have been stopped"
            + (f", {totals.nudged_only} more only nudged." if totals.nudged_only else ".")
        )
        figures = [f"{plural(totals.saved_actions, 'action')}{share}"]
        approx = "~" if totals.estimated else ""
        if totals.saved_tokens is not None:
            figures.append(f"{approx}{_count(totals.saved_tokens)} tokens")
        if totals.saved_cost is not None:
            figures.append(f"{approx}${totals.saved_cost:,.2f}")
        lines.append(f"Stopping {'them' if totals.stopped > 1 else 'it'} would have saved " + ", ".join(figures) + ".")
        if totals.estimated:
            lines.append("(~: prorated from session totals, where the file has no per-step figures; an underestimate.)")
    else:
        lines.append(
            "No loop found"
            + (
                f" ({plural(totals.nudged_only, 'session was', 'sessions were')} nudged)."
                if totals.nudged_only
                else "."
            )
        )
    return lines


def left_out_lines(totals: Totals) -> list[str]:
    """What was left out of agent CLIs' state folders, in sentences."""
    return [
        f"Left out by name: {plural(count, 'file or folder', 'files and folders')} of {whose}'s state "
        "(settings, trust, logs, caches: not transcripts)."
        for whose, count in sorted(totals.left_out.items())
    ]


def print_problems(totals: Totals, as_json: bool) -> None:
    """Unreadable files and skipped lines, on stderr (with JSON output, also what was
    left out of agent CLIs' state folders: the table's summary says it otherwise)."""
    from rich.text import Text

    console = _console(stderr=True)
    if as_json:
        for line in left_out_lines(totals):
            console.print(line, markup=False, soft_wrap=True)
    for result in totals.failed:
        console.print(Text.assemble(("error", "red"), f" {result.path}: {result.error or ''}"), soft_wrap=True)
    for result in totals.skipped:
        shown = "; ".join(result.skipped[:3]) + ("; ..." if len(result.skipped) > 3 else "")
        console.print(
            f"skipped {plural(len(result.skipped), 'unreadable line')} in {result.path}: {shown}",
            soft_wrap=True,
        )
    if totals.failed and as_json:
        unread = plural(len(totals.failed), "file")
        console.print(f"{unread} could not be read: see `error` in their records.")
