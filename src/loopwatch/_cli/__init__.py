"""The `loopwatch` command line. Subcommands live in their own modules and are
imported only when called, so `loopwatch --help` and each command start fast."""

from __future__ import annotations

import difflib
import importlib

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


class LazyGroup(click.Group):
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
