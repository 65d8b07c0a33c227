"""OpenAI Agents SDK: tool guardrails and run hooks on a real `Runner` loop, driven by
the SDK's own `ScriptedModel` (an implementation of its `Model` interface; no network,
tracing off)."""

from __future__ import annotations

import asyncio
import gc

import pytest

pytest.importorskip("agents")

from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, handoff, set_tracing_disabled
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
    assert guard.stopped is None  # the run's own guard stopped, not the settings


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
    events = []  # the guard's clock is read once per event it is told of
    guard = Guard(clock=lambda: events.append(1) or float(len(events)), **GUARD)
    guarded = run(guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=script()), guard), guard)
    assert guarded.final_output == plain.final_output == "Done."
    assert outputs(guarded.to_input_list()) == outputs(plain.to_input_list())
    assert len(events) == 3 * 2 + 4 + 1  # three calls, each before and after; four model turns; one text


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


# -- several runs at once, and handoffs -------------------------------------------------------


class ConversationModel(Model):
    """A model of our own (the SDK's `Model` interface), answering each conversation from
    its first message: "test ..." runs the tests for ever; "read ..." reads 12 files,
    then answers. `hand_to` first hands the conversation off to that agent."""

    def __init__(self, hand_to: str | None = None) -> None:
        self.hand_to = hand_to

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **_
    ):
        await asyncio.sleep(0)  # the runs beside this one go on meanwhile
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        first = str(items[0].get("content"))
        n = len(outputs(items))
        if self.hand_to is not None:
            (target,) = [h for h in handoffs if h.agent_name == self.hand_to]
            output = [function_call(target.tool_name, {}, call_id="handoff")]
        elif first.startswith("test"):
            output = [function_call("run_tests", {"path": "tests"}, call_id=f"t{n}")]
        elif n >= 12:
            output = [assistant_message("read them all")]
        else:
            output = [function_call("read_file", {"path": f"m{n}.py"}, call_id=f"r{n}")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


async def serve(agent, guard, prompts):
    """One agent and one guard serving several requests at once, as a server does."""
    runs = [Runner.run(agent, p, hooks=LoopwatchHooks(guard), max_turns=40) for p in prompts]
    return await asyncio.gather(*runs, return_exceptions=True)


@pytest.mark.parametrize("loopers", [1, 3])
def test_one_guard_serves_concurrent_runs_each_on_its_own(loopers):
    guard = Guard(**GUARD)
    agent = guard_tools(Agent(name="fixer", tools=[run_tests, read_file], model=ConversationModel()), guard)
    *looping, healthy = asyncio.run(serve(agent, guard, ["test the cart"] * loopers + ["read the sources"]))
    assert all(stop_reason(r) and "same run_tests call" in stop_reason(r) for r in looping), looping
    assert ran.count("tests") == 3 * loopers  # as when each runs alone: nudged, blocked, stopped
    assert healthy.final_output == "read them all"
    assert not any("loopwatch" in o for o in outputs(healthy.to_input_list()))
    del looping, healthy
    gc.collect()
    assert guard.live_runs == 0  # each run's guards went with its run


@pytest.mark.parametrize("how", ["agent", "handoff()"])
def test_a_handoff_does_not_escape_the_guard(how):
    guard = Guard(**GUARD)
    tester = Agent(name="tester", tools=[run_tests, read_file], model=ConversationModel())
    triage = Agent(
        name="triage",
        handoffs=[tester if how == "agent" else handoff(tester)],
        tools=[read_file],
        model=ConversationModel(hand_to="tester"),
    )
    original = triage.handoffs[0]
    guarded = guard_tools(triage, guard)
    assert triage.handoffs == [original] and not tester.tools[0].tool_input_guardrails  # originals untouched
    looping, healthy = asyncio.run(serve(guarded, guard, ["test the cart", "read the sources"]))
    assert "same run_tests call" in (stop_reason(looping) or "")
    assert ran.count("tests") == 3
    assert healthy.final_output == "read them all" and healthy.last_agent.name == "tester"


def test_handoffs_that_lead_back_are_wrapped_once():
    guard = Guard(**GUARD)
    a = Agent(name="a", tools=[read_file])
    b = Agent(name="b", tools=[run_tests], handoffs=[a])
    a.handoffs = [b]
    guarded = guard_tools(a, guard)
    (b2,) = guarded.handoffs
    assert b2 is not b and b2.handoffs == [guarded] and b2.tools[0].tool_input_guardrails


def test_a_guard_around_one_monitor_is_refused():
    from loopwatch import Monitor

    with pytest.raises(TypeError, match="watches one run"):
        guard_tools(Agent(name="fixer", tools=[run_tests]), Guard(Monitor()))
