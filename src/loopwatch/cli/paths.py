"""From command-line arguments to the files to read.

An argument is a file, a folder (walked recursively), a glob (expanded here, so a
quoted `'runs/**/*.traj'` works too) or `-` (standard input). A folder walk keeps
only files that look like transcripts and leaves out the harness's side files:

- kept: `*.jsonl`, `*.ndjson`, `*.json`, `*.traj` (so `*.traj.json`), `*.cast`
  (asciinema recordings), `agent.log`;
- left out: `results.json`, `result.json`, `results_summary.json`, `config.json`,
  `package.json`, `package-lock.json`, `tsconfig.json` (outcomes and settings, not
  sessions), and `steps.json` next to an `agent.log` (Terminal-Bench: derived from
  that log, so reading both would count the session twice); hidden folders,
  `node_modules` and `__pycache__` are not entered.

A file named explicitly (or matched by a glob) is always read, whatever its name.
Paths that do not exist and globs that match nothing are returned as `Target`s with
`problem` set, so they are reported like any other unreadable file.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Iterable

__all__ = ["Target", "expand", "is_transcript_name"]

TRANSCRIPT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".traj", ".cast")
TRANSCRIPT_NAMES = frozenset({"agent.log"})
SIDE_FILES = frozenset({
    "results.json", "result.json", "results_summary.json", "config.json",
    "package.json", "package-lock.json", "tsconfig.json",
})
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__"})
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Target:
    """One file to read. `label` is how results name it (`-` for stdin); `walked` is
    True when it was found by walking a folder rather than named; `problem`, when set,
    says why it cannot be read at all."""

    path: str
    label: str
    walked: bool = False
    problem: str | None = None


def is_transcript_name(name: str, siblings: Iterable[str] = ()) -> bool:
    """Would a folder walk read a file of this name (given the names next to it)?"""
    if name in TRANSCRIPT_NAMES:
        return True
    if name in SIDE_FILES or not name.endswith(TRANSCRIPT_SUFFIXES):
        return False
    if name == "steps.json" and "agent.log" in siblings:
        return False
    return True


def expand(arguments: Iterable[str]) -> list[Target]:
    """The files named by `arguments`, in order, each once. `-` is returned as is;
    the caller reads standard input."""
    targets: list[Target] = []
    seen: set[str] = set()

    def add(target: Target) -> None:
        key = target.label if target.problem or target.path == "-" else os.path.realpath(target.path)
        if key not in seen:
            seen.add(key)
            targets.append(target)

    for argument in arguments:
        if argument == "-":
            add(Target("-", "-"))
        elif os.path.isdir(argument):
            for target in walk(argument):
                add(target)
        elif os.path.lexists(argument):
            add(Target(argument, argument))
        elif _GLOB_CHARS & set(argument):
            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                add(Target(argument, argument, problem="no file matches this pattern"))
            for match in matches:
                if os.path.isdir(match):
                    for target in walk(match):
                        add(target)
                else:
                    add(Target(match, match))
        else:
            add(Target(argument, argument, problem="no such file or folder"))
    return targets


def walk(folder: str) -> list[Target]:
    """Transcript-looking files under `folder`, sorted, recursively; a sub-folder that
    cannot be listed is a `Target` with `problem` set."""
    found = []

    def unreadable(exc: OSError) -> None:
        where = exc.filename or folder
        found.append(Target(where, where, walked=True, problem=f"cannot list folder: {exc.strerror or exc}"))

    for root, folders, files in os.walk(folder, onerror=unreadable):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
        names = set(files)
        for name in sorted(files):
            if is_transcript_name(name, names):
                path = os.path.join(root, name)
                found.append(Target(path, path, walked=True))
    return found
