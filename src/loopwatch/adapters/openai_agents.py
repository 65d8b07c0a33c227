"""OpenAI Agents SDK: tool guardrails on every function tool of an agent, and run hooks.

    from agents import Agent, Runner
    from loopwatch import Guard
    from loopwatch.adapters.openai_agents import TRIPWIRES, LoopwatchHooks, guard_tools, stop_reason

    guard = Guard(profile="attended", stop=True)
    agent = guard_tools(Agent(name="fixer", tools=[run_tests, read_file]), guard)
    try:
        result = await Runner.run(agent, "make the tests pass", hooks=LoopwatchHooks(guard))
    except TRIPWIRES as exc:
        print(stop_reason(exc))

It speaks the SDK's own protocol:

- block: the tool's input guardrail rejects the call (`reject_content`): the tool does
  not run, and the model gets the reason as the call's output;
- nudge: the tool's output guardrail hands the model the real output followed by the
  nudge;
- stop: the guardrail trips (`raise_exception`), so the run ends with the SDK's
  `ToolInputGuardrailTripwireTriggered` (or `ToolOutputGuardrailTripwireTriggered`
  when the call that tipped it had already run); `stop_reason(exc)` says why.

`guard_tools` returns a clone of the agent with copies of its function tools (the
originals are left alone, so an agent shared with other runs is unchanged), and does
the same to every agent it can hand off to, so a handoff does not escape the guard.
Hosted tools get no guardrails from the SDK and are not wrapped.

One guard serves every run: each run (the SDK's run context, one per `Runner.run`)
gets guards of its own, one per agent in it, made with the guard's settings and
released when the run's context is gone; the guard itself watches no run. So one
guarded agent serves concurrent requests without mixing their calls.

`LoopwatchHooks` counts model turns and text and, on its own (tools not wrapped),
observes tool calls without changing anything.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import weakref
from typing import Any

try:
    from agents import Agent, FunctionTool, Handoff, RunHooks
    from agents.exceptions import (
        ToolInputGuardrailTripwireTriggered,
        ToolOutputGuardrailTripwireTriggered,
    )
    from agents.tool_guardrails import (
        ToolGuardrailFunctionOutput,
        ToolInputGuardrail,
        ToolInputGuardrailData,
        ToolOutputGuardrail,
        ToolOutputGuardrailData,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "loopwatch.adapters.openai_agents needs the OpenAI Agents SDK: pip install 'loopwatch[openai-agents]'"
    ) from exc

from .._core.verdict import Action
from .._guard import Decision, Guard

__all__ = ["TRIPWIRES", "LoopwatchHooks", "guard_tools", "stop_reason"]

_NAME = "loopwatch"

#: The SDK's exceptions a loopwatch stop ends a run with: `except TRIPWIRES as exc:`.
TRIPWIRES = (ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered)


def _arguments(raw: Any) -> Any:
    """The call's arguments as JSON, as the model wrote them (a string if not JSON)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw
    return raw


def _run_guard(guard: Guard, context: Any, agent: Any) -> Guard:
    """`guard`'s guard for this run and agent. The run's usage record is the one object
    the SDK keeps for exactly one run and shares with every tool and hook context of it."""
    run = getattr(context, "usage", None)
    if run is None:
        return guard.fresh()  # no run to key by: judged alone
    return guard.for_run(id(run), getattr(agent, "name", None), lifetime=run)


def _info(decision: Decision) -> dict[str, Any]:
    # What `stop_reason` and `output_info` readers see: for a person, never the input.
    return {"loopwatch": decision.action.value, "signal": decision.verdict.signal, "reason": decision.reason}


