"""The real opencode CLI (npm `opencode-ai`), driven offline: install, a machine, a run.

- `opencode_binary(version)`: the release, installed with npm into the test cache on first
  use (`real_clis`). Skips only where node or npm is missing.
- `OpencodeRun`: a user's machine in a folder: a fresh HOME (and XDG folders under it), a
  git work folder, opencode's own config pointing at the scripted model (`ScriptedChat`,
  an OpenAI chat-completions server on 127.0.0.1), `loopwatch install opencode` run there
  as a user would, then `opencode run --format json PROMPT`.
- Steps for the scripted model, in opencode's tool names (`bash {command}`, `read
  {filePath}`, `write {filePath, content}`, `edit {filePath, oldString, newString}`, `task
  {description, prompt, subagent_type}`).

Offline: `OPENCODE_DISABLE_MODELS_FETCH`, `OPENCODE_DISABLE_AUTOUPDATE` and
`npm_config_offline` (opencode's background install of its plugin package into each config
folder then fails at once). Every run is a process group of its own: nothing of it may
outlive the run (`Finished.leftover` says what did, and was killed).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import real_clis
from scripted_chat import Call, ScriptedChat, Step

OPENCODE_VERSION, CURRENT_OPENCODE_VERSION = real_clis.CLIS["opencode"].versions
VERSIONS = (OPENCODE_VERSION, CURRENT_OPENCODE_VERSION)
ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LOOP_COMMAND = "ls /nonexistent-dir-xyz"

__all__ = [
    "CURRENT_OPENCODE_VERSION",
    "LOOP_COMMAND",
    "OPENCODE_VERSION",
    "VERSIONS",
    "Call",
    "Finished",
    "OpencodeRun",
    "ScriptedChat",
    "Step",
    "healthy_script",
    "loop_script",
    "opencode_binary",
    "reworded_script",
    "subagent_script",
]


def opencode_binary(version: str = OPENCODE_VERSION) -> str:
    return real_clis.binary("opencode", version)


# -- the scripts ----------------------------------------------------------------------------


def bash(text: str, command: str, **more: Any) -> Step:
    return Step.call(text, "bash", {"command": command, **more})


def loop_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, then "done"."""
    steps = [bash(f"Step {i + 1}: listing.", LOOP_COMMAND, description="List the directory") for i in range(times)]
    return [*steps, Step(f"Done after {times} tool calls.")]


def reworded_script(times: int = 12) -> list[Step]:
    """The same failing command, its `description` (written for the person) and `timeout`
    worded anew each time."""
    words = ("List the directory", "Show the folder's files", "Check what the folder holds", "Look in the folder")
    steps = [
        bash(f"Step {i + 1}: listing.", LOOP_COMMAND, description=f"{words[i % 4]}, try {i + 1}", timeout=30000 + i)
        for i in range(times)
    ]
    return [*steps, Step(f"Done after {times} tool calls.")]


def healthy_script(work: Path) -> list[Step]:
    """Different commands, then write a failing test, run it, read it, fix it, run it again."""
    test = str(work / "test_calc.py")
    body = "def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    steps = [bash(f"Step {i}.", f"echo {i}", description=f"Print {i}") for i in range(1, 9)]
    return [
        *steps,
        Step.call("Writing a test.", "write", {"filePath": test, "content": body}),
        bash("Running it.", f"python3 {test}", description="Run the test"),
        Step.call("Reading it.", "read", {"filePath": test}),
        Step.call("Fixing it.", "edit", {"filePath": test, "oldString": "return a - b", "newString": "return a + b"}),
        bash("Running it again.", f"python3 {test}", description="Run the test"),
        Step("Done: the test passes."),
    ]


def subagent_script() -> list[Step]:
    """One task call whose sub-agent loops, then a closing message."""
    task = {
        "description": "Repeat the listing",
        "prompt": "SCENARIO:loop list the directory",
        "subagent_type": "general",
    }
    return [Step.call("Delegating.", "task", task), Step("The sub-agent is done.")]


# -- a run ----------------------------------------------------------------------------------


