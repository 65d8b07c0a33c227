"""The real Claude Code CLI, driven offline: install, a scripted model, a run.

- `claude_binary()`: `@anthropic-ai/claude-code` at `CLAUDE_CODE_VERSION`, installed
  with npm into a cache folder (`~/.cache/loopwatch-tests/claude-code-VERSION`, or
  `$LOOPWATCH_TEST_CACHE/...`) the first time and reused afterwards. Skips the test
  with a clear message only where node or npm is absent.
- `ScriptedAnthropic`: an Anthropic Messages API (`POST /v1/messages`, SSE streaming)
  on 127.0.0.1 at a random port, reached through `ANTHROPIC_BASE_URL`. The model is a
  script: the first user message names a scenario (`SCENARIO:loop`), and the number of
  assistant turns already in the conversation picks the next step. It is stateless
  per request, so a sub-agent (its own conversation, its own `SCENARIO:`) gets its
  own script. Every request is recorded (scenario, step, what the last user message
  carried), so a test can say exactly which model turns happened, and that none
  came after a stop.
- `ClaudeRun`: a fresh HOME, `loopwatch install claude-code` run there as a user
  would, then `claude -p ... --output-format stream-json --verbose`. Every run (of
  Claude Code, and of loopwatch) holds `real_clis.etc_lock("claude-code")` shared: Claude Code's managed settings are in
  /etc, where nothing moves them, and a test that writes there holds it exclusively.

Everything here is written for these tests; the field shapes follow what the real
CLI sent and accepted (the captures described in ../shared/clients/README.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import real_clis

CLAUDE_CODE_VERSION, CURRENT_CLAUDE_CODE_VERSION = real_clis.CLIS["claude-code"].versions
ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
LOOP_COMMAND = "ls /nonexistent-dir-xyz"


def cache_dir(version: str = CLAUDE_CODE_VERSION) -> Path:
    return real_clis.cache_dir("claude-code", version)


def claude_binary(version: str = CLAUDE_CODE_VERSION) -> str:
    """The CLI at `version` (the pinned one by default), installed on first use
    (`real_clis`). Skips where node/npm are missing; fails (never skips) when npm is
    there but the install does not work."""
    return real_clis.binary("claude-code", version)


# -- the scripted model ---------------------------------------------------------------------


@dataclass
class Step:
    """One model turn: some text, then (unless `tool` is None) one tool call."""

    text: str
    tool: str | None = None
    input: dict = field(default_factory=dict)


def loop_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, then "done"."""
    steps = [
        Step(f"Step {i + 1}: listing.", "Bash", {"command": LOOP_COMMAND, "description": "List the directory"})
        for i in range(times)
    ]
    return steps + [Step(f"Done after {times} tool calls.")]


def reworded_script(times: int = 12) -> list[Step]:
    """The same failing command `times` times, with what the model writes for the
    person (the description) and for the runtime (the timeout) worded anew each time."""
    words = ("List the directory", "Show the folder's files", "Check what the folder holds", "Look in the folder")
    steps = [
        Step(
            f"Step {i + 1}: listing.",
            "Bash",
            {"command": LOOP_COMMAND, "description": f"{words[i % len(words)]}, try {i + 1}", "timeout": 30000 + i},
        )
        for i in range(times)
    ]
    return steps + [Step(f"Done after {times} tool calls.")]


def same_error_script(times: int = 12) -> list[Step]:
    """A different command each time (`ls` of one missing folder after another), and
    the same error back each time: no call repeats, so no call can be refused before
    it runs; the stop comes after a call ran."""
    steps = [
        Step(f"Trying folder {i}.", "Bash", {"command": f"ls /nonexistent-dir-xyz/sub{i}", "description": "List"})
        for i in range(times)
    ]
    return steps + [Step(f"Done after {times} tool calls.")]


def healthy_script(work: Path) -> list[Step]:
    """Different commands, then write a failing test, run it, read, fix, run it again."""
    test = str(work / "test_calc.py")
    body = "def add(a, b):\n    return a - b\n\n\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    run = {"command": f"python3 {test}", "description": "Run the test"}
    steps = [Step(f"Step {i}.", "Bash", {"command": f"echo {i}", "description": f"Print {i}"}) for i in range(1, 9)]
    steps += [
        Step("Writing a test.", "Write", {"file_path": test, "content": body}),
        Step("Running it.", "Bash", run),
        Step("Reading it.", "Read", {"file_path": test}),
        Step(
            "Fixing it.",
            "Edit",
            {"file_path": test, "old_string": "return a - b", "new_string": "return a + b", "replace_all": False},
        ),
        Step("Running it again.", "Bash", run),
        Step("Done: the test passes."),
    ]
    return steps


