"""LangChain v1: the middleware and the callback handler against a real `create_agent`
loop, driven by LangChain's own fake chat model (no network)."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

pytest.importorskip("langchain.agents")

from core_support import OFF
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from loopwatch import Action
from loopwatch.adapters.langchain import LoopwatchCallbackHandler, LoopwatchMiddleware

GUARD = {"profile": "attended", "stop": True, "signals": {**OFF, "repeat": {"threshold": 3}}, "env": {}}


class ToolCallingFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model; `create_agent` binds tools, which it ignores."""

    def bind_tools(self, tools, **kwargs):
        return self


ran: list[str] = []


@tool
def run_tests(path: str) -> str:
    """Run the test suite under `path`."""
    ran.append(path)
    return "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    ran.append(path)
    return f"contents of {path}"


def calls(name: str, args: dict, n: int, start: int = 0) -> list[AIMessage]:
    return [
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{start + i}"}]) for i in range(n)
    ]


def agent_for(script, middleware=()):
    model = ToolCallingFakeModel(messages=iter(script))
    return create_agent(model, [run_tests, read_file], middleware=list(middleware))


def assert_protocol_intact(messages):
    """Every tool call of every AIMessage has exactly one ToolMessage answering it."""
    asked = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(asked) == sorted(answered)


def tool_messages(messages):
    return [m for m in messages if isinstance(m, ToolMessage)]


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()


def test_looping_agent_is_nudged_then_blocked_then_stopped():
    middleware = LoopwatchMiddleware(**GUARD)
    agent = agent_for(calls("run_tests", {"path": "tests"}, 10), [middleware])
    state = agent.invoke({"messages": [HumanMessage("make the tests pass")]})
    assert set(state) == {"messages"}  # the run's guard stays private to the run
    out = state["messages"]
    results = tool_messages(out)
    assert len(ran) == 3  # the 4th call was blocked, the 5th refused: neither ran
    assert [m.status for m in results] == ["success", "success", "success", "error", "error"]
    assert "loopwatch: you appear to be going in circles" in results[2].content
    assert results[2].content.startswith("FAILED")  # the nudge rides on the real result
    assert results[3].content.startswith("loopwatch blocked this call")
    assert results[4].content.startswith("loopwatch stopped the run")
    assert isinstance(out[-1], AIMessage) and out[-1].content.startswith(
        "loopwatch stopped the run: the same run_tests call"
    )
    assert not out[-1].tool_calls
    assert_protocol_intact(out)
    assert middleware.guard.stopped is None  # the run's own guard stopped, not the settings


def test_after_a_block_the_conversation_continues():
    script = (
        calls("run_tests", {"path": "tests"}, 4)
        + calls("read_file", {"path": "cart.py"}, 1, start=4)
        + [AIMessage(content="The total is computed before the discount; here is the fix.")]
    )
    middleware = LoopwatchMiddleware(**GUARD)
    out = agent_for(script, [middleware]).invoke({"messages": [HumanMessage("make the tests pass")]})["messages"]
    assert [m.status for m in tool_messages(out)] == ["success", "success", "success", "error", "success"]
    assert ran == ["tests", "tests", "tests", "cart.py"]
    assert out[-1].content.startswith("The total is computed")
    assert_protocol_intact(out)
    assert middleware.guard.stopped is None


def test_a_stopped_conversation_can_be_resumed_by_the_user():
    middleware = LoopwatchMiddleware(**GUARD)
    script = calls("run_tests", {"path": "tests"}, 5) + [AIMessage(content="Sorry: I will read the code first.")]
    agent = agent_for(script, [middleware])
    first = agent.invoke({"messages": [HumanMessage("make the tests pass")]})["messages"]
    assert first[-1].content.startswith("loopwatch stopped the run")
    second = agent.invoke({"messages": [*first, HumanMessage("read the code before testing again")]})["messages"]
    assert second[-1].content == "Sorry: I will read the code first."
    assert_protocol_intact(second)


def test_healthy_agent_runs_untouched():
    script = [
        *calls("read_file", {"path": "cart.py"}, 1),
        *calls("run_tests", {"path": "tests"}, 1, start=1),
        *calls("read_file", {"path": "discount.py"}, 1, start=2),
        *calls("run_tests", {"path": "tests/test_cart.py"}, 1, start=3),
        AIMessage(content="Done."),
    ]
    plain = agent_for(list(script)).invoke({"messages": [HumanMessage("go")]})["messages"]
    guarded = agent_for(list(script), [LoopwatchMiddleware(**GUARD)]).invoke({"messages": [HumanMessage("go")]})[
        "messages"
    ]
    strip = [(type(m).__name__, m.content, getattr(m, "status", None)) for m in plain]
    assert [(type(m).__name__, m.content, getattr(m, "status", None)) for m in guarded] == strip


def test_async_agent_is_guarded_the_same_way():
    middleware = LoopwatchMiddleware(**GUARD)
    agent = agent_for(calls("run_tests", {"path": "tests"}, 10), [middleware])
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("make the tests pass")]}))["messages"]
    assert [m.status for m in tool_messages(out)] == ["success", "success", "success", "error", "error"]
    assert out[-1].content.startswith("loopwatch stopped the run")
    assert_protocol_intact(out)


