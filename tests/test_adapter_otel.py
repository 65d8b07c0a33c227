"""OpenTelemetry: the span processor on the SDK's in-memory exporter, fed by a real
instrumented framework (pydantic-ai's own `Instrumentation`, driven by its
`FunctionModel`) and by spans written to the GenAI conventions by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from core_support import OFF
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from loopwatch import Action
from loopwatch.adapters.otel import LoopwatchSpanProcessor

GUARD = {"profile": "attended", "stop": True, "signals": {**OFF, "repeat": {"threshold": 3}}, "env": {}}


def traced(**kwargs):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    processor = LoopwatchSpanProcessor(**{**GUARD, **kwargs})
    provider.add_span_processor(processor)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, processor, exporter


def tool_span(tracer, name, arguments=None, result=None, *, error=False, call_id=None):
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = arguments
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
        if result is not None:
            span.set_attribute("gen_ai.tool.call.result", result)
        if error:
            span.set_status(Status(StatusCode.ERROR, "exit status 1"))


def agent_span(exporter):
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    return span


def findings_on(span):
    return [dict(e.attributes) for e in span.events if e.name == "loopwatch.core.finding"]


def test_pydantic_ai_instrumented_loop_is_found_on_the_agent_span():
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    provider, processor, exporter = traced()

    def respond(messages, info):
        n = sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)
        if n >= 5:
            return ModelResponse(parts=[TextPart("giving up")])
        return ModelResponse(parts=[ToolCallPart("run_tests", {"path": "tests"}, tool_call_id=f"call_{n}")])

    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = pydantic_ai.Agent(FunctionModel(respond), capabilities=[Instrumentation(settings=settings)])

    @agent.tool_plain
    def run_tests(path: str) -> str:
        """Run the tests."""
        return "FAILED tests/test_cart.py::test_total"

    assert agent.run_sync("make the tests pass").output == "giving up"  # observe-only: the run is untouched
    root = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert len(root) == 1
    events = findings_on(root[0])
    assert [e["loopwatch.action"] for e in events] == ["nudge", "block", "stop"]
    assert {e["loopwatch.tool.name"] for e in events} == {"run_tests"}
    assert events[0]["loopwatch.description"].startswith(
        "the same run_tests call returned the same result 3 times in a row"
    )
    tool_ids = {
        f"{s.context.span_id:016x}" for s in exporter.get_finished_spans() if s.name == "execute_tool run_tests"
    }
    assert {e["loopwatch.tool.span_id"] for e in events} <= tool_ids
    # The agent span names the strongest finding, the first of its kind: where the run would have ended.
    assert root[0].attributes["loopwatch.action"] == "stop"
    assert root[0].attributes["loopwatch.description"] == events[2]["loopwatch.description"]
    assert [f.decision.verdict.action for f in processor.findings] == [Action.NUDGE, Action.BLOCK, Action.STOP]
    for event in events:  # nothing of the inputs or results
        assert "path" not in event["loopwatch.description"] and "FAILED" not in event["loopwatch.description"]


def test_hand_written_genai_spans():
    provider, _processor, exporter = traced()
    tracer = provider.get_tracer("my-agent")
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for i in range(6):
            tool_span(tracer, "bash", '{"command": "make"}', "make: *** [all] Error 2", error=True, call_id=f"c{i}")
    events = findings_on(agent_span(exporter))
    assert [e["loopwatch.action"] for e in events] == ["nudge", "block", "stop", "stop"]
    # The strongest finding, the first of its kind: where the run would have ended.
    assert agent_span(exporter).attributes["loopwatch.action"] == "stop"
    assert (
        agent_span(exporter)
        .attributes["loopwatch.description"]
        .startswith("the same bash call returned the same result 5 times")
    )


def test_healthy_trace_is_left_alone():
    provider, processor, exporter = traced()
    tracer = provider.get_tracer("my-agent")
    with tracer.start_as_current_span("invoke_agent"):
        for i, command in enumerate(["ls", "cat a.py", "pytest", "git diff", "pytest -k cart"]):
            tool_span(tracer, "bash", f'{{"command": "{command}"}}', f"output {i}")
    assert processor.findings == []
    assert all(
        not findings_on(s) and not any(k.startswith("loopwatch") for k in s.attributes)
        for s in exporter.get_finished_spans()
    )


def test_without_recorded_content_calls_are_not_guessed_alike():
    provider, processor, _exporter = traced()
    tracer = provider.get_tracer("my-agent")
    with tracer.start_as_current_span("invoke_agent"):
        for _ in range(6):
            tool_span(tracer, "search")  # no arguments, no result: different searches, for all we know
        for _ in range(6):
            tool_span(tracer, "status", '{"job": 1}')  # a poll whose answers were not recorded
    assert processor.findings == []


def test_each_trace_is_its_own_session():
    provider, processor, _exporter = traced()
    tracer = provider.get_tracer("my-agent")
    for _ in range(4):  # the same call, once in each of four separate runs
        with tracer.start_as_current_span("invoke_agent"):
            tool_span(tracer, "bash", '{"command": "make"}', "Error 2")
    assert processor.findings == []


def test_model_turns_and_text_are_read_from_chat_spans():
    provider, _processor, exporter = traced(signals={**OFF, "chanting": {"repeats": 3}}, profile="unattended")
    tracer = provider.get_tracer("my-agent")
    chant = "Let me look at the configuration file once more. " * 6
    messages = f'[{{"role": "assistant", "parts": [{{"type": "text", "content": "{chant}"}}]}}]'
    chat = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": messages}
    with tracer.start_as_current_span("invoke_agent"), tracer.start_as_current_span("chat", attributes=chat):
        pass
    assert [e["loopwatch.signal"] for e in findings_on(agent_span(exporter))][:1] == ["chanting"]


def test_odd_attributes_never_break_the_traced_program():
    provider, _processor, exporter = traced()
    tracer = provider.get_tracer("my-agent")
    with tracer.start_as_current_span("invoke_agent"):
        tool_span(tracer, "bash", "{not json", "x")
        tool_span(tracer, "bash", "[1, 2]", "")
        with tracer.start_as_current_span(
            "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[{]"}
        ):
            pass
        with tracer.start_as_current_span("execute_tool", attributes={"gen_ai.operation.name": "execute_tool"}):
            pass
    assert len(exporter.get_finished_spans()) == 5
