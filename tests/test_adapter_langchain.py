"""LangChain v1: the middleware and the callback handler against a real `create_agent`
loop, driven by LangChain's own fake chat model (no network)."""

from __future__ import annotations

import asyncio

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
    out = agent.invoke({"messages": [HumanMessage("make the tests pass")]})["messages"]
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
    assert middleware.guard.stopped


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
    assert middleware.guard.stopped
    second = agent.invoke({"messages": [*first, HumanMessage("read the code before testing again")]})["messages"]
    assert second[-1].content == "Sorry: I will read the code first."
    assert middleware.guard.stopped is None
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
    handler = LoopwatchCallbackHandler(**GUARD)
    script = (
        calls("read_file", {"path": "a.py"}, 1)
        + calls("run_tests", {"path": "tests"}, 1, start=1)
        + [AIMessage(content="ok")]
    )
    agent_for(script).invoke({"messages": [HumanMessage("go")]}, config={"callbacks": [handler]})
    assert handler.findings == [] and handler.guard.monitor.actions == 2
