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

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import click

from .. import _trust as trust
from .._hosts import claude_code
from .dry_run import dry_run
from .install import is_ours, settings_path

__all__ = ["CHECKS", "Line", "check_claude_code", "doctor"]

_DRY_RUN_TIMEOUT = 30.0  # seconds: the timeout `loopwatch install` gives the hook
_VERSION_TIMEOUT = 20.0


class Line(NamedTuple):
    """One finding of a check: `ok` (all is well here), `problem` (one line: what is
    wrong and what to do) or `info` (worth knowing, not wrong)."""

    status: str
    text: str


def check_claude_code(env: Mapping[str, str], cwd: Path) -> list[Line]:
    """Claude Code: the hook in its settings files (user, project, local), runnable,
    and `claude --version`. Only the user's own command is run: a project's settings
    are the repository's, and nothing from a repository is run (`loopwatch._trust`)."""
    lines: list[Line] = []
    user_file = settings_path("claude-code", "user")
    files = [user_file] + [cwd / p for p in trust.CLAUDE_PROJECT_FILES]
    found: dict[str, list[str]] = {}  # event -> the loopwatch commands hooked on it
    mine: list[str] = []  # the commands of the user's own file
    where: list[Path] = []
    for path in files:
        if not path.exists():
            continue
        try:
            settings = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError) as exc:
            lines.append(Line("problem", f"{path}: unreadable ({exc}); Claude Code ignores a broken settings file"))
            continue
        if not isinstance(settings, dict):
            lines.append(Line("problem", f"{path}: not a JSON object"))
            continue
        if settings.get("disableAllHooks") is True:
            lines.append(Line("problem", f'{path}: "disableAllHooks": true turns every hook off, loopwatch\'s too'))
        commands = _ours(settings)
        if commands:
            where.append(path)
        for event, cmds in commands.items():
            found.setdefault(event, []).extend(cmds)
            if path == user_file:
                mine.extend(cmds)
    if not found:
        lines.append(Line("problem", "the hook is not installed: run `loopwatch install claude-code`"))
    else:
        missing = [e for e in claude_code.HOOK_EVENTS if e not in found]
        if missing:
            lines.append(
                Line(
                    "problem",
                    f"the hook is not installed for {', '.join(missing)} "
                    "(an older install): run `loopwatch install claude-code` again",
                )
            )
        else:
            lines.append(
                Line(
                    "ok",
                    f"hook installed for {len(claude_code.HOOK_EVENTS)} events in {', '.join(str(p) for p in where)}",
                )
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
        if mine:
            lines.append(_dry_run(mine[0], env, cwd))
        else:
            lines.extend(_project_command(found.get("PostToolUse", next(iter(found.values())))[0], env, cwd))
    untrusted = trust.project_env([str(cwd)], env)
    for name, (value, setter) in untrusted.items():
        lines.append(
            Line("info", f"{name}={value} is set by {setter}: the hook does not trust it (a project may only tighten)")
        )
    if env.get("LOOPWATCH_MODE", "").strip().lower() == "off" and "LOOPWATCH_MODE" not in untrusted:
        lines.append(Line("problem", "LOOPWATCH_MODE=off is set here: the hook does nothing in this environment"))
    lines.append(_version(env))
    return lines


def _project_command(command: str, env: Mapping[str, str], cwd: Path) -> list[Line]:
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
                "reinstall with `loopwatch install claude-code --project`",
            )
        )
        return lines
    binary = shutil.which("loopwatch", path=env.get("PATH"))
    inside = binary is not None and os.path.realpath(binary).startswith(os.path.realpath(cwd) + os.sep)
    if inside:
        lines.append(Line("problem", f"the `loopwatch` on PATH here is the repository's ({binary}): not run"))
        return lines
    if binary is None:
        lines.append(
            Line("problem", "`loopwatch` is not on PATH here, so the project's hook cannot run: install loopwatch")
        )
        return lines
    lines.append(_dry_run(shlex.join([binary, *argv[1:]]), env, cwd))
    return lines


