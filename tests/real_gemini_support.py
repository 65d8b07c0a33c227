"""The real Gemini CLI, driven offline: the releases under test, scripts, a run.

- `gemini_binary(version)`: `@google/gemini-cli` at a release of `real_clis.CLIS`,
  installed with npm into the test cache on first use.
- `GeminiRun`: a user's machine in a folder: a fresh HOME whose Gemini CLI talks to the
  scripted Gemini API (`scripted_gemini.ScriptedGemini`) with an API key and trusts the
  work folder (as a user who answered its questions once), `loopwatch install
  gemini-cli` run there as a user would, then `gemini -p ... -o stream-json
  --approval-mode yolo` in its own process group, which must be empty when it exits:
  a process the CLI left behind is killed and fails the test.

Everything here is written for these tests; the settings are the ones Gemini CLI 0.58.0
and 0.61.0 read.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import real_clis
from scripted_gemini import ScriptedGemini, Step

PINNED, CURRENT = real_clis.CLIS["gemini-cli"].versions
VERSIONS = (PINNED, CURRENT)
ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LOOP_COMMAND = "ls /nonexistent-dir-xyz"
SHELL = "run_shell_command"
#: A model with no routing call before each prompt (a run without `-m` makes one).
MODEL = "gemini-2.5-flash"


def gemini_binary(version: str = PINNED) -> str:
    return real_clis.binary("gemini-cli", version)


# -- scripts --------------------------------------------------------------------------------


def loop_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, then "done"."""
    steps = [
        Step(f"Step {i + 1}: listing.", SHELL, {"command": LOOP_COMMAND, "description": "List the directory"})
        for i in range(times)
    ]
    return steps + [Step(f"Done after {times} tool calls.")]


WORDS = ("List the directory", "Show the folder's files", "Check what the folder holds", "Look in the folder")


def reworded_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, its `description` (written for the
    person) worded anew each time."""
    steps = [
        Step(
            f"Step {i + 1}: listing.",
            SHELL,
            {"command": LOOP_COMMAND, "description": f"{WORDS[i % len(WORDS)]}, try {i + 1}"},
        )
        for i in range(times)
    ]
    return steps + [Step(f"Done after {times} tool calls.")]


def healthy_script(work: Path) -> list[Step]:
    """Different commands, then write a failing test, run it, read it, fix it, run it again."""
    test = str(work / "test_calc.py")
    body = "def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    run = {"command": f"python3 {test}", "description": "Run the test"}
    steps = [Step(f"Step {i}.", SHELL, {"command": f"echo {i}", "description": f"Print {i}"}) for i in range(1, 9)]
    steps += [
        Step("Writing a test.", "write_file", {"file_path": test, "content": body}),
        Step("Running it.", SHELL, run),
        Step("Reading it.", "read_file", {"file_path": test}),
        Step(
            "Fixing it.",
            "replace",
            {"file_path": test, "old_string": "return a - b", "new_string": "return a + b", "instruction": "Fix add"},
        ),
        Step("Running it again.", SHELL, run),
        Step("Done: the test passes."),
    ]
    return steps


def subagent_script(scenario: str = "loop") -> list[Step]:
    """One `invoke_agent` call whose sub-agent runs `scenario`, then a closing message."""
    return [
        Step("Delegating.", "invoke_agent", {"agent_name": "generalist", "prompt": f"SCENARIO:{scenario} list it"}),
        Step("The sub-agent is done."),
    ]


def settings_write_script(work: Path, content: str) -> list[Step]:
    """Write the project's `.gemini/settings.json`, then carry on."""
    return [
        Step(
            "Writing settings.",
            "write_file",
            {"file_path": str(work / ".gemini" / "settings.json"), "content": content},
        ),
        Step("Echo.", SHELL, {"command": "echo after", "description": "after"}),
        Step("Done."),
    ]


# -- a run ----------------------------------------------------------------------------------


@dataclass
class Finished:
    code: int
    lines: list[dict]  # stream-json lines
    stderr: str

    def of_type(self, kind: str) -> list[dict]:
        return [line for line in self.lines if line.get("type") == kind]

    def results(self) -> dict[str, dict]:
        """tool_id -> its `tool_result` line."""
        return {line["tool_id"]: line for line in self.of_type("tool_result")}


class GeminiRun:
    """A user's machine in `root`: a fresh HOME set up for the scripted API, a work
    folder it trusts, and loopwatch installed by `loopwatch install gemini-cli` (unless
    `install=False`)."""

    def __init__(
        self,
        root: Path,
        server: ScriptedGemini,
        binary: str,
        profile: str | None = None,
        install: bool = True,
        settings: dict | None = None,
    ) -> None:
        self.root, self.server, self.binary, self.profile = root, server, binary, profile
        self.home = root / "home"
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        (self.home / ".gemini").mkdir(parents=True, exist_ok=True)
        self.extra_env: dict[str, str] = {}
        user = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
        }
        for key, value in (settings or {}).items():
            user[key] = {**user.get(key, {}), **value} if isinstance(value, dict) else value
        self.settings_path.write_text(json.dumps(user, indent=2))
        (self.home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(self.work): "TRUST_FOLDER"}))
        if install:
            self.loopwatch("install", "gemini-cli")

    @property
    def settings_path(self) -> Path:
        return self.home / ".gemini" / "settings.json"

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "loopwatch"

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            HOME=str(self.home),
            PYTHONPATH=SRC,  # the hook's `python -m loopwatch` imports this checkout
            GOOGLE_GEMINI_BASE_URL=self.server.url,
            GEMINI_API_KEY="scripted-not-a-key",
            NO_BROWSER="true",
            TERM="dumb",
            NO_PROXY="127.0.0.1,localhost",
        )
        env["PATH"] = os.pathsep.join([os.path.dirname(self.binary), env.get("PATH", os.defpath)])
        if self.profile:
            env["LOOPWATCH_PROFILE"] = self.profile
        env.update(self.extra_env)
        return env

    def loopwatch(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return real_clis.run_loopwatch(args, self.work, self.env(), check, timeout=120)

    def argv(self, prompt: str, *extra: str) -> list[str]:
        return [self.binary, "-p", prompt, "-o", "stream-json", "--approval-mode", "yolo", "-m", MODEL, *extra]

    def gemini(self, prompt: str, *extra: str, timeout: float = 240, argv: list[str] | None = None) -> Finished:
        """One headless run, in a session of its own; a process of it left when the CLI
        exits is killed and fails the test."""
        ran = real_clis.headless(argv or self.argv(prompt, *extra), self.work, self.env(), timeout, grace=0)
        if ran.leftover:
            raise AssertionError(f"gemini left processes behind (killed): {ran.leftover}")
        return Finished(ran.code, real_clis.json_lines(ran.stdout), ran.stderr)

    def sessions(self) -> list[Path]:
        """The session files Gemini CLI wrote (`~/.gemini/tmp/<project>/chats/`), main
        sessions first, then sub-agents' (`chats/<session>/<agent>.jsonl`)."""
        chats = sorted((self.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
        return chats + sorted((self.home / ".gemini" / "tmp").glob("*/chats/*/*.jsonl"))

    def status(self) -> dict[str, dict]:
        """`loopwatch status --json`: agent ("" for the main one) -> its row, decisions
        oldest first."""
        done = self.loopwatch("status", "--json", "--limit", "200")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return {row["agent"]: row for row in rows}

    def hook_log(self) -> str:
        path = self.state_dir / "hook.log"
        return path.read_text() if path.exists() else ""


def tool_uses(run: Finished) -> list[dict]:
    return run.of_type("tool_use")
