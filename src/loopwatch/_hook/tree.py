"""The state of a session's working folder, as one digest: did anything in it change?

    fingerprint(folder) -> "9f3a..." | None      # None: the state is unknown
    remembered_fingerprint(folder, memo)          # the same, a folder past the entry bound skipped a while
    covers(folder, path) -> bool                  # would a change to `path` show?

The hook takes a fingerprint after every call (`ToolCall.tree`) so that the monitor
can tell rounds that left the working tree as it was (a check re-run after edits that
did not land) from rounds that changed it. Equal digests must mean "nothing the walk
can see changed"; a walk that cannot promise that answers None, never a digest that
could be wrongly equal. Hence:

- Only `lstat` is read: the relative path, the type, size, mtime_ns, ctime_ns and inode of
  every entry. No file is opened, so no content is read, no FIFO blocks and no device
  answers; a symlink below the folder is an entry of its own, never followed (a loop
  cannot hang it); only the folder itself may be given by a link.
  ctime and the inode are there because a rename, or a `touch -d` that puts an old
  mtime back, changes them: a stricter "same".
- Bounded: past `MAX_ENTRIES` entries or `MAX_SECONDS` of walking, None. So is a folder
  that cannot be listed, an entry that vanishes mid-walk (the tree is changing now) and
  a folder on another device (a mount: whatever is below it is not walked).
- Racy entries: a timestamp newer than the walk's start less `_RACY_NS` (two seconds
  for a whole-second stamp, a coarse file system's) could be given again to a write
  that follows within the same clock tick, with the same size: the walk answers None
  rather than a digest a later write could match (git's "racily clean" index entries).
- Skipped (`SKIPPED`): the caches tools write as a side effect of running a check
  (`__pycache__`, `.pytest_cache`, `.mypy_cache`, `.ruff_cache`): what they hold is
  derived from the sources the walk does see, and a re-run that refreshes them is no
  edit. In `.git`, only `objects` and `logs` (`GIT_SKIPPED`), which are large and only
  ever added to when the refs, `HEAD` or the index, all walked, change too: a commit,
  a checkout, a stash or a `git add` still shows. `covers` says no for a path below a
  skipped folder, so a write there is unknown to the caller rather than "no change".

What it does not do: see anything outside the folder (a write to /etc, a package
installed elsewhere, a server's state); `covers` is how a caller tells a write it cannot
see. Never stored: paths are hashed into the digest as the walk goes, and only the
32-hex-character digest is returned. Standard library only: the hook path imports it.
"""

from __future__ import annotations

import os
import stat
import time

__all__ = [
    "GIT_SKIPPED",
    "LARGE_SECONDS",
    "MAX_ENTRIES",
    "MAX_SECONDS",
    "SKIPPED",
    "covers",
    "fingerprint",
    "remembered_fingerprint",
]

#: Entries walked at most: a source tree of a thousand entries costs a few milliseconds, and
#: about 7 µs an entry after that (`bench/tree.py`), so the bound keeps the walk under
#: about 0.1 s a call; a folder past it (a home folder, dependencies installed in the
#: project) is unknown rather than slow.
MAX_ENTRIES = 10_000
#: Seconds of walking at most, whatever the count: a slow or busy disk makes it unknown.
MAX_SECONDS = 0.1
#: Folders not walked anywhere in the tree: caches written by running a check.
SKIPPED = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
#: Folders of `.git` (at the top of the tree) not walked: objects and reflogs.
GIT_SKIPPED = frozenset({"objects", "logs"})

#: Seconds a folder found past the entry bound is not walked again (`remembered_fingerprint`):
#: a folder grows past them far more often than it shrinks back, and while it is not
#: walked its state is unknown, as it would be walked.
LARGE_SECONDS = 600.0

_RACY_NS = 2_000_000_000  # a whole-second stamp: the next write in that second could match it
_RACY_FINE_NS = 50_000_000  # a finer stamp: the kernel's clock tick is a few milliseconds
_CHECK_EVERY = 256  # entries between two looks at the clock


def fingerprint(folder: str, max_entries: int = MAX_ENTRIES, max_seconds: float = MAX_SECONDS) -> str | None:
    """The digest of `folder`'s state (see the module's doc), or None when it is
    unknown: past a bound, unreadable, changing now, or too recent to promise."""
    try:
        return _walk(folder, max_entries, max_seconds)
    except _PastBounds:
        return None