class _Guardrails:
    """The input and output guardrails of one guard, shared by all the tools it wraps."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.input: ToolInputGuardrail[Any] = ToolInputGuardrail(self._before, name=_NAME)
        self.output: ToolOutputGuardrail[Any] = ToolOutputGuardrail(self._after, name=_NAME)

    def _before(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        decision = _run_guard(self.guard, ctx, data.agent).before_call(
            ctx.tool_name, _arguments(ctx.tool_arguments), call_id=ctx.tool_call_id
        )
        if decision.action is Action.STOP:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=_info(decision))
        if decision.blocks:
            return ToolGuardrailFunctionOutput.reject_content(decision.tool_result or "", output_info=_info(decision))
        return ToolGuardrailFunctionOutput.allow()

    def _after(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        decision = _run_guard(self.guard, ctx, data.agent).after_call(
            ctx.tool_name, _arguments(ctx.tool_arguments), data.output, call_id=ctx.tool_call_id
        )
        if decision.action is Action.STOP:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=_info(decision))
        if decision.action is Action.NUDGE and decision.message:
            return ToolGuardrailFunctionOutput.reject_content(
                f"{data.output}\n\n{decision.message}", output_info=_info(decision)
            )
        return ToolGuardrailFunctionOutput.allow()


# A guard's guardrails, so its tools are wrapped once (kept only while the guard lives).
_GUARDRAILS: weakref.WeakKeyDictionary[Guard, _Guardrails] = weakref.WeakKeyDictionary()


def _guardrails(guard: Guard) -> _Guardrails:
    found = _GUARDRAILS.get(guard)
    if found is None:
        found = _GUARDRAILS[guard] = _Guardrails(guard)
    return found


def guard_tools(agent: Agent[Any], guard: Guard) -> Agent[Any]:
    """A clone of `agent` whose function tools carry `guard`'s input and output
    guardrails (after any of their own), as do those of every agent it can hand off
    to. Wrapping twice with one guard adds nothing."""
    if not guard.serves_runs:
        guard.fresh()  # raises, saying why
    return _guard_agent(agent, _guardrails(guard), {})


def _guard_agent(agent: Agent[Any], rails: _Guardrails, done: dict[int, Agent[Any]]) -> Agent[Any]:
    found = done.get(id(agent))
    if found is not None:
        return found  # handoffs that lead back: one clone each
    tools = []
    for tool in agent.tools:
        if isinstance(tool, FunctionTool):
            inputs = list(tool.tool_input_guardrails or [])
            outputs = list(tool.tool_output_guardrails or [])
            if rails.input not in inputs:
                inputs.append(rails.input)
            if rails.output not in outputs:
                outputs.append(rails.output)
            tool = dataclasses.replace(tool, tool_input_guardrails=inputs, tool_output_guardrails=outputs)
        tools.append(tool)
    clone = done[id(agent)] = agent.clone(tools=tools)
    clone.handoffs = [_guard_handoff(target, rails, done) for target in agent.handoffs]
    return clone


def _guard_handoff(target: Any, rails: _Guardrails, done: dict[int, Agent[Any]]) -> Any:
    if isinstance(target, Agent):
        return _guard_agent(target, rails, done)
    if not isinstance(target, Handoff):
        return target
    # A `handoff(...)` names its agent only through the function that returns it.
    invoke = target.on_invoke_handoff

    async def guarded(context: Any, arguments: str) -> Any:
        reached = await invoke(context, arguments)
        return _guard_agent(reached, rails, {}) if isinstance(reached, Agent) else reached

    wrapped = copy.copy(target)
    wrapped.on_invoke_handoff = guarded
    return wrapped


def stop_reason(exc: BaseException) -> str | None:
    """Why loopwatch stopped the run, if `exc` is its tripped guardrail; else None."""
    if isinstance(exc, TRIPWIRES):
        info = exc.output.output_info
        if isinstance(info, dict) and info.get("loopwatch") == "stop":
            return info.get("reason") or "the run kept going in circles"
    return None


class LoopwatchHooks(RunHooks[Any]):
    """Run hooks: model turns and text, and (for tools `guard_tools` did not wrap)
    observation of tool calls, each run and agent on its own. `findings` keeps, in
    order, the decisions the hooks took (without messages)."""

    def __init__(self, guard: Guard) -> None:
        if not guard.serves_runs:
            guard.fresh()  # raises, saying why
        self.guard = guard
        self.findings: list[Decision] = []

    def _wrapped(self, tool: Any) -> bool:
        rails = _GUARDRAILS.get(self.guard)
        return rails is not None and rails.input in (getattr(tool, "tool_input_guardrails", None) or [])

    def _note(self, decision: Decision) -> None:
        if decision.action is not Action.ALLOW and len(self.findings) < 100:
            self.findings.append(decision._replace(message=None))

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        guard = _run_guard(self.guard, context, agent)
        for item in getattr(response, "output", None) or []:
            if getattr(item, "type", None) == "message":
                text = "".join(getattr(part, "text", "") or "" for part in getattr(item, "content", None) or [])
                if text:
                    self._note(guard.text(text))
        tokens = getattr(getattr(response, "usage", None), "total_tokens", None)
        self._note(guard.turn(tokens=tokens if isinstance(tokens, int) and tokens > 0 else None))

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        if self._wrapped(tool) or not hasattr(context, "tool_name"):
            return  # the output guardrail counted it (or it is no function call)
        self._note(
            _run_guard(self.guard, context, agent).after_call(
                context.tool_name, _arguments(context.tool_arguments), result, call_id=context.tool_call_id
            )
        )
