"""pydantic-ai: the `Loopwatch` capability on a real `Agent`, driven by pydantic-ai's
own `FunctionModel` and `TestModel` (no network)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pydantic_ai")

from core_support import OFF
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from loopwatch.adapters import LoopStopped
from loopwatch.adapters.pydantic_ai import Loopwatch

GUARD = {"profile": "attended", "stop": True, "signals": {**OFF, "repeat": {"threshold": 3}}, "env": {}}


def make_agent(model, capability=None) -> tuple[Agent, list[str]]:
    ran: list[str] = []
    agent = Agent(model, capabilities=[capability] if capability is not None else [])

    @agent.tool_plain
    def run_tests(path: str) -> str:
        """Run the test suite under `path`."""
        ran.append(path)
        return "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(path)
        return f"contents of {path}"

    return agent, ran


def parts(messages, kind):
    return [p for m in messages for p in m.parts if isinstance(p, kind)]


def looping_model(recover: bool):
    """Runs the same tests forever; if `recover`, reads the code once it is blocked."""

    def respond(messages, info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        n = len(parts(messages, ToolCallPart))
        if recover and "loopwatch blocked this call" in str(getattr(last, "content", "")):
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "cart.py"}, tool_call_id="read")])
        if getattr(last, "tool_name", None) == "read_file":
            return ModelResponse(parts=[TextPart("The discount was applied twice; fixed.")])
        return ModelResponse(parts=[ToolCallPart("run_tests", {"path": "tests"}, tool_call_id=f"call_{n}")])

    return FunctionModel(respond)


def test_looping_agent_is_nudged_then_blocked_then_stopped():
    seen = []

    def respond(messages, info):
        seen.append(str(getattr(messages[-1].parts[-1], "content", "")))
        return ModelResponse(parts=[ToolCallPart("run_tests", {"path": "tests"}, tool_call_id=f"call_{len(seen)}")])

    capability = Loopwatch(**GUARD)
    agent, ran = make_agent(FunctionModel(respond), capability)
    with pytest.raises(LoopStopped) as stopped:
        agent.run_sync("make the tests pass")
    assert ran == ["tests"] * 3  # the 4th call was blocked, the 5th stopped the run
    assert "loopwatch: you appear to be going in circles" in seen[3]  # the 3rd result carried the nudge
    assert seen[3].startswith("FAILED")
    assert seen[4].startswith("loopwatch blocked this call")
    assert "same run_tests call returned the same result 3 times" in stopped.value.reason
    assert capability.guard.stopped is None  # the run's own guard stopped, not the settings


def test_after_a_block_the_conversation_continues():
    capability = Loopwatch(**GUARD)
    agent, ran = make_agent(looping_model(recover=True), capability)
    result = agent.run_sync("make the tests pass")
    assert result.output == "The discount was applied twice; fixed."
    assert ran == ["tests", "tests", "tests", "cart.py"]
    messages = result.all_messages()
    calls = [p.tool_call_id for p in parts(messages, ToolCallPart)]
    returns = parts(messages, ToolReturnPart)
    assert calls == [p.tool_call_id for p in returns]  # every call answered, in order
    blocked = returns[3]
    assert blocked.content.startswith("loopwatch blocked this call") and blocked.outcome != "success"
    # The next run (a new user message) starts afresh, on the same history.
    again = agent.run_sync("thanks, now run them once more", message_history=messages)
    assert again.output == "The discount was applied twice; fixed."


def test_healthy_agent_runs_untouched():
    plain, plain_ran = make_agent(TestModel())
    guarded, guarded_ran = make_agent(TestModel(), Loopwatch(**GUARD))
    a, b = plain.run_sync("go"), guarded.run_sync("go")
    assert a.output == b.output and plain_ran == guarded_ran and guarded_ran
    strip = [[(type(p).__name__, getattr(p, "content", None)) for p in m.parts] for m in a.all_messages()]
    assert [[(type(p).__name__, getattr(p, "content", None)) for p in m.parts] for m in b.all_messages()] == strip


def test_async_run_is_guarded_too():
    agent, ran = make_agent(looping_model(recover=False), Loopwatch(**GUARD))
    with pytest.raises(LoopStopped):
        asyncio.run(agent.run("make the tests pass"))
    assert len(ran) == 3


def test_text_alone_can_stop_a_run():
    chant = "Let me check the configuration file again to be sure. " * 8

    def respond(messages, info):
        n = len(parts(messages, ToolCallPart))
        if n < 1:
            return ModelResponse(parts=[TextPart(chant), ToolCallPart("read_file", {"path": "a.py"}, tool_call_id="r")])
        return ModelResponse(parts=[TextPart("done")])

    # chanting is suspicion: it stops once corroborated (one more copy past the nudge)
    guard = {
        **GUARD,
        "signals": {**OFF, "chanting": {"repeats": 3}},
        "profile": "unattended",
        "evidence": {"confirm": 1},
    }
    agent, ran = make_agent(FunctionModel(respond), Loopwatch(**guard))
    with pytest.raises(LoopStopped):
        agent.run_sync("go")
    assert ran == []


# -- several runs at once -------------------------------------------------------------------


def shared_agent(capability) -> tuple[Agent, dict[str, int]]:
    """One agent serving everyone: the model loops when asked to test, reads files
    (a different one each time) when asked to read, and says so when done."""
    ran = {"run_tests": 0, "read_file": 0}

    def respond(messages, info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)
        n = len(parts(messages, ToolCallPart))
        if prompt.startswith("test"):
            return ModelResponse(parts=[ToolCallPart("run_tests", {"path": "tests"}, tool_call_id=f"t{n}")])
        if n >= 12:
            return ModelResponse(parts=[TextPart("read them all")])
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"src/m{n}.py"}, tool_call_id=f"r{n}")])

    agent = Agent(FunctionModel(respond), capabilities=[capability])

    @agent.tool_plain
    async def run_tests(path: str) -> str:
        """Run the test suite under `path`."""
        ran["run_tests"] += 1
        await asyncio.sleep(0)  # let the other runs go on meanwhile
        return "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"

    @agent.tool_plain
    async def read_file(path: str) -> str:
        """Read a file."""
        ran["read_file"] += 1
        await asyncio.sleep(0)
        return f"contents of {path}"

    return agent, ran


@pytest.mark.parametrize("loopers", [1, 3])
def test_concurrent_runs_are_each_watched_on_their_own(loopers):
    capability = Loopwatch(**GUARD)
    agent, ran = shared_agent(capability)

    async def main():
        runs = [agent.run("test the cart") for _ in range(loopers)] + [agent.run("read the sources")]
        return await asyncio.gather(*runs, return_exceptions=True)

    *looping, healthy = asyncio.run(main())
    assert all(isinstance(r, LoopStopped) for r in looping), looping
    assert ran["run_tests"] == 3 * loopers  # as when each runs alone: nudged, blocked, stopped
    assert healthy.output == "read them all" and ran["read_file"] == 12
    assert not any("loopwatch" in str(p.content) for p in parts(healthy.all_messages(), ToolReturnPart))


def test_a_finished_run_leaves_nothing_behind():
    capability = Loopwatch(**GUARD)
    agent, _ = shared_agent(capability)
    agent.run_sync("read the sources")
    with pytest.raises(LoopStopped):
        agent.run_sync("test the cart")
    # The capability given is only the settings: the runs' guards went with their runs.
    assert capability.guard.live_runs == 0 and capability.guard.monitor.actions == 0


def test_a_guard_around_one_monitor_is_refused():
    from loopwatch import Guard, Monitor

    with pytest.raises(TypeError, match="watches one run"):
        Loopwatch(Guard(Monitor()))