def test_parallel_identical_calls_are_each_answered():
    batch = [
        AIMessage(
            content="",
            tool_calls=[{"name": "run_tests", "args": {"path": "tests"}, "id": f"b{j}_{i}"} for i in range(3)],
        )
        for j in range(3)
    ]
    out = agent_for(batch, [LoopwatchMiddleware(**GUARD)]).invoke({"messages": [HumanMessage("go")]})["messages"]
    assert_protocol_intact(out)
    assert out[-1].content.startswith("loopwatch stopped the run")


def test_callback_handler_only_watches():
    handler = LoopwatchCallbackHandler(**GUARD)
    script = calls("run_tests", {"path": "tests"}, 6) + [AIMessage(content="Giving up.")]
    out = agent_for(script).invoke({"messages": [HumanMessage("go")]}, config={"callbacks": [handler]})["messages"]
    assert len(ran) == 6  # nothing was blocked
    assert all(m.status == "success" and "loopwatch" not in m.content for m in tool_messages(out))
    assert [d.action for d in handler.findings] == [Action.NUDGE, Action.NUDGE, Action.STOP, Action.STOP]
    assert all(d.message is None for d in handler.findings)  # nothing quoting the call is kept
    assert handler.stopped and "same run_tests call" in handler.stopped


def test_callback_handler_sees_a_healthy_run_as_healthy():
    events = []  # the guard's clock is read once per event it is told of
    handler = LoopwatchCallbackHandler(clock=lambda: events.append(1) or float(len(events)), **GUARD)
    script = (
        calls("read_file", {"path": "a.py"}, 1)
        + calls("run_tests", {"path": "tests"}, 1, start=1)
        + [AIMessage(content="ok")]
    )
    agent_for(script).invoke({"messages": [HumanMessage("go")]}, config={"callbacks": [handler]})
    assert handler.findings == [] and handler.stopped is None
    assert len(events) == 2 + 3 + 1  # two tool calls, three model turns, one text
    assert handler.guard.live_runs == 0  # the run is over: forgotten


# -- several runs at once -------------------------------------------------------------------


class ScriptedChat(GenericFakeChatModel):
    """LangChain's fake chat model, answering each conversation from its own first
    message: "test ..." runs the tests for ever; "read ..." reads 12 files, then answers."""

    messages: object = None

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        from langchain_core.outputs import ChatGeneration, ChatResult

        time.sleep(0.002)  # a model takes its time: the runs beside this one go on meanwhile
        n = sum(len(m.tool_calls) for m in messages if isinstance(m, AIMessage))
        if str(messages[0].content).startswith("test"):
            reply = AIMessage(content="", tool_calls=[{"name": "run_tests", "args": {"path": "tests"}, "id": f"t{n}"}])
        elif n >= 12:
            reply = AIMessage(content="read them all")
        else:
            reply = AIMessage(
                content="", tool_calls=[{"name": "read_file", "args": {"path": f"m{n}.py"}, "id": f"r{n}"}]
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


def shared_agent(middleware):
    return create_agent(ScriptedChat(), [run_tests, read_file], middleware=middleware)


def loop_and_healthy(loopers: int):
    return [{"messages": [HumanMessage("test the cart")]} for _ in range(loopers)] + [
        {"messages": [HumanMessage("read the sources")]}
    ]


def check_runs(results, loopers: int):
    *looping, healthy = results
    for out in looping:
        assert out["messages"][-1].content.startswith("loopwatch stopped the run: the same run_tests call")
        assert_protocol_intact(out["messages"])
    assert ran.count("tests") == 3 * loopers  # as when each runs alone: nudged, blocked, stopped
    assert healthy["messages"][-1].content == "read them all"
    assert not any("loopwatch" in m.content for m in tool_messages(healthy["messages"]))
    assert len([p for p in ran if p.startswith("m")]) == 12


@pytest.mark.parametrize("loopers", [1, 3])
def test_concurrent_runs_are_each_watched_on_their_own(loopers):
    middleware = LoopwatchMiddleware(**GUARD)
    results = shared_agent([middleware]).batch(
        loop_and_healthy(loopers), config={"max_concurrency": loopers + 1, "recursion_limit": 100}
    )
    check_runs(results, loopers)
    assert middleware.guard.live_runs == 0


def test_concurrent_async_runs_are_each_watched_on_their_own():
    agent = shared_agent([LoopwatchMiddleware(**GUARD)])
    check_runs(asyncio.run(agent.abatch(loop_and_healthy(2), config={"recursion_limit": 100})), 2)


def test_callback_handler_watches_concurrent_runs_on_their_own():
    handler = LoopwatchCallbackHandler(**GUARD)
    config = {"callbacks": [handler], "recursion_limit": 40, "max_concurrency": 3}
    *looping, healthy = shared_agent([]).batch(loop_and_healthy(2), config=config, return_exceptions=True)
    assert healthy["messages"][-1].content == "read them all"
    assert all(isinstance(out, Exception) for out in looping)  # nothing stopped them: the handler only watches
    assert Action.STOP in [d.action for d in handler.findings]
    # Each run's streak is its own: the longest is one run's calls, not both runs' together.
    streaks = [int(re.search(r"(\d+) times", d.reason).group(1)) for d in handler.findings]
    assert max(streaks) == ran.count("tests") // 2
    assert handler.stopped.startswith("the same run_tests call")
    assert handler.guard.live_runs == 0  # all three runs are over, even those that failed
