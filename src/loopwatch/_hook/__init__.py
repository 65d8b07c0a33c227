"""`loopwatch hook`: the live guard an agent CLI (Claude Code, Codex, Gemini CLI, GitHub
Copilot CLI, ...) runs around every tool call.

    loopwatch hook [HOST|auto] [EVENT] < payload.json

Reads one hook event on stdin, feeds it to the session's monitor (state kept in
SQLite between calls, see `loopwatch._hook.state`) and answers in the host's own
terms (`loopwatch._hosts.<host>`): a nudge as additional context for the model, a block
as the denial reason, a stop as the host honours one (`continue: false`; for a host that
honours none, the host's headless process is ended). Installed by `loopwatch install`.

It never gets in the way: any internal error, a locked or damaged database, a
malformed payload or an unknown event means "allow", with one line in
`hook.log` in the state folder. With `fail = "closed"` in `[hook]`, a PreToolUse
call loopwatch could not check is denied instead, also when it cannot answer within
`[hook] answer_within` seconds (a watchdog answers for it). `LOOPWATCH_MODE=off`
returns at once, unless a project set it (a project's Claude Code settings, a `.env`
Gemini CLI loads: `loopwatch._trust`).

This module is on the hot path: it imports only the standard library and
the loopwatch core, never click or rich.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .respond import Reply

__all__ = ["main"]

_LOG_LIMIT = 1 << 20  # hook.log is rotated past 1 MiB
_MAX_PAYLOAD = 8 * 1024 * 1024  # stdin read; a larger payload is drained and only identified

#: The first line of `--help` and of an error, as click words them for every other command.
_USAGE_LINE = "Usage: loopwatch hook [OPTIONS] [HOST [EVENT]]"

USAGE = (
    _USAGE_LINE
    + """

  Read one agent CLI's hook event (JSON) on stdin and answer it: allow, nudge
  the model, deny a call that repeats with nothing changed, or end a run that
  will not stop. Installed for you by `loopwatch install HOST`; see `loopwatch
  status` for what it has seen.

{hosts}

  State:    $LOOPWATCH_STATE_DIR or $XDG_STATE_HOME/loopwatch (state.db,
            hook.log)
  Disable:  LOOPWATCH_MODE=off
  Profile:  attended (nudge, then block); unattended (nudge, then stop) for a
            headless run (`claude -p`, `codex exec`, `copilot -p`, ...); force
            with LOOPWATCH_PROFILE.
  Settings: the [hook] table of your own ~/.config/loopwatch/loopwatch.toml (or
            $LOOPWATCH_CONFIG): fail = "open" | "closed", busy_timeout,
            keep_days, keep_sessions, trust_project, answer_within (25 s: it
            answers by then, whatever holds its state). A project's
            loopwatch.toml, and the environment a project's settings set, may
            only tighten the guard.

Options:
  -h, --help  Show this message and exit.
"""
)


def usage() -> str:
    """`--help`, as click shows every other command's: the exit status from the one table."""
    import textwrap

    from .. import _exits
    from .._hosts import HOSTS

    hosts = textwrap.fill(
        f"HOST is one of {', '.join(HOSTS)}, or auto (Claude Code or Codex, told apart by the payload: "
        "Codex sends `turn_id`). EVENT names the event for a host whose payloads do not (install writes it).",
        78,
        initial_indent="  ",
        subsequent_indent="  ",
    )
    return f"{USAGE.format(hosts=hosts)}\n{textwrap.indent(_exits.epilog('hook', marked=False), '  ')}\n"


def main(argv: list[str] | None = None) -> int:
    from .._hosts import HOSTS

    args = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(usage())
        return 0
    host = args[0] if args else "auto"
    event = args[1] if len(args) > 1 else None
    if (host not in HOSTS and host != "auto") or len(args) > 2:
        names = ", ".join([*HOSTS, "auto"])
        sys.stderr.write(
            f"{_USAGE_LINE}\nTry 'loopwatch hook -h' for help.\n\n"
            f"Error: expected HOST [EVENT], HOST one of {names}; got {' '.join(args)!r}\n"
        )
        return 0  # a typo in a settings file must not block the agent: allow, loudly
    # Claude Code hands a project's `.claude/settings.json` "env" to hooks, Gemini CLI a
    # project's `.env`: what the project set is taken out before anything reads the
    # environment.
    from .._trust import trusted_environ

    notes: list[str] = []
    try:
        agent = None
        if host != "auto":
            from .._hosts import host as host_named

            agent = host_named(host)
        tightened = trusted_environ(os.environ, _project_folders(), notes.append, agent)
    except Exception as exc:  # noqa: BLE001 - cannot tell who set it: nothing that loosens is believed
        tightened = {}
        for name in ("LOOPWATCH_MODE", "LOOPWATCH_PROFILE"):
            os.environ.pop(name, None)
        notes.append(f"project settings not read ({type(exc).__name__}); LOOPWATCH_MODE/PROFILE ignored")
    if os.environ.get("LOOPWATCH_MODE", "").strip().lower() == "off":
        _drain()
        return 0
    return _run(host, event, tightened, notes)


