"""The README's examples run as written: every python block of the README is run here.
The framework examples each with the framework's own test model put in place of the
line marked `# your model` (nothing else is changed), in a fresh interpreter, in a
folder with a README.md to read over and over; the harness example as it is."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

SECTION = "## Guard an agent framework"

LOOPING_LANGCHAIN = """
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
class _Fake(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self
model = _Fake(messages=iter([AIMessage(content="", tool_calls=[{"name": "read_file", "args": {"path": "README.md"}, "id": f"c{i}"}]) for i in range(10)]))
"""
LOOPING_AGENTS = """
from agents.testing import ScriptedModel, function_call
model = ScriptedModel([[function_call("read_file", {"path": "README.md"}, call_id=f"c{i}")] for i in range(10)])
"""
LOOPING_PYDANTIC_AI = """
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel
model = FunctionModel(lambda messages, info: ModelResponse(parts=[ToolCallPart("read_file", {"path": "README.md"})]))
"""
FIVE_THEN_ANSWER = """
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
def _respond(messages, info):
    if sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts) >= 5:
        return ModelResponse(parts=[TextPart("It is a notebook.")])
    return ModelResponse(parts=[ToolCallPart("read_file", {"path": "README.md"})])
model = FunctionModel(_respond)
"""
# The Claude Agent SDK's model is the real Claude Code CLI (the one the SDK bundles) talking
# to the scripted Anthropic API of `real_claude_support`, which reads README.md over and over.
SCRIPTED_CLAUDE = """
options = ClaudeAgentOptions(env={env!r})
"""
STOP = "the same read_file call returned the same result 3 times in a row"

CASES = {
    "LangChain": ("langchain.agents", LOOPING_LANGCHAIN, [f"loopwatch stopped the run: {STOP}"]),
    "OpenAI Agents SDK": ("agents", LOOPING_AGENTS, [f"stopped: {STOP}"]),
    "pydantic-ai": ("pydantic_ai", LOOPING_PYDANTIC_AI, [f"stopped: {STOP}"]),
    "Claude Agent SDK": (
        "claude_agent_sdk",
        SCRIPTED_CLAUDE,
        # unattended: four identical successful reads ran (nudged after the third), the fifth is refused
        ["stopped: the same Read call returned the same result 4 times in a row"],
    ),
    "OpenTelemetry": ("opentelemetry.sdk.trace", FIVE_THEN_ANSWER, [f"loopwatch: {STOP}", "It is a notebook."]),
}


def examples() -> dict[str, list[tuple[str, str]]]:
    """Subsection title -> its fenced code blocks (language, text)."""
    text = (ROOT / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[tuple[str, str]]] = {}
    for part in section.split("\n### ")[1:]:
        title = part.split("\n", 1)[0].strip()
        found[title] = re.findall(r"```(\w+)\n(.*?)```", part, re.DOTALL)
    return found


HARNESS = "### In your own harness"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def run_example(tmp_path, code: str, prelude: str = ""):
    (tmp_path / "example.py").write_text(prelude + code)
    (tmp_path / "README.md").write_text("# notes\n\nA notebook of ideas.\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    env.pop("LOOPWATCH_MODE", None)
    return subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300, check=False
    )


def test_every_python_block_of_the_readme_is_run_here():
    text = (ROOT / "README.md").read_text()
    harness = python_blocks(text.split(HARNESS, 1)[1].split("\n### ", 1)[0])
    frameworks = [body for blocks in examples().values() for lang, body in blocks if lang == "python"]
    rollouts = python_blocks(text.split("### RL rollouts", 1)[1].split("\n### ", 1)[0])
    assert len(harness) == 1 and len(frameworks) == len(CASES)  # each framework's is run below
    assert len(rollouts) == 1  # run by tests/test_rollouts.py
    assert sorted(python_blocks(text)) == sorted(harness + frameworks + rollouts)


# Counts the example's tool runs (its commands), without changing the example.
COUNT_RUNS = """
import atexit, subprocess
_runs, _run = [], subprocess.run
subprocess.run = lambda *a, **k: _runs.append(1) or _run(*a, **k)
atexit.register(lambda: print("tool runs:", len(_runs)))
"""


def test_readme_harness_example_stops_before_running_the_tool_again(tmp_path):
    text = (ROOT / "README.md").read_text()
    (code,) = python_blocks(text.split(HARNESS, 1)[1].split("\n### ", 1)[0])
    done = run_example(tmp_path, code, COUNT_RUNS)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "stopped: the same Bash call returned the same result 3 times in a row" in lines
    # The stop came from check(), before a 4th run: the tool ran 3 times, not once more.
    assert lines[-1] == "tool runs: 3"


def test_every_framework_has_an_example():
    titles = " | ".join(examples())
    for name in [*CASES, "MCP"]:
        assert name in titles, name


@pytest.mark.parametrize("framework", list(CASES))
def test_readme_example_runs(framework, tmp_path):
    module, fake, expected = CASES[framework]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed")
    ((_, blocks),) = [(t, b) for t, b in examples().items() if t.startswith(framework)]
    (code,) = [body for lang, body in blocks if lang == "python"]
    marked = [line for line in code.splitlines() if line.endswith("# your model")]
    assert len(marked) == 1, "one line says where the model goes"
    if framework == "Claude Agent SDK":
        done = run_claude_example(tmp_path, code.replace(marked[0], "{model}"), fake)
    else:
        done = run_example(tmp_path, code.replace(marked[0], fake.strip()))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    for want in expected:
        assert any(line.startswith(want) for line in lines), (want, done.stdout)


def run_claude_example(tmp_path, code: str, fake: str):
    """The example with the real Claude Code CLI as its model: a fresh HOME, the scripted
    API reading the folder's README.md ten times, then answering."""
    from real_claude_support import ClaudeRun, ScriptedAnthropic, Step

    readme = str(tmp_path / "README.md")
    steps = [Step("Reading.", "Read", {"file_path": readme}) for _ in range(10)] + [Step("A notebook.")]
    with ScriptedAnthropic({"": steps}) as server:  # "": the example's prompt names no scenario
        env = ClaudeRun(tmp_path / "machine", server, "claude").env()
        return run_example(tmp_path, code.replace("{model}", fake.strip().format(env=env)))


def test_mcp_client_configuration_is_valid_and_uses_the_command():
    (blocks,) = [b for t, b in examples().items() if t.startswith("MCP")]
    (config,) = [json.loads(body) for lang, body in blocks if lang == "json"]
    (server,) = config["mcpServers"].values()
    assert server["command"] == "loopwatch" and server["args"][:2] == ["mcp-proxy", "--"]
    from loopwatch._cli import COMMANDS

    assert "mcp-proxy" in COMMANDS
