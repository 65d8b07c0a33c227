"""The guard inside the agent that `loopwatch run` starts: kept on, or the run refused.

loopwatch's hook runs inside the agent CLI, and a project's settings file can switch
every hook off (Claude Code's `disableAllHooks`, Codex's `[features] hooks = false`,
...). Before `run` starts a command, `hold` decides, for the host the command runs
(`host_of`: the stream format asked for, else the host that knows the command line as
its own, else by the binary's name):

- the command itself loads no hook at all (`Host.unguarded`: opencode's `--pure`): `run`
  refuses to start it, unless `--allow-unguarded`;
- loopwatch's hook is not installed for that host: nothing of it to hold; the command
  runs as given (`run` still watches it);
- the host's command line can keep hooks on whatever a project says (`Host.keep_on`:
  Claude Code's `--settings`, Codex's `-c features.hooks=true`): the command runs with
  it, and the person is told when a project's setting is there to overrule;
- a project's setting switches hooks off now (`Host.switch_offs`, kind "off": nothing
  holds them on, such as a `--system` install) and the command line cannot: `run`
  refuses to start, in one line naming the file and what to do, unless the person said
  `--allow-unguarded`.

It reads settings files only; it writes nothing and starts nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from .._hosts import HOSTS
from .._hosts import host as host_named

__all__ = ["Held", "hold", "host_of"]

#: The structured streams `run` reads, and the host that prints each.
_STREAM_HOSTS = {"codex-json": "codex", "claude-stream": "claude-code"}


def host_of(events: str, argv: Sequence[str]) -> str | None:
    """The agent CLI being run, as `HOSTS` names it: the one whose stream format was asked
    for, else the one that knows the command line as its own (`Host.headless`: a launcher
    in front included), else the one whose binary the command is (`codex-x86_64-...`),
    else None."""
    if events in _STREAM_HOSTS:
        return _STREAM_HOSTS[events]
    for name in HOSTS:
        if host_named(name).headless(list(argv)) is not None:
            return name
    command = os.path.basename(argv[0]) if argv else ""
    for name in HOSTS:
        binary = host_named(name).binary
        if command == binary or (command.startswith(binary) and not command[len(binary)].isalnum()):
            return name
    return None


class Held(NamedTuple):
    """What `run` does: run `argv` (the command, with what keeps the hooks on where it
    could add it); `said` is a line for the person (None: nothing to say). `off` names
    the setting that switches the hook off when nothing holds it (None: start), and
    `refused` is the one line saying why the command must not start, then."""

    argv: list[str]
    said: str | None = None
    off: str | None = None
    refused: str | None = None


def hold(events: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Held:
    """What `run` does about the hook inside the command it is about to start (the
    module's docstring)."""
    command = list(argv)
    name = host_of(events, command)
    if name is None:
        return Held(command)
    host = host_named(name)
    none = host.unguarded(command, env)
    if none is not None:
        return Held(
            command, off=none, refused=f"{none}: loopwatch's guard would not run; unset it, or pass --allow-unguarded"
        )
    if not host.installed_in(env, cwd):
        return Held(command)
    offs = [off for off in host.switch_offs(cwd, env) if off.kind == "off"]
    kept = host.keep_on(command)
    if kept is not None:
        said = f"{offs[0].path}: {offs[0].what}; held on for this run ({' '.join(kept[1:3])})" if offs else None
        return Held(kept, said=said)
    if not offs:
        return Held(command)
    off = f"{offs[0].path}: {offs[0].what}"
    refused = (
        f"{off}, and this command line cannot hold {host.title}'s hooks on: "
        f"{host.switch_off_advice(run=False)}; or run it unguarded with --allow-unguarded"
    )
    return Held(command, off=off, refused=refused)
