"""The real GitHub Copilot CLI, driven offline: a user's machine, its scripts, one run.

- `copilot_binary(version)`: `@github/copilot` at a release of `real_clis.CLIS["copilot"]`,
  installed with npm on first use (skips only without node/npm). `ready(version)` runs it
  once (`--version`) so that its first-run unpacking of itself is done before tests run
  it side by side.
- `CopilotRun`: a fresh HOME (a git work folder, `loopwatch install copilot` run there as a
  user would), and `copilot -p PROMPT --allow-all-tools --output-format json` talking to a
  `scripted_chat.ScriptedChat`. Every process the run started is gone when it returns
  (asserted: `Finished.leftover` is empty).
- Scripts in Copilot's tool names (`bash {command, description}`, `create {path,
  file_text}`, `view {path}`, `edit {path, old_str, new_str}`, `task {description, prompt,
  agent_type, name}`).

Copilot's quirks, each seen on the real CLI (`loopwatch._hosts.copilot` has the rest):
- it runs the newest release found in any package cache unless told not to: every run
  has `COPILOT_AUTO_UPDATE=false` and its release's own cache (`XDG_CACHE_HOME` inside
  the release's install folder);
- it writes `******` over every occurrence of the provider key in its output: the key is
  long and unlike any word of the scripts;
- its session file (`~/.copilot/session-state/<id>/events.jsonl`) is written behind the
  run: read once the run is over;
- `/etc/github-copilot/policy.d` is the one place hooks hold against a project's
  switch-off, and nothing moves it: a test that writes there holds `etc_lock(exclusive)`,
  and every run holds it shared, so no other Copilot run of these tests sees its file.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import real_clis
from scripted_chat import Call, ScriptedChat, Step

PINNED, CURRENT = real_clis.CLIS["copilot"].versions
ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LOOP_COMMAND = "ls /nonexistent-dir-xyz"
#: The provider key: long, and no word of any script (Copilot masks it in its output).
KEY = "scripted-provider-key-Qz7Xw9Kv2Lm4"


def copilot_binary(version: str = PINNED) -> str:
    return real_clis.binary("copilot", version)


def cache_home(version: str) -> Path:
    """The release's own package cache (see the module docstring)."""
    return real_clis.cache_dir("copilot", version) / "xdg"


def base_env(version: str) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(XDG_CACHE_HOME=str(cache_home(version)), COPILOT_AUTO_UPDATE="false", PYTHONPATH=SRC)
    return env


@functools.cache
def ready(version: str) -> str:
    """The CLI at `version`, unpacked (its first run unpacks ~200 MB), once per test
    process: under a lock, so test processes never unpack it side by side."""
    binary = copilot_binary(version)
    folder = real_clis.cache_dir("copilot", version)
    lock = folder.parent / f"{folder.name}.unpack.lock"
    with _file_lock(lock, exclusive=True), tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [binary, "--version"],
            env={**base_env(version), "HOME": home},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    if done.returncode != 0:
        raise AssertionError(f"copilot {version} --version failed: {done.stdout}{done.stderr}")
    return binary


_file_lock = real_clis.file_lock


def etc_lock(exclusive: bool) -> contextlib.AbstractContextManager[None]:
    """Held shared by every Copilot run, exclusively by a test that writes in /etc."""
    return real_clis.etc_lock("copilot", exclusive)


# -- scripts ------------------------------------------------------------------------------------


def bash(text: str, command: str, description: str) -> Step:
    return Step.call(text, "bash", {"command": command, "description": description})


