"""The `loopwatch` command line. Subcommands live in their own modules and are
imported only when called, so `loopwatch --help` and each command start fast."""

from __future__ import annotations

import difflib
import importlib
import os
import signal
import threading
from functools import partial
from typing import Any

import click

__all__ = ["cli"]

#: command -> "module:attribute". Add a command by adding a line here.
COMMANDS = {
    "scan": ("loopwatch._cli.scan:scan", "Find loops in recorded sessions (files, folders, globs, -)."),
    "evaluate": ("loopwatch._cli.evaluate:evaluate", "Measure detection against hand-labelled sessions."),
    "report": (
        "loopwatch._cli.report_page:report",
        "Write recorded sessions as one HTML page (offline, self-contained).",
    ),
    "calibrate": ("loopwatch._cli.calibrate:calibrate", "Show the figures behind each threshold, per session."),
    "run": ("loopwatch._cli.run:run", "Run an agent command and stop it when it goes in circles."),
    "install": ("loopwatch._cli.install:install", "Install the hook into Claude Code or Codex settings."),
    "uninstall": ("loopwatch._cli.install:uninstall", "Remove loopwatch's hook entries."),
    "status": ("loopwatch._cli.status:status", "What loopwatch sees in recent hooked sessions."),
    "doctor": ("loopwatch._cli.doctor:doctor", "Check that the live guard is installed and works."),
    "hook": ("loopwatch._cli.hook_command:hook", "Hook entry point for Claude Code and Codex (reads stdin)."),
    "mcp-proxy": ("loopwatch._cli.mcp_proxy:mcp_proxy", "Serve an MCP server's tools, guarded against loops (stdio)."),
}


#: Commands that hand their streams and signals to another program: `run` (the agent's
#: terminal; it passes Ctrl-C and SIGTERM on), `mcp-proxy` (the protocol), `hook`.
_OWN_STREAMS = frozenset({"run", "mcp-proxy", "hook"})


class LazyGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Every command's output passes `terminal.visible_streams` (text from data is
        never written to the terminal raw)."""
        from .terminal import visible_streams

        with visible_streams():
            return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        """An interrupt ends a command with 128 + the signal (130 for Ctrl-C), never 1:
        `scan` says 1 for "a session was stopped"."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise click.exceptions.Exit(128 + getattr(exc, "signum", signal.SIGINT)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        target, _ = COMMANDS[name]
        module, attribute = target.split(":")
        try:
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        except (ImportError, AttributeError):
            return None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            close = difflib.get_close_matches(name, COMMANDS, n=1, cutoff=0.6)
            ctx.fail(f"no such command {name!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="loopwatch")
def cli() -> None:
    """loopwatch notices when an AI agent is going in circles, and stops the waste.

    \b
    Scan recorded sessions:        loopwatch scan runs/ --json
    Guard Claude Code or Codex:    loopwatch install claude-code
    Supervise any agent command:   loopwatch run -- my-agent --task x
    Guard an MCP server's tools:   loopwatch mcp-proxy -- my-mcp-server
    Check thresholds on labels:    loopwatch evaluate --labels labels.tsv
    """
    ctx = click.get_current_context()
    if ctx.invoked_subcommand in _OWN_STREAMS:
        from .terminal import release

        release()
        return
    if threading.current_thread() is threading.main_thread():  # where signals are handled
        ends = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.signal(sig, partial(_end, os.getpid())) for sig in ends}
        ctx.call_on_close(partial(_restore, previous))


def _restore(previous: dict[signal.Signals, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _end(owner: int, signum: int, frame: Any) -> None:
    """Ctrl-C, SIGTERM, SIGHUP: the command ends, and nothing it writes is put in place."""
    if os.getpid() != owner:  # a worker forked by the pool: its default, not ours
        if signum == signal.SIGINT:
            signal.signal(signum, signal.default_int_handler)
            raise KeyboardInterrupt
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    from .. import _safefile

    _safefile.ending(signum)
    raise _safefile.Interrupted(signum)