def check_codex(env: Mapping[str, str], cwd: Path) -> list[Line]:
    """Codex: installed, trusted (Codex's own word), runnable, `codex --version`; the
    checks themselves are in `doctor_codex`."""
    from .doctor_codex import check_codex as run_checks

    return [Line("ok" if ok else "problem", text.removeprefix("codex: ")) for ok, text in run_checks(env, cwd=str(cwd))]


CHECKS: dict[str, Callable[[Mapping[str, str], Path], list[Line]]] = {
    "claude-code": check_claude_code,
    "codex": check_codex,
}


def _set_up(host: str, env: Mapping[str, str]) -> bool:
    """Is there anything of this host here: its CLI on PATH, or its settings folder?
    A bare `loopwatch doctor` checks only those, so a Claude-only user is not told
    that Codex is missing."""
    binary = {"claude-code": "claude", "codex": "codex"}[host]
    if shutil.which(binary, path=env.get("PATH")):
        return True
    if host == "codex":
        from .._hosts import codex

        return Path(codex.codex_home(env)).is_dir()
    return (Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME", "~")).expanduser() / ".claude")).is_dir()


def _ours(settings: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if is_ours(hook):
                    out.setdefault(event, []).append(hook["command"])
    return out


def _dry_run(command: str, env: Mapping[str, str], cwd: Path) -> Line:
    """Run the installed command as Claude Code does (through the shell, payload on
    stdin) on a harmless PostToolUse, with a throwaway state folder."""

    def payload(folder: str) -> dict[str, Any]:
        return {
            "session_id": "loopwatch-doctor",
            "transcript_path": os.path.join(folder, "t.jsonl"),
            "cwd": str(cwd),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "true", "description": "loopwatch doctor"},
            "tool_use_id": "toolu_doctor",
            "tool_response": {
                "stdout": "",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": True,
            },
        }

    ran = dry_run(command, payload, env, cwd, _DRY_RUN_TIMEOUT)
    done = ran.done
    if done is None:
        return Line("problem", f"the hook command {ran.failure}: {command}")
    why = (done.stderr.strip().splitlines() or [""])[-1][:200]
    if done.returncode != 0:
        return Line(
            "problem",
            f"the hook command fails (exit {done.returncode}{': ' + why if why else ''}); "
            f"reinstall with `loopwatch install claude-code`: {command}",
        )
    if done.stdout.strip():
        try:
            json.loads(done.stdout)
        except ValueError:
            return Line("problem", f"the hook command prints something that is not JSON: {done.stdout[:100]!r}")
    if ran.log:
        return Line("problem", f"the hook ran but could not check the call: {ran.log[:200]}")
    if not ran.wrote_state:
        return Line(
            "problem", "the hook command ran but loopwatch did nothing (LOOPWATCH_MODE=off in its environment?)"
        )
    return Line("ok", f"hook runs: a dry-run call answered in {ran.took_ms:.0f} ms")


def _version(env: Mapping[str, str]) -> Line:
    binary = shutil.which("claude", path=env.get("PATH"))
    if binary is None:
        return Line("problem", "`claude` not found on PATH (the hook needs Claude Code itself to run it)")
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, env=dict(env), timeout=_VERSION_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Line("problem", f"`{binary} --version` did not answer: {exc}")
    text = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    if done.returncode != 0 or not text:
        return Line("problem", f"`{binary} --version` failed (exit {done.returncode})")
    return Line("info", f"Claude Code {text.split()[0]} ({binary})")


@click.command()
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
    state folder), and the agent CLI's version. Exit status 0 when all is well, 1 when
    there is a problem (each one is a line saying what to do). Changes nothing.
    """
    env = dict(os.environ)
    cwd = Path.cwd()
    problems = 0
    for host in hosts or tuple(CHECKS):
        lines = (
            CHECKS[host](env, cwd)
            if hosts or _set_up(host, env)
            else [Line("info", "not set up here (no CLI on PATH, no settings folder): skipped")]
        )
        for line in lines:
            problems += line.status == "problem"
            if as_json:
                click.echo(json.dumps({"host": host, "status": line.status, "text": line.text}))
            else:
                click.echo(f"{host}: {line.status}: {line.text}")
    if problems:
        raise SystemExit(1)
