"""Writing a file safely: the one way loopwatch writes a file (results, the report page,
`run --record`, calibrations and profiles, settings files, Codex's config.toml).

`Output(path)` is a file being written; `write(path, data)` writes one whole (and
`scratch(folder)` a private scratch file on the way to one). Either way the file is
complete or absent:

- the content goes to a fresh file with a unique name beside the target
  (`O_CREAT | O_EXCL | O_NOFOLLOW`), synced, then renamed over the target: a reader
  never sees half a file, and an error, Ctrl-C or SIGTERM part way (anything raised
  inside the `with` block) removes the fresh file and leaves the target as it was;
- no link it did not make is followed: a rename replaces a name, never what a link
  planted there points to. A target that is a symlink is refused (`links="refuse"`),
  replaced by the file (`links="replace"`: a name loopwatch owns, as a backup's), or,
  with `links="edit"` (a user's settings file linked from their dotfiles), the file
  it points to is replaced and the link stays a link; `inside` confines where such a
  link may lead (a project's settings may not link out of the project);
- never a file the same command reads: `inputs` are compared with the target by path
  and by device and inode (a hard link is the same file), before anything is written;
- private: a file loopwatch makes is 0600, also over an existing file others could
  read. A user's own file edited where it lives (`links="edit"`: settings) keeps its
  mode instead, and a new one is 0600;
- only a regular file is replaced (never a FIFO, a device, a folder); with
  `replace=False` an existing file is not replaced at all (`FileExistsError`);
- `backup=True` keeps the previous content as `<name>.loopwatch.bak`, written the
  same way, with the target's mode.

Errors are `UnsafeWrite` (a `ValueError`) with one line naming the file, or `OSError`
(a full disk, a file-size limit, a folder that cannot be written). It does not catch
them: the command says them in one line.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

__all__ = ["BACKUP_SUFFIX", "Interrupted", "Output", "UnsafeWrite", "check", "ending", "scratch", "write"]

BACKUP_SUFFIX = ".loopwatch.bak"

_Path = str | os.PathLike[str]


class UnsafeWrite(ValueError):
    """The target cannot be written safely; the message says why, naming the file."""


class Interrupted(KeyboardInterrupt):
    """The process was told to end by `signum` (Ctrl-C, SIGTERM) while it wrote."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_ending: list[int] = []


def ending(signum: int) -> None:
    """The process was told to end (Ctrl-C, SIGTERM: the command line's handler says
    so): from now on no file is put in place. The exception the signal raises ends the
    writing as any exception does, but Python drops one raised inside a destructor;
    this makes sure a write it let go on is discarded all the same."""
    _ending.append(signum)


def check(path: _Path, links: str = "refuse", inside: _Path | None = None, inputs: Iterable[_Path] = ()) -> Path:
    """The file a write to `path` would replace (the link's target with
    `links="edit"`), checked as `Output` checks it; raises `UnsafeWrite`."""
    target = Path(path)
    try:
        info: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode) and links == "replace":
        info = None
    elif info is not None and stat.S_ISLNK(info.st_mode):
        if links != "edit":
            raise UnsafeWrite(f"{target}: is a symlink; loopwatch does not write through links (give the file itself)")
        resolved = Path(os.path.realpath(target))
        if inside is not None and not _within(resolved, Path(os.path.realpath(inside))):
            raise UnsafeWrite(f"{target}: links out of {inside} (to {resolved}); not written")
        try:
            info = os.stat(resolved)
        except FileNotFoundError:
            info = None
        target = resolved
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise UnsafeWrite(f"{target}: not a regular file (a folder, FIFO or device); not written")
    _not_an_input(Path(path), target, info, inputs)
    return target


def _not_an_input(named: Path, target: Path, info: os.stat_result | None, inputs: Iterable[_Path]) -> None:
    """Refuse a target that is one of `inputs`: the same path, or the same file under
    another name (a hard link, a link to it)."""
    real = os.path.realpath(target)
    for given in inputs:
        if os.fspath(given) == "-":
            continue
        same = os.path.realpath(given) == real
        if not same and info is not None:
            try:
                other = os.stat(given)
            except OSError:
                continue
            same = (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)
        if same:
            raise UnsafeWrite(f"{named}: this command also reads that file; write to another file")


