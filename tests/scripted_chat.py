"""A scripted model behind the OpenAI chat-completions API, for driving real agent CLIs offline.

Any agent CLI that talks to an OpenAI-compatible endpoint (GitHub Copilot CLI, Qwen Code,
opencode, Cline, ...) can be pointed at `ScriptedChat.url` and given a script instead of a
model. Host-neutral: nothing here knows one CLI from another; a test names the tools its
CLI offers in the steps it writes.

    with ScriptedChat({"loop": [Step("Listing.", [Call("bash", {"command": "ls /x"})]), Step("Done.")]}) as model:
        run_the_cli(base_url=model.url, prompt="SCENARIO:loop do the task")
        turns = model.of("loop")          # the requests of that scenario, in order
        assert [t.answered for t in turns] == ["tool:bash", "text"]

How a request is answered:
- the **scenario** is the word after `SCENARIO:` anywhere in the conversation's first user
  message (CLIs put a date or context around the prompt); a sub-agent, which starts a
  conversation of its own, gets its own scenario from the prompt its parent wrote;
- the **step** is the number of assistant messages already in the conversation: step N of
  the script answers, and the last step answers every request past the script's end. The
  server keeps no state between requests, so several conversations (a parent and its
  sub-agents, or several runs at once) never disturb one another;
- a request with no scenario the server knows, or with no tools offered, gets a short text
  answer (`answered == "aux"`): titles, summaries and other side requests a CLI may make.

Endpoints: `POST .../chat/completions` (with or without a `/v1` prefix), streamed as SSE when
the request says `"stream": true` (the arguments of a tool call sent in two pieces, then a
usage chunk when `stream_options.include_usage`, then `data: [DONE]`), else one JSON
completion; `GET .../models` lists the model asked for most recently (or `scripted`). Every
other path is a 404, recorded with `answered == "unknown"`.

Every request is recorded (`requests`, `of(scenario)`): its scenario and step, what was
answered, and what the client added since the model last spoke (the tool results, each with
its call id and text, and any other messages), so a test can assert what the model saw and
that no request came after a stop. `tools` keeps the JSON schema of every tool offered.

Listens on 127.0.0.1 at a free port; one server per test (or shared by runs, it is
stateless per request). Standard library only.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Call", "Request", "ScriptedChat", "Step"]


@dataclass(frozen=True)
class Call:
    """One tool call the model makes: the tool's name as the CLI offers it, and its arguments."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One model turn: some text, then the tool calls in `calls` (none: the turn ends the
    conversation with `text`). Several calls are sent as parallel calls of one turn."""

    text: str
    calls: tuple[Call, ...] = ()

    @classmethod
    def call(cls, text: str, tool: str, args: dict[str, Any]) -> Step:
        """A turn with one tool call."""
        return cls(text, (Call(tool, args),))


@dataclass
class Request:
    """One chat-completions request as the server saw it.

    `answered` is `tool:NAME` (the first call of the step), `text`, `aux` or `unknown`;
    `results` the tool messages since the last assistant message, each `{"id", "text"}`;
    `extra` the text of every other message since then (user or system: what a CLI adds
    around the results); `call_ids` the ids of the calls this answer made."""

    scenario: str | None
    step: int
    answered: str
    results: list[dict[str, str]]
    extra: list[str]
    stream: bool
    path: str
    call_ids: list[str]
    at: float  # time.monotonic() when the request arrived

    def saw(self, needle: str) -> bool:
        """Did the model see `needle` in what the client added since it last spoke?"""
        return any(needle in r["text"] for r in self.results) or any(needle in t for t in self.extra)


class ScriptedChat:
    """The server (see the module docstring). `scripts` maps a scenario name to its steps."""

    def __init__(self, scripts: dict[str, list[Step]]) -> None:
        self.scripts = scripts
        self.requests: list[Request] = []
        self.tools: dict[str, dict[str, Any]] = {}  # tool name -> its JSON schema, as offered
        self.model = "scripted"
        self._lock = threading.Lock()
        self._ids = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        #: The base URL a CLI is given (OpenAI clients append `/chat/completions`).
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, scenario: str) -> list[Request]:
        """The scripted turns of one scenario (side requests left out), in order."""
        with self._lock:
            return [r for r in self.requests if r.scenario == scenario and r.answered not in ("aux", "unknown")]

    # -- answering ------------------------------------------------------------------------

    def answer(self, body: dict[str, Any], path: str, at: float) -> dict[str, Any]:
        """The assistant message for one request (and record it)."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        scenario = _scenario(messages)
        step = sum(1 for m in messages if m.get("role") == "assistant")
        results, extra = _since_last_assistant(messages)
        offered = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        script = self.scripts.get(scenario or "")
        with self._lock:
            if isinstance(body.get("model"), str):
                self.model = body["model"]
            for tool in offered:
                function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
                if isinstance(function.get("name"), str):
                    self.tools[function["name"]] = function.get("parameters") or {}
            if script is None or not offered:
                current, answered = Step("ok"), "aux"
            else:
                current = script[min(step, len(script) - 1)]
                answered = f"tool:{current.calls[0].tool}" if current.calls else "text"
            ids = []
            for _ in current.calls:
                self._ids += 1
                ids.append(f"call_scripted_{self._ids:05d}")
            self.requests.append(
                Request(scenario, step, answered, results, extra, bool(body.get("stream")), path, ids, at)
            )
        message: dict[str, Any] = {"role": "assistant", "content": current.text}
        if current.calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.args)}}
                for i, c in zip(ids, current.calls, strict=True)
            ]
        return message

    def unknown(self, path: str, at: float) -> None:
        with self._lock:
            self.requests.append(Request(None, 0, "unknown", [], [], False, path, [], at))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _scenario(messages: list[dict[str, Any]]) -> str | None:
    first = next((m for m in messages if m.get("role") == "user"), None)
    found = re.search(r"SCENARIO:([\w-]+)", _text(first.get("content"))) if first else None
    return found.group(1) if found else None


