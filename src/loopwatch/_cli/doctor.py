"""`loopwatch doctor`: is the live guard in place and working? What a user runs when
"nothing happens".

For each host (one check function per host, registered in `CHECKS`): is the hook
installed, and for every event loopwatch needs; can it run (the installed command is
run once, as the agent would run it, on a harmless payload, with a throwaway state
folder); which version of the agent's CLI is on PATH. Each problem is one line saying
what is wrong and what to do; the exit status is 0 when there is none, 1 otherwise
(2 for bad usage).

It only reads: settings are never changed, and the dry run writes only to its own
temporary folder. It runs the hook command of the user's own settings only: a
command found in a project's settings is the repository's, and is never run. It does not start the agent itself, so it cannot tell whether the
agent honours what the hook answers (the real-client tests pin that).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import click

from .. import _exits as exits
from .. import _trust as trust
from .._hosts import HOSTS
from .._hosts import host as host_named
from .._hosts.base import AFTER, Host
from ._common import CONTEXT
from .dry_run import dry_run

__all__ = ["CHECKS", "Line", "check_claude_code", "check_host", "doctor"]

_DRY_RUN_TIMEOUT = 30.0  # seconds: the timeout `loopwatch install` gives the hook
_VERSION_TIMEOUT = 20.0


class Line(NamedTuple):
    """One finding of a check: `ok` (all is well here), `problem` (one line: what is
    wrong and what to do) or `info` (worth knowing, not wrong)."""

    status: str
    text: str


def check_host(name: str, env: Mapping[str, str], cwd: Path) -> list[Line]:
    """One host: the hook in its settings files (each scope `install` knows), runnable,
    what a project holds that would switch it off, and the CLI's version. Only the
    user's own command is run: a project's settings are the repository's, and nothing
    from a repository is run (`loopwatch._trust`)."""
    host = host_named(name)
    lines: list[Line] = []
    # The user's own file and the machine's (`system`, written by its administrator) are
    # trusted: their commands may be run. A project's are the repository's.
    own = {scope: host.settings_file(scope, env, cwd) for scope in ("user", "system") if scope in host.scopes}
    found: dict[str, list[str]] = {}  # event -> the loopwatch commands hooked on it
    mine: dict[str, list[str]] = {}  # event -> the commands of the user's (or the system's) file
    where: list[Path] = []
    for scope in host.scopes:
        if host.shape(scope) == "pin":
            continue  # no hook there: what it holds is in `switch_offs`
        path = host.settings_file(scope, env, cwd)
        try:
            if not path.exists():
                continue
            settings = _settings(host, path)
        except (OSError, ValueError) as exc:
            lines.append(
                Line(
                    "problem",
                    f"{path}: unreadable ({exc}); {host.title} ignores a broken settings file: fix it, "
                    f"or move it away and run `loopwatch install {name}` again",
                )
            )
            continue
        if not isinstance(settings, dict):
            lines.append(
                Line(
                    "problem",
                    f"{path}: not a JSON object; fix it, or move it away and run `loopwatch install {name}` again",
                )
            )
            continue
        commands = host.hooked(settings)
        if commands:
            where.append(path)
            unread = host.unread(scope, path)
            if unread:
                lines.append(Line("problem", unread))
        for event, cmds in commands.items():
            found.setdefault(event, []).extend(cmds)
            if path in own.values():
                mine.setdefault(event, []).extend(cmds)
    lines.extend(switch_off_lines(host, env, cwd))
    not_here = host.runs_here(cwd, env)
    if not_here is not None:
        lines.append(Line("problem", not_here))
    for variable, (value, setter) in trust.env_file_settings(host, cwd, env).items():
        lines.append(
            Line(
                "info",
                f"{variable}={value} is set by {setter}, which {host.title} hands to its hooks: "
                "the hook does not trust it (a project may only tighten)",
            )
        )
    if not found:
        lines.append(Line("problem", f"the hook is not installed: run `loopwatch install {name}`"))
    else:
        missing = [e for e in host.hooked_events if e not in found]
        if missing:
            lines.append(
                Line(
                    "problem",
                    f"the hook is not installed for {', '.join(missing)} "
                    f"(an older install): run `loopwatch install {name}` again",
                )
            )
        else:
            lines.append(
                Line("ok", f"hook installed for {len(host.hooked_events)} events in {', '.join(str(p) for p in where)}")
            )
        twice = [e for e, cmds in found.items() if len(cmds) > 1]
        if twice:
            lines.append(
                Line(
                    "info",
                    f"loopwatch is hooked more than once on {', '.join(twice)} "
                    "(user and project settings both?): each call is then counted by each",
                )
            )
        if any(_imports_the_project(c) for cmds in mine.values() for c in cmds):
            lines.append(
                Line(
                    "problem",
                    "the hook command runs `python -m loopwatch`, which imports a `loopwatch` folder in the "
                    f"agent's project before this one (an older install): run `loopwatch install {name}` again",
                )
            )
        if mine:
            lines.append(_dry_run(host, _probe_command(host, mine), env, cwd))
        else:
            lines.extend(_project_command(name, _probe_command(host, found), env, cwd))
    if name == "claude-code":  # Claude Code hands a project's settings "env" to hooks
        untrusted = trust.project_env([str(cwd)], env)
        for variable, (value, setter) in untrusted.items():
            lines.append(
                Line(
                    "info",
                    f"{variable}={value} is set by {setter}: the hook does not trust it (a project may only tighten)",
                )
            )
    else:
        untrusted = {}
    if env.get("LOOPWATCH_MODE", "").strip().lower() == "off" and "LOOPWATCH_MODE" not in untrusted:
        lines.append(
            Line(
                "problem",
                "LOOPWATCH_MODE=off is set here: the hook does nothing in this environment; "
                "unset it (`unset LOOPWATCH_MODE`) where you start the agent",
            )
        )
    if host.documented_only:
        lines.append(
            Line("info", f"{host.title}'s guard is built from its documentation alone: untested against the real CLI")
        )
    lines.append(_version(host, env))
    return lines


def _imports_the_project(command: str) -> bool:
    """Does `command` run `python -m loopwatch` without `-P` or `-I`? Then the working
    folder, the agent's project, is first on the module path: a `loopwatch` package the
    agent writes there would run as the guard."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1] == "loopwatch":
            flags = [w for w in words[1:i] if w.startswith("-") and not w.startswith("--")]
            return not any("P" in w or "I" in w for w in flags)
    return False


