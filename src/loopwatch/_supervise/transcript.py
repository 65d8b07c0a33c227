"""Following the transcript a supervised agent writes, as it is written.

An agent CLI that keeps a transcript says more there than on its console: each tool
call with its input and its result. `run` finds that file by the agent's own
conventions and reads it as it grows:

- Claude Code (`claude`): `$CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl`
  (`~/.claude` by default), `<cwd>` being the working directory with every character
  other than a letter or digit turned into `-`;
- Codex (`codex`): `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` (`~/.codex` by
  default), the one whose `session_meta` names this working directory (or the one
  given with `-C`/`--cd`).

The agent is named by the command (`claude`, `codex`, maybe after a launcher), or
the file is given (`--transcript PATH`: what is added to it from the start of the
run, its format recognized from its first complete line).
Only a file that appears after the child started, or an older one that grows after
(`--resume`), is taken; the first one wins, and is followed to the end of the run.

The lines go to the readers' own incremental parsers (`readers.claude_code
.StreamParser`, `readers.codex.StreamParser`): one implementation per format, so a
live run and a later `scan` of the same file see the same events.

What this deliberately does not do: watch with inotify (a poll every `POLL` seconds
is a few `stat` calls), follow a rotated or replaced file, read a sub-agent's own file
(`<session>/subagents/`), or follow OpenHands' event store (its reader reads whole
event lists, not a growing file).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from .._files import NOT_REGULAR, NotRegularFile, open_file, open_regular
from .streams import _JsonLines, _stamped

__all__ = ["AGENTS", "POLL", "Follower", "Tail", "agent_of", "claude_project_dir"]

#: Seconds between looks at the file. A tool call takes seconds; a stop a quarter of a
#: second late costs nothing, and four `stat`s a second cost no measurable CPU.
POLL = 0.25
#: At most this much is read per look, so one huge append cannot stall the console.
_READ_MAX = 4 << 20
#: Command words that name an agent (`npx @openai/codex` ends in `codex` too).
AGENTS = {"claude": "claude-code", "claude-code": "claude-code", "codex": "codex"}
_FOLLOWED = ("claude-code", "codex")  # formats with an incremental parser
_HEAD_LINES = 50  # lines a given file may take to show its format (the readers peek as far)
#: Programs that start another one named after them: the agent may be that one.
_LAUNCHERS = frozenset(
    {"env", "npx", "bunx", "pnpx", "node", "bun", "nice", "nohup", "stdbuf", "timeout", "exec", "sudo", "time"}
)
_NOT_WORD = re.compile(r"[^a-zA-Z0-9]")


def agent_of(argv: Sequence[str]) -> str | None:
    """The transcript format of the agent the command runs: its program, or the one a
    launcher it starts with runs (`npx -y @openai/codex`, `env X=1 claude`)."""
    for word in argv:
        if word.startswith("-") or word.isdigit() or ("=" in word and not word.startswith("/")):
            continue  # a launcher's option, a `timeout 600`, an `env` assignment
        name = os.path.basename(word)
        name = name.removesuffix(".js")
        if name in AGENTS:
            return AGENTS[name]
        if name not in _LAUNCHERS:
            return None
    return None


def claude_project_dir(cwd: str, env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps the session files of `cwd`."""
    home = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")
    return Path(home) / "projects" / _NOT_WORD.sub("-", cwd)


def _codex_day_dirs(env: Mapping[str, str], started: float) -> list[Path]:
    """The date folders a rollout begun since `started` can be in (local and UTC
    dates, of the start and of now: a run may cross midnight)."""
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")
    days = set()
    for at in (started, time.time()):
        for moment in (datetime.fromtimestamp(at), datetime.fromtimestamp(at, UTC)):
            days.add(moment.date())
            days.add((moment - timedelta(hours=1)).date())  # a clock a little behind
    root = Path(home) / "sessions"
    return [root / f"{d.year:04d}" / f"{d.month:02d}" / f"{d.day:02d}" for d in sorted(days)]


def _codex_cwds(argv: Sequence[str], cwd: str) -> set[str]:
    """The working directories a `codex` command may record: ours, or its `-C DIR`."""
    found = {os.path.realpath(cwd)}
    for i, word in enumerate(argv):
        if word in ("-C", "--cd") and i + 1 < len(argv):
            found.add(os.path.realpath(os.path.join(cwd, argv[i + 1])))
        elif word.startswith("--cd="):
            found.add(os.path.realpath(os.path.join(cwd, word[5:])))
    return found


