"""Configuration files and the environment: where loopwatch's settings come from.

The core (`loopwatch._core.config`) validates a table of settings and reads nothing; this
module finds and reads the files and applies the environment, for the CLI, the hook and
the framework guards:

- `find_config(start)`: `loopwatch.toml`, or a `pyproject.toml` with `[tool.loopwatch]`,
  in `start` or the nearest folder above it;
- `read_config_file(path)`: the table of settings in such a file (one clear
  `ConfigError` for a file that is unreadable, not a regular file, larger than 1 MiB,
  nested deeper than 32 levels, not UTF-8, not TOML, or whose `tool` or
  `tool.loopwatch` is not a table: a project's file is written by whoever wrote the
  project, so reading it is bounded in time and memory);
- `apply_env(config, env)`: `LOOPWATCH_MODE` (`off`, `warn`, `enforce`) overrides the mode;
- `load_config(...)`: the three together, the usual way in.

What it deliberately does not decide: which file may be trusted (the agent being guarded
can write a project's file): `loopwatch._trust` says, with the same two readers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._core.config import MODES, Config, ConfigError

__all__ = ["FileRefused", "apply_env", "find_config", "load_config", "read_config_file"]


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
                tool = _parse(pyproject).get("tool", {})
            except FileRefused:
                return pyproject  # too big or too deep to tell: reading it says so
            except ConfigError:
                pass
            else:
                # a `tool` that is not a table is reported when the file is read
                if not isinstance(tool, dict) or "loopwatch" in tool:
                    return pyproject
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


#: A configuration file larger than this, or nested deeper, is refused unread: a
#: project's file can be written by the agent being guarded, and the hook reads it on
#: every call (a sparse 1 GiB file cost 5-25 s and 2 GB per call; nesting past
#: Python's recursion limit escaped as RecursionError). Real ones are a few KiB deep 3.
MAX_BYTES = 1 << 20
MAX_DEPTH = 32


class FileRefused(ConfigError):
    """A configuration file not read at all: not a regular file, too big or too deep."""


def _parse(source: str) -> dict[str, Any]:
    """The TOML document in `source`, read within `MAX_BYTES` and `MAX_DEPTH`."""
    import tomllib

    from ._files import NotRegularFile, open_file

    try:
        with open_file(source) as fh:  # never a blocking open: a FIFO planted here must not hang
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_BYTES:
                raise FileRefused(
                    f"{source}: {size} bytes, over the {MAX_BYTES >> 20} MiB a configuration may have; not read"
                )
            raw = fh.read(MAX_BYTES + 1)
    except NotRegularFile:
        raise FileRefused(f"{source}: not a regular file; not read") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    if len(raw) > MAX_BYTES:
        raise FileRefused(f"{source}: over the {MAX_BYTES >> 20} MiB a configuration may have; not read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start}): TOML files are UTF-8") from None
    try:
        parsed = tomllib.loads(text)
    except RecursionError:
        raise FileRefused(f"{source}: nested deeper than {MAX_DEPTH} levels; not read") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    if _depth(parsed) > MAX_DEPTH:
        raise FileRefused(f"{source}: nested deeper than {MAX_DEPTH} levels; not read")
    return parsed


def _depth(value: Any) -> int:
    """How deep tables and arrays nest in `value`, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:
            stack.extend((child, level + 1) for child in children)
    return deepest


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The table of settings in `path`: the whole file for `loopwatch.toml`,
    `[tool.loopwatch]` for a `pyproject.toml`. Raises `ConfigError`, naming the file."""
    source = os.fspath(path)
    parsed = _parse(source)
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