def _probe_command(host: Host, commands: dict[str, list[str]]) -> str:
    """The command to run on `probe_payload`, an after-call payload: the one hooked on the
    after-call event (a host whose payloads name no event has one command per event)."""
    after = next((e for e, guard in host.events.items() if guard == AFTER and e in commands), None)
    return commands[after or next(iter(commands))][0]


def switch_off_lines(host: Host, env: Mapping[str, str], cwd: Path) -> list[Line]:
    """What switches the host's hooks off here (`Host.switch_offs`): a problem, with what
    to do about it, where the guard is off now; worth knowing where it is not yet, or is
    held on whatever the setting says (kind "held": what holds is in its words)."""
    return [
        Line("problem", f"{off.path}: {off.what}; {host.switch_off_advice()}")
        if off.kind == "off"
        else Line("info", f"{off.path}: {off.what}")
        for off in host.switch_offs(cwd, env)
    ]


def _settings(host: Host, path: Path) -> object:
    """What `install` edits at `path`: a JSON settings file, or a folder of hook files
    (`Host.settings_shape`)."""
    if host.settings_shape == "files":
        if not path.is_dir():
            raise OSError(f"{path} is not a folder")
        return host.read_folder(path)
    return json.loads(path.read_text(encoding="utf-8") or "{}")


def check_claude_code(env: Mapping[str, str], cwd: Path) -> list[Line]:
    """Claude Code (`check_host`)."""
    return check_host("claude-code", env, cwd)


