"""LangChain v1: an `AgentMiddleware` that nudges, blocks and stops, and a callback
handler that only watches.

    from langchain.agents import create_agent
    from loopwatch.adapters.langchain import LoopwatchMiddleware

    agent = create_agent(model, tools, middleware=[LoopwatchMiddleware(profile="attended", stop=True)])

The middleware speaks the agent loop's own protocol:

- block: the tool is not run; its call gets a `ToolMessage(status="error")` carrying
  the reason, so the message history stays valid and the model carries on;
- nudge: the message is appended to the tool's own `ToolMessage`;
- stop: the call that tipped it gets its `ToolMessage`, then the next model step
  jumps to the end of the loop (the middleware's `jump_to: "end"`) with a closing
  `AIMessage` saying why; a stop found in the model's own text also answers any tool
  calls it left pending, so none dangles.

Each `invoke` starts with a new user message, so streaks start again and a stop is
lifted (`before_agent`). One middleware instance watches one agent; give concurrent
conversations their own.

`LoopwatchCallbackHandler` (pass it in `config={"callbacks": [...]}`) observes tool
calls and model turns and records what loopwatch would have done in `findings`;
it never changes the run. Use the middleware or the handler on one agent, not both
(each would count every call).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

try:
    from langchain.agents.middleware import AgentMiddleware, hook_config
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage, ToolMessage
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("loopwatch.adapters.langchain needs LangChain v1: pip install 'loopwatch[langchain]'") from exc

from ..core.verdict import Action
from ..guard import Decision, Guard

__all__ = ["LoopwatchCallbackHandler", "LoopwatchMiddleware"]

_MAX_FINDINGS = 100  # kept in order by the observe-only handler; later ones are only counted
_MAX_RUNNING = 256  # tool calls started and not yet ended; far above any parallel batch


def _guard(guard: Guard | None, kwargs: dict[str, Any]) -> Guard:
    if guard is not None:
        if kwargs:
            raise TypeError("pass a guard or its configuration, not both")
        return guard
    return Guard(**kwargs)


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def _with_nudge(message: ToolMessage, nudge: str) -> ToolMessage:
    content = message.content
    if isinstance(content, list):
        content = [*content, {"type": "text", "text": nudge}]
    else:
        content = f"{content}\n\n{nudge}" if content else nudge
    return message.model_copy(update={"content": content})


def _tokens(message: Any) -> int | None:
    usage = getattr(message, "usage_metadata", None)
    if isinstance(usage, dict) and isinstance(usage.get("total_tokens"), int):
        return usage["total_tokens"]
    return None


class LoopwatchMiddleware(AgentMiddleware):
    """Guards a LangChain v1 agent. See the module docstring.

    `guard` is used as given; otherwise keyword arguments build one
    (`LoopwatchMiddleware(profile="attended", stop=True, keys={...})`)."""

    def __init__(self, guard: Guard | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.guard = _guard(guard, kwargs)

    # -- the agent loop ----------------------------------------------------------------------

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self.guard.user()
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if self.guard.stopped is None:
            return None
        return {"jump_to": "end", "messages": [AIMessage(content=f"loopwatch stopped the run: {self.guard.stopped}")]}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage):
            return None
        decision = Decision()
        text = _text(last.content)
        if text:
            decision = self.guard.text(text)
        turn = self.guard.turn(tokens=_tokens(last))
        if turn.action.rank > decision.action.rank:
            decision = turn
        if decision.action is not Action.STOP:
            return None  # a nudge on text alone has no tool result to ride on; the person is told by `reason`
        # Stopping here skips the tools: answer every pending call, then end.
        answers: list[Any] = [
            ToolMessage(content=decision.message or "", tool_call_id=call["id"], name=call.get("name"), status="error")
            for call in last.tool_calls
        ]
        answers.append(AIMessage(content=f"loopwatch stopped the run: {self.guard.stopped}"))
        return {"jump_to": "end", "messages": answers}

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    # -- tool calls --------------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        refused = self._before(call)
        if refused is not None:
            return refused
        try:
            result = handler(request)
        except Exception as exc:
            self.guard.after_call(call["name"], call.get("args"), str(exc), error=True, call_id=call.get("id"))
            raise
        return self._after(call, result)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call = request.tool_call
        refused = self._before(call)
        if refused is not None:
            return refused
        try:
            result = await handler(request)
        except Exception as exc:
            self.guard.after_call(call["name"], call.get("args"), str(exc), error=True, call_id=call.get("id"))
            raise
        return self._after(call, result)

    def _before(self, call: dict[str, Any]) -> ToolMessage | None:
        decision = self.guard.before_call(call["name"], call.get("args"), call_id=call.get("id"))
        if not decision.blocks:
            return None
        return ToolMessage(
            content=decision.tool_result or "", tool_call_id=call["id"], name=call["name"], status="error"
        )

    def _after(self, call: dict[str, Any], result: Any) -> Any:
        if isinstance(result, ToolMessage):
            decision = self.guard.after_call(
                call["name"],
                call.get("args"),
                _text(result.content),
                error=result.status == "error",
                call_id=call.get("id"),
            )
            if decision.message and decision.action in (Action.NUDGE, Action.STOP):
                return _with_nudge(result, decision.message)
            return result
        # A `Command` (a tool that updates state itself): counted, its result unread.
        self.guard.after_call(call["name"], call.get("args"), None, call_id=call.get("id"))
        return result


class LoopwatchCallbackHandler(BaseCallbackHandler):
    """Observe-only: counts tool calls and model turns, and keeps in `findings` the
    decisions loopwatch would have taken (nudge, block, stop), in order. `on_finding`
    is called with each; if it raises it is not called again. `stopped` is the reason
    the run would have been stopped."""

    raise_error = False

    def __init__(
        self, guard: Guard | None = None, *, on_finding: Callable[[Decision], object] | None = None, **kwargs: Any
    ) -> None:
        super().__init__()
        self.guard = _guard(guard, kwargs)
        self.on_finding = on_finding
        self.findings: list[Decision] = []
        self.findings_total = 0
        self._running: dict[Any, tuple[str, Any, str | None]] = {}

    @property
    def stopped(self) -> str | None:
        return self.guard.stopped

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: Any,
        inputs: dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._running[run_id] = (str(name), inputs if inputs is not None else input_str, tool_call_id)
        if len(self._running) > _MAX_RUNNING:  # a tool that never reported its end
            self._running.pop(next(iter(self._running)))

    def on_tool_end(self, output: Any, *, run_id: Any, **kwargs: Any) -> None:
        started = self._running.pop(run_id, None)
        if started is None:
            return
        name, value, call_id = started
        error = getattr(output, "status", None) == "error"
        result = _text(output.content) if isinstance(output, ToolMessage) else output
        self._note(self.guard.after_call(name, value, result, error=error, call_id=call_id))

    def on_tool_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        started = self._running.pop(run_id, None)
        if started is None:
            return
        name, value, call_id = started
        self._note(self.guard.after_call(name, value, str(error), error=True, call_id=call_id))

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        for generations in getattr(response, "generations", None) or []:
            for generation in generations:
                message = getattr(generation, "message", None)
                text = _text(message.content) if message is not None else getattr(generation, "text", "")
                if text:
                    self._note(self.guard.text(text))
        self._note(self.guard.turn())

    def _note(self, decision: Decision) -> None:
        if decision.action is Action.ALLOW:
            return
        self.findings_total += 1
        if len(self.findings) < _MAX_FINDINGS:
            self.findings.append(decision._replace(message=None))  # it may quote the call: not ours to keep
        if self.on_finding is not None:
            try:
                self.on_finding(decision)
            except Exception:  # noqa: BLE001 - a broken callback must not break the agent
                self.on_finding = None
