"""Where the hook keeps its state, which configuration it trusts, and which
profile a session gets.

Which configuration the hook trusts is `loopwatch._trust`'s to say (the user's own
file and environment are trusted; a project's loopwatch.toml, and the environment a
project's `.claude/settings.json` sets, may only tighten).

`loopwatch status` says which file set the mode (`HookSettings.origin`).

The hook's own settings live in the `[hook]` table of the user's file::

    [hook]
    fail = "open"          # "closed": deny a PreToolUse call loopwatch could not check
    busy_timeout = 10.0    # seconds without progress before a call waiting for the state gives up
    keep_days = 7.0        # sessions idle longer than this are pruned
    keep_sessions = 500    # at most this many (session, agent) states are kept
    trust_project = false  # true: a project's loopwatch.toml may loosen the guard too
    answer_within = 25.0   # seconds from its start: the hook answers by then whatever holds the state

Environment: `LOOPWATCH_STATE_DIR` (the state folder), `LOOPWATCH_CONFIG` (the
user's configuration file), `LOOPWATCH_PROFILE` (`attended` or `unattended`, wins
over everything), `LOOPWATCH_MODE` (the core's; `off` makes the hook return at once).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["HookSettings", "detect_profile", "load", "state_dir"]


#: The timeout `loopwatch install` writes for the hook (seconds): the host kills a hook
#: that runs longer, and the call then goes through unchecked and unlogged.
HOST_TIMEOUT = 30
#: The hook answers within this many seconds of being started (the host's clock, so
#: starting Python counts), whatever holds the state (a lock, a slow disk): it gives
#: up, logs it, and fails open or closed as `fail` says. 5 s of the host's timeout
#: are left for writing that answer on a busy machine.
ANSWER_WITHIN = 25.0


class HookSettings:
    """The `[hook]` table, validated. A plain class: imported on every hook call.
    `origin` says, in a few words, which file set the mode (for `status` and logs)."""

    NAMES = ("fail", "busy_timeout", "keep_days", "keep_sessions", "trust_project", "answer_within")

    def __init__(
        self,
        fail: str = "open",
        busy_timeout: float = 10.0,
        keep_days: float = 7.0,
        keep_sessions: int = 500,
        trust_project: bool = False,
        answer_within: float = ANSWER_WITHIN,
    ) -> None:
        self.fail, self.busy_timeout, self.keep_days, self.keep_sessions = fail, busy_timeout, keep_days, keep_sessions
        self.trust_project, self.answer_within = trust_project, answer_within
        self.origin = "mode: default"


def state_dir(env: Mapping[str, str] | None = None) -> str:
    """`$LOOPWATCH_STATE_DIR`, else `$XDG_STATE_HOME/loopwatch`, else
    `~/.local/state/loopwatch`."""
    env = os.environ if env is None else env
    explicit = env.get("LOOPWATCH_STATE_DIR")
    if explicit:
        return os.path.expanduser(explicit)
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "loopwatch")


def user_config(env: Mapping[str, str] | None = None) -> str:
    """The user's configuration file (`loopwatch._trust.user_config`)."""
    from .._trust import user_config as find

    return find(env)