def loop_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, then "done"."""
    return [bash(f"Step {i + 1}: listing.", LOOP_COMMAND, "List the directory") for i in range(times)] + [
        Step(f"Done after {times} tool calls.")
    ]


WORDS = ("List the directory", "Show the folder's files", "Check what the folder holds", "Look in the folder")


def reworded_script(times: int = 12) -> list[Step]:
    """The same failing command, its `description` (written for the person) worded anew each time."""
    return [
        bash(f"Step {i + 1}: listing.", LOOP_COMMAND, f"{WORDS[i % len(WORDS)]}, try {i + 1}") for i in range(times)
    ] + [Step(f"Done after {times} tool calls.")]


def healthy_script(work: Path) -> list[Step]:
    """Different commands, then write a failing test, run it, read, fix, run it again: 13 calls."""
    test = str(work / "test_calc.py")
    body = "def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    steps = [bash(f"Step {i}.", f"echo {i}", f"Print {i}") for i in range(1, 9)]
    steps += [
        Step.call("Writing a test.", "create", {"path": test, "file_text": body}),
        bash("Running it.", f"python3 {test}", "Run the test"),
        Step.call("Reading it.", "view", {"path": test}),
        Step.call("Fixing it.", "edit", {"path": test, "old_str": "return a - b", "new_str": "return a + b"}),
        bash("Running it again.", f"python3 {test}", "Run the test"),
        Step("Done: the test passes."),
    ]
    return steps


def same_error_script(times: int = 12) -> list[Step]:
    """A different missing folder each time, the same error back: nothing repeats, so the
    stop can only come after a call ran. (Inside the work folder: headless, Copilot refuses
    a command naming a path outside it, which then never runs.)"""
    return [bash(f"Trying folder {i}.", f"ls missing-dir/sub{i}", "List") for i in range(times)] + [
        Step(f"Done after {times} tool calls.")
    ]


def subagent_script() -> list[Step]:
    """One `task` call whose sub-agent runs the loop (its own conversation: SCENARIO:loop)."""
    return [
        Step(
            "Delegating.",
            (
                Call(
                    "task",
                    {
                        "description": "Repeat the listing",
                        "prompt": "SCENARIO:loop list the directory",
                        "agent_type": "general-purpose",
                        "name": "lister",
                    },
                ),
            ),
        ),
        Step("The sub-agent is done."),
    ]


def switch_off_script(times: int = 12) -> list[Step]:
    """The agent writes the project setting that turns the user's hooks off, then loops."""
    command = "mkdir -p .github/copilot && echo '{\"disableAllHooks\": true}' > .github/copilot/settings.json"
    return [bash("Tuning the settings.", command, "Tune settings"), *loop_script(times)]


# -- a run ----------------------------------------------------------------------------------------


@dataclass
class Finished:
    code: int
    lines: list[dict]  # the JSON lines copilot printed
    stdout: str
    stderr: str
    leftover: list[str]  # processes of the run still there when copilot exited (then killed)
    took: float

    def of_type(self, kind: str) -> list[dict]:
        return [line for line in self.lines if line.get("type") == kind]

    @property
    def result(self) -> dict | None:
        found = self.of_type("result")
        return found[-1] if found else None

    def interrupted(self) -> bool:
        """Was the run ended by a SIGINT (loopwatch's, to the headless process)? Copilot
        then prints an `abort` of reason `user_initiated`. Whether its closing `result`
        line follows is a race of Copilot's shutdown (seen both ways, under load); one
        before the abort would be a run that had finished by itself."""
        kinds = [line.get("type") for line in self.lines]
        aborts = [i for i, line in enumerate(self.lines) if line.get("type") == "abort"]
        return (
            bool(aborts)
            and all(self.lines[i].get("data", {}).get("reason") == "user_initiated" for i in aborts)
            and all(i > aborts[0] for i, kind in enumerate(kinds) if kind == "result")
        )

    def started(self, agent: str | None = None) -> list[dict]:
        """`tool.execution_start` data, of the main agent or of sub-agent `agent`."""
        return [line["data"] for line in self.of_type("tool.execution_start") if line.get("agentId") == agent]

    def completed(self) -> dict[str, dict]:
        """toolCallId -> `tool.execution_complete` data."""
        return {line["data"]["toolCallId"]: line["data"] for line in self.of_type("tool.execution_complete")}