class Tail:
    """One file followed as it grows: `read()` returns the bytes added since the last
    call (at most `_READ_MAX`), or b"" while there are none or the file is missing.
    It raises `NotRegularFile` for a FIFO, a device or a folder (never waits on one)."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        self._fd: int | None = None

    def read(self) -> bytes:
        if self._fd is None:
            try:
                self._fd = open_regular(str(self.path))
            except NotRegularFile:
                raise
            except OSError:
                return b""
        try:
            size = os.fstat(self._fd).st_size
            if size <= self.offset:
                return b""
            data = os.pread(self._fd, min(size - self.offset, _READ_MAX), self.offset)
        except OSError:
            return b""
        self.offset += len(data)
        return data

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Lines(_JsonLines):
    """The transcript's lines to a reader's parser, each with its `line N` reference
    (numbered in the whole file, as `scan` numbers them, when reading starts after
    `skipped` lines). A line that is not a JSON object is passed over."""

    def __init__(self, parser: Any, skipped: int = 0) -> None:
        super().__init__()
        self.parser = parser
        self.skipped = skipped
        self.lines = 0  # read here

    def _line(self, line: bytes, at: float) -> Iterator[Any]:
        self.lines += 1
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return iter(())
        return _stamped(self.parser.feed(obj, f"line {self.skipped + self.lines}"), at)

    def finish(self, at: float) -> list[Any]:
        return super().finish(at) + list(_stamped(self.parser.finish(), at))


def _parser(format: str) -> Any:
    from .._readers import claude_code, codex

    return claude_code.StreamParser() if format == "claude-code" else codex.StreamParser()


class Follower:
    """Finds the transcript of the child and turns what is appended to it into events.

    `spec` is `auto` (find it by the agent's conventions; nothing when the command
    names no agent loopwatch knows), `off`, or a path. Call `start()` just before the
    child starts, then `poll(now)` whenever `due(now)`; `finish()` at the end.
    `clock` is the caller's monotonic clock; events whose line has no time of its own
    get the wall-clock time they were read (the files' own times are wall-clock).
    """

    def __init__(
        self,
        spec: str,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.env = os.environ if env is None else env
        self.wall = wall
        self.argv = list(argv)
        self.format: str | None = None  # known once the file is chosen and recognized
        self.path: Path | None = None
        self.problem: str | None = None  # why a given file cannot be followed
        self.events = 0
        self._expected = agent_of(argv) if spec == "auto" else None
        self._tail: Tail | None = None
        self._lines: _Lines | None = None
        self._head = b""  # a given file's first bytes, until its format is known
        self._before: dict[Path, int] = {}  # files there at the start, and their sizes
        self._rejected: set[Path] = set()
        self._started = 0.0
        self._next = 0.0

    @property
    def wanted(self) -> bool:
        """Is there a transcript to look for at all?"""
        return self.spec != "off" and (self.spec != "auto" or self._expected is not None) and self.problem is None

    @property
    def following(self) -> bool:
        """Is a transcript being read (its format known)? Then it is the evidence."""
        return self._lines is not None

    @property
    def lines(self) -> int:
        return self._lines.lines if self._lines is not None else 0

    def start(self) -> None:
        self._started = self.wall()
        if self.spec not in ("auto", "off"):
            path = Path(os.path.join(self.cwd, self.spec))
            self.path = path
            try:  # what it held before the run is another run's
                offset = path.stat().st_size
            except OSError:
                offset = 0
            self._tail = Tail(path, offset)
        elif self.wanted:
            self._before = {p: size for p, size in self._candidates()}

    def due(self, now: float) -> bool:
        return self.wanted and now >= self._next

    def deadline(self) -> float | None:
        return self._next if self.wanted else None

    def poll(self, now: float) -> list[Any]:
        """New events from the transcript (finding it first if need be)."""
        self._next = now + POLL
        if self._tail is None:
            self._find()
            if self._tail is None:
                return []
        try:
            data = self._tail.read()
        except NotRegularFile:
            self.problem = f"{self.path}: {NOT_REGULAR}"
            return []
        return self._read(data)

    def finish(self) -> list[Any]:
        """The end of the run: what is left in the file, and in the parser."""
        if not self.wanted or self._tail is None:
            return []
        events = []
        while True:
            try:
                data = self._tail.read()
            except NotRegularFile:
                break
            if not data:
                break
            events += self._read(data)
        if self._lines is None and self.problem is None and self._head:
            self._recognize(self._head, final=True)  # the file is complete: no more waiting for lines
        if self._lines is not None:
            rest = self._lines.finish(self.wall())
            self.events += len(rest)
            events += rest
        self._tail.close()
        return events

    def record(self) -> dict[str, Any] | None:
        """What the run's record says about the transcript: names and counts only."""
        if self.path is None and self.problem is None:
            return None
        return {
            "format": self.format,
            "file": self.path.name if self.path is not None else None,
            "lines": self.lines,
            "events": self.events,
            **({"problem": self.problem} if self.problem else {}),
        }

    # -- internals ------------------------------------------------------------------------

    def _read(self, data: bytes) -> list[Any]:
        if not data:
            return []
        if self._lines is None:
            self._head += data
            if b"\n" not in self._head or not self._recognize(self._head):
                return []  # no complete line yet, or not enough to tell the format
            data, self._head = self._head, b""
            assert self._lines is not None
        events = self._lines.feed(data, self.wall())
        self.events += len(events)
        return events

    def _recognize(self, head: bytes, final: bool = False) -> bool:
        """Is the format known now? A given file is told by its first lines, as `scan`
        tells it: a session may open with lines no reader claims (Claude Code's
        `queue-operation`), so up to `_HEAD_LINES` lines or 64 KiB are waited for
        (`final`: the run has ended, the file will not grow)."""
        format = self._expected
        if format is None:
            from .._readers import HEAD_SIZE, detect

            format = detect(str(self.path), head[:HEAD_SIZE])
            if format not in _FOLLOWED:
                if format is None and not final and head.count(b"\n") < _HEAD_LINES and len(head) < HEAD_SIZE:
                    return False  # undecided: wait for more lines
                self.problem = (
                    f"{self.path}: a {format} transcript cannot be followed as it is written"
                    if format
                    else f"{self.path}: not a Claude Code session or Codex rollout"
                )
                if self._tail is not None:
                    self._tail.close()
                return False
        self.format = format
        assert self.path is not None and self._tail is not None
        began = self._tail.offset - len(head)  # where reading began: 0, or the size at the start
        self._lines = _Lines(_parser(format), _count_lines(self.path, began) if began else 0)
        return True

    def _candidates(self) -> Iterator[tuple[Path, int]]:
        """The files the agent may be writing its transcript to, with their sizes."""
        if self._expected == "claude-code":
            folders = [claude_project_dir(self.cwd, self.env)]
            pattern = ".jsonl"
        else:
            folders = _codex_day_dirs(self.env, self._started)
            pattern = "rollout-"
        for folder in folders:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if not name.endswith(".jsonl") or (pattern == "rollout-" and not name.startswith(pattern)):
                    continue
                try:
                    size = entry.stat().st_size
                except OSError:
                    continue
                yield Path(entry.path), size

    def _find(self) -> None:
        new, grown = [], []
        for path, size in self._candidates():
            if path in self._rejected:
                continue
            if path not in self._before:
                new.append((path, 0))
            elif size > self._before[path]:
                grown.append((path, self._before[path]))
        new.sort(key=lambda found: _mtime(found[0]), reverse=True)  # the newest first
        for path, offset in new + grown:
            if self._expected == "codex" and not self._codex_here(path):
                continue
            self.path, self._tail = path, Tail(path, offset)
            return

    def _codex_here(self, path: Path) -> bool:
        """Is this rollout this run's? Its first line (`session_meta`) names its cwd.
        Undecided (False, not rejected) while that line is not written yet."""
        try:
            with open_file(str(path)) as fh:
                first = fh.readline(1 << 20)
        except OSError:
            return False
        if not first.endswith(b"\n"):
            return False
        try:
            payload = orjson.loads(first).get("payload")
            cwd = payload.get("cwd") if isinstance(payload, dict) else None
        except (orjson.JSONDecodeError, AttributeError):
            cwd = None
        if isinstance(cwd, str) and os.path.realpath(cwd) in _codex_cwds(self.argv, self.cwd):
            return True
        self._rejected.add(path)
        return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _count_lines(path: Path, upto: int) -> int:
    """Lines in the first `upto` bytes of a file (where following it began)."""
    count = 0
    try:
        with open_file(str(path)) as fh:
            while upto > 0:
                block = fh.read(min(upto, 1 << 20))
                if not block:
                    break
                count += block.count(b"\n")
                upto -= len(block)
    except OSError:
        pass
    return count
