"""The real agent CLIs the tests drive, and the one way they are installed.

`CLIS` names each CLI loopwatch guards live, its npm package, the command it installs
and the releases the tests drive: the pinned one first, then the current release (the
newest on the npm registry when it was last looked at). `.ci/run` installs them all with
`python tests/real_clis.py install` before the suite runs; a test asks for one with
`binary(name, version)`, which installs it on first use when CI did not. A test that
runs one in a session of its own (`start_new_session=True`) ends it with
`end_session`, which says what of it outlived the run.

A CLI that reads settings from a fixed place in /etc (managed settings, policy files,
requirements) that no variable moves is tested there: a test that writes there does so
inside `etc_written(name, folder)`, which holds `etc_lock(name, exclusive=True)` and puts
the folder back exactly as it found it (and says so, or fails), and every run of that CLI
(and of loopwatch beside it, which reads those files too) holds the lock shared, so no
other run of these tests sees the file.

Installed with npm into `~/.cache/loopwatch-tests/<name>-<version>` (or
`$LOOPWATCH_TEST_CACHE`), each release in a folder of its own, and reused. Nothing is
downloaded at run time: a CLI that would update itself is told not to by its test.

    python tests/real_clis.py install [NAME ...]   # every release of every CLI (or of NAME)
    python tests/real_clis.py list                 # name, package, releases, installed or not
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple


class Cli(NamedTuple):
    package: str
    command: str  # the name under node_modules/.bin
    versions: tuple[str, ...]  # pinned, then current


CLIS: dict[str, Cli] = {
    "claude-code": Cli("@anthropic-ai/claude-code", "claude", ("2.1.197", "2.1.332")),
    "codex": Cli("@openai/codex", "codex", ("0.171.0",)),
    "copilot": Cli("@github/copilot", "copilot", ("1.0.89", "1.0.102")),
    "gemini-cli": Cli("@google/gemini-cli", "gemini", ("0.58.0", "0.61.0")),
    "cline": Cli("cline", "cline", ("3.0.57", "3.0.65")),
    # 1.17.20 has no linux-x64 binary on the registry (its platform packages were never
    # published): 1.17.19 is the pinned release.
    "opencode": Cli("opencode-ai", "opencode", ("1.17.19", "1.18.33")),
    "qwen-code": Cli("@qwen-code/qwen-code", "qwen", ("0.23.4", "0.24.4")),
}

_LOCK = threading.Lock()


def cache_dir(name: str, version: str) -> Path:
    base = os.environ.get("LOOPWATCH_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "loopwatch-tests")
    return Path(base) / f"{name}-{version}"


def installed(name: str, version: str) -> Path | None:
    """The CLI's command at `version`, when it is installed."""
    path = cache_dir(name, version) / "node_modules" / ".bin" / CLIS[name].command
    return path if path.exists() else None