def _project_folders() -> list[str]:
    """Where the project's Claude Code settings are: the folder the host runs us in
    and the project folder it names."""
    folders = []
    try:
        folders.append(os.getcwd())
    except OSError:
        pass
    if os.environ.get("CLAUDE_PROJECT_DIR"):
        folders.append(os.environ["CLAUDE_PROJECT_DIR"])
    return folders


class _Watchdog:
    """Answers for the hook when it cannot answer in time (a lock held, a disk that
    hangs): the host would kill it at its timeout, and the call would then run
    unchecked with nothing logged. At `within` seconds it logs the call, answers
    allow, or deny under `fail = "closed"`, and ends the process. Whoever answers
    first (the hook or the watchdog) takes `answering`; the other never writes."""

    def __init__(self, host: str, folder: str, within: float, native: str | None = None) -> None:
        import threading

        self.host, self.folder, self.native = host, folder, native
        self.event = self.session = "?"
        self.data = b""
        self.fail_closed: bool | None = None
        self.answering = threading.Lock()
        self.began = _started()
        self._timer: threading.Timer | None = None
        self.arm(within)

    def arm(self, within: float) -> None:
        import threading

        if self._timer is not None:
            self._timer.cancel()
        self.within = within
        self._timer = threading.Timer(max(within - (time.monotonic() - self.began), 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    @property
    def deadline(self) -> float:
        """When the hook's own waits should give up: a second before the watchdog."""
        return self.began + max(self.within - 1.0, self.within / 2)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _fire(self) -> None:
        if not self.answering.acquire(blocking=False):
            return
        try:
            code = _fail(
                self.host,
                self.folder,
                self.native or self.event,
                self.session,
                self.data,
                self.fail_closed,
                f"no answer within {self.within:g}s (answer_within)",
            )
        except BaseException:  # noqa: BLE001 - the process ends here whatever happens
            code = 0
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _started() -> float:
    """When this process was started, on `time.monotonic()`'s clock: the host's timeout
    runs from then, and starting Python on a busy machine can take seconds. Linux
    says (/proc); elsewhere, now."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", "rb") as fh:
            ticks = int(fh.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - min(max(age, 0.0), 60.0)


def _run(
    host: str, event: str | None = None, tightened: dict[str, str] | None = None, notes: list[str] | None = None
) -> int:
    from .settings import ANSWER_WITHIN, state_dir

    folder = state_dir()
    watchdog = _Watchdog(host, folder, ANSWER_WITHIN, event)
    try:
        code = _check(host, folder, watchdog, tightened, notes)
    except BaseException:
        watchdog.cancel()
        raise
    watchdog.cancel()
    return code


def _check(
    host: str, folder: str, watchdog: _Watchdog, tightened: dict[str, str] | None, notes: list[str] | None
) -> int:
    event = session = "?"
    data = b""
    fail_closed: bool | None = None
    try:
        from .._hosts.base import RESUME
        from .payload import EVENTS, parse, read_stdin

        data, oversize = read_stdin(_MAX_PAYLOAD)
        watchdog.data = data
        payload = parse(data, host, oversize, watchdog.native)
        event, session = payload.event, payload.session
        host = payload.host
        watchdog.host, watchdog.native = host, payload.native
        watchdog.event, watchdog.session = event, session
        if oversize:
            _log(folder, event, session, f"payload over {_MAX_PAYLOAD} bytes: identified, not read")
        for note in notes or ():
            _log(folder, event, session, note)
        if event not in EVENTS:
            _log(folder, event, session, "unknown event: allowed")
            return 0
        if event == RESUME and _never_stopped(folder, session, payload.agent):
            return 0  # the agent goes on, and nothing was stopped: nothing to load, nothing to say
        from . import settings as hook_settings

        config_settings, config, _ = hook_settings.load(
            payload.cwd, log=lambda line: _log(folder, event, session, line), tightened_by_env=tightened
        )
        fail_closed = watchdog.fail_closed = config_settings.fail == "closed"
        if config_settings.answer_within != watchdog.within:
            watchdog.arm(config_settings.answer_within)
        from .guard import handle
        from .state import Store

        def log(line: str) -> None:
            _log(folder, event, session, line)

        store = Store(
            folder,
            config_settings.busy_timeout,
            config_settings.keep_days,
            config_settings.keep_sessions,
            log=log,
            origin=config_settings.origin,
            deadline=watchdog.deadline,
        )
        try:
            answer = handle(payload, config, store, log=log)
        finally:
            store.close()
        if not watchdog.answering.acquire(blocking=False):
            _hang()  # the watchdog is answering; it ends the process
    except Exception as exc:  # noqa: BLE001 - any failure: fail open (or closed, for a call we could not check)
        if not watchdog.answering.acquire(blocking=False):
            _hang()
        return _fail(
            host,
            folder,
            watchdog.native or event,
            session,
            data,
            fail_closed,
            f"{type(exc).__name__}: {str(exc)[:300]}",
        )
    # Outside the failure path above: this thread holds `answering` now, so a failure to
    # write (the host gone, its end of the pipe closed) must end the call, not wait for a
    # watchdog that will never answer.
    try:
        return _write(answer)
    except OSError:
        _log(folder, event, session, "the answer could not be written (the host has gone): none given")
        with contextlib.suppress(OSError):  # what is left in the buffer goes nowhere at exit, quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _never_stopped(folder: str, session: str, agent: str) -> bool:
    """Was (session, agent) never stopped, by the state's count of stops? Read without
    loading the guard (a host that asks before every model request asks often). Any
    doubt (no database yet, a link, an error) is False: the whole guard then decides."""
    import sqlite3
    import stat
    from urllib.parse import quote

    path = os.path.join(folder, "state.db")
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode) or os.path.islink(folder):
            return False
        db = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=1.0, isolation_level=None)
        try:
            row = db.execute("SELECT stops FROM sessions WHERE session = ? AND agent = ?", (session, agent)).fetchone()
        finally:
            db.close()
    except (OSError, sqlite3.Error):
        return False
    return row is not None and row[0] == 0


def _hang() -> None:
    while True:
        time.sleep(60)


def _fail(host: str, folder: str, event: str, session: str, data: bytes, fail_closed: bool | None, why: str) -> int:
    """A call loopwatch could not check: one line in hook.log, then allow, or deny a
    before-call event under `fail = "closed"`. `event` is in the host's words."""
    if event == "?":
        event = _probe_event(data)
    if fail_closed is None:
        fail_closed = _user_fails_closed()
    if host == "auto":
        host = "codex" if b'"turn_id"' in data else "claude-code"
    refused = False
    if fail_closed:
        from .._hosts import HOSTS
        from .._hosts import host as host_named
        from .._hosts.base import BEFORE

        refused = host in HOSTS and host_named(host).events.get(event) == BEFORE
    _log(folder, event, session, f"{why}; " + ("denied (fail = closed)" if refused else "allowed"))
    if refused:
        from .._core.messages import Unchecked
        from .respond import refuse

        return _write(refuse(host, Unchecked(why.split(":")[0]).for_model(), event))
    return 0


def _probe_event(data: bytes) -> str:
    """The event name of a payload that could not be parsed, if it can be seen."""
    import re

    match = re.search(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"', data[: 1 << 16])
    return match.group(1).decode() if match else "?"


def _user_fails_closed() -> bool:
    """`fail` from the user's own configuration, for a call that failed before the
    configuration was read (an unreadable payload)."""
    try:
        from .settings import load

        return load(None)[0].fail == "closed"
    except (OSError, ValueError):  # a broken user file: its `fail` cannot be known
        return False


def _write(answer: Reply) -> int:
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


def _log(folder: str, event: str, session: str, text: str) -> None:
    """One line in hook.log: when, which event and session, what happened. Never
    the payload. hook.log is 0600 and never opened through a symlink; when it
    cannot be written (a read-only folder, a full disk, a folder not private to
    the user), the line goes to stderr, which the host shows or logs."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    line = f"{stamp} pid={os.getpid()} {event[:40]} session={session[:12]} {text}\n"
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        from .state import private_file, secure_folder

        repaired = secure_folder(folder)
        if repaired:
            line = (
                "".join(f"{stamp} pid={os.getpid()} {event[:40]} session={session[:12]} {n}\n" for n in repaired) + line
            )
        path = os.path.join(folder, "hook.log")
        try:
            if os.lstat(path).st_size > _LOG_LIMIT:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fd = private_file(path)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        try:
            sys.stderr.write(f"loopwatch hook: {line.rstrip()} (hook.log not written: {exc.strerror or exc})\n")
        except (OSError, ValueError):
            pass
