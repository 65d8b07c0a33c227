"""A scripted Gemini API (generativelanguage `v1beta`) on 127.0.0.1, for driving the real
Gemini CLI offline.

    with ScriptedGemini({"loop": [Step("listing", "run_shell_command", {...}), ...]}) as server:
        env["GOOGLE_GEMINI_BASE_URL"] = server.url

- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: one server-sent event,
  the next step of the script: its text, then its calls (`functionCall` parts; several
  are parallel calls), `finishReason: STOP`.
- `POST /v1beta/models/<model>:generateContent`: the CLI's side calls, answered as JSON
  text: the router's `complexity_score` (10: any model will do; a run with `-m MODEL`
  makes none), the loop check's `unproductive_state_confidence` (0), any other schema
  filled with plain values.

The conventions are those of the repository's other scripted models: the scenario is
`SCENARIO:<name>` in the conversation's first user message (Gemini CLI puts its own
`<session_context>` part first, the prompt next; a sub-agent's first message is the
prompt it was given), and the step is the number of model turns already in `contents`.
Stateless per request, so a sub-agent, which has a conversation of its own, gets its
own script. A sub-agent (offered `complete_task`) whose script has run out, or has a
text-only step, answers `complete_task` (without it, it retries to its turn limit).
Every request is recorded (`Request`): which scenario, which step, what the user side
carried since the model last spoke (function responses, texts), and what was answered,
so a test can say which model turns happened, and that none came after a stop.

Written for these tests; the shapes follow what Gemini CLI 0.58.0 and 0.61.0 sent and
accepted (the `@google/genai` SDK's REST form).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Request", "ScriptedGemini", "Step"]


@dataclass
class Step:
    """One model turn: some text, then (unless `tool` is None) one call, or `calls`
    (several at once: `[(name, args), ...]`)."""

    text: str
    tool: str | None = None
    input: dict = field(default_factory=dict)
    calls: list[tuple[str, dict]] | None = None

    def function_calls(self) -> list[tuple[str, dict]]:
        if self.calls is not None:
            return list(self.calls)
        return [(self.tool, self.input)] if self.tool else []


@dataclass
class Request:
    """One model request as the scripted model saw it."""

    scenario: str | None
    step: int
    kind: str  # "turn" (streamGenerateContent), "routing", "loop-check", "aux"
    model: str
    subagent: bool  # offered `complete_task`: a sub-agent's turn
    results: list[dict]  # functionResponse parts since the model last spoke: {"id", "name", "response"}
    texts: list[str]  # text parts since the model last spoke
    answered: str  # "tool:NAME[,tool:NAME...]", "text", or the side call's kind


class ScriptedGemini:
    """A scripted Gemini API on 127.0.0.1 at a free port. `scripts` maps a scenario name
    to its steps."""

    def __init__(self, scripts: dict[str, list[Step]]) -> None:
        self.scripts = scripts
        self.requests: list[Request] = []
        #: function name -> the parameters schema Gemini CLI offered for it
        self.tools: dict[str, dict] = {}
        #: scenario -> the conversation (`contents`) of its latest turn, as the CLI sent it
        self.contents: dict[str, list[dict]] = {}
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                model = path.rsplit("/", 1)[-1].split(":")[0]
                if path.endswith(":streamGenerateContent"):
                    chunk = owner._turn(body, model)
                    data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                elif path.endswith(":generateContent"):
                    self._send(200, owner._side(body, model))
                elif path.endswith(":countTokens"):
                    self._send(200, {"totalTokens": 100})
                else:
                    self._send(404, {"error": {"code": 404, "message": "unknown path", "status": "NOT_FOUND"}})

            def _send(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def of(self, scenario: str) -> list[Request]:
        """The scripted turns of one scenario, in order (side calls left out)."""
        return [r for r in self.requests if r.scenario == scenario and r.kind == "turn"]

    @property
    def turns(self) -> list[Request]:
        return [r for r in self.requests if r.kind == "turn"]

    # -- answers ---------------------------------------------------------------------------

    def _turn(self, body: dict, model: str) -> dict:
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        scenario = _scenario(contents)
        step = sum(1 for c in contents if c.get("role") == "model")
        results, texts = _since_model(contents)
        declared = {
            d.get("name"): d
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for d in t.get("functionDeclarations") or []
            if isinstance(d, dict)
        }
        subagent = "complete_task" in declared
        script = self.scripts.get(scenario or "")
        current = script[min(step, len(script) - 1)] if script else Step("No scenario: done.")
        calls = current.function_calls()
        if subagent and (not calls or (script is not None and step >= len(script))):
            schema = declared["complete_task"].get("parametersJsonSchema") or declared["complete_task"].get(
                "parameters"
            )
            calls = [("complete_task", _filled(schema, f"Sub-agent finished: {current.text}"))]
        parts: list[dict] = [{"text": current.text}] if current.text else []
        parts += [{"functionCall": {"name": name, "args": args}} for name, args in calls]
        with self._lock:
            for name, declaration in declared.items():
                schema = declaration.get("parametersJsonSchema") or declaration.get("parameters")
                if isinstance(schema, dict):
                    self.tools[str(name)] = schema
            self.contents[scenario or ""] = contents
            answered = ",".join(f"tool:{name}" for name, _ in calls) or "text"
            self.requests.append(Request(scenario, step, "turn", model, subagent, results, texts, answered))
            n = len(self.requests)
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": 100 + step,
                "candidatesTokenCount": 10,
                "totalTokenCount": 110 + step,
            },
            "modelVersion": model,
            "responseId": f"scripted-{n}",
        }

    def _side(self, body: dict, model: str) -> dict:
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        said = json.dumps(schema or {})
        if "complexity_score" in said:
            kind, answer = "routing", {"complexity_reasoning": "A small, bounded task.", "complexity_score": 10}
        elif "unproductive_state_confidence" in said:
            kind, answer = (
                "loop-check",
                {"unproductive_state_analysis": "Progress.", "unproductive_state_confidence": 0},
            )
        elif schema:
            kind, answer = "aux", _filled(schema, "ok")
        else:
            kind, answer = "aux", "ok"
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        with self._lock:
            self.requests.append(Request(_scenario(contents), 0, kind, model, False, [], [], kind))
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model,
        }


def _texts(content: dict) -> list[str]:
    return [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]


def _scenario(contents: list[dict]) -> str | None:
    first = next((c for c in contents if c.get("role") == "user"), None)
    for text in _texts(first) if first is not None else []:
        found = re.search(r"SCENARIO:(\w+)", text)
        if found:
            return found.group(1)
    return None


def _since_model(contents: list[dict]) -> tuple[list[dict], list[str]]:
    """The function responses and texts the user side sent since the model last spoke."""
    results: list[dict] = []
    texts: list[str] = []
    for content in reversed(contents):
        if content.get("role") == "model":
            break
        for part in reversed(content.get("parts") or []):
            if not isinstance(part, dict):
                continue
            response = part.get("functionResponse")
            if isinstance(response, dict):
                results.insert(0, response)
            elif isinstance(part.get("text"), str):
                texts.insert(0, part["text"])
    return results, texts


def _filled(schema: Any, text: str) -> Any:
    """A value a (simple) JSON schema accepts, strings saying `text`."""
    if not isinstance(schema, dict):
        return text
    kind = schema.get("type")
    kind = kind.lower() if isinstance(kind, str) else kind
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _filled(v, text) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return text
