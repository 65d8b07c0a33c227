"""pydantic-ai: a capability that wraps every tool execution of an agent.

    from pydantic_ai import Agent
    from loopwatch.adapters.pydantic_ai import Loopwatch, LoopStopped

    agent = Agent(model, tools=[...], capabilities=[Loopwatch(profile="attended", stop=True)])
    try:
        result = agent.run_sync("make the tests pass")
    except LoopStopped as stop:
        print(stop.reason)

It uses the capability hooks of the current release (`for_run`, `wrap_tool_execute`,
`after_model_request`):

- block: the tool is not run; pydantic-ai's own `ToolFailed` hands the model a failed
  tool result carrying the reason (no retry budget spent, no dangling call);
- nudge: appended to the tool's result when it is text, otherwise sent as the result's
  companion (`{"result": ..., "loopwatch": message}`);
- stop: `LoopStopped` is raised out of the run, with the reason.

Each run gets its own guard (pydantic-ai's `for_run`: a capability instance per run),
so one agent serves concurrent runs (`asyncio.gather`, a server) without mixing their
calls, a sub-agent run from a tool is watched on its own, and a finished run's state
goes with it. A guard passed in gives its settings to each run's guard; it watches no
run itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

try:
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.messages import TextPart
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("loopwatch.adapters.pydantic_ai needs pydantic-ai: pip install 'loopwatch[pydantic-ai]'") from exc

from .._core.messages import Blocked
from .._core.verdict import Action
from .._guard import Decision, Guard
from . import LoopStopped

__all__ = ["LoopStopped", "Loopwatch"]


@dataclass(init=False)
class Loopwatch(AbstractCapability[Any]):
    """Guards a pydantic-ai agent. `guard` is used as given; otherwise keyword
    arguments build one (`Loopwatch(profile="attended", stop=True, keys={...})`)."""

    guard: Guard = field(repr=False)

    def __init__(self, guard: Guard | None = None, **kwargs: Any) -> None:
        if guard is not None and kwargs:
            raise TypeError("pass a guard or its configuration, not both")
        guard = guard if guard is not None else Guard(**kwargs)
        if not guard.serves_runs:
            guard.fresh()  # raises, saying why
        self.guard = guard

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # built in code only: a spec file must not be able to configure the guard away

    async def for_run(self, ctx: Any) -> Loopwatch:
        return Loopwatch(self.guard.fresh())

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        text = "".join(part.content for part in getattr(response, "parts", ()) if isinstance(part, TextPart))
        decision = self.guard.text(text) if text else Decision()
        usage = getattr(response, "usage", None)
        tokens = getattr(usage, "total_tokens", None)
        turn = self.guard.turn(tokens=tokens if isinstance(tokens, int) else None)
        for found in (decision, turn):
            if found.action is Action.STOP:
                raise LoopStopped(self.guard.stopped or found.reason or "", found)
        return response

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        name, call_id = call.tool_name, call.tool_call_id
        value = args if isinstance(args, dict) else call.args_as_dict()
        before = self.guard.before_call(name, value, call_id=call_id)
        if before.action is Action.STOP:
            raise LoopStopped(self.guard.stopped or before.reason or "", before)
        if before.blocks:
            raise ToolFailed(before.tool_result or Blocked.head)
        try:
            result = await handler(args)
        except ToolFailed as exc:
            after = self.guard.after_call(name, value, exc.message, error=True, call_id=call_id)
            if after.action is Action.STOP:
                raise LoopStopped(self.guard.stopped or after.reason or "", after) from exc
            if after.message:
                raise ToolFailed(f"{exc.message}\n\n{after.message}") from exc
            raise
        except Exception as exc:
            self.guard.after_call(name, value, str(exc), error=True, call_id=call_id)
            raise
        after = self.guard.after_call(name, value, result, call_id=call_id)
        if after.action is Action.STOP:
            raise LoopStopped(self.guard.stopped or after.reason or "", after)
        if after.action is Action.NUDGE and after.message:
            if isinstance(result, str):
                return f"{result}\n\n{after.message}"
            return {"result": result, "loopwatch": after.message}
        return result