def subagent_script() -> list[Step]:
    """One Agent call whose sub-agent loops, then a closing message."""
    return [
        Step(
            "Delegating.",
            "Agent",
            {
                "description": "Repeat the listing",
                "prompt": "SCENARIO:loop list the directory",
                "subagent_type": "general-purpose",
            },
        ),
        Step("The sub-agent is done."),
    ]


@dataclass
class Request:
    """One /v1/messages request as the scripted model saw it."""

    scenario: str | None
    step: int
    tools: bool
    results: list[dict]  # tool_result blocks since the last assistant turn: {"id", "error", "text"}
    reminders: list[str]  # text blocks since the last assistant turn (system reminders)
    answered: str  # "tool:NAME", "text" or "aux"


class ScriptedAnthropic:
    """A scripted Anthropic Messages API on 127.0.0.1. `scripts` maps a scenario name
    (`SCENARIO:<name>` in a conversation's first user message) to its steps."""

    def __init__(self, scripts: dict[str, list[Step]]) -> None:
        self.scripts = scripts
        self.requests: list[Request] = []
        #: tool name -> the input schema Claude Code offered the model for it
        self.tools: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._ids = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json({"data": [], "has_more": False})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    self._json({"input_tokens": 100})
                    return
                if not path.endswith("/v1/messages"):
                    self._json({})
                    return
                message = owner._answer(body)
                if body.get("stream"):
                    self._sse(message)
                else:
                    self._json(message)

            def _json(self, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, message: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event, data in _sse_events(message):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, scenario: str) -> list[Request]:
        """The scripted turns (not auxiliary requests) of one scenario, in order."""
        return [r for r in self.requests if r.scenario == scenario and r.answered != "aux"]

    # -- the script ------------------------------------------------------------------------

    def _answer(self, body: dict) -> dict:
        messages = body.get("messages") or []
        scenario = _scenario(messages)
        step = sum(1 for m in messages if m.get("role") == "assistant")
        results, reminders = _after_last_assistant(messages)
        tools = bool(body.get("tools"))
        script = self.scripts.get(scenario or "")
        with self._lock:
            self._ids += 1
            n = self._ids
            for tool in body.get("tools") or []:
                if isinstance(tool, dict) and isinstance(tool.get("input_schema"), dict):
                    self.tools[str(tool.get("name"))] = tool["input_schema"]
        if script is None or not tools:
            content = [{"type": "text", "text": "ok"}]
            answered, stop = "aux", "end_turn"
        else:
            current = script[min(step, len(script) - 1)]
            content = [{"type": "text", "text": current.text}]
            if current.tool is None:
                answered, stop = "text", "end_turn"
            else:
                content.append(
                    {"type": "tool_use", "id": f"toolu_scripted{n:04d}", "name": current.tool, "input": current.input}
                )
                answered, stop = f"tool:{current.tool}", "tool_use"
        with self._lock:
            self.requests.append(Request(scenario, step, tools, results, reminders, answered))
        return {
            "id": f"msg_scripted{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-scripted",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }


def _scenario(messages: list[dict]) -> str | None:
    first = next((m for m in messages if m.get("role") == "user"), None)
    if first is None:
        return None
    content = first.get("content")
    texts = (
        [content]
        if isinstance(content, str)
        else [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    )
    for text in texts:
        found = re.search(r"SCENARIO:(\w+)", text or "")
        if found:
            return found.group(1)
    return None


def _after_last_assistant(messages: list[dict]) -> tuple[list[dict], list[str]]:
    """The tool results and texts the user side added since the model last spoke
    (Claude Code may split them over several user messages)."""
    tail: list[Any] = []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            break
        content = message.get("content")
        tail[:0] = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    results, texts = [], []
    for block in tail:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                inner = "\n".join(b.get("text", "") for b in inner if isinstance(b, dict))
            results.append({"id": block.get("tool_use_id"), "error": bool(block.get("is_error")), "text": inner or ""})
        elif block.get("type") == "text":
            texts.append(block.get("text", ""))
    return results, texts


def _sse_events(message: dict) -> list[tuple[str, dict]]:
    head = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": head})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                )
            )
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}},
                )
            )
        else:
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}},
                )
            )
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# -- a run ----------------------------------------------------------------------------------


@dataclass
class Finished:
    code: int
    lines: list[dict]  # stream-json lines
    stderr: str

    @property
    def result(self) -> dict:
        return next((line for line in reversed(self.lines) if line.get("type") == "result"), {})


