"""What the framework guards cost `import loopwatch` and each guarded tool call.

    PYTHONPATH=src python bench/adapters.py             # 30 imports, 20,000 calls
    PYTHONPATH=src python bench/adapters.py --runs 10   # a quick run
    PYTHONPATH=src python bench/adapters.py --part concurrent --part memory

1. `import loopwatch` in fresh interpreters, the fastest of --runs each: as it is now,
   against what it imported before the guards (the same core modules, without
   `loopwatch._guard`), alternating in the same run so the ratio holds on a busy machine
   where absolute times do not; and the modules it now loads that it did not
   (expected: none: `Guard` is imported on first use). It also lists any framework module
   `import loopwatch` or `import loopwatch.adapters` loads (expected: none).
2. Per tool call: `Guard.before_call` + `Guard.after_call` against the bare
   `Monitor.check` + `Monitor.observe` they wrap, on the same calls (ratio; the guard's
   work is the pending-block bookkeeping and the key function lookup).
3. `concurrent`: in each real library (LangChain, pydantic-ai, the OpenAI Agents SDK),
   one guarded agent serving a looping request (the same failing tests, for ever) and a
   healthy one (twelve different files read) at once, as the README sets it up
   (`profile="attended", stop=True`): how many times the looping tool ran, and whether
   the healthy run finished untouched. A run nothing stops ends at the framework's own
   limit (40 steps), so "before" figures are finite. Run it with `PYTHONPATH` at an
   older tree to measure that tree.
4. `memory`: --memory-runs short runs (one tool call, one answer) through each library's
   guard: guards, monitors and all objects alive after 1,000 runs and after the last
   (a server's state must not grow with the runs it served).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "agents", "openai", "pydantic_ai", "mcp", "opentelemetry")


# Before the guards, `loopwatch/__init__` imported exactly these; the baseline imports
# them under a bare package module, so the package's new __init__ does not run.
_BEFORE = ("config", "events", "finding", "monitor", "verdict")
_BASELINE = (
    "import sys, time, types, loopwatch_path as p\n"
    "t = time.perf_counter()\n"
    "pkg = types.ModuleType('loopwatch'); pkg.__path__ = [p.PATH]; sys.modules['loopwatch'] = pkg\n"
    + "".join(f"import loopwatch.{name}\n" for name in _BEFORE)
    + "print(time.perf_counter() - t, ' '.join(sorted(sys.modules)))\n"
)
_NOW = (
    "import sys, time, loopwatch_path\n"
    "t = time.perf_counter()\n"
    "import loopwatch\n"
    "print(time.perf_counter() - t, ' '.join(sorted(sys.modules)))\n"
)


def import_times(runs: int) -> tuple[float, float, set[str]]:
    """Fastest seconds of the old and the new `import loopwatch`, alternating in fresh
    interpreters, and the modules the new one loads that the old did not."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "loopwatch")
    helper = os.path.join(os.environ.get("TMPDIR", "/tmp"), "loopwatch_path.py")
    with open(helper, "w") as fh:
        fh.write(f"PATH = {os.path.abspath(folder)!r}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(helper), os.environ.get("PYTHONPATH", "")])}
    best = {"before": 1e9, "now": 1e9}
    modules: dict[str, set[str]] = {}
    for _ in range(runs):
        for key, code in (("before", _BASELINE), ("now", _NOW)):
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
            ).stdout
            seconds, names = out.split(" ", 1)
            best[key] = min(best[key], float(seconds))
            modules[key] = set(names.split())
    return best["before"], best["now"], modules["now"] - modules["before"]


def frameworks_loaded(module: str) -> list[str]:
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    names = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return sorted(set(FRAMEWORKS) & set(names))


