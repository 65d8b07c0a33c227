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

Each run (an `invoke`, `batch` item or `stream`) gets its own guard, kept in the agent
state of that run (a private, never checkpointed field, as LangChain's own run-scoped
middleware keeps its counts), so one agent serves concurrent requests without mixing
their calls, a sub-agent is watched on its own, and a run's guard goes with the run.
A run resumed mid-way (after an interrupt) uses its thread's guard (`thread_id`).

`LoopwatchCallbackHandler` (pass it in `config={"callbacks": [...]}`) observes tool
calls and model turns and records what loopwatch would have done in `findings`;
it never changes the run. It watches each top-level run (LangChain's `run_id`) on its
own, and forgets it when it ends. Use the middleware or the handler on one agent,
not both (each would count every call).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
    from langchain.agents.middleware.types import PrivateStateAttr
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.channels.untracked_value import UntrackedValue
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("loopwatch.adapters.langchain needs LangChain v1: pip install 'loopwatch[langchain]'") from exc

from .._core.messages import Stopped
from .._core.verdict import Action
from .._guard import Decision, Guard

__all__ = ["LoopwatchCallbackHandler", "LoopwatchMiddleware"]

_MAX_FINDINGS = 100  # kept in order by the observe-only handler; later ones are only counted
_MAX_RUNNING = 256  # tool calls started and not yet ended; far above any parallel batch


_RUN = "loopwatch_guard"  # the agent state field holding the run's guard


def _guard(guard: Guard | None, kwargs: dict[str, Any]) -> Guard:
    if guard is not None:
        if kwargs:
            raise TypeError("pass a guard or its configuration, not both")
    else:
        guard = Guard(**kwargs)
    if not guard.serves_runs:
        guard.fresh()  # raises, saying why
    return guard


class LoopwatchState(AgentState[Any]):
    """The agent state with the run's guard: never checkpointed, never in the input
    or output (a new one each run)."""

    loopwatch_guard: NotRequired[Annotated[Any, UntrackedValue, PrivateStateAttr]]


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
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    if isinstance(total, int):
        return total
    return None


def _state_guard(state: Any) -> Guard | None:
    found = state.get(_RUN) if isinstance(state, dict) else getattr(state, _RUN, None)
    return found if isinstance(found, Guard) else None


class LoopwatchMiddleware(AgentMiddleware[LoopwatchState, Any]):
    """Guards a LangChain v1 agent. See the module docstring.

    `guard` gives the settings of each run's guard; otherwise keyword arguments do
    (`LoopwatchMiddleware(profile="attended", stop=True, keys={...})`)."""

    state_schema = LoopwatchState

    def __init__(self, guard: Guard | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.guard = _guard(guard, kwargs)

    def _run(self, state: Any, runtime: Any) -> Guard:
        """This run's guard: from its state, else (a run resumed past `before_agent`)
        its thread's."""
        found = _state_guard(state)
        if found is not None:
            return found
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if thread is None:
            config = getattr(runtime, "config", None) or {}
            thread = (config.get("configurable") or {}).get("thread_id")
        return self.guard.for_run(("thread", thread)) if thread is not None else self.guard.fresh()

    # -- the agent loop ----------------------------------------------------------------------

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {_RUN: self.guard.fresh()}  # a new user message: a run of its own

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        guard = self._run(state, runtime)
        if guard.stopped is None:
            return None
        return {"jump_to": "end", "messages": [AIMessage(content=Stopped(guard.stopped or "").for_person())]}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage):
            return None
        guard = self._run(state, runtime)
        decision = Decision()
        text = _text(last.content)
        if text:
            decision = guard.text(text)
        turn = guard.turn(tokens=_tokens(last))
        if turn.action.rank > decision.action.rank:
            decision = turn
        if decision.action is not Action.STOP:
            return None  # a nudge on text alone has no tool result to ride on; the person is told by `reason`
        # Stopping here skips the tools: answer every pending call, then end.
        answers: list[Any] = [
            ToolMessage(content=decision.message or "", tool_call_id=call["id"], name=call.get("name"), status="error")
            for call in last.tool_calls
        ]
        answers.append(AIMessage(content=Stopped(guard.stopped or "").for_person()))
        return {"jump_to": "end", "messages": answers}

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    # -- tool calls --------------------------------------------------------------------------

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        call, guard = request.tool_call, self._run(request.state, request.runtime)
        refused = self._before(guard, call)
        if refused is not None:
            return refused
        try:
            result = handler(request)
        except Exception as exc:
            guard.after_call(call["name"], call.get("args"), str(exc), error=True, call_id=call.get("id"))
            raise
        return self._after(guard, call, result)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        call, guard = request.tool_call, self._run(request.state, request.runtime)
        refused = self._before(guard, call)
        if refused is not None:
            return refused
        try:
            result = await handler(request)
        except Exception as exc:
            guard.after_call(call["name"], call.get("args"), str(exc), error=True, call_id=call.get("id"))
            raise
        return self._after(guard, call, result)

    def _before(self, guard: Guard, call: dict[str, Any]) -> ToolMessage | None:
        decision = guard.before_call(call["name"], call.get("args"), call_id=call.get("id"))
        if not decision.blocks:
            return None
        return ToolMessage(
            content=decision.tool_result or "", tool_call_id=call["id"], name=call["name"], status="error"
        )

    def _after(self, guard: Guard, call: dict[str, Any], result: Any) -> Any:
        if isinstance(result, ToolMessage):
            decision = guard.after_call(
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
        guard.after_call(call["name"], call.get("args"), None, call_id=call.get("id"))
        return result


class LoopwatchCallbackHandler(BaseCallbackHandler):
    """Observe-only: counts tool calls and model turns, and keeps in `findings` the
    decisions loopwatch would have taken (nudge, block, stop), in order. `on_finding`
    is called with each; if it raises it is not called again. `stopped` is the reason
    the latest stopped run would have been stopped. Each top-level run (an agent's
    `invoke`) is watched on its own and forgotten when it ends; models and tools called
    outside any run share `guard`, which also gives the runs their settings."""

    raise_error = False

    def __init__(
        self, guard: Guard | None = None, *, on_finding: Callable[[Decision], object] | None = None, **kwargs: Any
    ) -> None:
        super().__init__()
        self.guard = _guard(guard, kwargs)
        self.on_finding = on_finding
        self.findings: list[Decision] = []
        self.findings_total = 0
        self.stopped: str | None = None
        self._running: dict[Any, tuple[str, Any, str | None]] = {}
        self._roots: OrderedDict[Any, Any] = OrderedDict()  # a run in flight -> its top-level run

    # -- which run -------------------------------------------------------------------------

    def _started(self, run_id: Any, parent_run_id: Any) -> None:
        # A parent not seen (started before this handler was attached) is taken as the top.
        self._roots[run_id] = run_id if parent_run_id is None else self._roots.get(parent_run_id, parent_run_id)
        if len(self._roots) > _MAX_RUNNING:  # a run that never reported its end
            self._roots.popitem(last=False)

    def _ended(self, run_id: Any) -> None:
        if self._roots.pop(run_id, None) == run_id:
            self.guard.end_run(run_id)  # a top-level run is over

    def _guard_of(self, run_id: Any) -> Guard:
        root = self._roots.get(run_id)
        if root is None or root == run_id:
            return self.guard  # a model or tool called on its own: the caller's loop is the run
        return self.guard.for_run(root)

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        self._started(run_id, parent_run_id)

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._ended(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._ended(run_id)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        self._started(run_id, parent_run_id)

    def on_llm_start(
        self, serialized: Any, prompts: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        self._started(run_id, parent_run_id)

    def on_llm_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._ended(run_id)

    # -- what happened ---------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: Any,
        parent_run_id: Any = None,
        inputs: dict[str, Any] | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._started(run_id, parent_run_id)
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._running[run_id] = (str(name), inputs if inputs is not None else input_str, tool_call_id)
        if len(self._running) > _MAX_RUNNING:  # a tool that never reported its end
            self._running.pop(next(iter(self._running)))

    def on_tool_end(self, output: Any, *, run_id: Any, **kwargs: Any) -> None:
        started = self._running.pop(run_id, None)
        if started is not None:
            name, value, call_id = started
            error = getattr(output, "status", None) == "error"
            result = _text(output.content) if isinstance(output, ToolMessage) else output
            self._note(self._guard_of(run_id).after_call(name, value, result, error=error, call_id=call_id))
        self._ended(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        started = self._running.pop(run_id, None)
        if started is not None:
            name, value, call_id = started
            self._note(self._guard_of(run_id).after_call(name, value, str(error), error=True, call_id=call_id))
        self._ended(run_id)

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        guard = self._guard_of(run_id)
        for generations in getattr(response, "generations", None) or []:
            for generation in generations:
                message = getattr(generation, "message", None)
                text = _text(message.content) if message is not None else getattr(generation, "text", "")
                if text:
                    self._note(guard.text(text))
        self._note(guard.turn())
        self._ended(run_id)

    def _note(self, decision: Decision) -> None:
        if decision.action is Action.ALLOW:
            return
        if decision.action is Action.STOP:
            self.stopped = decision.reason
        self.findings_total += 1
        if len(self.findings) < _MAX_FINDINGS:
            self.findings.append(decision._replace(message=None))  # it may quote the call: not ours to keep
        if self.on_finding is not None:
            try:
                self.on_finding(decision)
            except Exception:  # noqa: BLE001 - a broken callback must not break the agent
                self.on_finding = None
