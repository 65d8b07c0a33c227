"""Configuration files and the environment: where loopwatch's settings come from.

The core (`loopwatch.core.config`) validates a table of settings and reads nothing; this
module finds and reads the files and applies the environment, for the CLI, the hook and
the framework guards:

- `find_config(start)`: `loopwatch.toml`, or a `pyproject.toml` with `[tool.loopwatch]`,
  in `start` or the nearest folder above it;
- `read_config_file(path)`: the table of settings in such a file (one clear
  `ConfigError` for a file that is unreadable, not UTF-8, not TOML, or whose `tool` or
  `tool.loopwatch` is not a table);
- `apply_env(config, env)`: `LOOPWATCH_MODE` (`off`, `warn`, `enforce`) overrides the mode;
- `load_config(...)`: the three together, the usual way in.

What it deliberately does not decide: which file a live hook may trust (the agent being
guarded can write a project's file): `loopwatch.hook.settings` reads the user's file and
a project's only as its trust rule says, with the same two readers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .core.config import MODES, Config, ConfigError

__all__ = ["apply_env", "find_config", "load_config", "read_config_file"]


def find_config(start: str | os.PathLike[str]) -> str | None:
    """`loopwatch.toml`, or a `pyproject.toml` with `[tool.loopwatch]`, in `start` or
    the nearest folder above it; None when there is none."""
    folder = os.path.abspath(start)
    while True:
        candidate = os.path.join(folder, "loopwatch.toml")
        if os.path.isfile(candidate):
            return candidate
        pyproject = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(pyproject):
            try:
                import tomllib

                with open(pyproject, "rb") as fh:
                    tool = tomllib.load(fh).get("tool", {})
                # a `tool` that is not a table is reported when the file is read
                if not isinstance(tool, dict) or "loopwatch" in tool:
                    return pyproject
            except (OSError, ValueError):
                pass
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The table of settings in `path`: the whole file for `loopwatch.toml`,
    `[tool.loopwatch]` for a `pyproject.toml`. Raises `ConfigError`, naming the file."""
    import tomllib

    source = os.fspath(path)
    try:
        with open(source, "rb") as fh:
            parsed = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start}): TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    if os.path.basename(source) != "pyproject.toml":
        return parsed
    tool = parsed.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{source}: tool: expected a table, got {type(tool).__name__}")
    table = tool.get("loopwatch", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: tool.loopwatch: expected a table, got {type(table).__name__}")
    return table


def apply_env(config: Config, env: Mapping[str, str] | None = None) -> Config:
    """`config` with the mode `LOOPWATCH_MODE` sets in `env` (default: this process's
    environment); unchanged when it is unset or empty."""
    environ = os.environ if env is None else env
    override = environ.get("LOOPWATCH_MODE", "").strip().lower()
    if not override:
        return config
    if override not in MODES:
        raise ConfigError(f"LOOPWATCH_MODE={override!r}: expected one of {', '.join(MODES)}")
    return config._replace(mode=override)


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    start: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> Config:
    """Load configuration from `path`, or find `loopwatch.toml` / `pyproject.toml`
    (`[tool.loopwatch]`) in `start` (default: the working directory) and its parents;
    keyword arguments override the file, and `LOOPWATCH_MODE` in `env` (default: this
    process's environment) overrides the mode."""
    source = os.fspath(path) if path else find_config(start if start else os.getcwd())
    data = read_config_file(source) if source is not None else {}
    try:
        return apply_env(Config.make(data, **kwargs), env)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}" if source else str(exc)) from None
