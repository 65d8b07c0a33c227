"""Tables the commands print, one way: on a terminal, a rich table as wide as the
terminal (a cell too long for its column is folded onto more lines, never cut); piped
or redirected, plain aligned columns within `PLAIN_WIDTH`, with no box drawing and no
styles. A table too wide for plain columns is printed as one short block per row
instead (`name: value` lines), and a word wider than the line (a long path) is folded
onto the next: no plain line is wider than the width, and nothing is cut.

It does not choose what a table holds: the commands do, and keep their plain tables
narrow (a name or a path last, where it may run on without cutting another column).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import click

__all__ = ["PLAIN_WIDTH", "Column", "plain_width", "print_lines", "print_table"]

#: The widest line written off a terminal (piped, redirected): what a CI log, a pager
#: or a review shows without wrapping.
PLAIN_WIDTH = 100


def plain_width() -> int:
    """The width of plain output: `PLAIN_WIDTH`, or $COLUMNS when it asks for less."""
    asked = os.environ.get("COLUMNS", "")
    return min(PLAIN_WIDTH, int(asked)) if asked.isdigit() and int(asked) >= 40 else PLAIN_WIDTH


def on_terminal() -> bool:
    return sys.stdout.isatty()


class Column:
    """A column: its title, and whether its cells are numbers (right-aligned)."""

    def __init__(self, title: str, number: bool = False) -> None:
        self.title, self.number = title, number


def print_table(
    title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]], *, name_last: bool = False
) -> None:
    """One table on stdout (see the module docstring). `name_last`: the last column is a
    name (a path), never cut; in plain columns, when a row would run past the width,
    every row's name goes on a line of its own above its figures."""
    if on_terminal():
        _rich(title, columns, rows)
        return
    from .._encode import visible

    # made visible before they are measured: an escape shown as `\x1b` takes four columns
    rows = [[visible(cell) for cell in row] for row in rows]
    width = plain_width()
    widths = [max([len(c.title), *(len(row[k]) for row in rows)]) for k, c in enumerate(columns)]
    counted = widths[:-1] if name_last else widths
    if sum(counted) + 2 * (len(counted) - 1) > width:
        _blocks(title, columns, rows, width)
        return
    if title:
        print_lines([title], width)

    def line(cells: Sequence[str], kept: Sequence[Column]) -> str:
        shown = []
        for k, (column, cell) in enumerate(zip(kept, cells)):
            last = k == len(kept) - 1
            shown.append(cell.rjust(widths[k]) if column.number else cell if last else cell.ljust(widths[k]))
        return "  ".join(shown).rstrip()

    lines = [line([c.title for c in columns], columns), *(line(row, columns) for row in rows)]
    if name_last and max(map(len, lines)) > width:
        figures = columns[:-1]
        lines = [line([c.title for c in figures], figures)]
        for row in rows:
            lines += [row[-1], line(row[:-1], figures)]
    print_lines([*lines, ""], width)


def _blocks(title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> None:
    """Each row as its first cell, then `title: cell` lines, indented."""
    lines = [title] if title else []
    for cells in rows:
        lines.append(cells[0])
        lines += [f"  {column.title}: {cell}" for column, cell in zip(columns[1:], cells[1:])]
    print_lines([*lines, ""], width)


def print_lines(lines: Sequence[str], width: int | None = None) -> None:
    """Lines on stdout, each wrapped within the width (plain) or the terminal's; a word
    longer than the width (a path) is folded onto the next line, never cut."""
    import textwrap

    if on_terminal():
        from .terminal import console

        shown = console()
        for line in lines:
            shown.print(line, soft_wrap=False, overflow="fold")
        return
    from .._encode import visible

    width = width or plain_width()
    for line in map(visible, lines):
        indent = line[: len(line) - len(line.lstrip(" "))]
        parts = textwrap.wrap(
            line,
            width,
            subsequent_indent=indent + "  ",
            break_on_hyphens=False,
        )
        for part in parts or [""]:
            click.echo(part)


def _rich(title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
    from rich.table import Table

    from .terminal import console

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column.title, justify="right" if column.number else "left", overflow="fold")
    for cells in rows:
        table.add_row(*cells)
    shown: Any = console()
    shown.print(table)