def install(name: str, version: str) -> Path:
    """Install `name` at `version` (once); its command's path. Raises RuntimeError with
    npm's words when npm is there but the install fails, LookupError without npm."""
    with _LOCK:
        found = installed(name, version)
        if found is not None:
            return found
        if shutil.which("node") is None or shutil.which("npm") is None:
            raise LookupError(f"the real {name} tests need node and npm (not found on PATH)")
        prefix = cache_dir(name, version)
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{CLIS[name].package}@{version}",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=900,
        )
        found = installed(name, version)
        if done.returncode != 0 or found is None:
            raise RuntimeError(
                f"npm could not install {CLIS[name].package}@{version} into {prefix}:\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        return found


def binary(name: str, version: str | None = None) -> str:
    """For a test: the CLI's command (the pinned release by default), installed on first
    use. Skips only where node or npm is missing; an install that fails fails the test."""
    import pytest

    version = version or CLIS[name].versions[0]
    try:
        return str(install(name, version))
    except LookupError as exc:
        pytest.skip(str(exc))
    except RuntimeError as exc:
        pytest.fail(str(exc))


class Ran(NamedTuple):
    """A headless run of a CLI: its exit code, what it printed, what of its session
    outlived it (killed; command lines) and how long it took."""

    code: int
    stdout: str
    stderr: str
    leftover: list[str]
    took: float


def headless(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, grace: float = 30.0) -> Ran:
    """Run `argv` as a user's unattended run: no terminal, in a session of its own; wait
    for it, then `end_session(grace)`. A run still going after `timeout` seconds is killed
    and fails the test with the end of its stderr."""
    began = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_session(proc.pid, grace=0)
        out, err = proc.communicate()
        raise AssertionError(f"{Path(argv[0]).name} did not end within {timeout:.0f} s:\n{err[-3000:]}") from None
    leftover = end_session(proc.pid, grace)
    return Ran(proc.returncode, out, err, leftover, time.monotonic() - began)


def json_lines(text: str) -> list[dict[str, Any]]:
    """The lines of `text` that are JSON objects (a CLI's `--output-format json` and the
    like), in order; any other line is passed over."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                found.append(json.loads(line))
    return found


class Screen:
    """A CLI's terminal UI on a pseudo-terminal, started as a person starts it (the
    child in a session of its own, `pty.fork`'s): what it draws is read as it comes
    (`pump`), shown without escape codes (`text`), typed to (`type`), and ended (`end`)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the CLI
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.drawn = bytearray()
        self.last = time.monotonic()  # when it last drew
        self.closed = False  # its terminal gave out: it has exited

    def pump(self, seconds: float) -> bool:
        """Read what it draws for `seconds` (less when the terminal gives out); whether
        anything came."""
        import select

        end, came = time.monotonic() + seconds, False
        while not self.closed and time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], min(0.2, max(0.0, end - time.monotonic())))
            if not ready:
                continue
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                break
            self.drawn += data
            self.last = time.monotonic()
            came = True
        return came

    def text(self, since: int = 0) -> str:
        """What it drew from byte `since` on, escape codes removed."""
        from terminal_support import shown

        return shown(bytes(self.drawn[since:]).decode("utf-8", "replace"))

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def until(self, done: Callable[[], bool], timeout: float, linger: float) -> None:
        """Pump until `done()` has held for `linger` seconds (a moment for the last hooks to
        run), the terminal gives out, or `timeout` seconds pass."""
        began, finished = time.monotonic(), None
        while not self.closed and time.monotonic() - began < timeout:
            self.pump(0.2)
            if finished is None and done():
                finished = time.monotonic()
            if finished is not None and time.monotonic() - finished > linger:
                break

    def end(self, grace: float = 1.0) -> list[str]:
        """SIGTERM, up to `grace` seconds to end by itself, then SIGKILL; what of its
        session outlived it (killed; command lines)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.1)
        leftover = end_session(self.pid, grace=0)
        os.close(self.fd)
        return leftover


def end_session(sid: int, grace: float = 30.0) -> list[str]:
    """The processes of session `sid` (the run's) still there `grace` seconds after its
    leader exited, killed; their command lines. A hook finishing its last write after
    Qwen exited is given that time (a loaded machine is slow); a daemon is not gone by then."""
    deadline = time.monotonic() + grace
    while True:
        found = _members(sid)
        if not found or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return list(found.values())


def _members(sid: int) -> dict[int, str]:
    """pid -> command line of each live process of session `sid`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            if int(fields[3]) != sid or fields[0] == b"Z":  # a zombie is done, only not reaped yet
                continue
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        found[int(entry.name)] = argv
    return found


@contextlib.contextmanager
def file_lock(path: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock on `path` (created 0600), held for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


#: The CLIs whose /etc lock this process holds exclusively: a run it starts meanwhile
#: needs no shared lock (asking for one on another descriptor would wait for ever).
_WRITING: set[str] = set()


@contextlib.contextmanager
def etc_lock(name: str, exclusive: bool) -> Iterator[None]:
    """Held shared by every run of CLI `name`, exclusively by a test that writes that
    CLI's settings in /etc (see the module docstring). Within a test holding it
    exclusively, a shared one is already held."""
    if not exclusive and name in _WRITING:
        yield
        return
    with file_lock(Path(tempfile.gettempdir()) / f"loopwatch-tests-{name}-etc.lock", exclusive):
        if not exclusive:
            yield
            return
        _WRITING.add(name)
        try:
            yield
        finally:
            _WRITING.discard(name)


def run_loopwatch(
    args: tuple[str, ...], cwd: Path, env: dict[str, str], check: bool = True, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`loopwatch ARGS` as a test's user, beside a real CLI: under the shared /etc locks of
    Claude Code and Codex (`install` and `doctor` read their machine settings too), so it
    never sees a file another test is writing there. Raises AssertionError with its output
    when it fails and `check` is set."""
    with etc_lock("claude-code", exclusive=False), etc_lock("codex", exclusive=False):
        done = subprocess.run(
            [sys.executable, "-m", "loopwatch", *args],
            cwd=cwd,
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if check and done.returncode != 0:
        raise AssertionError(f"loopwatch {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def hook_command(host: str, env: dict[str, str]) -> str:
    """The hook command `loopwatch install HOST` writes when run with `env`: computed by
    the loopwatch that environment imports (this checkout, by PYTHONPATH), which is not
    always the one the test process imported (an installed copy, in CI)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from loopwatch._cli.install import default_command as c; print(c(sys.argv[1]))",
            host,
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.rstrip("\n")


def _tree(folder: Path) -> dict[str, tuple[int, int, int, bytes]] | None:
    """Everything under `folder` (mode, owner, group, bytes or link target, by path), or
    None when there is no such folder."""
    if not folder.exists():
        return None
    found = {}
    for path in [folder, *sorted(folder.rglob("*"))]:
        info = path.lstat()
        if path.is_symlink():
            content = os.readlink(path).encode()
        elif path.is_file():
            content = path.read_bytes()
        else:
            content = b""
        found[str(path.relative_to(folder))] = (info.st_mode, info.st_uid, info.st_gid, content)
    return found


def _put_back(folder: Path, tree: dict[str, tuple[int, int, int, bytes]] | None) -> None:
    """Make `folder` what `_tree` saw: what the test added goes, what it changed or
    removed comes back (bytes, mode, owner)."""
    import stat

    now = _tree(folder) or {}
    for name in sorted(set(now) - set(tree or {}), reverse=True):  # deepest first
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
    if tree is None:
        return
    for name, (mode, uid, gid, content) in sorted(tree.items()):
        path = folder / name if name != "." else folder
        if stat.S_ISDIR(mode):
            path.mkdir(exist_ok=True)
        elif stat.S_ISLNK(mode):
            if now.get(name) != (mode, uid, gid, content):
                path.unlink(missing_ok=True)
                os.symlink(content.decode(), path)
            os.lchown(path, uid, gid)
            continue
        elif now.get(name, (0, 0, 0, None))[3] != content:
            path.write_bytes(content)
        os.chown(path, uid, gid)
        os.chmod(path, stat.S_IMODE(mode))


@contextlib.contextmanager
def etc_written(name: str, folder: Path) -> Iterator[None]:
    """For a test that writes CLI `name`'s settings under `folder` in /etc: hold
    `etc_lock(name, exclusive=True)` for the block; then put `folder` back as it was and
    check that it is (an AssertionError names what differs)."""
    with etc_lock(name, exclusive=True):
        before = _tree(folder)
        try:
            yield
        finally:
            _put_back(folder, before)
            after = _tree(folder)
            if after != before:
                differ = sorted(set(before or {}) ^ set(after or {})) or [
                    key for key in before or {} if (before or {})[key] != (after or {}).get(key)
                ]
                raise AssertionError(f"{folder} was not left as found: {differ}")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("install", "list"):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    names = argv[1:] or list(CLIS)
    for name in names:
        if name not in CLIS:
            print(f"unknown CLI {name!r}: one of {', '.join(CLIS)}", file=sys.stderr)
            return 2
    for name in names:
        for version in CLIS[name].versions:
            if argv[0] == "list":
                where = installed(name, version)
                print(f"{name}\t{CLIS[name].package}@{version}\t{where or 'not installed'}")
            else:
                print(f"{name} {version}: {install(name, version)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