class ClaudeRun:
    """A user's machine in `root`: a fresh HOME with loopwatch installed into Claude
    Code by `loopwatch install claude-code`, a work folder, and the scripted model."""

    def __init__(self, root: Path, server: ScriptedAnthropic, binary: str, profile: str | None = None) -> None:
        self.root, self.server, self.binary = root, server, binary
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.profile = profile
        self.extra_env: dict[str, str] = {}

    @property
    def state_dir(self) -> Path:
        return self.home / ".local" / "state" / "loopwatch"

    def env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            HOME=str(self.home),
            PYTHONPATH=SRC,  # the hook's `python -m loopwatch` imports this checkout
            ANTHROPIC_BASE_URL=self.server.url,
            ANTHROPIC_API_KEY="sk-ant-scripted-not-a-key",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            NO_PROXY="127.0.0.1,localhost",
        )
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # as root, --dangerously-skip-permissions refuses without it
        env["PATH"] = os.pathsep.join([os.path.dirname(self.binary), env.get("PATH", os.defpath)])  # `claude` on PATH
        if self.profile:
            env["LOOPWATCH_PROFILE"] = self.profile
        env.update(self.extra_env)
        return env

    def loopwatch(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """`loopwatch ARGS` as this user, under the shared /etc lock: it reads the managed
        settings too (`install`, `doctor`)."""
        with self.locked():
            done = subprocess.run(
                [sys.executable, "-m", "loopwatch", *args],
                cwd=self.work,
                env=self.env(),
                check=False,
                capture_output=True,
                text=True,
                timeout=120,
            )
        if check and done.returncode != 0:
            raise AssertionError(f"loopwatch {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def install(self) -> str:
        return self.loopwatch("install", "claude-code").stdout

    def claude_argv(self, prompt: str) -> list[str]:
        return [
            self.binary,
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--dangerously-skip-permissions",
        ]

    def claude(
        self, prompt: str, wrap: Callable[[list[str]], list[str]] | None = None, timeout: float = 240
    ) -> Finished:
        argv = self.claude_argv(prompt)
        if wrap is not None:
            argv = wrap(argv)
        with self.locked():
            done = self._run(argv, timeout)
        lines = []
        for line in done.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    pass
        return Finished(done.returncode, lines, done.stderr)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The shared /etc lock (`real_clis.etc_lock`)."""
        return real_clis.etc_lock("claude-code", exclusive=False)

    def _run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv,
            check=False,
            cwd=self.work,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def interactive(self, prompt: str, done: Callable[[], bool], timeout: float = 180) -> str:
        """Claude Code's interactive session (its terminal UI on a pseudo-terminal, as a
        person would start it: `claude "PROMPT"`), until `done()` says the script is
        over; then it is ended (SIGTERM, then SIGKILL). Onboarding, the API-key and
        folder-trust questions are answered beforehand in `~/.claude.json`, as a user who
        had answered them once. Returns what the screen showed (escape codes removed)."""
        key = self.env()["ANTHROPIC_API_KEY"]
        (self.home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "bypassPermissionsModeAccepted": True,
                    "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
                    "projects": {
                        str(self.work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
                    },
                }
            )
        )
        env = {**self.env(), "TERM": "xterm-256color"}
        argv = [self.binary, prompt, "--dangerously-skip-permissions"]
        with self.locked():
            screen = real_clis.Screen(argv, self.work, env)
            try:
                screen.until(done, timeout, linger=1.0)  # a moment for the last hooks (Stop) to run
            finally:
                screen.end()
        return screen.text()

    def sessions(self) -> list[Path]:
        """The session transcripts Claude Code wrote (`~/.claude/projects/<dir>/*.jsonl`)."""
        return sorted((self.home / ".claude" / "projects").glob("*/*.jsonl"))

    def settings(self) -> dict:
        return json.loads((self.home / ".claude" / "settings.json").read_text())

    def status(self) -> dict[str, dict]:
        """`loopwatch status --json`, as the user would ask for it: agent ("" for the
        main one) -> that agent's row, with its decisions oldest first."""
        done = self.loopwatch("status", "--json", "--limit", "200")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return {row["agent"]: row for row in rows}


def tool_uses(lines: list[dict], parent: str | None = None) -> list[dict]:
    """The tool_use blocks of a stream-json run, of the main agent (`parent=None`) or
    of the sub-agent spawned by call `parent`."""
    out = []
    for line in lines:
        if line.get("type") != "assistant" or line.get("parent_tool_use_id") != parent:
            continue
        for block in line["message"].get("content", []):
            if block.get("type") == "tool_use":
                out.append(block)
    return out


def tool_results(lines: list[dict], parent: str | None = None) -> dict[str, dict]:
    """tool_use_id -> {"error", "text"} for one agent of a stream-json run."""
    out: dict[str, dict] = {}
    for line in lines:
        if line.get("type") != "user" or line.get("parent_tool_use_id") != parent:
            continue
        content = line["message"].get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, list):
                    inner = "\n".join(b.get("text", "") for b in inner if isinstance(b, dict))
                out[block["tool_use_id"]] = {"error": bool(block.get("is_error")), "text": inner or ""}
    return out
