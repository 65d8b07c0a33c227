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

An agent CLI's own state folder (`~/.claude`, `~/.codex`, `~/.copilot`, `~/.gemini`,
`~/.cline/data`, opencode's, one of its session folders, ...; each host says how its folders are known:
`Host.state_folders`) is walked in part: only its transcripts are read (opencode's
database among them, whatever its name), and its settings, credentials, trust lists, logs
and caches are left out by name, never opened, and counted (`LeftOut`). A pattern of what
to keep names an entry of the state folder (`sessions`: kept whole) or, with `/`, a path
below it (Qwen Code's `projects/*/chats/*.jsonl`: only those files, the folders on the way
entered for them). A session's agents' transcripts in its folder (Claude Code's
`<session>/subagents/`) are read with the session file, as one session: the walk does not
read them again.

A file named explicitly (or matched by a glob) is always read, whatever its name.
Paths that do not exist, globs that match nothing and files that are not regular
files (a FIFO would block the scan for ever) are returned as `Target`s with `problem`
set, so they are reported like any other unreadable file; when the arguments name no
file to read at all, `expand` raises `NoTranscript` (one line, exit 2, for every command).
A file found twice (two
paths, a hard link, a symlink) is read once: files and folders are known by device
and inode. Symlinks to folders are followed in globs, but a folder already walked is
not walked again, so a link to an ancestor is no loop.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import os
import stat
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._files import NOT_REGULAR
from ._common import BadInput

if TYPE_CHECKING:
    from .._hosts.base import StateFolder

__all__ = ["LeftOut", "NoTranscript", "Target", "expand", "is_transcript_name", "named"]

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


_MISSING = "no such file or folder"
_NO_MATCH = "no file matches this pattern"


@dataclass(frozen=True)
class Target:
    """One file to read. `label` is how results name it (`-` for stdin); `walked` is
    True when it was found by walking a folder rather than named; `problem`, when set,
    says why it cannot be read at all."""

    path: str
    label: str
    walked: bool = False
    problem: str | None = None

    @property
    def missing(self) -> bool:
        """Does it name no file at all (a path that is not there, a glob that matched
        nothing)? Then it is no file scanned."""
        return self.problem in (_MISSING, _NO_MATCH)


class LeftOut(Counter[str]):
    """Entries of agent CLIs' state folders a walk left out by name: whose state (a host's
    title) -> how many files and folders."""

    def said(self) -> str:
        """What was left out, in words (`""` when nothing was)."""
        return ", ".join(
            f"{n} {'file or folder' if n == 1 else 'files and folders'} of {whose}'s state"
            for whose, n in sorted(self.items())
        )


class NoTranscript(BadInput):
    """The arguments name no file to read: one line, `Error: ...`, exit 2."""


@functools.cache
def _state_folders() -> tuple[tuple[str, StateFolder], ...]:
    """(whose, rule) of every host's state folders (`Host.state_folders`)."""
    from .._hosts import HOSTS
    from .._hosts import host as host_named

    found: list[tuple[str, StateFolder]] = []
    for name in HOSTS:
        agent = host_named(name)
        found.extend((agent.title, rule) for rule in agent.state_folders)
    # The rule that asks for the most names in a folder first (a stable sort: else in the
    # hosts' order): Qwen Code's `~/.qwen` also holds the two names Gemini CLI's
    # `~/.gemini` is known by (Qwen Code is a fork of it).
    found.sort(key=lambda item: -len(item[1].marker))
    return tuple(found)


def _state_folder(folder: str, names: Collection[str]) -> tuple[str, StateFolder] | None:
    """Whose state `folder`, which holds `names`, is, and its rule (what to read in it)."""
    for whose, rule in _state_folders():
        if rule.known(folder, names):
            return whose, rule
    return None


def _kept(name: str, keep: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in keep)


def _keeps(rel: tuple[str, ...], keep: tuple[str, ...], folder: bool = False) -> bool:
    """Is the entry at `rel` (its path below a state folder, by parts) read or entered?
    Kept when a pattern names it or a folder above it; a folder is entered, too, when a
    pattern goes on below it."""
    for pattern in keep:
        parts = pattern.split("/")
        if len(parts) <= len(rel) or folder:
            common = min(len(parts), len(rel))
            if all(fnmatch.fnmatchcase(rel[i], parts[i]) for i in range(common)):
                return True
    return False


def _whole(rel: tuple[str, ...], keep: tuple[str, ...]) -> bool:
    """Is the folder at `rel` kept whole (a pattern names it or a folder above it), so a
    walk reads below it as anywhere else?"""
    return any(
        len(parts) <= len(rel) and all(fnmatch.fnmatchcase(rel[i], parts[i]) for i in range(len(parts)))
        for parts in (pattern.split("/") for pattern in keep)
    )


