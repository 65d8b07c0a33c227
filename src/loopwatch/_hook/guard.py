"""One hook event through a session's monitor.

    PreToolUse          -> Monitor.check(Attempt)        (block: deny the call)
    PostToolUse         -> Monitor.observe(ToolCall)     (nudge: additional context)
    PostToolUseFailure  -> Monitor.observe(ToolCall(error=True))
    PostToolBatch       -> one ToolCall per call not already counted
    UserPromptSubmit    -> Monitor.observe(UserMessage)  (every streak starts again)
    Resume              -> nothing observed or written; a stopped run is ended there (Qwen Code)
    Stop, SubagentStop  -> Monitor.observe(Turn)

Each (session, agent) has its own monitor, so a sub-agent's streaks never mix with
its parent's (for a host whose payloads do not name the agent, the main agent's state
says which sub-agent runs: `spawns`), in a `GuardSession` (the one `loopwatch.Guard`
uses): a call is counted
once, by `tool_use_id`, whether it arrives by PostToolUse or PostToolBatch; a call
loopwatch denied never ran, so the PostToolBatch that reports it (with the denial text
as its "result") does not count it, and the denial is logged as a block. Once a run is
stopped, every later call of that agent is refused until the user writes again; when a
sub-agent was stopped, its parent is stopped at the PostToolUse (or, where the host
reports the spawning call as failed, PostToolUseFailure) of the call that ran it
(`Call.spawned`), so that the parent's PostToolBatch ends the whole run (Claude Code
ends only the sub-agent otherwise). A host whose report of that call does not name the
sub-agent names the parent in the sub-agent's own payloads instead (`Payload.parent`,
Cline): the sub-agent's stop is then carried to the parent at once, and the parent's next
event (the report of the call that ran the sub-agent) ends the run.

What the host's answer cannot say to the person (Cline prints nothing a hook says) is
said by the host's own way (`Host.say`): a stop, a refusal, a warning, and, for a host
that runs a project's hooks beside the user's (`Host.start_warnings`), what the project
holds that can undo the guard, at the session's first call.

Event times are the session's clock (`SessionState.time`): its first wall time plus the
time since on a clock no one sets, the same in every hook process.

At a session's first event (its main agent's), the host's settings files are read once
(`Host.switch_offs`: a few small files) and the person is told, where the host shows a
hook's words, when a project's setting switches hooks off and nothing holds them on past
this session. Later events read nothing of the kind.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from .._configfile import apply_env
from .._core.config import Config
from .._core.events import Attempt, ToolCall, Turn, UserMessage
from .._core.messages import Guarded
from .._core.session import ALLOWED, Decision
from .._core.verdict import Action, Verdict
from .._hosts import host as host_named
from .._hosts.base import (
    AFTER,
    BEFORE,
    CALL_EVENTS,
    FAILED,
    PROMPT,
    RESUME,
    SUPERVISED,
    TURN_END,
    Call,
    Host,
    Payload,
    digest,
)
from .._hosts.monitors import monitor_for
from .respond import Reply, reply
from .settings import detect_profile
from .spawns import Spawns
from .state import SessionState, Store

__all__ = ["handle"]


def handle(
    payload: Payload,
    config: dict[str, Any],
    store: Store,
    log: Callable[[str], object] | None = None,
    now: float | None = None,
) -> Reply:
    """Feed one event to its session's monitor and say what to answer. `now` fixes the
    event's time (tests); else it is the session's clock (`SessionState.time`)."""
    outcome: dict[str, Any] = {}
    agent = host_named(payload.host)

    def make() -> SessionState:
        profile, why = detect_profile(payload.host, config, payload=payload)
        data = {k: v for k, v in config.items() if k != "hook"}
        monitor = monitor_for(payload.host, apply_env(Config.make({**data, "profile": profile})))
        outcome["new"] = True
        return SessionState(monitor, payload.host, profile, why)

    # The working folder after the call(s), walked before the state is locked.
    tree = _tree(payload.cwd, store.folder) if payload.event in CALL_EVENTS else None

    def feed(state: SessionState) -> list[tuple[str, Verdict, str | None]]:
        at = state.time(time.time(), _steady()) if now is None else now
        undone: list[str] = []
        decision, tool = _feed(payload, state, at, agent, undone, tree)
        outcome["undone"] = undone
        outcome["decision"] = decision
        decisions = [(payload.event, decision.verdict, tool)] if decision.verdict.action is not Action.ALLOW else []
        if decision.refused:
            decisions.append((payload.event, Verdict(Action.BLOCK, description=decision.reason), tool))
        child_stop = _stopped_child(payload, store)
        if child_stop is not None and state.stopped is None:
            state.stop(f"a sub-agent was stopped: {child_stop}")
            decisions.append((payload.event, Verdict(Action.STOP, description=state.stopped), None))
        outcome["stopped"] = state.stopped
        return decisions

    def bad_state(exc: Exception) -> None:
        if log is not None:
            log(f"state of session {payload.session[:12]} could not be loaded ({type(exc).__name__}); starting afresh")

    if payload.event == RESUME:  # nothing to observe: only whether the run was stopped (read, never written)
        outcome.update(decision=ALLOWED, stopped=store.stopped(payload.session, payload.agent))
    elif agent.spawn_tools and not payload.agent:
        # The payload does not say which agent: the main agent's state knows which
        # sub-agents run now (`spawns`). A main-agent event is fed in the same
        # transaction; a sub-agent's, in its own state's next.
        def route(state: SessionState) -> list[tuple[str, Verdict, str | None]]:
            payload.agent = _route(payload, state, agent.spawn_tools, agent.finish_tools)
            if payload.agent:
                return []
            decisions = feed(state)
            spawning = payload.event == BEFORE and payload.calls[0].name in agent.spawn_tools
            if spawning and not outcome["decision"].blocks:
                assert state.spawns is not None
                state.spawns.spawned(_digest(payload.calls[0]), time.time())
            return decisions

        store.update(payload.session, "", make, route, bad_state)
        if payload.agent:
            store.update(payload.session, payload.agent, make, feed, bad_state)
    else:
        store.update(payload.session, payload.agent, make, feed, bad_state)
    decision: Decision = outcome["decision"]
    stopped: str | None = outcome["stopped"]
    ending = decision.action is Action.STOP or payload.event == RESUME
    ended = stopped is not None and ending and agent.end_run(payload, stopped, log or _quiet)
    if ended and log is not None:
        log(f"ended the run ({agent.ends_by}): {stopped}")
    if stopped is not None and payload.parent is not None and decision.action is Action.STOP:
        _stop_parent(payload, store, stopped, make, log)
    _tell(agent, payload, decision, outcome, log)
    answer = reply(payload, decision, stopped)
    if outcome.get("new") and not payload.agent:
        told = switched_off(agent, payload.cwd, log or _quiet)
        if told is not None:
            answer = agent.tell(answer, told)
    return answer


def switched_off(host: Host, cwd: str | None, log: Callable[[str], object]) -> str | None:
    """What to tell the person when a project setting found now switches `host`'s hooks
    off and nothing holds them on past this session, else None. For a session's first
    event only: a look for the host's project files (`Host.switch_off_files`), and
    `switch_offs` read only when one is there."""
    import os

    try:
        folder = cwd or os.getcwd()
        if not any(os.path.exists(path) for path in host.switch_off_files(folder)):
            return None
        from pathlib import Path  # only now: the hook's usual path never needs it

        offs = [off for off in host.switch_offs(Path(folder), os.environ) if off.kind in ("off", "later")]
    except (OSError, ValueError) as exc:  # a folder gone, a name that cannot be a path
        log(f"project settings not read for switch-offs ({type(exc).__name__})")
        return None
    if not offs:
        return None
    off = offs[0]
    log(f"hooks switched off by {off.path}: told the person")
    if os.environ.get(SUPERVISED):
        held = "`loopwatch run` holds them on for this run only"
        return f"loopwatch: {off.path}: {off.what}. {held}: {host.switch_off_advice(run=False)}."
    return (
        f"loopwatch: {off.path}: {off.what}. From the next session on, nothing guards it: {host.switch_off_advice()}."
    )


def _tell(
    agent: Host, payload: Payload, decision: Decision, outcome: dict[str, Any], log: Callable[[str], object] | None
) -> None:
    """Say to the person what the host's answer cannot (`Host.say`): a stop or a refusal
    as it happens (not every refusal of a stop already told), a warning, and, at a session's
    first call, what the project holds that can undo the guard."""
    from .._core.messages import Blocked, Stopped, Warned

    lines: list[str] = []
    if outcome.get("new") and payload.cwd and not payload.agent:
        for off in agent.start_warnings(payload.cwd, os.environ):
            lines.append(f"loopwatch: {off.path}: {off.what}")
            if log is not None:
                log(f"warned: {off.path}: {off.what}")
    for tool in outcome.get("undone", ()):
        line = (
            f"loopwatch: its refusal of a {tool} call was undone by another hook (the call ran as the model "
            "asked); a project's hooks or plugins run after loopwatch's: `loopwatch doctor` names them"
        )
        lines.append(line)
        if log is not None:
            log(line.removeprefix("loopwatch: "))
    action, reason = decision.action, decision.reason
    if reason and action is Action.STOP and not decision.refused:
        lines.append(Stopped(reason).for_person())
    elif reason and action is Action.BLOCK:
        lines.append(Blocked(reason).for_person())
    elif decision.verdict.action is Action.WARN and decision.verdict.description:
        lines.append(Warned(decision.verdict.description).for_person())
    for line in lines:
        agent.say(payload, line)


def _stop_parent(
    payload: Payload, store: Store, reason: str, make: Callable[[], SessionState], log: Callable[[str], object] | None
) -> None:
    """Carry a sub-agent's stop to the agent that spawned it (`Payload.parent`): its key is
    the parent's own id when it is a sub-agent itself (it has a state of its own), else ""
    (the main agent, whose key is always "")."""
    assert payload.parent is not None
    try:
        parent = payload.parent if store.state(payload.session, payload.parent) is not None else ""
    except Exception:  # noqa: BLE001 - a damaged or foreign row: the main agent is the safe guess
        parent = ""

    def feed(state: SessionState) -> list[tuple[str, Verdict, str | None]]:
        if state.stopped is not None:
            return []
        state.stop(f"a sub-agent was stopped: {reason}")
        return [(payload.event, Verdict(Action.STOP, description=state.stopped), None)]

    store.update(payload.session, parent, make, feed, None)
    if log is not None:
        log(f"the sub-agent's stop carried to its parent ({parent or 'the main agent'})")


def _quiet(line: str) -> None:
    return None


def _steady() -> float:
    """Seconds since boot, suspended time included where the system counts it: one
    clock for every hook process, which no one sets."""
    try:
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    except (AttributeError, OSError):  # not Linux
        return time.monotonic()


def _digest(call: Call) -> str:
    return digest([call.name, call.input])


def _route(payload: Payload, state: SessionState, spawn: frozenset[str], finish: frozenset[str]) -> str:
    """The agent of an event whose payload does not name it, from the main agent's
    state (`spawns`); sets `Call.spawned` on the after event of a spawning call."""
    if state.spawns is None:
        state.spawns = Spawns()
    spawns = state.spawns
    if payload.event not in (BEFORE, AFTER) or not payload.calls:
        if payload.event in (PROMPT, TURN_END):
            spawns.clear()  # the main agent's turn begins or ends: no sub-agent runs
        return ""
    call = payload.calls[0]
    if payload.event == BEFORE:
        return spawns.before(_digest(call), payload.stamp, spawn=call.name in spawn, finish=call.name in finish)
    agent, spawned = spawns.after(_digest(call), spawn=call.name in spawn)
    if spawned:
        call.spawned = spawned
    return agent


def _stopped_child(payload: Payload, store: Store) -> str | None:
    """Why the sub-agent a main-agent call ran was stopped, if it was."""
    if payload.agent or payload.event not in (AFTER, FAILED):
        return None
    for call in payload.calls:
        if call.spawned:
            try:
                child = store.state(payload.session, call.spawned)
            except Exception:  # noqa: BLE001 (a damaged or foreign state tells us nothing; never fail the call)
                return None
            if child is not None and child.stopped:
                return child.stopped
    return None


def _undone(state: SessionState, call_id: str) -> bool:
    """Forget loopwatch's refusal of call `call_id`, which ran after all; was there one?"""
    kept = [entry for entry in state.blocked if entry[0] != call_id]
    if len(kept) == len(state.blocked):
        return False
    state.blocked.clear()
    state.blocked.extend(kept)
    return True


