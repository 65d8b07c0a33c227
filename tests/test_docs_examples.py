"""Every code block of the README and the documentation site runs here, as written, from
a copy of `examples/` and nothing else (no `../shared`, nothing of the developer's home).

- `python`: run in a fresh interpreter; a framework example with the framework's own test
  model put in place of the line marked `# your model` (nothing else changed); what a
  block says it prints ("which prints") is what it prints.
- `bash`: each command run in a sandbox (`docs_support.Sandbox`); `pip install` lines name
  extras that exist; a line CI runs as it stands (`.ci/run`) is left to CI.
- `console`: each `$ command` prints exactly what the page shows.
- `toml`: a configuration loopwatch accepts; `json`: what its page says it is.
A block that cannot run here says why in a comment above it (`<!-- not run: ... -->`).
The README's own promises (the two set-up commands, the table of hosts) are checked too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from docs_support import DOCS, LANGUAGES, ROOT, Block, Sandbox, blocks, commands, console, every_block, pages, section

README = ROOT / "README.md"
CI = (ROOT / ".ci" / "run").read_text()
FRAMEWORKS = DOCS / "frameworks.md"
HARNESS = DOCS / "harness.md"

# -- every block is accounted for ---------------------------------------------------------


def test_every_block_has_a_known_language_and_only_fenced_code():
    for block in every_block():
        assert block.lang in LANGUAGES, f"{block.where}: fence a block with one of {sorted(LANGUAGES)}"
        assert block.lang != "text", f"{block.where}: a text block follows 'which prints' only"
        if block.note:
            assert block.note.startswith(("not run:", "slow:")) and len(block.note.split(":", 1)[1].strip()) > 10, (
                f"{block.where}: say why the block is not run (or slow)"
            )
    for page in pages():
        prose = re.sub(r"\n```.*?\n```", "", page.read_text(), flags=re.DOTALL)
        # an indented block would be code no test reads
        assert not re.search(r"\n\n    \S", prose), f"{page}: fence the indented block"


def test_every_python_block_is_run_here():
    run_here = [
        ("harness.md", "Your own harness"),  # test_harness_example_stops_before_running_the_tool_again
        ("extending.md", "A signal of your own"),  # test_python_blocks_print_what_they_say
        ("rollouts.md", "RL rollouts"),  # the same, and tests/test_rollouts.py
        *(("frameworks.md", title) for title in CASES),  # test_framework_example_runs
    ]
    found = [(b.page.name, b.heading) for b in every_block() if b.lang == "python"]
    assert sorted(found) == sorted((page, heading) for page, heading in run_here) or sorted(
        (page, heading.split(":")[0]) for page, heading in found
    ) == sorted(run_here), found


def test_the_docs_read_nothing_outside_a_fresh_clone():
    for block in every_block():
        if block.lang in ("bash", "console") and not block.not_run:
            assert "../shared" not in block.text, f"{block.where}: the shared corpus is not in a clone"


# -- bash and console blocks: run from a copy of examples/ ----------------------------------

#: What a documented command may exit with: 0 done, 1 something found (a loop, a problem
#: `doctor` names), 86 `run` ended a loop. 2 is bad input: a mistake in the docs.
DOCUMENTED = {0, 1, 86}


def extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def check_pip(line: str) -> None:
    for arg in shlex.split(line)[2:]:
        if arg.startswith("-"):
            continue
        named = re.fullmatch(r"(?:\.|loopwatch)\[([\w,-]+)\]", arg)
        if arg == ".":
            continue
        if named:
            assert set(named.group(1).split(",")) <= extras(), f"{line}: no such extra"
        else:  # a package beside loopwatch (a model's client): named as pip knows it
            assert re.fullmatch(r"[A-Za-z0-9][\w.-]*(\[[\w,-]+\])?", arg), line


def run_in_ci(line: str) -> bool:
    """The line is one `.ci/run` runs (it may add options after it)."""
    return any(ci.strip().startswith(line) for ci in CI.splitlines() if not ci.lstrip().startswith("#"))


def bash_blocks(slow: bool) -> list[Block]:
    return [b for b in every_block() if b.lang == "bash" and not b.not_run and b.slow == slow]


def run_block(block: Block, tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path)
    for line in commands(block):
        line = re.sub(r"\s+#\s.*$", "", line)  # its comment
        if run_in_ci(line):
            continue
        if line.startswith("pip install"):  # installed here already: the extras must exist
            install, _, line = line.partition(" && ")
            check_pip(install)
            if not line:
                continue
        done = sandbox.run(line)
        said = f"{block.where}: {line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert done.returncode in DOCUMENTED, said
        assert "Traceback" not in done.stderr, said
        assert not re.search(r"--[\w-]+ is deprecated", done.stderr), f"document the current option: {said}"


@pytest.mark.parametrize("block", bash_blocks(slow=False), ids=lambda b: b.where)
def test_bash_block_runs(block, tmp_path):
    run_block(block, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("block", bash_blocks(slow=True), ids=lambda b: b.where)
def test_slow_bash_block_runs(block, tmp_path):
    run_block(block, tmp_path)


@pytest.mark.parametrize("block", [b for b in every_block() if b.lang == "console"], ids=lambda b: b.where)
def test_console_block_prints_what_it_shows(block, tmp_path):
    sandbox = Sandbox(tmp_path)
    for command, shown in console(block):
        done = sandbox.run(command)
        assert done.returncode in DOCUMENTED, done.stderr
        assert done.stdout == shown, f"{block.where}: `{command}` now prints:\n{done.stdout}"


# -- toml and json blocks --------------------------------------------------------------------


@pytest.mark.parametrize("block", [b for b in every_block() if b.lang == "toml"], ids=lambda b: b.where)
def test_toml_block_is_a_configuration_loopwatch_accepts(block, tmp_path):
    from loopwatch import load_config

    path = tmp_path / "loopwatch.toml"
    path.write_text(block.text)
    load_config(str(path))  # raises ConfigError, with the nearest valid name, on a mistake


def test_the_events_line_is_read_as_one_call(tmp_path):
    from loopwatch._readers import read

    (block,) = [b for b in blocks(DOCS / "events-format.md") if b.lang == "json"]
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(json.loads(block.text)) + "\n")
    (session,) = list(read(str(path)))
    assert session.format == "events"
    assert [getattr(e, "name", None) for e in session.events] == ["Bash"] and not session.skipped


def test_mcp_client_configuration_is_valid_and_uses_the_command():
    (config,) = [json.loads(b.text) for b in section(FRAMEWORKS, "MCP") if b.lang == "json"]
    (server,) = config["mcpServers"].values()
    assert server["command"] == "loopwatch" and server["args"][:2] == ["mcp-proxy", "--"]
    from loopwatch._cli import COMMANDS

    assert "mcp-proxy" in COMMANDS


# -- the README's promises ------------------------------------------------------------------


def readme_section(title: str) -> str:
    return README.read_text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) < 200
    first = text.split("\n## ", 1)[0]
    assert "loopwatch notices when an AI agent" in first, "what it is, before anything else"
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings[:3] == ["Install", "Set up", "Guard your agent"]
    assert "Python 3.11" in readme_section("Install")


def test_exactly_two_set_up_commands_the_second_what_ci_runs():
    (block,) = [b for b in blocks(README) if b.heading == "Set up" and b.lang == "bash"]
    first, second = commands(block)  # exactly two
    assert first == "pip install . && loopwatch scan examples/runaway.jsonl"
    assert second in CI.splitlines(), "the README's test command is the one CI runs"
    (shown,) = [b for b in blocks(README) if b.heading == "Set up" and b.lang == "console"]
    assert console(shown)[0][0] == first.split(" && ", 1)[1], "the output shown is the first command's"


def table(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_table_of_hosts_is_every_host_loopwatch_guards():
    from loopwatch._hosts import HOSTS, host

    sys.path.insert(0, str(ROOT / "tests"))
    from real_clis import CLIS

    rows = table(readme_section("Guard your agent"))
    installed = {}
    for agent, set_up, *_, versions in rows:
        named = re.fullmatch(r"`loopwatch install ([\w-]+)`", set_up)
        if named:
            installed[named.group(1)] = (agent, versions)
    assert set(installed) == set(HOSTS), "a row per host of loopwatch._hosts.HOSTS, and no other"
    for name, (agent, versions) in installed.items():
        assert agent.startswith(f"[{host(name).title}]"), (name, agent)
        if name in CLIS:
            assert versions == ", ".join(CLIS[name].versions), f"{name}: the releases tests/real_clis.py drives"
        else:
            assert "untested" in versions, f"{name}: no release is tested: say so"


def test_the_table_of_frameworks_names_the_versions_the_extras_require():
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    rows = [row for row in table(readme_section("Guard your agent")) if "pip install" in row[1]]
    assert len(rows) == 6
    for agent, set_up, *_, versions in rows:
        (extra,) = re.findall(r"pip install '\.\[([\w-]+)\]'", set_up)
        package, version = versions.split()
        assert f"{package}>={version}" in optional[extra], (agent, versions)


@pytest.mark.slow
def test_the_first_set_up_command_on_a_fresh_machine(tmp_path):
    """A clean copy of the tree (what git tracks), a new virtual environment, and the
    README's first command, which prints what the README shows."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    for name in tracked.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file() and not name.startswith("tests/"):
            target = clone / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((ROOT / name).read_bytes())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("LOOPWATCH_")
    }
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", COLUMNS="100", PIP_DISABLE_PIP_VERSION_CHECK="1")
    (block,) = [b for b in blocks(README) if b.heading == "Set up" and b.lang == "bash"]
    first = commands(block)[0]
    done = subprocess.run(["bash", "-c", first], cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 1, done.stderr[-3000:]  # a session stopped
    (shown,) = [b for b in blocks(README) if b.heading == "Set up" and b.lang == "console"]
    assert done.stdout.endswith(console(shown)[0][1]), done.stdout


# -- python blocks -------------------------------------------------------------------------

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


def python_block(page: Path, heading: str) -> Block:
    (block,) = [b for b in section(page, heading) if b.lang == "python"]
    return block


def run_example(tmp_path, code: str, prelude: str = ""):
    (tmp_path / "example.py").write_text(prelude + code)
    (tmp_path / "README.md").write_text("# notes\n\nA notebook of ideas.\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    env.pop("LOOPWATCH_MODE", None)
    return subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300, check=False
    )


# Counts the example's tool runs (its commands), without changing the example.
COUNT_RUNS = """
import atexit, subprocess
_runs, _run = [], subprocess.run
subprocess.run = lambda *a, **k: _runs.append(1) or _run(*a, **k)
atexit.register(lambda: print("tool runs:", len(_runs)))
"""


@pytest.mark.slow
def test_harness_example_stops_before_running_the_tool_again(tmp_path):
    done = run_example(tmp_path, python_block(HARNESS, "Your own harness").text, COUNT_RUNS)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert "stopped: the same Bash call returned the same result 3 times in a row" in lines
    # The stop came from check(), before a 4th run: the tool ran 3 times, not once more.
    assert lines[-1] == "tool runs: 3"


def test_python_blocks_print_what_they_say(tmp_path):
    said = [b for b in every_block() if b.lang == "python" and b.prints is not None]
    assert said, "some blocks say what they print"
    for block in said:
        done = run_example(tmp_path, block.text)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout == block.prints, f"{block.where} prints:\n{done.stdout}"


def test_every_framework_has_an_example():
    titles = " | ".join(b.heading for b in blocks(FRAMEWORKS))
    for name in [*CASES, "MCP"]:
        assert name in titles, name


@pytest.mark.slow
@pytest.mark.parametrize("framework", list(CASES))
def test_framework_example_runs(framework, tmp_path):
    module, fake, expected = CASES[framework]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed")
    code = python_block(FRAMEWORKS, framework).text
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


def test_each_framework_example_names_what_it_needs_installed():
    for framework in CASES:
        installs = [b for b in section(FRAMEWORKS, framework) if b.lang == "bash"]
        assert any("pip install" in b.text for b in installs), f"{framework}: name the packages beside the example"


def test_every_host_has_its_page_in_the_site():
    from loopwatch._hosts import HOSTS, host

    nav = (ROOT / "mkdocs.yml").read_text()
    for name in HOSTS:
        page = DOCS / "hosts" / f"{name}.md"
        assert page.is_file(), f"{name}: write docs/hosts/{name}.md"
        assert page.read_text().startswith(f"# {host(name).title}\n"), page
        assert f"hosts/{name}.md" in nav, f"{name}: list its page in mkdocs.yml's nav"
        assert f"](docs/hosts/{name}.md)" in readme_section("Guard your agent"), (
            f"{name}: the README's row links its page"
        )