def is_transcript_name(name: str, siblings: Iterable[str] = ()) -> bool:
    """Would a folder walk read a file of this name (given the names next to it)?"""
    if name in TRANSCRIPT_NAMES:
        return True
    if name in SIDE_FILES or not name.endswith(TRANSCRIPT_SUFFIXES):
        return False
    return not (name == "steps.json" and "agent.log" in siblings)


_NOT_REGULAR = f"{NOT_REGULAR}: skipped"


def expand(arguments: Iterable[str], left_out: LeftOut | None = None) -> Iterator[Target]:
    """The files named by `arguments`, in order, each once, yielded one at a time (a
    walk of 10,000 files never holds 10,000 `Target`s). `-` is yielded as is; the
    caller reads standard input. `left_out`, when given, counts what the walks leave
    out of agent CLIs' state folders.

    Raises `NoTranscript` at the end when `arguments` name no file to read (every path
    missing, every folder without a transcript): the targets with a problem are held back
    until a readable one comes, so nothing is reported before that is known. The message
    is the first problem, else "no transcript found in ..." and what was left out.
    """
    arguments = list(arguments)
    left_out = LeftOut() if left_out is None else left_out
    readable = 0
    held: list[Target] = []  # problems met before any readable file
    for target in _expand(arguments, left_out):
        if target.problem is not None and not readable:
            held.append(target)
            continue
        if target.problem is None and not readable:
            yield from held
            held.clear()
        readable += target.problem is None
        yield target
    if arguments and not readable:
        if held:
            more = len(held) - 1
            others = f" (and {more} more {'file' if more == 1 else 'files'})" if more else ""
            raise NoTranscript(f"no session could be read: {held[0].label}: {held[0].problem}{others}")
        said = left_out.said()
        raise NoTranscript(
            f"no transcript found in {', '.join(arguments)}" + (f" ({said} left out by name)" if said else "")
        )


def _expand(arguments: list[str], left_out: LeftOut) -> Iterator[Target]:
    """`expand`'s targets, in order, each once.

    Each once without a record per file: a file found by a folder walk under its own
    name (not a symlink) with one link can be reached again only through a symlink,
    another argument, or a glob. So the device and inode kept are only those of files
    named or matched by a glob (as many as the arguments and globs already hold),
    reached through a symlink, or with several hard links; a file that is none of these
    is checked instead against the folders walked before it (`_walked_before`)."""
    seen: set[object] = set()
    walked: list[str] = []  # real paths of the folders walked so far, one per folder argument

    def add(target: Target, root: str | None = None, place: tuple[tuple[int, str], ...] = ()) -> Iterator[Target]:
        key: object = target.label
        remember = True
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
                    plain = target.walked and info.st_nlink == 1 and not os.path.islink(target.path)
                    if key in seen or _walked_before(target.path, walked, root, place, plain):
                        return
                    remember = not plain
        if key not in seen:
            if remember:
                seen.add(key)
            yield target

    def walk_into(folder: str) -> Iterator[Target]:
        root = os.path.realpath(folder)
        for target, place in _walk(folder, left_out):
            yield from add(target, root, place)
        walked.append(root)

    for argument in arguments:
        if argument == "-":
            yield from add(Target("-", "-"))
        elif os.path.isdir(argument):
            yield from walk_into(argument)
        elif os.path.lexists(argument):
            yield from add(Target(argument, argument))
        elif _GLOB_CHARS & set(argument):
            matches = _glob(argument)
            if not matches:
                yield from add(Target(argument, argument, problem=_NO_MATCH))
            for match in matches:
                if os.path.isdir(match):
                    yield from walk_into(match)
                else:
                    yield from add(Target(match, match))
        else:
            yield from add(Target(argument, argument, problem=_MISSING))


def named(arguments: Iterable[str]) -> Iterator[str]:
    """The files the arguments name themselves, or match as a glob: those a command
    will read whatever their name (a file found by walking a folder is not one; a
    command leaves its own output out of a walk instead). For the checks made before
    a command writes: its outputs may not be among them."""
    for argument in arguments:
        if argument == "-" or os.path.isdir(argument):
            continue
        if os.path.lexists(argument):
            yield argument
        elif _GLOB_CHARS & set(argument):
            yield from (match for match in _glob(argument) if not os.path.isdir(match))


def walk(folder: str, left_out: LeftOut | None = None) -> Iterator[Target]:
    """Transcript-looking files under `folder`, sorted, recursively, one at a time (only
    the names of the folder being walked are held); a sub-folder that cannot be listed is
    a `Target` with `problem` set. Symlinks to folders are not followed (as `os.walk`
    does). What an agent CLI's state folder holds besides its transcripts is left out
    (counted in `left_out`)."""
    for target, _ in _walk(folder, left_out):
        yield target