def _tree(cwd: str | None, state_folder: str) -> str | None:
    """The fingerprint of the session's working folder (`tree`), None when unknown; a
    folder found past the walk's entry bound is remembered in the state folder by a digest
    of its path (`large-<digest>`), never by its name."""
    if not cwd:
        return None
    from .tree import remembered_fingerprint

    return remembered_fingerprint(cwd, os.path.join(state_folder, f"large-{digest(cwd)}"))


def _seen_tree(tree: str | None, cwd: str | None, call: Call, role: str, host: str) -> str | None:
    """`tree` for this call, or None where the folder cannot show what the call did: a
    writer whose file is outside the folder, in a folder the fingerprint skips, or not
    named by a field loopwatch knows (a patch, a tool made a writer by configuration)."""
    if tree is None or cwd is None or role != "writer":
        return tree
    from .._hosts import HOST_WRITERS, WRITERS
    from .tree import covers

    field = WRITERS.get(call.name) or HOST_WRITERS.get(host, {}).get(call.name)
    path = call.input.get(field) if field is not None and isinstance(call.input, dict) else None
    return tree if isinstance(path, str) and path and covers(cwd, path) else None


def _feed(
    payload: Payload, state: SessionState, at: float, host: Host, undone: list[str], tree: str | None = None
) -> tuple[Decision, str | None]:
    event, agent = payload.event, payload.agent or None
    if event == BEFORE:
        call = payload.calls[0]
        if call.name in host.finish_tools:  # an agent handing back its result: never refused
            return ALLOWED, call.name
        attempt = Attempt(call.name, call.input, at=at, call_id=call.call_id, agent=agent)
        reported = host.reports_refusals
        written = host.switches_off(call, payload.cwd)
        if written is not None:  # never the monitor's to weigh: the guard itself is at stake
            return state.refuse(attempt, Guarded(written), reported=reported), call.name
        return state.before_call(attempt, reported=reported), call.name
    if event in CALL_EVENTS:
        strongest, tool = ALLOWED, None
        for call in payload.calls:
            if call.refused is False and call.call_id is not None and _undone(state, call.call_id):
                undone.append(call.name)  # refused, yet it ran as asked: counted as what it is
            seen = _seen_tree(tree, payload.cwd, call, state.monitor.config.rule(call.name).role, payload.host)
            decision = state.after_call(
                ToolCall(
                    call.name,
                    call.input,
                    call.result,
                    error=call.error,
                    at=at,
                    call_id=call.call_id,
                    agent=agent,
                    tree=seen,
                ),
                interrupted=call.interrupted,
            )
            if decision.verdict.action.rank > strongest.verdict.action.rank:
                strongest, tool = decision, call.name
        return strongest, tool
    if event == PROMPT:
        return state.user(UserMessage(at=at)), None
    return state.observe(Turn(at=at)), None  # a turn's end
