"""Driving the real Codex CLI offline, for the real-client tests.

- `codex_binary()`: the pinned `@openai/codex` from the npm registry, installed once
  into a cache (`~/.cache/loopwatch-tests/codex-<version>`, or
  `$LOOPWATCH_TEST_CACHE/codex-<version>`) and reused; None when node/npm is absent.
- `ScriptedResponses`: our own OpenAI Responses API server (SSE) on 127.0.0.1 and a
  random port. It answers request N with step N of a script (a shell call or a
  message) and counts and keeps the requests, so a test can say exactly how many
  model turns there were and what the model was shown.
- `CodexHome`: a fresh HOME and CODEX_HOME whose config.toml reaches the server
  through a custom `model_provider`; `install()` runs the project's own
  `loopwatch install codex` exactly as a user would; `exec()` runs `codex exec`
  (stdin closed: it waits on an open one), `run()` the same under `loopwatch run`.
  Every run of Codex (and of loopwatch) holds `real_clis.etc_lock("codex")` shared: Codex reads requirements
  from /etc, where nothing moves them, and a test that writes there holds it exclusively.

Only the standard library: this is test support, not part of loopwatch.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import real_clis

SRC = str(Path(__file__).resolve().parent.parent / "src")
CODEX_VERSION = real_clis.CLIS["codex"].versions[0]  # the version the captures in ../shared/clients were made with
_INSTALL_TIMEOUT = 600  # seconds; the package is two tarballs (~60 MB), cached after the first run


def cache_dir() -> Path:
    return real_clis.cache_dir("codex", CODEX_VERSION)


def codex_binary() -> tuple[str | None, str]:
    """The pinned Codex (`real_clis`), installed on first use: (its path, "") or (None,
    why) where node/npm are absent. Raises when npm is there but the install fails."""
    try:
        return str(real_clis.install("codex", CODEX_VERSION)), ""
    except LookupError as exc:
        return None, str(exc)


def require_codex() -> str:
    path, why = codex_binary()
    if path is None:
        pytest.skip(why)
    return path


# -- the scripted model ----------------------------------------------------------------


def shell(cmd: str) -> dict:
    """A step: the model asks for one `exec_command` call (Codex 0.171's shell tool)."""
    return {"call": "exec_command", "arguments": {"cmd": cmd}}


def say(text: str) -> dict:
    """A step: the model answers with text and asks for nothing (the turn ends)."""
    return {"say": text}


class ScriptedResponses:
    """A Responses API (`POST /v1/responses`, `stream: true`) that plays a script.

    Request N (1-based) gets step N; past the end of the script every request gets
    `say("Done.")`. `requests` keeps each request body, in order: the agent's turns.
    A request offering no tools (the interactive TUI sends some beside the turn) is
    answered with text and kept in `side_requests` instead."""

    def __init__(self, script: list[dict]) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        self.side_requests: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # /v1/models and the like: nothing to offer
                body = b'{"data": [], "models": []}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.rstrip("/").endswith("/responses"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unreadable": True}
                with server._lock:
                    if not body.get("tools"):  # the TUI's side requests (no tools): not the agent's turns
                        server.side_requests.append(body)
                        number, step = 1000 + len(server.side_requests), say("ok")
                    else:
                        server.requests.append(body)
                        number = len(server.requests)
                        step = server.script[number - 1] if number <= len(server.script) else say("Done.")
                payload = b"".join(_sse(event) for event in _events(number, step))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "ScriptedResponses":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def tool_outputs(self, number: int) -> list[str]:
        """The function-call outputs request `number` (1-based) carried: what the model
        was shown after the calls before it."""
        items = self.requests[number - 1].get("input") or []
        return [str(i.get("output")) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]

    def texts(self, number: int) -> str:
        """Every piece of text in request `number`, joined (instructions, messages, outputs)."""
        return json.dumps(self.requests[number - 1])


def _events(number: int, step: dict) -> list[dict]:
    response_id = f"resp_{number}"
    out: list[dict] = [{"type": "response.created", "response": {"id": response_id}}]
    if "call" in step:
        item = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "name": step["call"],
            "arguments": json.dumps(step["arguments"]),
        }
    else:
        item = {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{number}",
            "status": "completed",
            "content": [{"type": "output_text", "text": step["say"], "annotations": []}],
        }
    out.append({"type": "response.output_item.added", "output_index": 0, "item": item})
    out.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    out.append(
        {
            "type": "response.completed",
            "response": {
                "id": response_id,
                "usage": {
                    "input_tokens": 100,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 10,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 110,
                },
            },
        }
    )
    return out


def _sse(event: dict) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


# -- a user's machine ------------------------------------------------------------------

_CONFIG = """\
# A user's own settings, which `loopwatch install codex` must keep as they are.
model = "fake-model"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.scripted]
name = "scripted"
base_url = "{base_url}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000
"""


