"""`loopwatch doctor`, Codex part: is the hook installed, trusted and runnable, and which
Codex is this? What a user runs when "nothing happens" (Codex skips untrusted
hooks without a word).

    check_codex(env=None, codex="codex", cwd=None) -> list[(ok, line)]

Each line says one thing and, when it is not ok, what to do. Nothing is changed: the
dry-run hook call runs the installed command with a throwaway state folder, so the
user's sessions are untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._hosts import codex as host
from . import codex_trust
from .dry_run import dry_run
from .install import is_ours

_EVENTS = host.HOST.hooked_events

__all__ = ["check_codex"]

_TIMEOUT = 30  # seconds for each subprocess (codex --version, app-server, the hook)


def check_codex(
    env: Mapping[str, str] | None = None, codex: str = "codex", cwd: str | None = None
) -> list[tuple[bool, str]]:
    """The Codex checks, in order: version, installed, trusted, runnable."""
    env = dict(os.environ if env is None else env)
    lines: list[tuple[bool, str]] = [_version(codex, env)]
    home = Path(host.codex_home(env))
    hooks_json = home / "hooks.json"
    settings = _load_json(hooks_json)
    entries = codex_trust.entries(hooks_json, settings, is_ours) if settings is not None else []
    events = sorted({e.event for e in entries})
    missing = [e for e in _EVENTS if e not in events]
    if settings is None or not entries:
        lines.append((False, f"codex: not installed: no loopwatch hook in {hooks_json}; run `loopwatch install codex`"))
        return lines
    if missing:
        lines.append(
            (
                False,
                (f"codex: installed in {hooks_json} but not for {', '.join(missing)}; run `loopwatch install codex`"),
            )
        )
    else:
        lines.append((True, f"codex: installed in {hooks_json} ({', '.join(_EVENTS)})"))
    lines.append(_trusted(home / "config.toml", entries, codex, env, cwd))
    lines.append(_runnable(settings, env, cwd))
    return lines


def _version(codex: str, env: dict[str, str]) -> tuple[bool, str]:
    path = shutil.which(codex, path=env.get("PATH"))
    if path is None:
        return False, (
            f"codex: `{codex}` not found on PATH (the hook needs Codex itself to run it): "
            f"install it (`npm install -g {host.HOST.package}`), or put it on PATH"
        )
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"codex: `{path} --version` failed ({exc}); reinstall Codex"
    text = (done.stdout.strip() or done.stderr.strip()).splitlines()
    return done.returncode == 0, f"codex: {text[0] if text else 'no version printed'} ({path})"


def _trusted(
    config: Path, entries: list[codex_trust.Entry], codex: str, env: dict[str, str], cwd: str | None
) -> tuple[bool, str]:
    """Codex's own word when it can be asked (`codex app-server`, `hooks/list`), else
    the hashes recorded in config.toml compared with the ones Codex would compute."""
    reported = _codex_trust_view(codex, env, cwd)
    if reported is not None:
        bad = [e for e in entries if reported.get(e.key) != "trusted"]
        if not bad:
            return True, f"codex: trusted (Codex lists all {len(entries)} loopwatch hooks as trusted)"
        states = ", ".join(f"{e.event}: {reported.get(e.key, 'not listed')}" for e in bad)
        return (
            False,
            f"codex: NOT trusted ({states}): Codex skips these without a message; run `loopwatch install codex`",
        )
    state = codex_trust.state_of(config)
    bad = [e for e in entries if not isinstance(state.get(e.key), dict) or state[e.key].get("trusted_hash") != e.hash]
    if not bad:
        return True, f"codex: trusted in {config} (hashes match; Codex itself could not be asked)"
    return False, (
        f"codex: NOT trusted for {', '.join(e.event for e in bad)} in {config}: Codex skips these "
        "without a message; run `loopwatch install codex`"
    )


def _codex_trust_view(codex: str, env: dict[str, str], cwd: str | None) -> dict[str, str] | None:
    path = shutil.which(codex, path=env.get("PATH"))
    if path is None:
        return None
    try:
        proc = subprocess.Popen(
            [path, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=cwd,
        )
    except OSError:
        return None
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message in (
            {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "loopwatch-doctor", "version": "1"}}},
            {"method": "initialized"},
            {"id": 2, "method": "hooks/list", "params": {"cwds": [cwd or os.getcwd()]}},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        deadline = time.monotonic() + _TIMEOUT
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                return None
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if answer.get("id") == 2:
                data = (answer.get("result") or {}).get("data") or []
                return {h.get("key"): h.get("trustStatus") for entry in data for h in entry.get("hooks", [])}
        return None
    except (OSError, ValueError, AttributeError):
        return None
    finally:
        proc.kill()
        proc.wait()


def _runnable(settings: dict[str, Any], env: dict[str, str], cwd: str | None) -> tuple[bool, str]:
    """Run the installed PreToolUse command on a harmless call, with a throwaway state folder."""
    command = next(
        (
            h["command"]
            for group in settings.get("hooks", {}).get("PreToolUse", [])
            if isinstance(group, dict)
            for h in group.get("hooks", [])
            if is_ours(h)
        ),
        None,
    )
    if command is None:
        return False, "codex: no loopwatch PreToolUse hook to try; run `loopwatch install codex`"
    payload = {
        "session_id": "loopwatch-doctor",
        "turn_id": "doctor",
        "hook_event_name": "PreToolUse",
        "cwd": cwd or os.getcwd(),
        "model": "doctor",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "true"},
        "tool_use_id": "doctor-1",
        "transcript_path": None,
    }
    run_env = dict(env)
    run_env.pop("LOOPWATCH_MODE", None)  # is it runnable at all; the mode is the user's to set
    ran = dry_run(command, lambda _folder: payload, run_env, cwd, _TIMEOUT)
    done = ran.done
    if done is None:
        return False, f"codex: the hook command {ran.failure}; reinstall with `loopwatch install codex`: {command}"
    if done.returncode != 0 or ran.log:
        why = ran.log or (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return False, (
            f"codex: the hook command failed on a dry run ({why}); reinstall with `loopwatch install codex` "
            f"(command: {command[:200]})"
        )
    return True, f"codex: runnable (a dry-run call answered in {ran.took_ms:.0f} ms)"


def _load_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
