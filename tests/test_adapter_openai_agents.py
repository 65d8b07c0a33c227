"""OpenAI Agents SDK: tool guardrails and run hooks on a real `Runner` loop, driven by
the SDK's own `ScriptedModel` (an implementation of its `Model` interface; no network,
tracing off)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.exceptions import ToolInputGuardrailTripwireTriggered
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from core_support import OFF

from loopwatch import Action, Guard
from loopwatch.adapters.openai_agents import LoopwatchHooks, guard_tools, stop_reason

set_tracing_disabled(True)

GUARD = {"profile": "attended", "stop": True, "signals": {**OFF, "repeat": {"threshold": 3}}, "env": {}}
ran: list[str] = []


@function_tool
def run_tests(path: str) -> str:
    """Run the test suite under `path`."""
    ran.append(path)
    return "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    ran.append(path)
    return f"contents of {path}"


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()


def outputs(items) -> list[str]:
    return [i["output"] for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


def looping(recover: bool, seen: list[str] | None = None, steps: int = 12) -> ScriptedModel:
    """Runs the tests over and over; if `recover`, reads the code once blocked, then answers."""

    def respond(call):
        items = call.input if isinstance(call.input, list) else []
        got = outputs(items)
        if seen is not None:
            seen[:] = got
        if got and got[-1].startswith("contents of"):
            return [assistant_message("The discount was applied twice; fixed.")]
        if recover and got and got[-1].startswith("loopwatch blocked this call"):
            return [function_call("read_file", {"path": "cart.py"}, call_id="read")]
        return [function_call("run_tests", {"path": "tests"}, call_id=f"call_{len(got)}")]

    return ScriptedModel([ModelStep.respond(respond) for _ in range(steps)])


def run(agent, guard=None, hooks=None):
    hooks = hooks if hooks is not None else (LoopwatchHooks(guard) if guard is not None else None)
    return asyncio.run(Runner.run(agent, "make the tests pass", hooks=hooks, max_turns=30))


def test_looping_agent_is_nudged_then_blocked_then_stopped():
    guard, seen = Guard(**GUARD), []
    agent = guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=looping(False, seen)), guard)
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as tripped:
        run(agent, guard)
    assert ran == ["tests"] * 3
    assert seen[2].startswith("FAILED") and "loopwatch: you appear to be going in circles" in seen[2]
    assert seen[3].startswith("loopwatch blocked this call")
    assert "same run_tests call returned the same result 3 times" in stop_reason(tripped.value)
    assert guard.stopped


def test_after_a_block_the_conversation_continues():
    guard = Guard(**GUARD)
    agent = guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=looping(True)), guard)
    result = run(agent, guard)
    assert result.final_output == "The discount was applied twice; fixed."
    assert ran == ["tests", "tests", "tests", "cart.py"]
    items = result.to_input_list()
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    answers = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls == answers  # every call has its output
    # A new run with the same guard is a new user input: it starts afresh.
    again = guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=looping(True)), guard)
    assert run(again, guard).final_output == "The discount was applied twice; fixed."


def test_a_new_run_lifts_a_stop():
    guard = Guard(**GUARD)
    agent = guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=looping(False)), guard)
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        run(agent, guard)
    model = ScriptedModel([[function_call("read_file", {"path": "a.py"}, call_id="r")], [assistant_message("ok")]])
    assert run(guard_tools(Agent(name="fixer", tools=[read_file], model=model), guard), guard).final_output == "ok"


def test_healthy_agent_runs_untouched():
    def script():
        return ScriptedModel(
            [
                [function_call("read_file", {"path": "cart.py"}, call_id="a")],
                [function_call("run_tests", {"path": "tests"}, call_id="b")],
                [function_call("read_file", {"path": "discount.py"}, call_id="c")],
                [assistant_message("Done.")],
            ]
        )

    plain = run(Agent(name="fixer", tools=[run_tests, read_file], model=script()))
    guard = Guard(**GUARD)
    guarded = run(guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=script()), guard), guard)
    assert guarded.final_output == plain.final_output == "Done."
    assert outputs(guarded.to_input_list()) == outputs(plain.to_input_list())
    assert guard.monitor.actions == 3


def test_guard_tools_leaves_the_original_tools_alone():
    guard = Guard(**GUARD)
    agent = Agent(name="fixer", tools=[run_tests, read_file])
    guarded = guard_tools(agent, guard)
    assert not run_tests.tool_input_guardrails and guarded.tools[0] is not run_tests
    assert agent.tools[0] is run_tests
    twice = guard_tools(guarded, guard)  # wrapping again with the same guard adds nothing
    assert len(twice.tools[0].tool_input_guardrails) == len(twice.tools[0].tool_output_guardrails) == 1


def test_hooks_alone_only_watch():
    guard = Guard(**GUARD)
    hooks = LoopwatchHooks(guard)
    model = ScriptedModel(
        [[function_call("run_tests", {"path": "tests"}, call_id=f"c{i}")] for i in range(5)]
        + [[assistant_message("Giving up.")]]
    )
    result = run(Agent(name="fixer", tools=[run_tests], model=model), hooks=hooks)
    assert result.final_output == "Giving up." and len(ran) == 5
    assert not any("loopwatch" in o for o in outputs(result.to_input_list()))
    assert [d.action for d in hooks.findings] == [Action.NUDGE, Action.NUDGE, Action.STOP]
