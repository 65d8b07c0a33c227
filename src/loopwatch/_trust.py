"""Which settings loopwatch trusts: the one place this is decided, for the hook,
`loopwatch run`, `loopwatch mcp-proxy` and `loopwatch doctor` alike.

The agent being guarded can write any file in its project, so nothing a project
holds may switch its guard off. Two kinds of source:

- **the user's own**, trusted: their `loopwatch.toml` (`$LOOPWATCH_CONFIG`, else
  `$XDG_CONFIG_HOME/loopwatch/loopwatch.toml`), a `--config` file or flag given on
  the command line, and the environment the user started the agent in;
- **a project's**, untrusted: a `loopwatch.toml` or `[tool.loopwatch]` found from the
  working directory up, the `"env"` of a project's Claude Code settings
  (`.claude/settings.json`, `.claude/settings.local.json`), which Claude Code hands
  to every hook as if it were the user's environment, the environment files a host
  loads into its own environment, and so its hooks' (`Host.env_files`: Gemini CLI's
  project `.env` or `.gemini/.env`, Qwen Code's `.qwen/.env` or `.env`), and what a host
  says it took from a project's files into its hooks' environment (`Host.env_from_files`:
  Qwen Code's own list, its settings `env`).

An untrusted source may only **tighten** (`tighten`): `mode` may go up (off < warn <
enforce), `profile` may become "unattended", `stop` may become true and `[hook] fail`
"closed"; every other key is ignored. `trust_project = true` in the `[hook]` table
of the user's own file lets a project's loopwatch.toml loosen too (never the
environment a project's settings set: that cannot be told from the user's).

A variable the hook reads (`ENV_NAMES`) whose value is the one a project's Claude
Code settings set is taken as the project's (`project_env`), and so is one a host's
environment file set where the host's session process did not have it when it started
(`Host.started_environ`: what the user exported is there, what the host loaded
afterwards is not; where that cannot be read, the file's word is taken): `LOOPWATCH_MODE` and
`LOOPWATCH_PROFILE` then only tighten, and the paths that choose the user's file and
the state folder (`LOOPWATCH_CONFIG`, `LOOPWATCH_STATE_DIR`, `XDG_*`, `HOME`) fall
back to their defaults. So a user who sets one of these in their shell *and* a
project that sets the same value look alike: the user's own loopwatch.toml is the
place for a setting that loosens.

A project file too big or too deep (`configfile.MAX_BYTES`, `MAX_DEPTH`), or that
cannot be read, is ignored, with one line to the caller's log.

Nothing from a project is ever run (see `loopwatch._cli.dry_run`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "ENV_NAMES",
    "MODES",
    "env_file_settings",
    "load_config",
    "project_env",
    "read_project",
    "tighten",
    "trust_project",
    "trusted_environ",
    "user_config",
]

MODES = ("off", "warn", "enforce")  # weakest first (loopwatch._core.config.MODES, kept light here)

#: Variables the hook reads that decide whether and how it guards. A project that
#: sets one of them through Claude Code's `"env"` is not believed.
ENV_NAMES = (
    "LOOPWATCH_MODE",
    "LOOPWATCH_PROFILE",
    "LOOPWATCH_CONFIG",
    "LOOPWATCH_STATE_DIR",
    "LOOPWATCH_SUPERVISED",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "HOME",
    "CLAUDE_CONFIG_DIR",
)

#: A project's Claude Code settings files, in the folder Claude Code was started in.
CLAUDE_PROJECT_FILES = (os.path.join(".claude", "settings.json"), os.path.join(".claude", "settings.local.json"))
_MAX_SETTINGS_BYTES = 1 << 20


def user_config(env: Mapping[str, str] | None = None) -> str:
    """The user's configuration file: `$LOOPWATCH_CONFIG`, else
    `$XDG_CONFIG_HOME/loopwatch/loopwatch.toml`."""
    env = os.environ if env is None else env
    explicit = env.get("LOOPWATCH_CONFIG")
    if explicit:
        return os.path.expanduser(explicit)
    base = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
    return os.path.join(base, "loopwatch", "loopwatch.toml")


def _home(env: Mapping[str, str]) -> str:
    home = env.get("HOME")
    if home:
        return home
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return os.path.expanduser("~")


# -- the environment ------------------------------------------------------------------------


def project_env(folders: list[str], env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The variables of `ENV_NAMES` that a project's Claude Code settings set, in any of
    `folders` or a folder above one (the user's own `~/.claude` excepted), to the very
    value `env` has: name -> (value, the file that set it)."""
    wanted = {name for name in ENV_NAMES if env.get(name)}
    if not wanted:
        return {}
    own: set[str] | None = None
    seen: set[str] = set()
    found: dict[str, tuple[str, str]] = {}
    for start in folders:
        folder = os.path.abspath(start)
        while folder not in seen:
            seen.add(folder)
            for name in CLAUDE_PROJECT_FILES:
                path = os.path.join(folder, name)
                sets = {k: v for k, v in _settings_env(path).items() if k in wanted and env.get(k) == v}
                if not sets:
                    continue
                own = _user_claude_settings(env, folders) if own is None else own
                if os.path.realpath(path) in own:
                    continue
                for key, value in sets.items():
                    found.setdefault(key, (value, path))
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return found


