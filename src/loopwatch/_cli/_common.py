"""Options and helpers the commands share."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NoReturn, Self

import click

from .._configfile import load_config
from .._core.config import Config, ConfigError

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "WRAPPER_CONTEXT",
    "config_options",
    "engine_options",
    "fail",
    "make_config",
    "plural",
    "progress_bar",
    "use_ray",
]

# The context of a command that wraps another command line (`run`, `mcp-proxy`): from
# the first argument that is not an option of ours on, everything is that command's own.
WRAPPER_CONTEXT: dict[str, Any] = {
    "ignore_unknown_options": True,
    "allow_interspersed_args": False,
    "help_option_names": ["-h", "--help"],
}


def format_option(func: Any) -> Any:
    """`--format`, for the commands that read recorded sessions (the readers are imported
    here, not by every command that shares this module)."""
    from .._readers import FORMATS

    return click.option(
        "--format",
        "format_name",
        type=click.Choice(list(FORMATS)),
        help="Read every file as this format instead of detecting it.",
    )(func)


def config_options(func: Any) -> Any:
    func = click.option("--mode", type=click.Choice(["off", "warn", "enforce"]), help="Override the mode.")(func)
    func = click.option(
        "--profile",
        type=click.Choice(["unattended", "attended"]),
        help="Override the profile (default: unattended for recorded sessions).",
    )(func)
    func = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        help="A loopwatch.toml (default: ./loopwatch.toml or [tool.loopwatch] in pyproject.toml).",
    )(func)
    return func


def engine_options(func: Any) -> Any:
    """`--engine local|ray` and `--address`: where `scan` and `evaluate` replay."""
    func = click.option(
        "--address",
        metavar="ADDR",
        help="With --engine ray: the cluster to join (e.g. auto, or ray://host:10001; it must accept a "
        "connection within 5 s and answer within 60 s); default: start one here, on 127.0.0.1 only.",
    )(func)
    return click.option(
        "--engine",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="local: a process pool on this machine. ray: a Ray cluster (needs loopwatch[ray]; "
        "the files at the same path on every node).",
    )(func)


def use_ray(engine: str, address: str | None) -> bool:
    """Whether to replay on Ray, connected when so. `--address` without `--engine ray`,
    or a Ray that is missing or out of reach, is a one-line usage error; Ctrl-C or
    SIGTERM while joining, one line and exit 130 or 143."""
    if address is not None and engine != "ray":
        raise click.BadParameter("only with --engine ray", param_hint="--address")
    if engine != "ray":
        return False
    from .._analysis.ray_engine import RayInterrupted, RayUnavailable, connect

    try:
        connect(address)
    except RayUnavailable as exc:
        raise click.UsageError(str(exc)) from None
    except RayInterrupted as exc:  # Ctrl-C or SIGTERM while a cluster was not answering: as a shell reports it
        click.echo(f"loopwatch {click.get_current_context().info_name}: {exc}", err=True)
        sys.exit(128 + exc.signum)
    return True


def fail(command: str, message: str) -> NoReturn:
    """Bad input: one line on stderr, `loopwatch COMMAND: message`, and exit 2."""
    click.echo(f"loopwatch {command}: {message}", err=True)
    sys.exit(2)


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """`1 session`, `2 sessions` (`nouns` when the plural is not NOUN + s)."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def make_config(config_path: str | None, profile: str | None, mode: str | None) -> Config:
    overrides: dict[str, Any] = {k: v for k, v in (("profile", profile), ("mode", mode)) if v}  # Config fields
    try:
        return load_config(config_path, **overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


class progress_bar:
    """A progress bar on stderr, shown only on a terminal and for at least `minimum`
    items; otherwise `advance` does nothing.

    It has no refresh thread (it is redrawn as items finish): worker processes are
    forked while it is shown, and forking a threaded process may deadlock."""

    def __init__(self, total: int, label: str, enabled: bool = True, minimum: int = 2) -> None:
        self.enabled = enabled and sys.stderr.isatty() and total >= minimum
        self.total, self.label = total, label

    def __enter__(self) -> Self:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            from .terminal import console

            columns = (TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
            self._progress = Progress(*columns, console=console(stderr=True), transient=True, auto_refresh=False)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        if self.enabled:
            self._progress.update(self._task, advance=n, refresh=True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.enabled:
            self._progress.__exit__(kind, exc, tb)
