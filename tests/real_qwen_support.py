"""The real Qwen Code CLI, driven offline: a user's machine, its scripts, one run.

- `qwen_binary(version)`: `@qwen-code/qwen-code` at a release of `real_clis.CLIS["qwen-code"]`,
  installed with npm on first use (skips only without node/npm).
- `QwenRun`: a fresh HOME (`~/.qwen/settings.json` saying `general.enableAutoUpdate: false`:
  an interactive Qwen downloads its next release otherwise), a work folder, `loopwatch
  install qwen-code` run there as a user would, and `qwen --yolo -o stream-json PROMPT`
  talking to a `scripted_chat.ScriptedChat` (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
  `OPENAI_MODEL`: no settings needed). The system settings file is the run's own
  (`QWEN_CODE_SYSTEM_SETTINGS_PATH`): the machine's /etc is never read or written. Every
  process the run started is gone when it returns (`Finished.leftover` lists those that
  were still there, then killed).
- Scripts in Qwen's tool names: `run_shell_command {command, description}`, `write_file
  {file_path, content}`, `read_file {file_path}`, `edit {file_path, old_string,
  new_string}`, `agent {description, prompt, subagent_type}`.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import real_clis
from scripted_chat import ScriptedChat, Step

PINNED, CURRENT = real_clis.CLIS["qwen-code"].versions
ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LOOP_COMMAND = "ls /nonexistent-dir-xyz"
SHELL = "run_shell_command"


def qwen_binary(version: str = PINNED) -> str:
    return real_clis.binary("qwen-code", version)


# -- scripts ------------------------------------------------------------------------------------


def shell(text: str, command: str, description: str) -> Step:
    return Step.call(text, SHELL, {"command": command, "description": description})


def loop_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, then "done"."""
    return [shell(f"Step {i + 1}: listing.", LOOP_COMMAND, "List the directory") for i in range(times)] + [
        Step(f"Done after {times} tool calls.")
    ]


WORDS = ("List the directory", "Show the folder's files", "Check what the folder holds", "Look in the folder")


def reworded_script(times: int = 12) -> list[Step]:
    """The same failing command, its `description` (written for the person) and `timeout`
    worded anew each time: past Qwen's own detector, which counts identical inputs."""
    return [
        Step.call(
            f"Step {i + 1}: listing.",
            SHELL,
            {"command": LOOP_COMMAND, "description": f"{WORDS[i % len(WORDS)]}, try {i + 1}", "timeout": 30000 + i},
        )
        for i in range(times)
    ] + [Step(f"Done after {times} tool calls.")]


def healthy_script(work: Path) -> list[Step]:
    """Different commands, then write a failing test, run it, read, fix, run it again: 13 calls."""
    test = str(work / "test_calc.py")
    body = "def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    steps = [shell(f"Step {i}.", f"echo {i}", f"Print {i}") for i in range(1, 9)]
    steps += [
        Step.call("Writing a test.", "write_file", {"file_path": test, "content": body}),
        shell("Running it.", f"python3 {test}", "Run the test"),
        Step.call("Reading it.", "read_file", {"file_path": test}),
        Step.call(
            "Fixing it.", "edit", {"file_path": test, "old_string": "return a - b", "new_string": "return a + b"}
        ),
        shell("Running it again.", f"python3 {test}", "Run the test"),
        Step("Done: the test passes."),
    ]
    return steps


def subagent_script(scenario: str = "reworded") -> list[Step]:
    """One `agent` call (run in the background, Qwen's default) whose sub-agent loops."""
    prompt = f"SCENARIO:{scenario} list the directory"
    return [
        Step.call(
            "Delegating.",
            "agent",
            {"description": "Repeat the listing", "prompt": prompt, "subagent_type": "general-purpose"},
        ),
        Step("The sub-agent is on it."),
        Step("Still waiting."),
    ]


def switch_off_script(work: Path, times: int = 12) -> list[Step]:
    """The agent writes the project setting that turns the user's hooks off, then loops."""
    write = {"file_path": str(work / ".qwen" / "settings.json"), "content": '{"disableAllHooks": true}\n'}
    return [Step.call("Tuning the settings.", "write_file", write), *loop_script(times)]


