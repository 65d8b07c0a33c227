"""`loopwatch run -- <command>`: run an agent command and end it when it goes in circles."""

from __future__ import annotations

import math
import os
import shlex
import sys
from typing import Any

import click

from .. import _safefile as safefile
from .._core.config import ConfigError
from .._files import NOT_REGULAR
from .._supervise import FORMATS, Limits, Supervisor, write_record
from .._trust import load_config
from ._common import WRAPPER_CONTEXT

__all__ = ["run"]

_EPILOG = """\b
Exit status:
  the command's own    when it ended by itself (128+N if signal N ended it)
  86                   loopwatch ended it: a loop
  87                   loopwatch ended it: no output for --idle seconds
  88                   loopwatch ended it: --max-runtime reached
  126, 127             the command could not be started (not executable, not found)
  2                    bad usage or configuration

\b
Examples:
  loopwatch run -- aider --yes --message "fix the tests"
  loopwatch run --idle 600 --record run.json -- claude -p "fix it" --output-format stream-json --verbose
  loopwatch run --mode warn -- codex exec --json "fix the tests"
  loopwatch run --pty -- claude "fix the failing tests"
"""


#: Options of `run` that agent command lines commonly have too: not flagged after the command.
_COMMON_OPTIONS = {"--config", "--mode", "--help"}


def _warn_misplaced(ctx: click.Context, command: tuple[str, ...]) -> None:
    """One line on stderr when the command's arguments hold options of `run` (`loopwatch
    run -- agent --max-runtime 5`): they go to the command, and loopwatch does not apply them."""
    ours = {name for param in ctx.command.params for name in param.opts if name.startswith("--")} - _COMMON_OPTIONS
    found = list(dict.fromkeys(arg.partition("=")[0] for arg in command[1:] if arg.partition("=")[0] in ours))
    if found:
        names = ", ".join(found)
        click.echo(
            f"loopwatch: {names} after the command {'goes' if len(found) == 1 else 'go'} to "
            f"{shlex.quote(command[0])}, not to loopwatch; to set loopwatch's, put "
            f"{'it' if len(found) == 1 else 'them'} before the command: loopwatch run {found[0]} ... -- "
            f"{shlex.quote(command[0])} ...",
            err=True,
        )


class _Unguarded(click.ClickException):
    """One line, exit status 2: the run would start with the guard off."""

    exit_code = 2


def _unguarded(command: tuple[str, ...]) -> str | None:
    """Why the agent CLI `command` runs (if it is one loopwatch guards) would load no hook,
    loopwatch's included (`Host.unguarded`); None when nothing says so."""
    from .._hosts import HOSTS
    from .._hosts import host as host_named

    argv = list(command)
    for name in HOSTS:
        found = host_named(name)
        if found.headless(argv) is not None:
            return found.unguarded(argv, os.environ)
    return None


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    # `not 0 < value < inf`, not `value <= 0`: NaN compares false to everything, so it
    # passed, and a NaN deadline is never reached (SIGKILL was never sent).
    if value is not None and not 0 < value < math.inf:
        raise click.BadParameter(f"{value}: must be a number of seconds above 0, and finite")
    return value


