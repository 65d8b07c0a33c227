"""`loopwatch mcp-proxy -- <server command>`: guard the tools of any stdio MCP server."""

from __future__ import annotations

import shlex
import sys
from typing import Any, NoReturn

import click

from .. import _exits as exits
from .._core.config import ConfigError
from .._trust import load_config
from ._common import WRAPPER_CONTEXT, BadInput, check_command, mode_option

__all__ = ["mcp_proxy"]

_EPILOG = """\b
In an MCP client's configuration (Claude Desktop, Cursor, ...):
  "command": "loopwatch",
  "args": ["mcp-proxy", "--", "npx", "-y",
           "@modelcontextprotocol/server-filesystem", "/home/me/src"]

""" + exits.epilog("mcp-proxy")


@click.command(
    context_settings=WRAPPER_CONTEXT,
    epilog=_EPILOG,
)
@click.option(
    "--profile",
    type=click.Choice(["attended", "unattended"]),
    default="attended",
    show_default=True,
    help="attended: a person is at the MCP client, so nudge, then block the repeated call. "
    "unattended: nudge, then stop (refuse every later call). Overrides the configuration file's.",
)
@click.option(
    "--stop",
    "allow_stop",
    is_flag=True,
    help="attended profile: after a block, stop (refuse every later call) if the loop goes on.",
)
@mode_option("enforce (default): nudge, block and stop. warn: forward everything, only log. off: a plain proxy.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="A loopwatch.toml (default: found from the working directory up).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def mcp_proxy(
    profile: str, allow_stop: bool, mode: str | None, config_path: str | None, command: tuple[str, ...]
) -> None:
    """Serve COMMAND's MCP tools on stdio, guarded against loops.

    COMMAND is a stdio MCP server. loopwatch starts it, forwards every tool it
    lists and all it does not judge (resources and their subscriptions, prompts,
    completions, the logging level, cancellations, the server's progress, log and
    list-changed notifications), and watches each tool call: a repeated loop
    is nudged (one more text block in the tool's result), then blocked (the call is
    not forwarded and the client gets an error result saying why); a stop answers
    every later call with an error until the client restarts the server. Each
    finding is one `loopwatch:` line on stderr, which MCP clients keep in their logs.

    Put `--` before the command so that its options stay its own.
    """
    check_command(command)
    overrides: dict[str, Any] = {"profile": profile, "stop": allow_stop}
    if mode:
        overrides["mode"] = mode
    try:
        config = load_config(config_path, **overrides)
    except ConfigError as exc:  # a file's mistake, not the command line's: no usage block
        raise BadInput(f"configuration: {exc}") from None
    try:
        from ..adapters.mcp_proxy import serve
    except ImportError as exc:
        raise click.UsageError(str(exc)) from None
    import anyio

    from .._guard import Guard

    try:
        anyio.run(serve, list(command), Guard(config=config))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        _cannot_run(command[0], exc)
    except BaseExceptionGroup as exc:  # what the SDK's task groups raise
        reason = _first_cause(exc)
        if isinstance(reason, OSError):
            _cannot_run(command[0], reason)
        if isinstance(reason, (KeyboardInterrupt, SystemExit)):
            raise reason from None
        click.echo(
            f"loopwatch mcp-proxy: the server {shlex.quote(command[0])} could not be reached: {reason}", err=True
        )
        sys.exit(1)


def _cannot_run(program: str, exc: OSError) -> NoReturn:
    click.echo(f"loopwatch mcp-proxy: cannot run {shlex.quote(program)}: {exc.strerror or exc}", err=True)
    sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _first_cause(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