def per_call(calls: int, rounds: int = 3) -> tuple[float, float]:
    """Microseconds per call, bare monitor and guard, the fastest of `rounds` alternating."""
    from loopwatch import Attempt, Guard, Monitor, ToolCall

    # All different: a healthy run, so neither ever stops (a stopped guard refuses at once).
    inputs = [{"command": f"pytest tests/test_{i}.py", "description": "run the tests"} for i in range(calls)]
    results = [f"{i} passed in {i / 100:.2f}s; file_{i}.py ok" for i in range(calls)]

    def bare() -> float:
        monitor = Monitor()
        start = time.perf_counter()
        for i, (value, result) in enumerate(zip(inputs, results)):
            monitor.check(Attempt("Bash", value, at=float(i)))
            monitor.observe(ToolCall("Bash", value, result, at=float(i)))
        return time.perf_counter() - start

    def guarded() -> float:
        guard = Guard(clock=None)
        start = time.perf_counter()
        for i, (value, result) in enumerate(zip(inputs, results)):
            guard.before_call("Bash", value, at=float(i))
            guard.after_call("Bash", value, result, at=float(i))
        return time.perf_counter() - start

    best_bare = best_guarded = 1e9
    for _ in range(rounds):
        best_bare = min(best_bare, bare())
        best_guarded = min(best_guarded, guarded())
    return best_bare / calls * 1e6, best_guarded / calls * 1e6


# -- 3 and 4: the real libraries ------------------------------------------------------------

SETTINGS: dict[str, Any] = {"profile": "attended", "stop": True, "env": {}}
FAILED = "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"
STEPS = 40  # where a framework's own limit ends a run nothing else stops


def _reply(first: str, calls: int) -> tuple[str, dict[str, str]] | str:
    """The scripted model shared by every library: a tool call (name, arguments) or text."""
    if first.startswith("test"):
        return "run_tests", {"path": "tests"}
    if first.startswith("once"):
        return ("read_file", {"path": "a.py"}) if calls == 0 else "done"
    return ("read_file", {"path": f"m{calls}.py"}) if calls < 12 else "read them all"


class _Count:
    def __init__(self) -> None:
        self.ran = {"run_tests": 0, "read_file": 0}

    def run_tests(self, path: str) -> str:
        self.ran["run_tests"] += 1
        return FAILED

    def read_file(self, path: str) -> str:
        self.ran["read_file"] += 1
        return f"contents of {path}"


def langchain_library(count: _Count) -> Callable[[list[str]], list[Any]]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from loopwatch.adapters.langchain import LoopwatchMiddleware

    class Chat(GenericFakeChatModel):
        messages: Any = None

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            n = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
            reply = _reply(str(messages[0].content), n)
            if isinstance(reply, str):
                message = AIMessage(content=reply)
            else:
                message = AIMessage(content="", tool_calls=[{"name": reply[0], "args": reply[1], "id": f"c{n}"}])
            return ChatResult(generations=[ChatGeneration(message=message)])

    agent = create_agent(
        Chat(),
        [tool(count.run_tests, description="Run the tests."), tool(count.read_file, description="Read a file.")],
        middleware=[LoopwatchMiddleware(**SETTINGS)],
    )

    def serve(prompts: list[str]) -> list[Any]:
        inputs = [{"messages": [HumanMessage(p)]} for p in prompts]
        config: Any = {"recursion_limit": 2 * STEPS + 4, "max_concurrency": len(prompts)}
        return agent.batch(inputs, config=config, return_exceptions=True)

    return serve


def pydantic_ai_library(count: _Count) -> Callable[[list[str]], list[Any]]:
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from loopwatch.adapters.pydantic_ai import Loopwatch

    def respond(messages: Any, info: Any) -> Any:
        n = sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)
        reply = _reply(str(messages[0].parts[-1].content), n)
        if isinstance(reply, str):
            return ModelResponse(parts=[TextPart(reply)])
        return ModelResponse(parts=[ToolCallPart(reply[0], reply[1], tool_call_id=f"c{n}")])

    agent = Agent(FunctionModel(respond), capabilities=[Loopwatch(**SETTINGS)])

    @agent.tool_plain
    async def run_tests(path: str) -> str:
        """Run the tests."""
        await asyncio.sleep(0)
        return count.run_tests(path)

    @agent.tool_plain
    async def read_file(path: str) -> str:
        """Read a file."""
        await asyncio.sleep(0)
        return count.read_file(path)

    def serve(prompts: list[str]) -> list[Any]:
        limits = UsageLimits(request_limit=STEPS + 1)

        async def main() -> list[Any]:
            return await asyncio.gather(*(agent.run(p, usage_limits=limits) for p in prompts), return_exceptions=True)

        return asyncio.run(main())

    return serve