# -- a run ----------------------------------------------------------------------------------------


@dataclass
class Finished:
    code: int
    lines: list[dict]  # the stream-json lines qwen printed
    stderr: str
    leftover: list[str]  # processes of the run still there when qwen exited (then killed)
    took: float
    stdout: str = field(repr=False, default="")

    def tool_uses(self) -> list[dict]:
        """The main agent's tool_use blocks, in order."""
        return [
            block
            for line in self.lines
            if line.get("type") == "assistant" and not line.get("parent_tool_use_id")
            for block in line["message"].get("content", [])
            if block.get("type") == "tool_use"
        ]

    def tool_results(self) -> dict[str, dict]:
        """tool_use_id -> its tool_result block (`is_error`, `content`)."""
        return {
            block["tool_use_id"]: block
            for line in self.lines
            if line.get("type") == "user"
            for block in (line["message"].get("content") or [])
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }

    @property
    def result(self) -> dict | None:
        found = [line for line in self.lines if line.get("type") == "result"]
        return found[-1] if found else None


class QwenRun:
    """A user's machine in `root`: a fresh HOME, a work folder, the scripted model."""

    def __init__(self, root: Path, server: ScriptedChat, version: str, profile: str | None = None) -> None:
        self.root, self.server, self.version = root, server, version
        self.binary = qwen_binary(version)
        self.home = root / "home"
        self.work = root / "work"
        self.system = root / "etc" / "qwen-code" / "settings.json"
        self.work.mkdir(parents=True, exist_ok=True)
        (self.home / ".qwen").mkdir(parents=True, exist_ok=True)
        self.user_settings.write_text(json.dumps({"general": {"enableAutoUpdate": False}}, indent=2))
        self.profile = profile
        self.extra_env: dict[str, str] = {}

    @property
    def user_settings(self) -> Path:
        return self.home / ".qwen" / "settings.json"

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "loopwatch"

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            HOME=str(self.home),
            PYTHONPATH=SRC,
            OPENAI_API_KEY="scripted-key",
            OPENAI_BASE_URL=self.server.url,
            OPENAI_MODEL="scripted-model",
            QWEN_CODE_SYSTEM_SETTINGS_PATH=str(self.system),
            QWEN_CODE_SYSTEM_DEFAULTS_PATH=str(self.system.with_name("system-defaults.json")),
            QWEN_CODE_SUPPRESS_YOLO_WARNING="1",
            NO_UPDATE_NOTIFIER="1",
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
        return self.loopwatch("install", "qwen-code", *args).stdout

    def project_file(self, name: str, text: str) -> Path:
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def run(self, prompt: str, timeout: float = 240) -> Finished:
        """`qwen --yolo -o stream-json PROMPT` in the work folder, stdin not a terminal."""
        ran = real_clis.headless([self.binary, "--yolo", "-o", "stream-json", prompt], self.work, self.env(), timeout)
        return Finished(ran.code, real_clis.json_lines(ran.stdout), ran.stderr, ran.leftover, ran.took, ran.stdout)

    def sessions(self) -> list[Path]:
        return sorted((self.home / ".qwen" / "projects").glob("*/chats/*.jsonl"))

    def subagent_files(self) -> list[Path]:
        return sorted((self.home / ".qwen" / "projects").glob("*/subagents/*/agent-*.jsonl"))

    def status(self) -> dict[tuple[str, str], dict]:
        """`loopwatch status --json`: (session, agent) -> its row."""
        done = self.loopwatch("status", "--json", "--limit", "200")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return {(row["session"], row["agent"]): row for row in rows}

    def hook_log(self) -> str:
        path = self.state_dir / "hook.log"
        return path.read_text() if path.exists() else ""

    def scan(self, path: Path | str) -> dict:
        """`loopwatch scan --json` of one file: its one record."""
        done = self.loopwatch("scan", "--json", str(path), check=False)
        (row,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return row