def _since_last_assistant(messages: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[str]]:
    tail: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            break
        tail.insert(0, message)
    if len(tail) == len(messages):  # the first request: nothing was added after the model spoke
        return [], []
    results = [
        {"id": str(m.get("tool_call_id", "")), "text": _text(m.get("content"))} for m in tail if m.get("role") == "tool"
    ]
    extra = [_text(m.get("content")) for m in tail if m.get("role") != "tool"]
    return results, extra


def _handler(owner: ScriptedChat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.split("?")[0].rstrip("/").endswith("/models"):
                model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "scripted"}
                self._json(200, {"object": "list", "data": [model]})
                return
            owner.unknown(self.path, time.monotonic())
            self._json(404, {"error": {"message": f"no such path: {self.path}"}})

        def do_POST(self) -> None:
            at = time.monotonic()
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = None
            path = self.path.split("?")[0]
            if not isinstance(body, dict) or not path.rstrip("/").endswith("/chat/completions"):
                owner.unknown(self.path, at)
                self._json(404, {"error": {"message": f"no such path: {self.path}"}})
                return
            message = owner.answer(body, path, at)
            model = body.get("model") if isinstance(body.get("model"), str) else owner.model
            if body.get("stream"):
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._sse(message, model, usage)
            else:
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                self._json(
                    200,
                    {
                        "id": f"chatcmpl-{owner._ids}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": _USAGE,
                    },
                )

        def _json(self, code: int, obj: Any) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, message: dict[str, Any], model: str, usage: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            head = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time())}

            def chunk(delta: dict[str, Any] | None, finish: str | None = None, **more: Any) -> None:
                choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
                data = {**head, "model": model, "choices": choices, **more}
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")

            chunk({"role": "assistant", "content": ""})
            if message["content"]:
                chunk({"content": message["content"]})
            for index, call in enumerate(message.get("tool_calls") or []):
                arguments = call["function"]["arguments"]
                half = len(arguments) // 2
                first = {**call, "function": {"name": call["function"]["name"], "arguments": arguments[:half]}}
                chunk({"tool_calls": [{"index": index, **first}]})
                chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
            chunk({}, "tool_calls" if message.get("tool_calls") else "stop")
            if usage:
                chunk(None, usage=_USAGE)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