def openai_agents_library(count: _Count) -> Callable[[list[str]], list[Any]]:
    from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
    from agents.testing import assistant_message, function_call

    from loopwatch import Guard
    from loopwatch.adapters.openai_agents import LoopwatchHooks, guard_tools

    set_tracing_disabled(True)

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(0)
            items = input if isinstance(input, list) else [{"role": "user", "content": input}]
            n = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
            reply = _reply(str(items[0].get("content")), n)
            if isinstance(reply, str):
                output = [assistant_message(reply)]
            else:
                output = [function_call(reply[0], reply[1], call_id=f"c{n}")]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def run_tests(path: str) -> str:
        """Run the tests."""
        return count.run_tests(path)

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return count.read_file(path)

    guard = Guard(**SETTINGS)  # one guard, shared as the README shows
    agent = guard_tools(Agent(name="assistant", model=Scripted(), tools=[run_tests, read_file]), guard)

    def serve(prompts: list[str]) -> list[Any]:
        async def main() -> list[Any]:
            runs = (Runner.run(agent, p, hooks=LoopwatchHooks(guard), max_turns=STEPS) for p in prompts)
            return await asyncio.gather(*runs, return_exceptions=True)

        return asyncio.run(main())

    return serve


LIBRARIES = {
    "LangChain": langchain_library,
    "pydantic-ai": pydantic_ai_library,
    "OpenAI Agents SDK": openai_agents_library,
}


def concurrent(name: str) -> str:
    count = _Count()
    serve = LIBRARIES[name](count)
    alone = serve(["test the cart"])
    looping_alone = count.ran["run_tests"]
    count.ran.update(run_tests=0, read_file=0)
    *_, healthy = serve(["test the cart", "read the sources"])
    finished = not isinstance(healthy, BaseException) and count.ran["read_file"] == 12
    del alone
    return (
        f"{name}: looping tool ran {looping_alone} times alone, {count.ran['run_tests']} times beside a healthy run; "
        f"healthy run {'finished' if finished else 'did NOT finish'} ({count.ran['read_file']} of 12 files read)"
    )


def _live() -> tuple[int, int, int]:
    """Guards and monitors alive now (each run's, and the settings' own), and all the
    objects the garbage collector tracks."""
    from loopwatch import Guard, Monitor

    gc.collect()
    objects = gc.get_objects()
    return sum(isinstance(o, Guard) for o in objects), sum(isinstance(o, Monitor) for o in objects), len(objects)


def memory(name: str, runs: int) -> str:
    """Live guards, monitors and objects after 1,000 runs and after `runs` (counted, not
    traced: tracing every allocation slows the runs tenfold, and RSS is too noisy)."""
    count = _Count()
    serve = LIBRARIES[name](count)
    warm = min(1000, runs // 2)
    start = time.perf_counter()
    for _ in range(warm):
        serve(["once"])
    early = _live()
    for _ in range(runs - warm):
        serve(["once"])
    late = _live()
    seconds = time.perf_counter() - start
    return (
        f"{name}: {runs} short runs in {seconds:.0f} s; guards/monitors alive after {warm} runs "
        f"{early[0]}/{early[1]}, after {runs} {late[0]}/{late[1]}; objects tracked {early[2]} -> {late[2]} "
        f"({late[2] - early[2]:+d})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument(
        "--part", action="append", choices=["import", "calls", "concurrent", "memory"], help="default: import, calls"
    )
    parser.add_argument("--memory-runs", type=int, default=10000)
    parser.add_argument("--library", action="append", choices=list(LIBRARIES), help="default: all three")
    args = parser.parse_args()
    parts = args.part or ["import", "calls"]
    for name in args.library or list(LIBRARIES):
        if "concurrent" in parts:
            print(concurrent(name), flush=True)
        if "memory" in parts:
            print(memory(name, args.memory_runs), flush=True)
    if "import" not in parts and "calls" not in parts:
        return

    before, now, extra = import_times(args.runs)
    print(
        f"import loopwatch (fastest of {args.runs} each, alternating): before the guards {before * 1000:.1f} ms, "
        f"now {now * 1000:.1f} ms ({now / before:.2f}x); modules added: {', '.join(sorted(extra)) or 'none'}"
    )
    for module in ("loopwatch", "loopwatch.adapters"):
        print(f"frameworks loaded by `import {module}`: {', '.join(frameworks_loaded(module)) or 'none'}")
    bare, guarded = per_call(args.calls)
    print(
        f"per tool call, {args.calls} calls: Monitor.check+observe {bare:.1f} us, "
        f"Guard.before_call+after_call {guarded:.1f} us ({guarded / bare:.2f}x)"
    )


if __name__ == "__main__":
    main()
