"""From command-line arguments to the files to read.

An argument is a file, a folder (walked recursively), a glob (expanded here, so a
quoted `'runs/**/*.traj'` works too) or `-` (standard input). A folder walk keeps
only files that look like transcripts and leaves out the harness's side files:

- kept: `*.jsonl`, `*.ndjson`, `*.json`, `*.traj` (so `*.traj.json`), `*.cast`
  (asciinema recordings), `agent.log`;
- left out: `results.json`, `result.json`, `results_summary.json`, `config.json`,
  `package.json`, `package-lock.json`, `tsconfig.json` (outcomes and settings, not
  sessions), `steps.json` next to an `agent.log` (Terminal-Bench: derived from
  that log, so reading both would count the session twice), and in an agent CLI's
  state folder (`STATE_FILES`: `~/.gemini`, `~/.local/share/opencode`, ...) its
  settings, trust records, credentials, caches and logs (and kept there, whatever their
  names: its transcripts, `STATE_TRANSCRIPTS`, such as opencode's `opencode.db`); hidden folders, `node_modules` and `__pycache__` are
  not entered. What is left out by name is never opened, and counted (`expand`'s
  `left_out`), so a scan can say so.

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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .._files import NOT_REGULAR

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

#: An agent CLI's state folder (its name, wherever it is in a file's path), and the files
#: in it that are never transcripts: settings, trust records, credentials, caches, logs
#: (`fnmatch` patterns on the path below that folder, `/` between its parts).
STATE_FILES: dict[str, tuple[str, ...]] = {
    # Gemini CLI (0.58.0, 0.61.0): transcripts are tmp/<project>/chats/*.jsonl and
    # `/chat save` checkpoints tmp/<project>/checkpoint-*.json.
    ".gemini": (
        "settings.json",
        "settings.json.*",
        "system-defaults.json",
        "trustedFolders.json",
        "trusted_hooks.json",
        "projects.json",
        "state.json",
        "google_accounts.json",
        "oauth_creds.json",
        "mcp-oauth-tokens.json",
        "a2a-oauth-tokens.json",
        "extensions/*",
        "history/*",
        "tmp/*/logs.json",
        "tmp/*/logs/*",
        "tmp/*/checkpoints/*",
    ),
    # opencode (1.17.19, 1.18.33): one name for its config, data, state and cache folders
    # (`$XDG_*_HOME/opencode`). Its sessions are the database (`STATE_TRANSCRIPTS`); beside
    # it: settings, credentials (`auth.json`), logs, the whole outputs of cut tool results,
    # git snapshots, the prompt history (what the person typed), locks, caches, plugins.
    "opencode": (
        "opencode.json",
        "opencode.jsonc",
        "tui.json",
        "auth.json",
        "mcp-auth.json",
        "model.json",
        "kv.json",
        "prompt-history.jsonl",
        "frecency.jsonl",
        "models.json",
        "log/*",
        "tool-output/*",
        "snapshot/*",
        "repos/*",
        "storage/*",
        "locks/*",
        "bin/*",
        "plugin/*",
        "plugins/*",
    ),
}

#: Files in an agent CLI's state folder (`STATE_FILES`'s names) that are its transcripts
#: though their names say nothing of it: read by a folder walk like any transcript.
STATE_TRANSCRIPTS: dict[str, tuple[str, ...]] = {
    # opencode's session database (`opencode-<channel>.db` for a non-release channel).
    "opencode": ("opencode.db", "opencode-*.db"),
}
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


def is_transcript_name(name: str, siblings: Iterable[str] = (), folders: Iterable[str] = ()) -> bool:
    """Would a folder walk read a file of this name (given the names next to it, and the
    folders it is in, outermost first)?"""
    if name in TRANSCRIPT_NAMES or _state_transcript(list(folders), name):
        return True
    if name in SIDE_FILES or not name.endswith(TRANSCRIPT_SUFFIXES):
        return False
    return not (name == "steps.json" and "agent.log" in siblings) and not _state_file(list(folders), name)


def _left_out(name: str, siblings: Iterable[str], folders: Iterable[str]) -> bool:
    """A file that looks like a transcript by its suffix, left out by its name."""
    return name.endswith(TRANSCRIPT_SUFFIXES) and not is_transcript_name(name, siblings, folders)


def _state_transcript(folders: list[str], name: str) -> bool:
    """Is this file (in `folders`, outermost first) right in an agent CLI's state folder and
    one of its transcripts (`STATE_TRANSCRIPTS`)?"""
    patterns = STATE_TRANSCRIPTS.get(folders[-1]) if folders else None
    return patterns is not None and any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _state_file(folders: list[str], name: str) -> bool:
    """Is this file (in `folders`, outermost first) one of an agent CLI's own files in its
    state folder (`STATE_FILES`)?"""
    for i in range(len(folders) - 1, -1, -1):
        patterns = STATE_FILES.get(folders[i])
        if patterns is not None:
            below = "/".join([*folders[i + 1 :], name])
            return any(fnmatch.fnmatchcase(below, pattern) for pattern in patterns)
    return False


_NOT_REGULAR = f"{NOT_REGULAR}: skipped"


def expand(arguments: Iterable[str], left_out: list[str] | None = None) -> Iterator[Target]:
    """The files named by `arguments`, in order, each once, yielded one at a time (a
    walk of 10,000 files never holds 10,000 `Target`s). `-` is yielded as is; the
    caller reads standard input. `left_out` (when given) hears the path of every file a
    folder walk left out by its name (see the module docstring).

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
                yield from add(Target(argument, argument, problem="no file matches this pattern"))
            for match in matches:
                if os.path.isdir(match):
                    yield from walk_into(match)
                else:
                    yield from add(Target(match, match))
        else:
            yield from add(Target(argument, argument, problem="no such file or folder"))


def walk(folder: str) -> Iterator[Target]:
    """Transcript-looking files under `folder`, sorted, recursively, one at a time (only
    the names of the folder being walked are held); a sub-folder that cannot be listed is
    a `Target` with `problem` set. Symlinks to folders are not followed (as `os.walk`
    does)."""
    for target, _ in _walk(folder):
        yield target


def _walk(folder: str, left_out: list[str] | None = None) -> Iterator[tuple[Target, tuple[tuple[int, str], ...]]]:
    """`walk`, each target with its place in the walk's order (`_place`); `left_out`
    hears the files left out by name."""
    problems: list[Target] = []
    above = os.path.abspath(folder).split(os.sep)  # a state folder may be the walk's root or above it

    def unreadable(exc: OSError) -> None:
        where = exc.filename or folder
        problems.append(Target(where, where, walked=True, problem=f"cannot list folder: {exc.strerror or exc}"))

    for root, folders, files in os.walk(folder, onerror=unreadable):
        while problems:
            yield problems.pop(0), ()
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
        files.sort()
        siblings = ("agent.log",) if "agent.log" in files else ()
        parts = os.path.relpath(root, folder).split(os.sep) if root != folder else []
        for name in files:
            if is_transcript_name(name, siblings, above + parts):
                path = os.path.join(root, name)
                yield Target(path, path, walked=True), _place(parts, name)
            elif left_out is not None and _left_out(name, siblings, above + parts):
                left_out.append(os.path.join(root, name))
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
        siblings = ("agent.log",) if os.path.isfile(os.path.join(os.path.dirname(real), "agent.log")) else ()
        if not is_transcript_name(name, siblings, real.split(os.sep)[:-1]):
            continue
        if base is not root or _place(folders, name) < place:
            return True
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