@dataclass
class Finished:
    code: int
    lines: list[dict[str, Any]]  # `--format json` lines
    stderr: str
    leftover: list[str] = field(default_factory=list)  # processes of the run alive after it ended

    def tool_parts(self) -> list[dict[str, Any]]:
        """The finished tool parts the run printed (`tool_use` lines), in order."""
        return [line["part"] for line in self.lines if line.get("type") == "tool_use" and "part" in line]

    def errors(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("type") == "error"]


class OpencodeRun:
    """A user's machine in `root`: a fresh HOME, opencode configured for the scripted
    model, a git work folder."""

    def __init__(self, root: Path, server: ScriptedChat, binary: str, profile: str | None = None) -> None:
        self.root, self.server, self.binary = root, server, binary
        self.home = root / "home"
        self.work = root / "work"
        self.profile = profile
        self.extra_env: dict[str, str] = {}
        self.work.mkdir(parents=True, exist_ok=True)
        for folder in (".config", ".local/share", ".local/state", ".cache"):
            (self.home / folder).mkdir(parents=True, exist_ok=True)
        git = ["git", "-C", str(self.work), "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
        config = {
            "$schema": "https://opencode.ai/config.json",
            "provider": {
                "scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": {"baseURL": server.url, "apiKey": "not-a-key"},
                    "models": {"m": {"name": "m", "tool_call": True}},
                }
            },
            "model": "scripted/m",
            "autoupdate": False,
            "share": "disabled",
        }
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "opencode.json").write_text(json.dumps(config, indent=1))

    @property
    def config_dir(self) -> Path:
        return self.home / ".config" / "opencode"

    @property
    def plugin(self) -> Path:
        return self.config_dir / "plugin" / "loopwatch.js"

    @property
    def database(self) -> Path:
        return self.home / ".local" / "share" / "opencode" / "opencode.db"

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "loopwatch"

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            PYTHONPATH=SRC,  # `python -m loopwatch install` imports this checkout (the hook names it itself)
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_AUTOUPDATE="1",
            npm_config_offline="true",
            NO_PROXY="127.0.0.1,localhost",
        )
        env["PATH"] = os.pathsep.join([os.path.dirname(self.binary), env.get("PATH", os.defpath)])
        if self.profile:
            env["LOOPWATCH_PROFILE"] = self.profile
        env.update(self.extra_env)
        return env

    def loopwatch(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return real_clis.run_loopwatch(args, self.work, env or self.env(), check, timeout=120)

    def install(self, *args: str) -> str:
        return self.loopwatch("install", "opencode", *args).stdout

    def opencode(
        self,
        prompt: str,
        *args: str,
        wrap: Callable[[list[str]], list[str]] | None = None,
        timeout: float = 240,
    ) -> Finished:
        """`opencode run --format json [ARGS] PROMPT` in the work folder, in a session of
        its own; whatever of it is left when it ends is killed and named."""
        argv = [self.binary, "run", "--format", "json", *args, prompt]
        if wrap is not None:
            argv = wrap(argv)
        ran = real_clis.headless(argv, self.work, self.env(), timeout, grace=0)
        return Finished(ran.code, real_clis.json_lines(ran.stdout), ran.stderr, ran.leftover)

    def interactive(self, prompt: str, done: Callable[[], bool], timeout: float = 240) -> tuple[str, list[str]]:
        """opencode's terminal UI on a pseudo-terminal, as a person starts it (`opencode
        --prompt PROMPT`), until `done()` says the script is over (and 3 s more, for the
        session going idle); then it is ended (SIGTERM, up to 5 s to end by itself as on a
        person's Ctrl-C, then SIGKILL). Returns what the screen showed (escape codes
        removed) and what of its session was left after it ended."""
        env = {**self.env(), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        screen = real_clis.Screen([self.binary, "--prompt", prompt], self.work, env)
        try:
            screen.until(done, timeout, linger=3.0)
        finally:
            leftover = screen.end(grace=5.0)
        return screen.text(), leftover

    def status(self) -> dict[str, dict[str, Any]]:
        """`loopwatch status --json`: agent ("" for the main one) -> its row."""
        done = self.loopwatch("status", "--json", "--limit", "200")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return {row["agent"]: row for row in rows}