class Output:
    """A file being written (see the module docstring): write to `stream`, then
    `commit()` to put it in place, or `discard()`. As a context manager it commits
    when the block ends and discards when the block raises."""

    def __init__(
        self,
        path: _Path,
        *,
        mode: int | None = None,
        links: str = "refuse",
        inside: _Path | None = None,
        inputs: Iterable[_Path] = (),
        replace: bool = True,
        owner: os.stat_result | None = None,
    ) -> None:
        """`owner`: the file whose owner root's writes keep (default: the target)."""
        self.path = Path(path)
        self.target = check(path, links, inside, inputs)
        try:
            info = os.lstat(self.target)  # `check` resolved a link to edit; one to replace is replaced
        except FileNotFoundError:
            info = None
        self.previous = info if info is not None and stat.S_ISREG(info.st_mode) else None
        if self.previous is not None and not replace:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
        self._replace = replace
        if mode is None:
            keep = links == "edit" and self.previous is not None
            mode = stat.S_IMODE(self.previous.st_mode) & 0o777 if keep and self.previous is not None else 0o600
        self.mode = mode
        self._temporary = self.target.with_name(
            f".{self.target.name}.loopwatch-{os.getpid()}-{os.urandom(6).hex()}.tmp"
        )
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self._temporary, flags, 0o600)
        try:
            os.fchmod(fd, mode & 0o777)  # the umask cannot widen it, and a 0600 file stays 0600
            like = owner or self.previous
            if like is not None and os.getuid() == 0 and (like.st_uid, like.st_gid) != (0, 0):
                os.fchown(fd, like.st_uid, like.st_gid)  # root editing a user's file leaves it theirs
            self.stream: BinaryIO = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            _unlink(self._temporary)
            raise
        self.done = False

    def commit(self) -> None:
        """Sync the content and put it in place of the target (on an error, nothing is)."""
        if self.done:
            return
        if _ending:
            self.discard()
            raise Interrupted(_ending[0])
        try:
            self.stream.flush()
            os.fsync(self.stream.fileno())
            self.stream.close()
            if self._replace:
                os.replace(self._temporary, self.target)
            else:
                os.link(self._temporary, self.target)  # fails if the name was taken since
                _unlink(self._temporary)
        except BaseException:
            self.discard()
            raise
        self.done = True
        _sync_folder(self.target.parent)

    def discard(self) -> None:
        """Remove what was written; the target stays as it was."""
        if self.done:
            return
        self.done = True
        try:
            self.stream.close()
        except OSError:
            pass  # the disk that failed the write fails the flush on close too
        finally:
            _unlink(self._temporary)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def write(
    path: _Path,
    data: bytes | str,
    *,
    mode: int | None = None,
    links: str = "refuse",
    backup: bool = False,
    inside: _Path | None = None,
    inputs: Iterable[_Path] = (),
    replace: bool = True,
) -> Path | None:
    """Write `data` as the whole file at `path` (see the module docstring). Returns the
    backup's path when one was written."""
    blob = data.encode("utf-8") if isinstance(data, str) else data
    Path(check(path, links, inside)).parent.mkdir(parents=True, exist_ok=True)  # a settings folder not made yet
    with Output(path, mode=mode, links=links, inside=inside, inputs=inputs, replace=replace) as output:
        kept: Path | None = None
        if backup and output.previous is not None:
            kept = output.target.with_name(output.target.name + BACKUP_SUFFIX)
            with open(output.target, "rb") as fh:  # a regular file: `check` said so
                previous = fh.read()
            with Output(kept, mode=output.mode, links="replace", owner=output.previous) as copy:
                copy.stream.write(previous)
        output.stream.write(blob)
    return kept


def scratch(folder: _Path, prefix: str = "loopwatch-") -> tuple[BinaryIO, Path]:
    """A private scratch file in `folder`, for data on its way to an output (a long
    session's part of the report page), and its path: a fresh unique name
    (`O_EXCL | O_NOFOLLOW`), 0600. Whoever reads it last removes it."""
    path = Path(folder) / f"{prefix}{os.getpid()}-{os.urandom(8).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        stream = os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        _unlink(path)
        raise
    return stream, path


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _sync_folder(folder: Path) -> None:
    """The rename itself survives a crash once its folder is synced (best effort: some
    file systems cannot open a folder for it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
