"""The real Cline CLI, driven offline: a fresh HOME, `loopwatch install cline`, a scripted
model, a headless run (`cline --json PROMPT`).

- `cline_binary(version)`: npm `cline` at `version` (`real_clis`), installed on first use.
- The model is `scripted_chat.ScriptedChat` (an OpenAI chat-completions server on
  127.0.0.1), configured as Cline's `openai-compatible` provider by `cline auth`, run from
  outside the workspace (a project's `.env` applies to it too).
- `ClineRun`: one user's machine under `root`: `home/` (HOME: Cline's state, the hook's
  folder and loopwatch's own state), `work/` (the workspace, where Cline is started).
  Cline runs in local mode (`CLINE_SESSION_BACKEND_MODE=local`): without it a run starts a
  detached hub daemon on the fixed port 25463, which parallel tests would share. `close()`
  stops any hub of this HOME (`cline hub stop`) and says whether one was running, so a
  test can assert that none was started.

Everything here is written for these tests; the shapes follow what the real CLI sent and
accepted (3.0.57 and 3.0.65).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import real_clis
from scripted_chat import ScriptedChat, Step

CLINE_VERSION, CURRENT_CLINE_VERSION = real_clis.CLIS["cline"].versions
ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LOOP_COMMAND = "ls /nonexistent-dir-xyz"
#: Where a path of a test's machine is written in the fixtures kept from its runs.
PLACEHOLDER = "/MACHINE"


def cline_binary(version: str = CLINE_VERSION) -> str:
    """The CLI at `version` (the pinned one by default), installed on first use."""
    return real_clis.binary("cline", version)


# -- scripts ----------------------------------------------------------------------------------


def run(text: str, *commands: str, **extra: Any) -> Step:
    return Step.call(text, "run_commands", {"commands": list(commands), **extra})


def loop_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, then "done"."""
    return [run(f"Step {i + 1}: listing.", LOOP_COMMAND) for i in range(times)] + [Step(f"Done after {times}.")]


