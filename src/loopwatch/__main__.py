"""`loopwatch` on the command line. The hook path must not import click or rich: it is
dispatched before the CLI is loaded."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "hook":
        from ._hook import main as hook_main  # fast path: no click, no rich

        return hook_main(args[1:])
    from ._cli import cli

    return cli.main(args=args, prog_name="loopwatch", standalone_mode=True) or 0


if __name__ == "__main__":
    sys.exit(main())
