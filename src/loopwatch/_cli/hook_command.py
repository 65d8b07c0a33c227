"""`loopwatch hook` as a click command, for `loopwatch --help` and `loopwatch hook --help`.

Agents never come through here: `loopwatch.__main__` sends `loopwatch hook ...`
straight to `loopwatch._hook.main`, before click is imported.
"""

from __future__ import annotations

import sys

import click

from .._hook import USAGE

__all__ = ["hook"]


@click.command(
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    help=USAGE,
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(args: tuple[str, ...]) -> None:
    from .._hook import main

    sys.exit(main(list(args)))
