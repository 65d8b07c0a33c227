"""Helpers for the hook tests: realistic payloads (written from the Claude Code and
Codex hook docs) and a runner that calls the real command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")


@dataclass
class Result:
    code: int
    out: dict | None
    err: str

    @property
    def context(self) -> str | None:
        spec = (self.out or {}).get("hookSpecificOutput") or {}
        return spec.get("additionalContext")

    @property
    def denied(self) -> str | None:
        """The denial reason, in either host's form (JSON deny, or exit 2 + stderr)."""
        spec = (self.out or {}).get("hookSpecificOutput") or {}
        if spec.get("permissionDecision") == "deny":
            return spec["permissionDecisionReason"]
        if self.code == 2:
            return self.err.strip()
        return None

    @property
    def stopped(self) -> bool:
        return (self.out or {}).get("continue") is False


class Agent:
    """One agent session seen through its hooks. `host` is "claude-code" or "codex"."""

    def __init__(
        self,
        state: Path,
        cwd: Path,
        session: str = "sess-0001",
        host: str = "claude-code",
        agent_id: str | None = None,
        env: dict | None = None,
    ) -> None:
        self.state, self.cwd, self.session, self.host, self.agent_id = state, cwd, session, host, agent_id
        self.extra_env = env or {}
        self.calls = 0

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_", "XDG_"))}
        # The profile is pinned: these tests may themselves run under `claude -p`,
        # which the hook would rightly detect as unattended.
        env.update(
            PYTHONPATH=SRC,
            LOOPWATCH_STATE_DIR=str(self.state),
            HOME=str(self.state / "home"),
            LOOPWATCH_PROFILE="attended",
        )
        env.update(self.extra_env)
        return env

    def base(self, event: str) -> dict:
        payload = {
            "session_id": self.session,
            "transcript_path": str(self.cwd / "transcript.jsonl"),
            "cwd": str(self.cwd),
            "hook_event_name": event,
        }
        if self.host == "codex":
            payload.update(turn_id="turn-1", model="gpt-5-codex", permission_mode="default")
        else:
            payload["permission_mode"] = "default"
        if self.agent_id:
            payload.update(agent_id=self.agent_id, agent_type="general-purpose")
        return payload

    def send(self, payload: dict | bytes | str, args: tuple[str, ...] = ()) -> Result:
        data = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        )
        proc = subprocess.run(
            [sys.executable, "-m", "loopwatch", "hook", *args],
            input=data,
            env=self.env(),
            capture_output=True,
            cwd=self.cwd,
            timeout=60,
        )
        out = json.loads(proc.stdout) if proc.stdout.strip() else None
        return Result(proc.returncode, out, proc.stderr.decode())

    def pre(self, tool: str, tool_input: dict) -> Result:
        self.calls += 1
        return self.send(
            {**self.base("PreToolUse"), "tool_name": tool, "tool_input": tool_input, "tool_use_id": self._id()}
        )

    def post(self, tool: str, tool_input: dict, response) -> Result:
        return self.send(
            {
                **self.base("PostToolUse"),
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_response": response,
                "tool_use_id": self._id(),
            }
        )

    def failed(self, tool: str, tool_input: dict, error: str) -> Result:
        if self.host == "codex":  # Codex has no PostToolUseFailure: the exit code is in the output
            return self.post(tool, tool_input, f"Exit code: 1\nWall time: 0.4 seconds\nOutput:\n{error}")
        return self.send(
            {
                **self.base("PostToolUseFailure"),
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_use_id": self._id(),
                "error": error,
                "is_interrupt": False,
            }
        )

    def prompt(self, text: str) -> Result:
        return self.send({**self.base("UserPromptSubmit"), "prompt": text})

    def run(
        self, tool: str, tool_input: dict, *, response=None, error: str | None = None
    ) -> tuple[Result, Result | None]:
        """One whole call as the host makes it: PreToolUse, then (unless denied) the
        result. Returns both answers."""
        before = self.pre(tool, tool_input)
        if before.denied:
            return before, None
        after = self.failed(tool, tool_input, error) if error is not None else self.post(tool, tool_input, response)
        return before, after

    def _id(self) -> str:
        prefix = "call" if self.host == "codex" else "toolu"
        return f"{prefix}_{self.agent_id or 'main'}_{self.calls:04d}"


def bash(command: str) -> dict:
    return {"command": command, "description": "Run a command"}


def pytest_failure(line: int) -> str:
    # The same failure each time; only counters (line numbers, timing) move.
    return (
        "Exit code 1\n============================= test session starts ==============================\n"
        "collected 12 items\n\ntests/test_parser.py ....F\n\n"
        "=================================== FAILURES ===================================\n"
        f"____ test_nested_arrays ____\ntests/test_parser.py:{line}: in test_nested_arrays\n"
        "    assert parse('[[1],[2]]') == [[1], [2]]\nE   AssertionError: assert [[1]] == [[1], [2]]\n"
        f"========================= 1 failed, 4 passed in 0.{line % 97:02d}s =========================="
    )


def edit(path: str, old: str, new: str) -> dict:
    return {"file_path": path, "old_string": old, "new_string": new, "replace_all": False}


def edit_response(path: str, old: str, new: str) -> dict:
    # Claude Code's Edit tool_response: the patch plus the whole original file.
    return {
        "filePath": path,
        "oldString": old,
        "newString": new,
        "originalFile": "def parse(text):\n" + "    pass\n" * 50,
        "structuredPatch": [
            {"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 1, "lines": [f"-{old}", f"+{new}"]}
        ],
        "userModified": False,
        "replaceAll": False,
    }


def state_actions(state: Path, session: str, agent: str = "") -> int:
    import sqlite3

    db = sqlite3.connect(state / "state.db")
    try:
        row = db.execute("SELECT actions FROM sessions WHERE session = ? AND agent = ?", (session, agent)).fetchone()
    finally:
        db.close()
    return row[0] if row else 0


def user_config(agent: Agent, text: str) -> Path:
    """Write the user's own loopwatch.toml (the one the hook trusts) for `agent`."""
    path = agent.state / "home" / ".config" / "loopwatch" / "loopwatch.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