class CopilotRun:
    """A user's machine in `root`: a fresh HOME, a git work folder, the scripted model."""

    def __init__(self, root: Path, server: ScriptedChat, version: str, profile: str | None = None) -> None:
        self.root, self.server, self.version = root, server, version
        self.binary = ready(version)
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(self.work)], check=True)
        self.profile = profile
        self.extra_env: dict[str, str] = {}

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "loopwatch"

    @property
    def copilot_home(self) -> Path:
        return self.home / ".copilot"

    def env(self) -> dict[str, str]:
        env = base_env(self.version)
        env.update(
            HOME=str(self.home),
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=self.server.url,
            COPILOT_PROVIDER_TYPE="openai",
            COPILOT_PROVIDER_API_KEY=KEY,
            COPILOT_MODEL="scripted-model",
            NO_PROXY="127.0.0.1,localhost",
        )
        env["PATH"] = os.pathsep.join([os.path.dirname(self.binary), env.get("PATH", os.defpath)])
        if self.profile:
            env["LOOPWATCH_PROFILE"] = self.profile
        env.update(self.extra_env)
        return env

    def loopwatch(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return real_clis.run_loopwatch(args, self.work, self.env(), check, timeout=180)

    def install(self, *args: str) -> str:
        return self.loopwatch("install", "copilot", *args).stdout

    def trust(self) -> None:
        """Trust the work folder in Copilot, as a user who said yes once."""
        self.copilot_home.mkdir(parents=True, exist_ok=True)
        (self.copilot_home / "config.json").write_text(json.dumps({"trustedFolders": [str(self.work)]}))

    def run(self, prompt: str, timeout: float = 240, locked: bool = True) -> Finished:
        """`copilot -p PROMPT`, under the shared /etc lock (`locked=False`: the caller
        holds it exclusively)."""
        argv = [self.binary, "-p", prompt, "--allow-all-tools", "--output-format", "json"]
        with etc_lock(exclusive=False) if locked else contextlib.nullcontext():
            ran = real_clis.headless(argv, self.work, self.env(), timeout)
        return Finished(ran.code, real_clis.json_lines(ran.stdout), ran.stdout, ran.stderr, ran.leftover, ran.took)

    def interactive(self, prompt: str, done: Callable[[], bool], timeout: float = 180) -> str:
        """Copilot's interactive session on a pseudo-terminal, as a person starts it
        (`copilot --allow-all-tools`, in a folder they trust): once its screen settles the
        prompt is typed, and once `done()` says the script is over it is ended (SIGTERM,
        then SIGKILL). Returns what the screen showed, escape codes removed."""
        self.trust()
        env = {**self.env(), "TERM": "xterm-256color"}
        with etc_lock(exclusive=False):
            screen = real_clis.Screen([self.binary, "--allow-all-tools"], self.work, env)
            began = time.monotonic()
            try:
                while not screen.closed and time.monotonic() - began < timeout:
                    screen.pump(0.2)
                    if screen.drawn and time.monotonic() - screen.last > 2.0:  # the screen has settled: type
                        screen.type(prompt)
                        time.sleep(0.5)
                        screen.type("\r")
                        screen.until(done, timeout - (time.monotonic() - began), linger=2.0)
                        break
            finally:
                screen.end()
        return screen.text()

    def sessions(self) -> list[Path]:
        return sorted((self.copilot_home / "session-state").glob("*/events.jsonl"))

    def status(self) -> dict[str, dict]:
        """`loopwatch status --json`: (session, agent) -> its row."""
        done = self.loopwatch("status", "--json", "--limit", "200")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return {(row["session"], row["agent"]): row for row in rows}

    def hook_log(self, until: str | None = None, wait: float = 120.0) -> str:
        """The hook's log; with `until`, once it holds that text (or `wait` seconds on): the
        hook that ended the run may still be writing its last line when Copilot has exited."""
        path = self.state_dir / "hook.log"
        deadline = time.monotonic() + wait
        while True:
            text = path.read_text() if path.exists() else ""
            if until is None or until in text or time.monotonic() >= deadline:
                return text
            time.sleep(0.2)