def _project_command(name: str, command: str, env: Mapping[str, str], cwd: Path) -> list[Line]:
    """A hook installed only in a project's settings: its command is the repository's,
    so it is not run. Said instead: whether it is the portable `loopwatch hook ...`
    (what `install --project` writes) and whether this machine's `loopwatch` runs."""
    import shlex

    try:
        argv = shlex.split(command)
    except ValueError:
        argv = []
    lines = [
        Line(
            "info",
            f"the hook command in the project's settings was not run (doctor runs nothing from a repository): {command[:200]}",
        )
    ]
    if argv[:1] != ["loopwatch"]:
        lines.append(
            Line(
                "problem",
                "the project's hook command names a program of its own, which may not exist on a teammate's machine: "
                f"reinstall with `loopwatch install {name} --project`",
            )
        )
        return lines
    binary = shutil.which("loopwatch", path=env.get("PATH"))
    inside = binary is not None and os.path.realpath(binary).startswith(os.path.realpath(cwd) + os.sep)
    if inside:
        lines.append(
            Line(
                "problem",
                f"the `loopwatch` on PATH here is the repository's ({binary}): not run; install loopwatch "
                "for yourself (pipx install loopwatch) and put it first on PATH",
            )
        )
        return lines
    if binary is None:
        lines.append(
            Line("problem", "`loopwatch` is not on PATH here, so the project's hook cannot run: install loopwatch")
        )
        return lines
    # This machine's `loopwatch` with the command's own words up to any shell operator
    # (`... || true`): quoted, never handed to the shell as the repository wrote them.
    words = list(itertools.takewhile(lambda word: word not in _SHELL_OPERATORS, argv[1:]))
    lines.append(_dry_run(host_named(name), shlex.join([binary, *words]), env, cwd))
    return lines


_SHELL_OPERATORS = frozenset({"||", "&&", ";", "|", "&"})


def check_codex(env: Mapping[str, str], cwd: Path) -> list[Line]:
    """Codex: installed, trusted (Codex's own word), runnable, `codex --version`; the
    checks themselves are in `doctor_codex`."""
    from .doctor_codex import check_codex as run_checks

    codex = host_named("codex")
    lines = switch_off_lines(codex, env, cwd)
    held = codex.held(env, cwd)
    if held is not None:
        lines.append(Line("ok", f"hooks kept on: {held}"))
    return lines + [
        Line("ok" if ok else "problem", text.removeprefix("codex: ")) for ok, text in run_checks(env, cwd=str(cwd))
    ]


#: The check of each host: `check_host`, unless the host needs more (Codex: its trust).
CHECKS: dict[str, Callable[[Mapping[str, str], Path], list[Line]]] = {
    **{name: functools.partial(check_host, name) for name in HOSTS},
    "codex": check_codex,
}


def _set_up(host: str, env: Mapping[str, str], cwd: Path) -> bool:
    """Is there anything of this host here: its CLI on PATH, or a settings file
    `install` writes? A bare `loopwatch doctor` checks only those, so a Claude-only
    user is not told that Codex is missing."""
    found = host_named(host)
    if shutil.which(found.binary, path=env.get("PATH")):
        return True
    for scope in found.scopes:
        if scope == "system":  # the machine's settings folder says nothing of this user's CLIs
            continue
        try:
            if found.settings_file(scope, env, cwd).parent.is_dir():
                return True
        except OSError:
            continue
    return False