def remembered_fingerprint(folder: str, memo: str) -> str | None:
    """`fingerprint(folder)`, except that a folder found past the entry bound is not
    walked again (None) for `LARGE_SECONDS`: the file `memo` (a private marker the
    caller names, e.g. by a digest of the folder) is touched when a walk counts more
    than `MAX_ENTRIES`. A project with its dependencies installed in it is past them
    on every call, and each walk would cost the whole bound to learn the same
    "unknown". A walk past the time bound is not remembered: that is the machine's
    moment (a busy disk, a descheduled process), not the folder's size."""
    try:
        age = time.time() - os.stat(memo).st_mtime
    except OSError:
        age = None
    if age is not None and 0 <= age < LARGE_SECONDS:
        return None
    try:
        return _walk(folder, MAX_ENTRIES, MAX_SECONDS)
    except _PastBounds as past:
        if not past.large:
            return None
        try:
            os.close(os.open(memo, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600))
            os.utime(memo)
        except OSError:
            pass  # not remembered: the next call walks again, as slow but as safe
        return None


class _PastBounds(Exception):
    """The walk went past `MAX_ENTRIES` (`large`) or `MAX_SECONDS`."""

    def __init__(self, large: bool) -> None:
        super().__init__(large)
        self.large = large


def _walk(folder: str, max_entries: int, max_seconds: float) -> str | None:
    """`fingerprint`'s walk; raises `_PastBounds` past a bound."""
    from .._core.fingerprint import blake2b  # the core's: `hashlib` is too slow an import for the hook

    began = time.monotonic()
    now_ns = time.time_ns()
    try:
        root = os.stat(folder)  # the folder itself may be reached through a link: the session's own path
    except (OSError, ValueError):
        return None
    if not stat.S_ISDIR(root.st_mode):
        return None
    digest = blake2b(digest_size=16)
    update = digest.update
    entries = 0
    stack: list[tuple[str, bytes]] = [(folder, b"")]
    while stack:
        path, rel = stack.pop()
        try:
            with os.scandir(path) as listing:
                found = sorted(listing, key=_name)
        except (OSError, ValueError):
            return None  # unreadable, or gone: nothing can be promised
        for entry in found:
            entries += 1
            if entries > max_entries:
                raise _PastBounds(large=True)
            if entries % _CHECK_EVERY == 0 and time.monotonic() - began > max_seconds:
                raise _PastBounds(large=False)
            name = os.fsencode(entry.name)
            if entry.name in SKIPPED or (rel == b".git" and entry.name in GIT_SKIPPED):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                return None  # vanished since the listing: changing now
            mode = st.st_mode
            if _racy(st.st_mtime_ns, now_ns) or _racy(st.st_ctime_ns, now_ns):
                return None
            child = rel + b"/" + name if rel else name
            update(b"%s\0%o\0%d\0%d\0%d\0%d\n" % (child, mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
            if stat.S_ISDIR(mode):
                if st.st_dev != root.st_dev:
                    return None  # a mount: its contents are not walked, so not known
                stack.append((entry.path, child))
    if time.monotonic() - began > max_seconds:
        raise _PastBounds(large=False)
    return digest.hexdigest()


def covers(folder: str, path: str) -> bool:
    """Would a change to `path` (relative to `folder`, or absolute) show in `folder`'s
    fingerprint? Links are resolved first (a write through a link lands where it
    points), and a path below a skipped folder is not covered."""
    try:
        base = os.path.realpath(folder)
        target = os.path.realpath(os.path.join(folder, path))
    except (OSError, ValueError):
        return False
    if target == base:
        return False  # the folder itself is not a file a tool writes
    inside = os.path.relpath(target, base) if target.startswith(base.rstrip(os.sep) + os.sep) else None
    if inside is None:
        return False
    parts = inside.split(os.sep)
    if any(part in SKIPPED for part in parts[:-1]):
        return False
    return not (len(parts) > 2 and parts[0] == ".git" and parts[1] in GIT_SKIPPED)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _racy(stamp_ns: int, now_ns: int) -> bool:
    """Could a write after the walk get this same stamp (see the module's doc)?"""
    window = _RACY_NS if stamp_ns % 1_000_000_000 == 0 else _RACY_FINE_NS
    return stamp_ns >= now_ns - window