def _walk(folder: str, left_out: LeftOut | None = None) -> Iterator[tuple[Target, tuple[tuple[int, str], ...]]]:
    """`walk`, each target with its place in the walk's order (`_place`)."""
    problems: list[Target] = []

    def unreadable(exc: OSError) -> None:
        where = exc.filename or folder
        problems.append(Target(where, where, walked=True, problem=f"cannot list folder: {exc.strerror or exc}"))

    # Folders entered below a state folder whose patterns go on deeper: whose, its rule,
    # and the folder's path below the state folder.
    below: dict[str, tuple[str, StateFolder, tuple[str, ...]]] = {}
    for root, folders, files in os.walk(folder, onerror=unreadable):
        while problems:
            yield problems.pop(0), ()
        context = below.pop(root, None)
        if context is None:
            state = _state_folder(root, [*folders, *files])
            if state is not None:
                # a session's agents' transcripts are read with it (neither here nor left out)
                folders[:] = [f for f in folders if not state[1].part(f)]
                files = [f for f in files if not state[1].part(f)]
                context = (*state, ())
        if context is not None:  # an agent CLI's own state: only what it keeps is read
            whose, rule, rel = context
            dropped = [f for f in folders if not f.startswith(".") and not _keeps((*rel, f), rule.keep, folder=True)]
            dropped += [f for f in files if not _keeps((*rel, f), rule.keep)]
            if left_out is not None and dropped:
                left_out[whose] += len(dropped)
            folders[:] = [f for f in folders if _keeps((*rel, f), rule.keep, folder=True)]
            files = [f for f in files if _keeps((*rel, f), rule.keep)]
            for name in folders:
                if not _whole((*rel, name), rule.keep):
                    below[os.path.join(root, name)] = (whose, rule, (*rel, name))
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
        files.sort()
        siblings = ("agent.log",) if "agent.log" in files else ()
        parts = os.path.relpath(root, folder).split(os.sep) if root != folder else []
        read = context[1].read if context is not None else ()
        for name in files:
            if is_transcript_name(name, siblings) or (read and _kept(name, read)):
                path = os.path.join(root, name)
                yield Target(path, path, walked=True), _place(parts, name)
    while problems:
        yield problems.pop(0), ()


def _place(folders: list[str], name: str) -> tuple[tuple[int, str], ...]:
    """Where a file comes in a sorted walk: a folder's files (0) before its sub-folders
    (1), each sorted by name, so tuples compare in walk order."""
    return tuple((1, f) for f in folders) + ((0, name),)


def _walked_before(
    path: str, walked: list[str], root: str | None, place: tuple[tuple[int, str], ...], plain: bool
) -> bool:
    """Was the file at `path` already yielded by a walk: one of the folders in `walked`,
    or the walk under way (real folder `root`) at a place before `place`? A plain file
    of the walk under way needs only the first check (the walk meets each name once)."""
    if not walked and (plain or root is None):
        return False
    real = os.path.realpath(path)
    for base in walked + ([root] if root is not None and not plain else []):
        if not real.startswith(base.rstrip(os.sep) + os.sep):
            continue
        parts = real[len(base.rstrip(os.sep)) + 1 :].split(os.sep)
        folders, name = parts[:-1], parts[-1]
        if any(f.startswith(".") or f in SKIPPED_FOLDERS for f in folders):
            continue
        if _left_out_below(base, parts):
            continue
        siblings = ("agent.log",) if os.path.isfile(os.path.join(os.path.dirname(real), "agent.log")) else ()
        if not is_transcript_name(name, siblings):
            continue
        if base is not root or _place(folders, name) < place:
            return True
    return False


def _left_out_below(base: str, parts: list[str]) -> bool:
    """Would a walk of `base` leave out the entry at `parts` below it (an agent CLI's
    state folder on the way that does not keep it)?"""
    folder = base
    context: tuple[StateFolder, int] | None = None  # the state folder's rule, and where it is
    for i, part in enumerate(parts):
        if context is None:
            try:
                state = _state_folder(folder, os.listdir(folder))
            except OSError:
                return False
            if state is not None and state[1].part(part):
                return True
            context = (state[1], i) if state is not None else None
        if context is not None:
            rule, start = context
            rel = tuple(parts[start : i + 1])
            if not _keeps(rel, rule.keep, folder=i < len(parts) - 1):
                return True
            if _whole(rel, rule.keep):
                context = None  # kept whole: below it, as anywhere else
        folder = os.path.join(folder, part)
    return False


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
