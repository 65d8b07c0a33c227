"""Claude Agent SDK for Python: in-process hooks over the Claude Code CLI it drives.

    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from loopwatch.adapters.claude_agent_sdk import Loopwatch

    loopwatch = Loopwatch(profile="unattended")
    options = loopwatch.options(ClaudeAgentOptions(allowed_tools=["Bash", "Read"]))
    async for message in query(prompt="make the tests pass", options=options):
        if isinstance(message, ResultMessage):
            print(loopwatch.stop_reason(message) or message.result)

The SDK runs the real Claude Code CLI and answers its hooks with Python callbacks
(`HookMatcher`s), so this guard speaks Claude Code's own hook protocol, read and
answered by the Claude Code host module (`loopwatch._hosts.claude_code`: the payloads'
fields, which call failed, what each answer means), as the installed hook does:

- block: PreToolUse answers `permissionDecision: "deny"` with the reason; the tool
  does not run and the model gets the reason as the call's error result;
- nudge: PostToolUse / PostToolUseFailure answer `additionalContext`, which the model
  reads with the call's result;
- stop: the call is denied and the answer says `continue: false`, and so does the
  PostToolBatch that follows, which every release ends the run at (2.1.197, 2.1.332
  and the SDK's bundled 2.1.337, real CLI; 2.1.332 and 2.1.337 also end it at the
  PreToolUse answer, 2.1.197 does not): no model request after it, and the `ResultMessage` says
  `terminal_reason="hook_stopped"`. `stop_reason(message)` says why.

One `Loopwatch` serves every session at once (`query()` calls, `ClaudeSDKClient`s, in
one event loop or several threads): each Claude Code session (`session_id`), and each
sub-agent in it (`agent_id`), is watched by a guard of its own (`Guard.for_run`), so
concurrent sessions never mix their calls and a sub-agent's streaks never run into
its parent's. A stopped sub-agent ends (PostToolBatch), and its parent is stopped at
its next event: the PostToolUse of the Agent call that ran it (a foreground agent,
2.1.197), or the task notification that reports it (a background agent, as 2.1.332
and 2.1.337 run them under the SDK): the whole unattended run ends, as under the
installed hook. A task notification is not the user writing: it neither starts the
streaks again nor lifts a stop; the user's prompt does both.

A session's guards are released when its main agent's turn ends (Stop) with no
sub-agent still running, or when loopwatch ends the run; a run never seen to end is
forgotten among the 1,024 most recent (`Guard.for_run`). The reason of a stop is kept
(a string, for `stop_reason`) until the session's next prompt, for the 1,024 most
recent stops.

It never reads a prompt beyond telling a task notification from the user, and keeps
what the guard keeps (digests, names, counts and times). It does not see the model's
text or tokens (the hooks carry none), nor calls that never reach a hook.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, cast

try:
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, ResultMessage
    from claude_agent_sdk.types import HookContext, HookEvent, HookInput, HookJSONOutput
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "loopwatch.adapters.claude_agent_sdk needs the Claude Agent SDK: pip install 'loopwatch[claude-agent-sdk]'"
    ) from exc

from .._core.session import ALLOWED, Decision
from .._guard import Guard
from .._hosts.base import AFTER, BATCH, BEFORE, FAILED, PROMPT, SUBAGENT_END, TURN_END, Payload, PayloadError
from .._hosts.claude_code import HOST

__all__ = ["HOOK_EVENTS", "Loopwatch"]

#: The hook events the guard answers, in the SDK's spelling (PostToolBatch is the one
#: whose `continue: false` every release honours; the SDK's `HookEvent` type does not
#: list it, the CLI does).
HOOK_EVENTS = (BEFORE, AFTER, FAILED, BATCH, PROMPT, TURN_END, SUBAGENT_END)

#: Sessions whose bookkeeping is kept (running sub-agents, a stop not yet told to the
#: main agent, a stop's reason): the most recent; a run nothing released is forgotten.
_MAX_SESSIONS = 1024

#: How Claude Code words the prompt that reports a background task's end (its first
#: characters): the CLI's, not the user's.
_NOTIFICATION = "<task-notification>"


class _Session:
    """What the adapter keeps of one Claude Code session beside its guards."""

    __slots__ = ("running", "told", "turn_over")

    def __init__(self) -> None:
        self.running: set[str] = set()  # sub-agents seen and not yet ended
        self.told: set[str] = set()  # stopped sub-agents whose stop went to the main agent
        self.turn_over = False  # the main agent's turn ended (Stop), nothing of it since


class Loopwatch:
    """Guards every session run with the options it is put in. See the module docstring.

    `guard` gives the settings of each session's guards (it watches no session
    itself); otherwise keyword arguments do (`Loopwatch(profile="attended",
    stop=True, keys={...})`, as for `Guard`)."""

    def __init__(self, guard: Guard | None = None, **kwargs: Any) -> None:
        if guard is not None and kwargs:
            raise TypeError("pass a guard or its configuration, not both")
        guard = guard if guard is not None else Guard(**kwargs)
        if not guard.serves_runs:
            guard.fresh()  # raises, saying why
        self.guard = guard
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._pending: OrderedDict[str, str] = OrderedDict()  # session -> a sub-agent's stop, for its parent
        self._stops: OrderedDict[str, str] = OrderedDict()  # session -> why loopwatch ended its run
        self._matchers = {
            cast("HookEvent", event): [HookMatcher(matcher=None, hooks=[self._callback])] for event in HOOK_EVENTS
        }

    # -- what the user puts in the options ------------------------------------------------------

    @property
    def hooks(self) -> dict[HookEvent, list[HookMatcher]]:
        """The hooks, for `ClaudeAgentOptions(hooks=...)` (a new dict each time)."""
        return {event: list(matchers) for event, matchers in self._matchers.items()}

    def options(self, options: ClaudeAgentOptions | None = None, **fields: Any) -> ClaudeAgentOptions:
        """A copy of `options` (or `ClaudeAgentOptions(**fields)`) with the guard's hooks
        after any of its own; `options` itself is left alone. Adding them twice adds
        nothing."""
        if options is None:
            options = ClaudeAgentOptions(**fields)
        elif fields:
            options = dataclasses.replace(options, **fields)
        merged: dict[HookEvent, list[HookMatcher]] = {k: list(v) for k, v in (options.hooks or {}).items()}
        for event, matchers in self._matchers.items():
            have = merged.setdefault(event, [])
            have.extend(m for m in matchers if m not in have)
        return dataclasses.replace(options, hooks=merged)

    def stop_reason(self, message: ResultMessage | str) -> str | None:
        """Why loopwatch ended the run `message` (a `ResultMessage`, or a session id)
        reports, for a person; None if it did not (or the user wrote since)."""
        session = message if isinstance(message, str) else message.session_id
        with self._lock:
            return self._stops.get(session)

    # -- the hooks ------------------------------------------------------------------------------

    async def _callback(self, input: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        return cast("HookJSONOutput", self.answer(cast("Mapping[str, Any]", input)))

    def answer(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to one hook event (its input as the CLI sent it), in Claude Code's
        words; {} to let it be. An event it cannot read is let be."""
        try:
            payload = HOST.parse(dict(raw))
        except PayloadError:
            return {}
        session, agent, event = payload.session, payload.agent or None, payload.event
        notification = event == PROMPT and _is_notification(raw.get("prompt"))
        with self._lock:
            state = self._session(session)
            if agent is not None:
                state.running.add(agent)
                pending = None
            else:
                state.turn_over = event == TURN_END
                if event == PROMPT and not notification:
                    self._stops.pop(session, None)  # the user wrote: a stop is lifted
                    state.told.clear()
                pending = self._pending.pop(session, None)
            held = self._stops.get(session)
        guard = self.guard.for_run(session, agent)
        if held is not None:
            guard.stop(held)  # the run was stopped, and its guards since released
        if pending is not None:
            guard.stop(f"a sub-agent was stopped: {pending}")
        decision = self._feed(guard, payload, notification)
        stopped = guard.stopped
        if notification and stopped is not None:
            reply = HOST.stop_reply(payload.native, stopped).stdout
        else:
            reply = HOST.reply(payload, decision, stopped).stdout
        ends = isinstance(reply, dict) and reply.get("continue") is False
        self._after(payload, agent, stopped, ends=ends)
        return reply if isinstance(reply, dict) else {}

    def _feed(self, guard: Guard, payload: Payload, notification: bool) -> Decision:
        event = payload.event
        if event == BEFORE:
            call = payload.calls[0]
            return guard.before_call(call.name, call.input, call_id=call.call_id)
        if event in (AFTER, FAILED):
            call = payload.calls[0]
            if call.interrupted:  # the user pressed Esc (or the SDK interrupted): not the agent's doing
                return ALLOWED
            return guard.after_call(call.name, call.input, call.result, error=call.error, call_id=call.call_id)
        if event == PROMPT:
            return ALLOWED if notification else guard.user()
        if event in (TURN_END, SUBAGENT_END):
            return guard.turn()
        # PostToolBatch repeats the calls PostToolUse and PostToolUseFailure reported
        # (and those refused, which never ran): nothing to count, only a stop to say.
        return ALLOWED

    def _after(self, payload: Payload, agent: str | None, stopped: str | None, *, ends: bool) -> None:
        """Keep what the session's next events need; release its guards once its run is over."""
        session, event = payload.session, payload.event
        with self._lock:
            state = self._session(session)
            if stopped is not None and session not in self._stops:
                if agent is None:
                    self._remember(self._stops, session, stopped)
                elif agent not in state.told:  # a sub-agent's own stop: for its parent's next event
                    state.told.add(agent)
                    self._remember(self._pending, session, stopped)
            if agent is not None and event == SUBAGENT_END:
                state.running.discard(agent)
            release = (
                # loopwatch ended the run: its stop is kept, and holds for any later event
                (ends and session in self._stops)
                # the main agent's turn ended, and no sub-agent runs on in the background
                or (agent is None and event == TURN_END and not state.running)
                # the last background sub-agent ended after its parent's turn
                or (event == SUBAGENT_END and state.turn_over and not state.running)
            )
            if release:
                del self._sessions[session]
        if release:
            self.guard.end_run(session)

    def _session(self, session: str) -> _Session:
        """The session's bookkeeping (under `_lock`), made on first use."""
        state = self._sessions.get(session)
        if state is None:
            state = self._sessions[session] = _Session()
            while len(self._sessions) > _MAX_SESSIONS:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session)
        return state

    @staticmethod
    def _remember(kept: OrderedDict[str, str], session: str, reason: str) -> None:
        kept[session] = reason
        kept.move_to_end(session)
        while len(kept) > _MAX_SESSIONS:
            kept.popitem(last=False)


def _is_notification(prompt: Any) -> bool:
    """Is this prompt Claude Code's report of a background task (an agent run in the
    background) ending, rather than the user writing?"""
    return isinstance(prompt, str) and prompt.lstrip().startswith(_NOTIFICATION)
