"""Options and helpers the commands share."""

from __future__ import annotations

import sys
from typing import Any

import click

from ..config import Config, ConfigError, load_config

__all__ = ["config_options", "make_config", "progress_bar"]


def config_options(func: Any) -> Any:
    func = click.option("--mode", type=click.Choice(["off", "warn", "enforce"]), help="Override the mode.")(func)
    func = click.option("--profile", type=click.Choice(["unattended", "attended"]), help="Override the profile (default: unattended for recorded sessions).")(func)
    func = click.option("--config", "config_path", type=click.Path(dir_okay=False), help="A loopwatch.toml (default: ./loopwatch.toml or [tool.loopwatch] in pyproject.toml).")(func)
    return func


def make_config(config_path: str | None, profile: str | None, mode: str | None) -> Config:
    overrides = {k: v for k, v in (("profile", profile), ("mode", mode)) if v}
    try:
        return load_config(config_path, **overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


class progress_bar:
    """A rich progress bar on a terminal; nothing when piped or asked to be quiet."""

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty() and total > 1
        self.total, self.label = total, label

    def __enter__(self) -> "progress_bar":
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self._progress = Progress(
                "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                transient=True,
                auto_refresh=False,  # no refresh thread: worker processes are forked after this
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        if self.enabled:
            self._progress.advance(self._task, n)
            self._progress.refresh()

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self._progress.__exit__(*exc)
