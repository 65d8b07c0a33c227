"""`loopwatch hook`: the live guard Claude Code and Codex run around every tool call.

    loopwatch hook [claude-code|codex|auto] < payload.json

Reads one hook event on stdin, feeds it to the session's monitor (state kept in
SQLite between calls, see `loopwatch.hook.state`) and answers in the host's own
terms: a nudge as additional context for the model, a block as the denial reason,
a stop as `continue: false`. Installed by `loopwatch install`.

It never gets in the way: any internal error, a locked or damaged database, a
malformed payload or an unknown event means "allow", with one line in
`hook.log` in the state folder. With `fail = "closed"` in `[hook]`, a PreToolUse
call loopwatch could not check is denied instead. `LOOPWATCH_MODE=off` returns at
once.

This module is on the hot path: it imports only the standard library and
the loopwatch core, never click or rich.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["main"]

HOSTS = ("claude-code", "codex", "auto")
_LOG_LIMIT = 1 << 20  # hook.log is rotated past 1 MiB
_MAX_PAYLOAD = 8 * 1024 * 1024  # stdin read; a larger payload is drained and only identified

USAGE = """\
usage: loopwatch hook [claude-code|codex|auto]

Read one Claude Code or Codex hook event (JSON) on stdin and answer it: allow,
nudge the model, deny a call that repeats with nothing changed, or end a run that
will not stop. Installed for you by `loopwatch install claude-code` or
`loopwatch install codex`; see `loopwatch status` for what it has seen.

The host is told apart by the payload (Codex sends `turn_id`) unless given.
State:    $LOOPWATCH_STATE_DIR or $XDG_STATE_HOME/loopwatch (state.db, hook.log)
Disable:  LOOPWATCH_MODE=off
Profile:  attended (nudge, then block); unattended (nudge, then stop) for
          `claude -p` and `codex exec`; force with LOOPWATCH_PROFILE.
Settings: the [hook] table of loopwatch.toml: fail = "open" | "closed", busy_timeout,
          keep_days, keep_sessions.
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(USAGE)
        return 0
    host = args[0] if args else "auto"
    if host not in HOSTS or len(args) > 1:
        sys.stderr.write(f"loopwatch hook: expected one of {', '.join(HOSTS)}, got {' '.join(args)!r}\n")
        return 0  # a typo in a settings file must not block the agent: allow, loudly
    if os.environ.get("LOOPWATCH_MODE", "").strip().lower() == "off":
        _drain()
        return 0
    return _run(host)


def _run(host: str) -> int:
    from .settings import state_dir

    folder = state_dir()
    event = session = "?"
    fail_closed = False
    try:
        from .payload import EVENTS, parse, read_stdin

        data, oversize = read_stdin(_MAX_PAYLOAD)
        payload = parse(data, host, oversize)
        event, session = payload.event, payload.session
        if oversize:
            _log(folder, event, session, f"payload over {_MAX_PAYLOAD} bytes: identified, not read")
        if event not in EVENTS:
            _log(folder, event, session, "unknown event: allowed")
            return 0
        from . import settings as hook_settings

        config_settings, config, _ = hook_settings.load(payload.cwd)
        fail_closed = config_settings.fail == "closed"
        from .guard import handle
        from .state import Store

        store = Store(folder, config_settings.busy_timeout, config_settings.keep_days, config_settings.keep_sessions)
        try:
            answer = handle(payload, config, store, log=lambda line: _log(folder, event, session, line))
        finally:
            store.close()
        return _write(answer)
    except Exception as exc:  # fail open (or closed, for a call we could not check)
        _recover(folder, exc)
        _log(folder, event, session, f"{type(exc).__name__}: {str(exc)[:300]}; "
             + ("denied (fail = closed)" if fail_closed and event == "PreToolUse" else "allowed"))
        if fail_closed and event == "PreToolUse":
            from .respond import refuse

            return _write(refuse(
                "codex" if host == "codex" else "claude-code",
                f"loopwatch could not check this call ({type(exc).__name__}) and is set to fail closed; "
                "see hook.log in the loopwatch state folder",
            ))
        return 0


def _write(answer) -> int:
    if answer.stdout is not None:
        import json

        sys.stdout.write(json.dumps(answer.stdout))
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr)
    return answer.code


def _drain() -> None:
    try:
        while sys.stdin.buffer.read(1 << 20):
            pass
    except (OSError, ValueError):
        pass


def _recover(folder, exc: Exception) -> None:
    """A database that is not one (damaged, or another file) is moved aside, so the
    next call starts a fresh one instead of failing forever."""
    import sqlite3

    text = str(exc)
    if not isinstance(exc, sqlite3.DatabaseError) or not ("not a database" in text or "malformed" in text):
        return  # locked, busy, disk full...: nothing to move
    path = os.path.join(folder, "state.db")
    try:
        if os.path.exists(path):
            aside = f"{path}.broken-{int(time.time())}"
            os.rename(path, aside)
            for suffix in ("-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.rename(path + suffix, aside + suffix)
            _log(folder, "?", "?", f"moved an unreadable state database aside to {os.path.basename(aside)}")
    except OSError:
        pass


def _log(folder, event: str, session: str, text: str) -> None:
    """One line in hook.log: when, which event and session, what happened. Never
    the payload."""
    try:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "hook.log")
        try:
            if os.stat(path).st_size > _LOG_LIMIT:
                os.replace(path, path + ".1")
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} pid={os.getpid()} {event} session={session[:12]} {text}\n")
    except OSError:
        pass