def _user_claude_settings(env: Mapping[str, str], folders: list[str]) -> set[str]:
    """The user's own Claude Code settings files (trusted: they are not a project's),
    found from the account's home, not from `$HOME` (which a project may set), and
    `$CLAUDE_CONFIG_DIR` unless it points into the project."""
    bases = {os.path.join(_account_home(), ".claude")}
    config_dir = env.get("CLAUDE_CONFIG_DIR")
    if config_dir:
        real = os.path.realpath(config_dir)
        if not any(real == f or real.startswith(f + os.sep) for f in map(os.path.realpath, folders)):
            bases.add(config_dir)
    return {os.path.realpath(os.path.join(b, n)) for b in bases for n in ("settings.json", "settings.local.json")}


def _account_home() -> str:
    """The home folder of this account, from the password database (not `$HOME`)."""
    return _home({})


def _settings_env(path: str) -> dict[str, str]:
    """The `"env"` table of one Claude Code settings file; {} when there is none or
    the file cannot be read (bounded: a project wrote it)."""
    import json

    from ._files import read_small

    raw = read_small(path, _MAX_SETTINGS_BYTES)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    table = data.get("env") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return {}
    return {str(k): v for k, v in table.items() if isinstance(v, str)}


_MAX_ENV_FILE_BYTES = 1 << 20


def dotenv(path: str | os.PathLike[str]) -> dict[str, str]:
    """The variables an environment file (`.env`, dotenv's syntax) sets; {} when it
    cannot be read (bounded: a project wrote it). `KEY=value`, `export KEY=value`,
    quoted values, `#` comments."""
    import re

    from ._files import read_small

    raw = read_small(path, _MAX_ENV_FILE_BYTES)
    if raw is None:
        return {}
    text = raw.decode("utf-8", "replace")
    out: dict[str, str] = {}
    line = re.compile(
        r"""^\s*(?:export\s+)?([\w.-]+)\s*(?:=|:\s)\s*('(?:\\'|[^'])*'|"(?:\\"|[^"])*"|`[^`]*`|[^#\r\n]*)"""
    )
    for row in text.replace("\r\n", "\n").split("\n"):
        found = line.match(row)
        if found is None:
            continue
        key, value = found.group(1), found.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"`":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n")
        out[key] = value
    return out


def env_file_settings(host: Any, cwd: str | os.PathLike[str], env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The variables of `ENV_NAMES` that a project's environment files, as `host` (a
    `Host`) loads them for a session started in `cwd`, set: name -> (value, file).
    What a project would put into the hook's environment, whatever the environment
    here holds (for `doctor`)."""
    found: dict[str, tuple[str, str]] = {}
    for path in host.env_files(os.fspath(cwd), env):
        for key, value in dotenv(path).items():
            if key in ENV_NAMES:
                found.setdefault(key, (value, str(path)))
    return found


def _host_env(host: Any, folders: list[str], env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The variables of `ENV_NAMES` in `env` that `host` put there from a project's
    environment file: the file sets that very value (or a value that names another
    variable, `${HOME}`, which a loader that expands them, as Cline's does, turns into
    any value), and the host's session process did not have it when it started
    (`Host.started_environ`; unknown: the file's word)."""
    candidates: dict[str, tuple[str, str]] = {}
    for folder in dict.fromkeys(folders):
        for key, (value, path) in env_file_settings(host, folder, env).items():
            if key in env and (env[key] == value or "$" in value):
                candidates.setdefault(key, (env[key], path))
    if not candidates:
        return {}
    started = host.started_environ()
    return {k: v for k, v in candidates.items() if started is None or started.get(k) != v[0]}


def trusted_environ(
    env: dict[str, str] | os._Environ[str],
    folders: list[str],
    log: Callable[[str], None] | None = None,
    host: Any = None,
) -> dict[str, str]:
    """Take out of `env` (in place) every variable of `ENV_NAMES` a project set (see
    `project_env`, and for `host`, a `Host`, its environment files and what it names
    itself: `Host.env_from_files`); return those that may still tighten
    (`LOOPWATCH_MODE` above "off", `LOOPWATCH_PROFILE=unattended`), for `tighten`. `log`
    hears one line per variable."""
    found = project_env(folders, env)
    if host is not None:
        for key, setting in _host_env(host, folders, env).items():
            found.setdefault(key, setting)
        for name, origin in host.env_from_files(env).items():
            if name in ENV_NAMES and env.get(name) and name not in found:
                found[name] = (env[name], origin)
    keep: dict[str, str] = {}
    for name, (value, path) in found.items():
        del env[name]
        if name == "HOME":
            env[name] = _account_home()
        if name == "LOOPWATCH_MODE" and value.strip().lower() in MODES[1:]:
            keep["mode"] = value.strip().lower()
        elif name == "LOOPWATCH_PROFILE" and value.strip().lower() == "unattended":
            keep["profile"] = "unattended"
        if log is not None:
            log(f"{name} set by {path}: not trusted (a project may only tighten the guard)")
    return keep


