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
Paths that do not exist, globs that match nothing and files that are not regular
files (a FIFO would block the scan for ever) are returned as `Target`s with `problem`
set, so they are reported like any other unreadable file. A file found twice (two
paths, a hard link, a symlink) is read once: files and folders are known by device
and inode. Symlinks to folders are followed in globs, but a folder already walked is
not walked again, so a link to an ancestor is no loop.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Target", "expand", "is_transcript_name"]

TRANSCRIPT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".traj", ".cast")
TRANSCRIPT_NAMES = frozenset({"agent.log"})
SIDE_FILES = frozenset(
    {
        "results.json",
        "result.json",
        "results_summary.json",
        "config.json",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
    }
)
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
    return not (name == "steps.json" and "agent.log" in siblings)


_NOT_REGULAR = "not a regular file (a FIFO, socket or device): skipped"


def expand(arguments: Iterable[str]) -> list[Target]:
    """The files named by `arguments`, in order, each once. `-` is returned as is;
    the caller reads standard input."""
    targets: list[Target] = []
    seen: set[object] = set()

    def add(target: Target) -> None:
        key: object = target.label
        if not target.problem and target.path != "-":
            try:
                info = os.stat(target.path)
            except OSError:
                key = os.path.realpath(target.path)  # dangling: reported by the reader
            else:
                if not stat.S_ISREG(info.st_mode):
                    target = Target(target.path, target.label, target.walked, problem=_NOT_REGULAR)
                    key = target.label
                else:
                    key = (info.st_dev, info.st_ino)
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
            matches = _glob(argument)
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
    cannot be listed is a `Target` with `problem` set. Symlinks to folders are not
    followed (as `os.walk` does)."""
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


def _glob(pattern: str) -> list[str]:
    """The paths a glob matches, sorted. Without `**` the standard library's glob;
    with it, a walk that follows symlinks to folders but enters each folder (by
    device and inode) once: `glob.glob` followed a symlink to an ancestor round and
    round, and two such links never returned, memory growing."""
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    parts = pattern.split(os.sep)
    fixed = 0
    while fixed < len(parts) - 1 and not (_GLOB_CHARS & set(parts[fixed])):
        fixed += 1
    base = os.sep.join(parts[:fixed]) or ("" if not pattern.startswith(os.sep) else os.sep)
    rest = [p for p in parts[fixed:] if p]
    matches: list[str] = []
    visited: set[tuple[int, int, int]] = set()  # (device, inode, pattern pieces left)

    def visit(folder: str, pieces: list[str]) -> None:
        if not pieces:
            return
        try:
            info = os.stat(folder or ".")
        except OSError:
            return
        key = (info.st_dev, info.st_ino, len(pieces))
        if key in visited:  # entered before with the same pattern left: a link loop
            return
        visited.add(key)
        try:
            entries = sorted(os.scandir(folder or "."), key=lambda e: e.name)
        except OSError:
            return
        head, tail = pieces[0], pieces[1:]
        if head == "**":
            visit(folder, tail)  # `**` matching no folder at all
        for entry in entries:
            if entry.name.startswith(".") and not head.startswith("."):
                continue  # as glob does: wildcards do not match hidden names
            path = os.path.join(folder, entry.name) if folder else entry.name
            is_dir = entry.is_dir()  # follows symlinks
            if head == "**":
                if is_dir:
                    visit(path, pieces)
            elif fnmatch.fnmatchcase(entry.name, head):
                if not tail:
                    matches.append(path)
                elif is_dir:
                    visit(path, tail)

    visit(base, rest)
    return sorted(set(matches))