def _dry_run(host: Host, command: str, env: Mapping[str, str], cwd: Path) -> Line:
    """Run the installed command as the host does (through the shell, payload on stdin)
    on a harmless after-call payload (`Host.probe_payload`), with a throwaway state
    folder."""
    ran = dry_run(command, lambda folder: host.probe_payload(folder, str(cwd)), env, cwd, _DRY_RUN_TIMEOUT)
    done = ran.done
    reinstall = f"reinstall with `loopwatch install {host.name}`"
    if done is None:
        return Line("problem", f"the hook command {ran.failure}; {reinstall}: {command}")
    why = (done.stderr.strip().splitlines() or [""])[-1][:200]
    if done.returncode != 0:
        return Line(
            "problem",
            f"the hook command fails (exit {done.returncode}{': ' + why if why else ''}); "
            f"reinstall with `loopwatch install {host.name}`: {command}",
        )
    if done.stdout.strip():
        try:
            json.loads(done.stdout)
        except ValueError:
            return Line(
                "problem", f"the hook command prints something that is not JSON ({done.stdout[:100]!r}); {reinstall}"
            )
    if ran.log:
        return Line("problem", f"the hook ran but could not check the call ({ran.log[:200]}); {reinstall}")
    if not ran.wrote_state:
        said = f" and said: {why}" if why else ""
        return Line(
            "problem",
            f"the hook command ran but loopwatch did nothing{said}; remove LOOPWATCH_MODE=off from its "
            f"environment, or {reinstall}: {command}",
        )
    return Line("ok", f"hook runs: a dry-run call answered in {ran.took_ms:.0f} ms")


def _version(host: Host, env: Mapping[str, str]) -> Line:
    binary = shutil.which(host.binary, path=env.get("PATH"))
    if binary is None:
        get = f" (`npm install -g {host.package}`)" if host.package else ""
        return Line(
            "problem",
            f"`{host.binary}` not found on PATH (the hook needs {host.title} itself to run it): "
            f"install it{get}, or put it on PATH",
        )
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=_VERSION_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        # Slow to start is not broken (a large binary on a busy machine): the guard does
        # not need the version, so it is not known rather than a problem.
        return Line("info", f"`{binary} --version` did not answer within {_VERSION_TIMEOUT:g} s: version not known")
    except OSError as exc:
        return Line("problem", f"`{binary} --version` did not answer ({exc}); reinstall {host.title}")
    text = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    if done.returncode != 0 or not text:
        return Line("problem", f"`{binary} --version` failed (exit {done.returncode}); reinstall {host.title}")
    # The first word that looks like a version: `2.1.197 (Claude Code)`, `codex-cli
    # 0.171.0`, `GitHub Copilot CLI 1.0.102.`
    import re

    found = re.search(r"\d+\.\d+(?:\.\d+)?(?:[-+][\w.]+)?", text)
    return Line("info", f"{host.title} {found.group(0) if found else text.split()[0]} ({binary})")


@click.command(context_settings=CONTEXT, epilog=exits.epilog("doctor"))
@click.argument("hosts", nargs=-1, type=click.Choice(sorted(CHECKS)))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line: host, status, text.")
def doctor(hosts: tuple[str, ...], as_json: bool) -> None:
    """Check that loopwatch's live guard is installed and works (all hosts, or HOSTS).

    \b
    loopwatch doctor               # every host that is set up here
    loopwatch doctor claude-code
    loopwatch doctor codex

    For each host: whether the hook is installed for every event it needs, whether the
    installed command runs (one dry-run call on a harmless payload, in a throwaway
    state folder), whether a project setting here would switch it off, and the agent
    CLI's version. Each problem is a line saying what to do. Changes nothing.
    """
    env = dict(os.environ)
    cwd = Path.cwd()
    problems = 0
    checked = 0
    for host in hosts or tuple(CHECKS):
        here = bool(hosts) or _set_up(host, env, cwd)
        checked += here
        lines = (
            CHECKS[host](env, cwd)
            if here
            else [Line("info", "not set up here (no CLI on PATH, no settings folder): skipped")]
        )
        problems += _show(host, lines, as_json)
    if not hosts and not checked:  # of no host in particular
        problems += _show(
            None,
            [Line("problem", "no agent CLI is set up here, so nothing is guarded: `loopwatch install` lists them")],
            as_json,
        )
    if problems:
        raise SystemExit(1)


def _show(host: str | None, lines: list[Line], as_json: bool) -> int:
    """Print `lines` (`host` None: of every host, `doctor: ...`); how many are problems."""
    for line in lines:
        if as_json:
            click.echo(json.dumps({"host": host, "status": line.status, "text": line.text}))
        else:
            click.echo(f"{host or 'doctor'}: {line.status}: {line.text}")
    return sum(line.status == "problem" for line in lines)
