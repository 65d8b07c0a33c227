"""A `GuardSession`: what a guard adds to a monitor, the same for every front end.

`loopwatch.Guard` (frameworks, hand-written loops) and the Claude Code / Codex hook
both guard a run through one of these; they differ only in how they are called and
how they answer. It holds, besides the monitor:

- the stop, once there was one (`stopped`, the reason worded for a person): every
  later call is refused with it until the user writes (`user`), so a model that
  ignores the stop cannot carry on;
- the calls it refused (`blocked`: call id and digest), so that a framework or host
  reporting such a call afterwards (a callback, an output hook, a batch) does not have
  it counted: a blocked call never ran, and counting the refusal as its result would
  break the very streak that was blocked. A report is matched by call id, or by tool
  and identifying input when either side has no id;
- with `count_once` (a host that reports a completed call twice, as Claude Code does
  by PostToolUse and PostToolBatch), the ids of the calls already counted (`counted`).
  Off for frameworks: some models number their calls afresh each turn ("call_0"), and a
  loop of such calls must not be taken for one call reported again.

What the model is told comes from the classes of `messages`: a block decided after
the call already ran is worded as what it is (`StillCircling`), and the first stop
tells the model to stop calling tools (`Stopped(held=True)`), as every refusal after
it does.

Pure and clock-free: events carry their times; no I/O. Plain data, so the hook stores
it between its processes as JSON (`loopwatch._hook.codec`): the monitor, the stop's
reason, call ids and digests, never a call's input or result.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from .events import Attempt, Event, ToolCall, UserMessage
from .fingerprint import digest_call
from .messages import StillCircling, Stopped, Told, label
from .monitor import Monitor
from .verdict import ALLOW, TOLD, Action, Verdict

__all__ = ["ALLOWED", "Decision", "GuardSession"]

#: Blocked calls remembered until they are reported (or not: many never are). A batch
#: of parallel calls is at most a few dozen; older entries are forgotten, which can at
#: worst count one blocked call as completed.
_MAX_BLOCKED = 64

#: Ids of counted calls remembered, with `count_once`: a call is reported again within
#: its batch, so a few hundred is plenty.
_MAX_COUNTED = 512

#: The stop's reason when the verdict has no description.
_CIRCLES = "the run kept going in circles"


class Decision(NamedTuple):
    """What to do with one call (or one piece of text).

    `action` is ALLOW, NUDGE, BLOCK or STOP (a WARN, for the person watching only,
    is ALLOW here; its verdict is kept in `verdict`). `message` is addressed to the
    model: the nudge to add to the context, or for BLOCK and STOP the text to hand it
    as the tool's result. `reason` is addressed to a person ("the same Bash call
    returned the same result 4 times in a row over 1m12s").
    """

    action: Action = Action.ALLOW
    message: str | None = None
    reason: str | None = None
    verdict: Verdict = ALLOW

    @property
    def blocks(self) -> bool:
        """The call must not run (block or stop); hand the model `tool_result`."""
        return self.action is Action.BLOCK or self.action is Action.STOP

    @property
    def refused(self) -> bool:
        """Refused because the run was already stopped (the monitor was not asked)."""
        return self.action is Action.STOP and self.verdict.action is not Action.STOP

    @property
    def tool_result(self) -> str | None:
        """For a block or stop: the result to give the model instead of running."""
        return self.message if self.blocks else None

    def __bool__(self) -> bool:  # `if decision:` reads "if something must be done"
        return self.action is not Action.ALLOW


ALLOWED = Decision()


class GuardSession:
    """One guarded run (of one agent). See the module docstring."""

    def __init__(self, monitor: Monitor, *, count_once: bool = False) -> None:
        self.monitor = monitor
        self.stopped: str | None = None  # the stop's reason, once stopped (for a person)
        self.blocked: deque[tuple[str | None, bytes]] = deque(maxlen=_MAX_BLOCKED)
        self.counted: deque[str] | None = deque(maxlen=_MAX_COUNTED) if count_once else None

    def before_call(self, attempt: Attempt, *, reported: bool = True) -> Decision:
        """Should this call run? ALLOW, BLOCK or STOP (refused: do not run it).
        `reported`: a refused call is reported afterwards, and must then not be counted
        (False for a host that never reports one: nothing is kept to match it)."""
        if self.stopped is not None:
            # Worded from the reason alone: the first stop's message may quote the call,
            # which is the model's to read then, never the guard's to keep.
            decision = Decision(Action.STOP, Stopped(self.stopped, held=True).for_model(), self.stopped)
        else:
            verdict = self.monitor.check(attempt)
            decision = self._decide(verdict, ran=False, call=attempt)
        if decision.blocks and reported:
            self.blocked.append((attempt.call_id, digest_call(attempt.name, attempt.input)))
        return decision

    def after_call(self, call: ToolCall, *, interrupted: bool = False) -> Decision:
        """The call ran (`interrupted`: the user stopped it, which is not the agent's
        doing). A call already counted or refused is recognised and not counted."""
        if self._reported(call):
            return ALLOWED
        if interrupted:
            return ALLOWED
        return self._decide(self.monitor.observe(call), ran=True, call=call)

    def observe(self, event: Event) -> Decision:
        """Anything else the run did: text the model wrote, a turn, a retry."""
        return self._decide(self.monitor.observe(event), ran=True)

    def user(self, event: UserMessage) -> Decision:
        """The user wrote: every streak starts again, and a stop is lifted. The model,
        which has not answered yet, is told nothing (a finding is for the person)."""
        self.stopped = None
        self.blocked.clear()
        verdict = self.monitor.observe(event)
        return Decision(Action.ALLOW, None, verdict.description, verdict) if verdict else ALLOWED

    def refuse(self, attempt: Attempt, told: Told, *, reported: bool = True) -> Decision:
        """Refuse a call for a reason of the guard's own, not the monitor's (`told` words
        it: a write that would switch the guard off). Remembered as refused, as a block
        is, so that a report of the call afterwards is not counted (`reported`, as for
        `before_call`)."""
        if reported:
            self.blocked.append((attempt.call_id, digest_call(attempt.name, attempt.input)))
        person = told.for_person()
        return Decision(Action.BLOCK, told.for_model(), person, Verdict(Action.BLOCK, description=person))

    def stop(self, reason: str) -> None:
        """Stop the run for a reason found outside the monitor (a sub-agent's stop)."""
        if self.stopped is None:
            self.stopped = reason

    # -- internals ----------------------------------------------------------------------------

    def _reported(self, call: ToolCall) -> bool:
        """Was `call` counted already, or refused (it never ran)? Forgets the refusal."""
        call_id = call.call_id
        if self.counted is not None and call_id is not None:
            if call_id in self.counted:
                return True
            self.counted.append(call_id)
        if not self.blocked:
            return False
        digest = digest_call(call.name, call.input)
        for i, (blocked_id, blocked_call) in enumerate(self.blocked):
            if (call_id is not None and blocked_id == call_id) or (
                (call_id is None or blocked_id is None) and blocked_call == digest
            ):
                del self.blocked[i]
                return True
        return False

    def _decide(self, verdict: Verdict, *, ran: bool, call: Attempt | ToolCall | None = None) -> Decision:
        """The decision on `verdict`, for an event that `ran` (else a call not yet run);
        `call` is the call at hand, named to the model as the monitor names it."""
        action = verdict.action
        if action is Action.ALLOW:
            return ALLOWED
        if action is Action.WARN:
            return Decision(Action.ALLOW, None, verdict.description, verdict)
        what = verdict.finding.message if verdict.finding is not None else (verdict.description or _CIRCLES)
        call_label = label(call.name, call.input) if call is not None else ""
        told: Told | None = None
        if action is Action.BLOCK and ran:
            told, action = StillCircling(what, call_label), Action.NUDGE
        elif action is Action.STOP and self.stopped is None:
            self.stopped = verdict.description or _CIRCLES
            told = Stopped(what, call_label, held=True)
        message = told.for_model() if told is not None else verdict.message
        if message is None:  # a verdict made without the monitor's wording
            message = TOLD[action](what, call_label).for_model()
        return Decision(action, message, verdict.description, verdict)