def reworded_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, with a `description` (a key Cline passes
    through, unused) worded anew each time."""
    words = ("List the directory", "Show the folder's files", "Check what the folder holds", "Look in the folder")
    steps = [
        run(f"Step {i + 1}: listing.", LOOP_COMMAND, description=f"{words[i % len(words)]}, try {i + 1}")
        for i in range(times)
    ]
    return steps + [Step(f"Done after {times}.")]


def healthy_script(work: Path) -> list[Step]:
    """Different commands, then write a failing test, run it, read it, fix it, run it again."""
    test = str(work / "test_calc.py")
    body = "def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    steps = [run(f"Step {i}.", f"echo {i}") for i in range(1, 9)]
    steps += [
        Step.call("Writing a test.", "editor", {"path": test, "new_text": body}),
        run("Running it.", f"python3 {test}"),
        Step.call("Reading it.", "read_files", {"files": [{"path": test}]}),
        Step.call("Fixing it.", "editor", {"path": test, "old_text": "return a - b", "new_text": "return a + b"}),
        run("Running it again.", f"python3 {test}"),
        Step("Done: the test passes."),
    ]
    return steps


def subagent_script() -> list[Step]:
    """One `spawn_agent` call whose sub-agent loops, then a closing message."""
    return [
        Step.call("Delegating.", "spawn_agent", {"systemPrompt": "You are a helper.", "task": "SCENARIO:loop list it"}),
        Step("The sub-agent is done."),
    ]


# -- a run ------------------------------------------------------------------------------------


@dataclass
class Finished:
    code: int
    lines: list[dict[str, Any]]  # the `--json` lines
    stderr: str

    def events(self, kind: str) -> list[dict[str, Any]]:
        """The `agent_event` payloads of type `kind`."""
        return [
            line["event"]
            for line in self.lines
            if line.get("type") == "agent_event"
            and isinstance(line.get("event"), dict)
            and line["event"].get("type") == kind
        ]

    def tool_results(self) -> list[dict[str, Any]]:
        """The results of the calls that ran (`content_end` of a tool), in order."""
        return [e for e in self.events("content_end") if e.get("contentType") == "tool"]

    @property
    def result(self) -> dict[str, Any]:
        return next((line for line in reversed(self.lines) if line.get("type") == "run_result"), {})

    @property
    def aborted(self) -> dict[str, Any] | None:
        return next((line for line in self.lines if line.get("type") == "run_aborted"), None)


class ClineRun:
    """A user's machine in `root` (see the module docstring)."""

    def __init__(self, root: Path, server: ScriptedChat, binary: str, profile: str | None = None) -> None:
        self.root, self.server, self.binary = root, server, binary
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.profile = profile
        self.extra_env: dict[str, str] = {}
        self.local = True  # False: Cline's default, a session in a detached hub daemon
        self._authed = False

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "loopwatch"

    @property
    def hooks_dir(self) -> Path:
        return self.home / "Documents" / "Cline" / "Hooks"

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            HOME=str(self.home),
            PYTHONPATH=SRC,  # `loopwatch install` runs from this checkout, and pins it in the hook
            CLINE_NO_AUTO_UPDATE="1",
            NO_PROXY="127.0.0.1,localhost",
        )
        env["PATH"] = os.pathsep.join([os.path.dirname(self.binary), env.get("PATH", os.defpath)])  # `cline` on PATH
        if self.local:
            env["CLINE_SESSION_BACKEND_MODE"] = "local"
        if self.profile:
            env["LOOPWATCH_PROFILE"] = self.profile
        env.update(self.extra_env)
        return env

    def loopwatch(self, *args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return real_clis.run_loopwatch(args, cwd or self.work, self.env(), check, timeout=180)

    def install(self, *args: str) -> str:
        return self.loopwatch("install", "cline", *args).stdout

    def auth(self) -> None:
        """Cline's provider: the scripted model (written to HOME, from outside the workspace)."""
        done = subprocess.run(
            [self.binary, "auth", "-p", "openai-compatible", "-k", "x", "-m", "m", "-b", self.server.url],
            cwd=self.root,
            env=self.env(),
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        self._authed = True

    def cline(self, prompt: str, timeout: float = 600, args: tuple[str, ...] = ()) -> Finished:
        if not self._authed:
            self.auth()
        done = subprocess.run(
            [self.binary, "--json", *args, prompt],
            check=False,
            cwd=self.work,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        lines = []
        for line in done.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    pass
        return Finished(done.returncode, lines, done.stderr)

    def status(self) -> dict[str, dict[str, Any]]:
        """`loopwatch status --json` for the one session run here: agent ("" for the main
        one) -> its row, with its decisions oldest first."""
        out = self.loopwatch("status", "--json", "--limit", "200").stdout
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return {row["agent"]: row for row in rows}

    def sessions_dir(self) -> Path:
        return self.home / ".cline" / "data" / "sessions"

    def messages_files(self) -> list[Path]:
        """The session files Cline wrote (`<id>.messages.json`, sub-agents' included)."""
        return sorted(self.sessions_dir().glob("*/*.messages.json"))

    def hubs(self) -> list[int]:
        """Pids of Cline hub daemons whose HOME is this machine's."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if b"--cline-hub-daemon" not in argv:
                    continue
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"HOME={self.home}".encode() in environ:
                found.append(int(entry))
        return found

    def close(self) -> list[int]:
        """Stop any hub of this HOME (none should run in local mode); the pids found running.
        A hub is a process by the time the run that started it has ended, so one found by
        none of /proc is none (and `cline hub stop`, itself a slow start, is not run)."""
        running = self.hubs()
        if running:
            subprocess.run(
                [self.binary, "hub", "stop"],
                cwd=self.root,
                env=self.env(),
                check=False,
                capture_output=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
        for pid in self.hubs():  # what `hub stop` left: ours by its HOME, ended by its pid
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        return running

    def tui(self, prompt: str, done: Any, timeout: float = 300) -> bytes:
        """Cline's TUI on a pseudo-terminal, as a person starts it (`cline` in the
        workspace; it always runs its session in the hub), the prompt typed, until
        `done()` says the script is over; then it is ended (Ctrl-C twice, SIGTERM, SIGKILL).
        Each step waits for what the screen shows (its prompt box, the notice it opens
        with, the prompt typed) or for the model's first request, never for a set time:
        a busy machine only makes it slower. Returns what the screen showed."""
        import time

        import pytest

        if not self._authed:
            self.auth()
        env = {**self.env(), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        screen = real_clis.Screen([self.binary], self.work, env)

        def typed(since: int) -> bool:
            """Is every character of the prompt on the screen, in order? Each is drawn as it
            is typed, between frames of the logo's animation; a space may be a cursor move."""
            drawn = iter(screen.text(since))
            return all(char in drawn for char in prompt if not char.isspace())

        def wait(ready: Any, seconds: float, what: str) -> None:
            end = time.monotonic() + seconds
            while not ready():
                if screen.closed or time.monotonic() > end:
                    ended = "it ended" if screen.closed else f"{seconds:.0f} s passed"
                    pytest.fail(f"Cline's TUI: {what} not seen ({ended}); the screen's end: {screen.text()[-1500:]!r}")
                screen.pump(0.5)

        def settle() -> None:
            while screen.pump(1):  # until the screen is still for a second
                pass

        try:
            wait(lambda: "What can I do for you?" in screen.text(), 180, "its prompt box")
            # The notice it opens with on a new HOME (any key closes it) comes just after the
            # prompt box; a key typed before it would be taken by it.
            end = time.monotonic() + 90
            while "key to close" not in screen.text() and time.monotonic() < end:
                screen.pump(0.5)
            if "key to close" in screen.text():
                screen.type("\x1b")
                settle()
            mark = len(screen.drawn)
            for char in prompt:
                screen.type(char)
                time.sleep(0.03)
            wait(lambda: typed(mark), 60, "the prompt typed")
            settle()
            screen.type("\r")
            wait(lambda: bool(self.server.requests), 180, "the model's first request")
            wait(done, timeout, "the end of the script")
            for _ in range(2):  # Ctrl-C twice, as a person ends it
                screen.pump(2)
                screen.type("\x03")
            screen.pump(2)
        finally:
            screen.end()
        return bytes(screen.drawn)


@contextlib.contextmanager
def hub_port() -> Any:
    """Hold Cline's hub port for one test at a time (its port, 25463, is fixed): a lock in
    the CLI cache; skips the test when another program listens there."""
    import fcntl
    import socket

    import pytest

    path = real_clis.cache_dir("cline", "hub").with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # let go when the file is closed
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", 25463)) == 0:
                pytest.skip("port 25463 (Cline's hub) is taken by another program")
        yield


def scrubbed(text: str, *roots: Path) -> str:
    """`text` with this machine's folders (and the hex ids loopwatch's refusals carry)
    replaced by fixed placeholders, for a fixture kept from a run."""
    for root in sorted({str(r) for r in roots}, key=len, reverse=True):
        text = text.replace(root, PLACEHOLDER)
    return re.sub(r"(loopwatch-refused[ -][A-Za-z0-9_.]*-)[0-9a-f]{8,12}", r"\1NONCE", text)


# -- fixtures kept from real runs -----------------------------------------------------------------

#: A hook file that keeps each payload Cline hands it (runs before loopwatch's: `~/.cline`
#: sorts before `~/Documents`), and answers nothing.
CAPTURE_HOOK = '#!/bin/sh\ncat > "{folder}/$(date +%s%N)-{event}.json"\n'


def capture_payloads(machine: ClineRun, folder: Path) -> None:
    """Keep every PreToolUse and PostToolUse payload of `machine`'s runs in `folder`."""
    hooks = machine.home / ".cline" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    for event in ("PreToolUse", "PostToolUse"):
        (hooks / event).write_text(CAPTURE_HOOK.format(folder=folder, event=event))


def write_fixtures(out: Path) -> None:
    """Run the scenarios once per release and keep what the tests read: hook payloads
    (the current release), session files and `--json` output (both), paths scrubbed.

        PYTHONPATH=src python tests/real_cline_support.py fixtures tests/fixtures/cline
    """
    import shutil
    import tempfile

    for version in (CLINE_VERSION, CURRENT_CLINE_VERSION):
        binary = cline_binary(version)
        for name, profile, prompt in (
            ("loop", None, "SCENARIO:loop do the task"),
            ("attended", "attended", "SCENARIO:loop do the task"),
            ("healthy", None, "SCENARIO:healthy fix the test"),
            ("subagent", None, "SCENARIO:subagent delegate"),
        ):
            root = Path(tempfile.mkdtemp(prefix=f"cline-fixture-{name}-"))
            try:
                scripts = {
                    "loop": loop_script(12),
                    "healthy": healthy_script(root / "work"),
                    "subagent": subagent_script(),
                }
                with ScriptedChat(scripts) as server:
                    machine = ClineRun(root, server, binary, profile=profile)
                    machine.install()
                    captured = root / "captured"
                    if version == CURRENT_CLINE_VERSION:
                        capture_payloads(machine, captured)
                    done = machine.cline(prompt)
                    machine.close()
                target = out / version / name
                target.mkdir(parents=True, exist_ok=True)
                stream = "".join(json.dumps(line) + "\n" for line in done.lines)
                (target / "run.jsonl").write_text(scrubbed(stream, root))
                for path in machine.messages_files():
                    data = json.loads(path.read_text())
                    data.pop("system_prompt", None)  # Cline's own prompt: long, and not the run's
                    kept = "agent.messages.json" if path.name.startswith("agent_") else "session.messages.json"
                    (target / kept).write_text(scrubbed(json.dumps(data, indent=1), root) + "\n")
                for payload in sorted(captured.glob("*.json")) if captured.is_dir() else []:
                    raw = json.loads(payload.read_text())
                    event = payload.stem.split("-", 1)[1]
                    call = raw.get("tool_call") or raw.get("tool_result") or {}
                    sub = "-subagent" if raw.get("parent_agent_id") else ""
                    kept = f"{event}.{call.get('name')}{sub}.{call.get('id')}.json"
                    (target / "payloads").mkdir(exist_ok=True)
                    (target / "payloads" / kept).write_text(scrubbed(json.dumps(raw, indent=1), root) + "\n")
            finally:
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["fixtures"] and len(sys.argv) == 3:
        write_fixtures(Path(sys.argv[2]))
    else:
        print("usage: python tests/real_cline_support.py fixtures OUT_FOLDER", file=sys.stderr)
        sys.exit(2)
