"""Writing a file safely: the one way loopwatch replaces a file it writes (settings
files, Codex's config.toml, `run --record`, calibration results).

`write(path, data)` replaces `path` atomically (a reader never sees half a file) and:

- follows no link it did not make: the new content is written to a fresh file with a
  unique name (`O_CREAT | O_EXCL | O_NOFOLLOW`) next to the target, then renamed over
  it, and a rename replaces a name, never what a link planted there points to;
- keeps the target's mode, or tightens it: a new file is created 0600 (`mode`), an
  existing one keeps its permission bits, never more;
- refuses a target that is not a regular file (a FIFO, a device, a folder);
- a target that is a symlink: with `links="edit"` (a user's settings file linked from
  their dotfiles) the file it points to is replaced, and the link stays a link; with
  `links="refuse"` the write is refused. `inside` confines the file a link may lead
  to (a project's settings may not link out of the project);
- `backup=True` keeps the previous content as `<name>.loopwatch.bak`, written the
  same way (a link planted under that name is replaced, not followed), with the
  target's mode.

Errors are `UnsafeWrite` (a `ValueError`) with one line naming the file, or `OSError`.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

__all__ = ["BACKUP_SUFFIX", "UnsafeWrite", "check", "write"]

BACKUP_SUFFIX = ".loopwatch.bak"


class UnsafeWrite(ValueError):
    """The target cannot be written safely; the message says why, naming the file."""


def check(path: str | os.PathLike[str], links: str = "refuse", inside: str | os.PathLike[str] | None = None) -> Path:
    """The file a write to `path` would replace (the link's target with
    `links="edit"`), checked as `write` checks it; raises `UnsafeWrite`."""
    target = Path(path)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISLNK(info.st_mode):
        if links != "edit":
            raise UnsafeWrite(f"{target}: is a symlink; loopwatch does not write through links (give the file itself)")
        resolved = Path(os.path.realpath(target))
        if inside is not None and not _within(resolved, Path(os.path.realpath(inside))):
            raise UnsafeWrite(f"{target}: links out of {inside} (to {resolved}); not written")
        try:
            info = os.stat(resolved)
        except FileNotFoundError:
            return resolved
        target = resolved
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeWrite(f"{target}: not a regular file (a folder, FIFO or device); not written")
    return target


def write(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    mode: int = 0o600,
    links: str = "refuse",
    backup: bool = False,
    inside: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Replace `path` with `data` (see the module docstring). Returns the backup's
    path when one was written."""
    target = check(path, links, inside)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    target.parent.mkdir(parents=True, exist_ok=True)
    kept: Path | None = None
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None:
        mode = stat.S_IMODE(info.st_mode) & 0o777
        if backup:
            kept = target.with_name(target.name + BACKUP_SUFFIX)
            with open(target, "rb") as fh:  # a regular file: `check` said so
                previous = fh.read()
            _replace(kept, previous, mode, info)
    _replace(target, blob, mode, info)
    return kept


def _replace(target: Path, blob: bytes, mode: int, like: os.stat_result | None) -> None:
    """Write `blob` to a fresh, uniquely named file beside `target`, then rename it over
    `target`: whatever sits at a name loopwatch picks was made by this call."""
    temporary = target.with_name(f".{target.name}.loopwatch-{os.getpid()}-{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temporary, flags, 0o600)
    try:
        try:
            os.fchmod(fd, mode & 0o777)  # the umask cannot widen it, and a 0600 file stays 0600
            if like is not None and os.getuid() == 0 and (like.st_uid, like.st_gid) != (0, 0):
                os.fchown(fd, like.st_uid, like.st_gid)  # root editing a user's file leaves it theirs
            view = memoryview(blob)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