@click.command(
    context_settings=WRAPPER_CONTEXT,
    epilog=_EPILOG,
)
@click.option(
    "--events",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="How to read the command's stdout: plain lines, or the structured stream of "
    "`claude -p --output-format stream-json` / `cursor-agent -p --output-format stream-json` / `codex exec --json`. "
    "auto: recognized from the first lines.",
)
@click.option(
    "--idle",
    type=float,
    metavar="SECONDS",
    callback=_seconds,
    help="End the run when the command prints nothing (and adds nothing to the transcript followed) for this long.",
)
@click.option(
    "--max-runtime", type=float, metavar="SECONDS", callback=_seconds, help="End the run when it has lasted this long."
)
@click.option(
    "--mode",
    type=click.Choice(["warn", "enforce"]),
    help="enforce (default): end the run on a loop. warn: only print warnings. "
    "--idle and --max-runtime apply in both modes.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="A loopwatch.toml (default: found from the working directory up).",
)
@click.option(
    "--grace",
    type=float,
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    callback=_seconds,
    help="When ending the run: time between SIGTERM and SIGKILL to the command's process group.",
)
@click.option(
    "--record",
    "record_path",
    type=click.Path(dir_okay=False, writable=True),
    metavar="PATH",
    help="Write a JSON record of the run here (command, times, how it ended, "
    "the loop record and calibration figures). Without it, one summary line on stderr.",
)
@click.option(
    "--transcript",
    default="auto",
    show_default=True,
    metavar="auto|off|PATH",
    help="Follow the transcript the agent writes and judge its tool calls: auto finds "
    "the one of `claude` (~/.claude/projects/) or `codex` (~/.codex/sessions/) "
    "when the command runs one; PATH names a Claude Code session file or a Codex "
    "rollout (what the run adds to it; it may appear later). While it is "
    "followed or looked for, a loop seen only in the console's lines is a warning.",
)
@click.option(
    "--pty",
    "use_pty",
    is_flag=True,
    help="Run the command on a pseudo-terminal, as in a terminal of its own: for "
    "interactive agent CLIs. Its window size follows yours; your keys reach it "
    "as typed (Ctrl-C included); its stdout and stderr come as one stream.",
)
@click.option(
    "--record-argv",
    is_flag=True,
    help="Keep the whole command line in the record. By default the record keeps the program "
    "and its option names only: values and arguments (an --api-key, a prompt) are masked.",
)
@click.option(
    "--allow-unguarded",
    is_flag=True,
    help="Start the command even when it would load no hook at all (opencode's --pure or "
    "OPENCODE_PURE=1): loopwatch's live guard is then off, and only this command's own watch is on.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(
    events: str,
    idle: float | None,
    max_runtime: float | None,
    mode: str | None,
    config_path: str | None,
    grace: float,
    record_path: str | None,
    transcript: str,
    use_pty: bool,
    record_argv: bool,
    allow_unguarded: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND and end it when it goes in circles.

    The command runs in a process group of its own, with stdin, stdout and stderr
    passed through unchanged. When it is `claude` or `codex`, the transcript it
    writes is followed and its tool calls are judged (--transcript). Otherwise what
    it prints is watched for a line or a cycle of lines repeated over and over (plain
    output), or for repeated tool calls (Claude Code and Codex JSON streams). In enforce mode a loop ends the run: SIGTERM to the
    whole group, SIGKILL after --grace; nothing is left running. Ctrl-C is passed on to
    the command. loopwatch's own lines go to stderr, starting `loopwatch: `.

    Put `--` before the command so that its options stay its own.

    Without --pty, output goes through pipes, not a terminal: some tools print no
    colours then (many accept --color=always or FORCE_COLOR=1), and interactive ones
    want a terminal: give them one with --pty.
    """
    if record_path is not None:
        folder = os.path.dirname(os.path.abspath(record_path))
        if not os.path.isdir(folder):
            raise click.BadParameter(f"folder {folder} does not exist", param_hint="--record")
        read = [p for p in (config_path, transcript if transcript not in ("auto", "off") else None) if p]
        try:
            safefile.check(record_path, inputs=read)  # never the transcript followed, nor the configuration
        except safefile.UnsafeWrite as exc:
            raise click.BadParameter(str(exc), param_hint="--record") from None
    overrides: dict[str, Any] = {"mode": mode} if mode else {}  # Config fields
    try:
        config = load_config(config_path, **overrides)
    except ConfigError as exc:
        raise click.UsageError(f"configuration: {exc}") from None

    _warn_misplaced(click.get_current_context(), command)
    why = None if allow_unguarded else _unguarded(command)
    if why is not None:
        raise _Unguarded(f"{why}: loopwatch's guard would not run; unset it, or pass --allow-unguarded")
    sys.stdout.flush()
    sys.stderr.flush()
    if transcript not in ("auto", "off") and os.path.isdir(transcript):
        raise click.BadParameter(f"{transcript} is a folder; name the transcript file", param_hint="--transcript")
    if transcript not in ("auto", "off") and os.path.exists(transcript) and not os.path.isfile(transcript):
        raise click.BadParameter(f"{transcript}: {NOT_REGULAR}", param_hint="--transcript")
    supervisor = Supervisor(
        command, config, Limits(idle, max_runtime, grace), events, transcript=transcript, pty=use_pty
    )
    try:
        outcome = supervisor.run()
    except OSError as exc:
        status = 127 if isinstance(exc, FileNotFoundError) else 126
        supervisor.say(f"cannot run {shlex.quote(command[0])}: {exc.strerror or exc}")
        sys.exit(status)

    if record_path is not None:
        outcome.full_argv = record_argv
        try:
            write_record(record_path, outcome.record())
        except (OSError, ValueError) as exc:
            supervisor.say(f"cannot write the record to {record_path}: {getattr(exc, 'strerror', None) or exc}")
            supervisor.say(outcome.summary())
    else:
        supervisor.say(outcome.summary())
    sys.exit(outcome.status)