class CodexHome:
    """A fresh user: HOME, CODEX_HOME (config.toml pointing at `server`), a work
    folder, and loopwatch's state folder, all under `root`."""

    def __init__(self, root: Path, server: ScriptedResponses, codex: str) -> None:
        self.root, self.server, self.codex = root, server, codex
        self.home = root / "home"
        self.codex_home = self.home / ".codex"
        self.work = root / "work"
        self.state = root / "state"
        for folder in (self.codex_home, self.work):
            folder.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(_CONFIG.format(base_url=server.base_url), encoding="utf-8")

    def trust_project(self) -> None:
        """Mark the work folder trusted in the user's config.toml, as Codex's own prompt does."""
        config = self.codex_home / "config.toml"
        config.write_text(config.read_text() + f'\n[projects."{self.work}"]\ntrust_level = "trusted"\n')

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LOOPWATCH_", "CODEX_", "OPENAI_", "CLAUDE_CODE_", "XDG_"))
        }
        env.update(
            HOME=str(self.home),
            CODEX_HOME=str(self.codex_home),
            LOOPWATCH_STATE_DIR=str(self.state),
            PYTHONPATH=SRC,
            NO_COLOR="1",
            RUST_LOG="error",
        )
        # The bundled `codex` finds its native binary next to node itself; PATH must keep node.
        env["PATH"] = os.path.dirname(self.codex) + os.pathsep + env.get("PATH", "")
        env.update(extra)
        return env

    def loopwatch(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        """`loopwatch ARGS` as this user, under the shared /etc lock (it reads Codex's
        requirements too: `install`, `doctor`)."""
        return self.command([sys.executable, "-m", "loopwatch", *args], 120, **env)

    def install(self) -> subprocess.CompletedProcess:
        done = self.loopwatch("install", "codex")
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def exec_args(self, prompt: str) -> list[str]:
        return [
            self.codex,
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            prompt,
        ]

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The shared /etc lock (`real_clis.etc_lock`)."""
        return real_clis.etc_lock("codex", exclusive=False)

    def exec(self, prompt: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        return self.command(self.exec_args(prompt), timeout, **env)

    def run(self, prompt: str, *options: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess:
        """`loopwatch run OPTIONS -- codex exec --json ... PROMPT`."""
        argv = [sys.executable, "-m", "loopwatch", "run", *options, "--", *self.exec_args(prompt)]
        return self.command(argv, timeout, **env)

    def command(self, argv: list[str], timeout: float, **env: str) -> subprocess.CompletedProcess:
        """`argv` run in the work folder, as this user, under the shared /etc lock."""
        with self.locked():
            return subprocess.run(
                argv,
                cwd=self.work,
                env=self.env(**env),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )

    def tui(self, prompt: str, settle: float = 6.0, timeout: float = 120) -> bytes:
        """Run the interactive `codex` (attended: a person at a terminal) in a pseudo-
        terminal with `prompt` as its first message, answer the terminal queries it
        makes, and end it once the server has had no turn for `settle` seconds (the
        turn is over: the TUI then waits for the person). Returns what it drew."""
        with self.locked():
            return self._tui(prompt, settle, timeout)

    def _tui(self, prompt: str, settle: float, timeout: float) -> bytes:
        import fcntl
        import pty
        import select
        import signal
        import struct
        import termios

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        proc = subprocess.Popen(
            [self.codex, "--dangerously-bypass-approvals-and-sandbox", prompt],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=self.work,
            env=self.env(TERM="xterm-256color"),
            start_new_session=True,
        )
        os.close(slave)
        drawn, seen, quiet_since = b"", 0, time.monotonic()
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        data = os.read(master, 65536)
                    except OSError:
                        break
                    drawn += data
                    if b"\x1b[6n" in data:  # where is the cursor?
                        os.write(master, b"\x1b[1;1R")
                    if b"\x1b[c" in data:  # which terminal is this?
                        os.write(master, b"\x1b[?62;c")
                if len(self.server.requests) != seen:
                    seen, quiet_since = len(self.server.requests), time.monotonic()
                elif seen and time.monotonic() - quiet_since > settle:
                    break
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            os.close(master)
            self.reap()
        return drawn

    def reap(self) -> None:
        """End what the Codex TUI left running: it starts a managed `app-server` daemon in
        a session of its own (outside the process group killed above), from a copy of
        itself under this test's HOME. Found by its executable's path."""
        import signal

        home = str(self.home)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                exe = os.readlink(entry / "exe")
            except OSError:
                continue
            if exe.startswith(home + os.sep):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl"))

    def hook_log(self) -> str:
        path = self.state / "hook.log"
        return path.read_text(encoding="utf-8") if path.exists() else ""


def stream_items(stdout: str, kind: str = "command_execution") -> list[dict]:
    """The completed items of one type in a `codex exec --json` stream."""
    items = []
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if (
            obj.get("type") == "item.completed"
            and isinstance(obj.get("item"), dict)
            and obj["item"].get("type") == kind
        ):
            items.append(obj["item"])
    return items