# -- configuration files ------------------------------------------------------------------


def read_project(
    start: str | None, user_source: str | None, log: Callable[[str], None] | None = None
) -> tuple[str | None, dict[str, Any]]:
    """The project's configuration file found from `start` up, and its table ({} when
    there is none, when it is the user's own file, or when it cannot be read, too big
    or too deep: `log` is told)."""
    from ._configfile import find_config, read_config_file
    from ._core.config import ConfigError

    if not start or not os.path.isdir(start):
        return None, {}
    try:
        project = find_config(start)
    except (OSError, ValueError):
        return None, {}
    if project is None or (user_source is not None and os.path.realpath(project) == os.path.realpath(user_source)):
        return None, {}
    try:
        table = read_config_file(project)
        if not isinstance(table, Mapping):
            raise ConfigError("expected a table")
    except (ConfigError, ValueError, TypeError) as exc:
        if log is not None:
            log(f"project configuration ignored: {str(exc)[:200]}")
        return project, {}
    return project, dict(table)


def tighten(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`mine` (a trusted table) with what the untrusted `theirs` may change: a higher
    `mode`, `profile = "unattended"`, `stop = true`, `[hook] fail = "closed"`. Returns
    the new table and the keys `theirs` tightened."""
    merged = dict(mine)
    tightened = []
    mode, theirs_mode = merged.get("mode", "enforce"), theirs.get("mode")
    if theirs_mode in MODES and mode in MODES and MODES.index(theirs_mode) > MODES.index(mode):
        merged["mode"] = theirs_mode
        tightened.append("mode")
    if theirs.get("profile") == "unattended" and merged.get("profile") != "unattended":
        merged["profile"] = "unattended"
        tightened.append("profile")
    if theirs.get("stop") is True and merged.get("stop") is not True:
        merged["stop"] = True
        tightened.append("stop")
    hook_table = theirs.get("hook")
    mine_hook = merged.get("hook")
    mine_fail = mine_hook.get("fail") if isinstance(mine_hook, Mapping) else None
    if isinstance(hook_table, Mapping) and hook_table.get("fail") == "closed" and mine_fail != "closed":
        merged["hook"] = {**(mine_hook if isinstance(mine_hook, Mapping) else {}), "fail": "closed"}
        tightened.append("hook.fail")
    return merged, tightened


def trust_project(mine: Mapping[str, Any]) -> bool:
    """Does the user's own table say a project's file may loosen the guard too?"""
    table = mine.get("hook")
    return isinstance(table, Mapping) and table.get("trust_project") is True


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    start: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], None] | None = None,
    **overrides: Any,
) -> Any:
    """The `Config` for a guard started by the user (`loopwatch run`, `mcp-proxy`):
    `path` when given (the user named it: trusted), else the user's own file, which a
    project's file found from `start` (default: the working directory) may only
    tighten unless the user's file says `trust_project = true`. Keyword arguments
    (the command line's) and `LOOPWATCH_MODE` in `env` (the user's) come last.
    Raises `ConfigError`, also for a project file that cannot be read (the user
    started this guard and is told; the run does not start unguarded)."""
    from ._configfile import apply_env, find_config, read_config_file
    from ._core.config import Config, ConfigError

    if path:
        from ._configfile import load_config as load_trusted

        return load_trusted(path, env=env, **overrides)
    environ = os.environ if env is None else env
    mine_path = user_config(environ)
    source = mine_path if os.path.isfile(mine_path) else None
    mine: dict[str, Any] = read_config_file(source) if source else {}
    project = find_config(os.fspath(start) if start else os.getcwd())
    if project is not None and source is not None and os.path.realpath(project) == os.path.realpath(source):
        project = None
    theirs = read_config_file(project) if project is not None else {}
    if project is not None and log is not None:
        log(f"{project}: {'trusted' if trust_project(mine) else 'may only tighten (not trusted)'}")
    if theirs:
        try:
            Config.make(theirs)  # a broken project file is told, even where only its tightening counts
        except ConfigError as exc:
            raise ConfigError(f"{project}: {exc}") from None
        if trust_project(mine):
            hook = {**(mine.get("hook") or {}), **(theirs.get("hook") or {})}
            hook.pop("trust_project", None)
            data = {**mine, **theirs, **({"hook": hook} if hook else {})}
        else:
            data, _ = tighten(mine, theirs)
    else:
        data = mine
    try:
        return apply_env(Config.make(data, **overrides), environ)
    except ConfigError as exc:
        named = project if theirs and trust_project(mine) else source
        raise ConfigError(f"{named}: {exc}" if named else str(exc)) from None