def load(
    cwd: str | None, log: Any = None, tightened_by_env: Mapping[str, str] | None = None
) -> tuple[HookSettings, dict[str, Any], str | None]:
    """Read the configuration that applies to a session started in `cwd` (the trust
    rule is `loopwatch._trust`'s). `tightened_by_env`: what a project's environment may
    still tighten (`trust.trusted_environ`).

    Returns the hook settings, the raw core table (for `Config.make`, validated
    there), and the user's file it came from (None: defaults). Raises `ConfigError`
    for a broken user file; a broken project file is only told to `log`."""
    from .._configfile import read_config_file
    from .._core.config import ConfigError
    from .._trust import read_project, tighten

    candidate = user_config()
    source = candidate if os.path.isfile(candidate) else None
    data: dict[str, Any] = read_config_file(source) if source else {}
    try:
        settings = _settings(data.get("hook", {}))
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    if "mode" in data:
        settings.origin = f"mode: {source}"
    if tightened_by_env:
        data, raised = tighten(data, tightened_by_env)
        if "mode" in raised:
            settings.origin = "mode: raised by a project's environment (may only tighten)"
    project, theirs = read_project(cwd, source, log)
    if project is None or not theirs:
        return settings, data, source
    if settings.trust_project:
        merged = {**data, **theirs}
        table = theirs.get("hook", {})
        if isinstance(table, Mapping):
            merged["hook"] = {**data.get("hook", {}), **{k: v for k, v in table.items() if k != "trust_project"}}
        try:
            trusted = _settings(merged["hook"]) if "hook" in merged else settings
        except ConfigError as exc:
            raise ConfigError(f"{project}: {exc}") from None
        trusted.origin = f"mode: {project} (trusted: trust_project = true)" if "mode" in theirs else settings.origin
        return trusted, merged, source
    merged, tightened = tighten(data, theirs)
    if "mode" in tightened:
        settings.origin = f"mode: {project} (raised it; untrusted project files may only tighten)"
    if "hook.fail" in tightened:
        settings.fail = "closed"
    if not tightened:
        settings.origin += f"; {project} not trusted (may only tighten)"
    return settings, merged, source


def _settings(table: Any) -> HookSettings:
    from .._core.config import ConfigError, check_keys

    if not isinstance(table, Mapping):
        raise ConfigError("hook: expected a table")
    names = list(HookSettings.NAMES)
    check_keys("hook: ", table, names)
    values: dict[str, Any] = {}
    for name in names:
        if name not in table:
            continue
        value = table[name]
        if name == "fail":
            if value not in ("open", "closed"):
                raise ConfigError(f'hook.fail: {value!r} is not "open" or "closed"')
        elif name == "trust_project":
            if not isinstance(value, bool):
                raise ConfigError(f"hook.trust_project: expected true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"hook.{name}: expected a number > 0, got {value!r}")
        elif name == "keep_sessions":
            value = int(value)
        else:
            value = float(value)
        values[name] = value
    return HookSettings(**values)


def detect_profile(
    host: str, config: Mapping[str, Any], env: Mapping[str, str] | None = None, payload: Any = None
) -> tuple[str, str]:
    """The profile for a new session of `host`, and why.

    In order: `LOOPWATCH_PROFILE`; `profile` in the configuration file; a
    non-interactive run (`unattended`); else `attended`. A run is non-interactive when
    the host's environment says so (`Host.detect_profile`: Claude Code's
    `CLAUDE_CODE_ENTRYPOINT=sdk-*`, Gemini CLI's `CI=true`; or what the host records of
    the session of `payload`: Cline's session record), or, on Linux, when an ancestor
    process is the host run headless (`Host.headless_process`: `claude -p`, `codex exec`,
    `gemini -p` or Gemini CLI with no terminal, ...), read from /proc.

    Limits: outside Linux only the environment is seen, so a host that says nothing
    there gets `attended` (nudge and block, no stop) unless configured; a wrapper that
    re-executes the agent under another name is not recognised."""
    env = os.environ if env is None else env
    explicit = env.get("LOOPWATCH_PROFILE", "").strip().lower()
    if explicit in ("attended", "unattended"):
        return explicit, "LOOPWATCH_PROFILE"
    if isinstance(config.get("profile"), str):
        return config["profile"], "configuration"
    from .._hosts import host as host_named

    agent = host_named(host)
    said = agent.detect_profile(env, payload)
    if said is not None:
        return said
    from .._hosts.base import ancestors

    for pid, argv in ancestors(6):
        verdict = agent.headless_process(pid, argv)
        if verdict is not None:
            return ("unattended", verdict) if verdict else ("attended", "interactive")
    return "attended", "interactive"


def _headless_argv(argv: list[str], host: str | None = None) -> str | None:
    """ "claude -p" / "codex exec" (and so on) if argv is a headless agent run, "" if it
    is the agent run interactively, None if it is not that agent (any host's, by
    default)."""
    from .._hosts import HOSTS
    from .._hosts import host as host_named

    for name in [host] if host else list(HOSTS):
        verdict = host_named(name).headless(argv)
        if verdict is not None:
            return verdict
    return None
