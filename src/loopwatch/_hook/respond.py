"""Turning a decision into what a host reads back: the host module words it.

`reply` answers one parsed event; `refuse` denies a call the hook could not check
(`fail = "closed"`), where only the host and the event's name are known. What each
host reads (JSON on stdout, stderr, exit status), and which answer it honours, is its
module's to say (`loopwatch._hosts.<host>.HOST.reply` and `.refuse`).

Never answered, on any host: a turn's end with "do not stop" (Claude Code's
`decision: "block"` on Stop), the opposite of what loopwatch is for.
"""

from __future__ import annotations

from .._core.session import Decision
from .._hosts import host as host_named
from .._hosts.base import ALLOW_REPLY, BEFORE, Payload, Reply

__all__ = ["ALLOW_REPLY", "Reply", "refuse", "reply"]


def reply(payload: Payload, decision: Decision, stopped: str | None = None) -> Reply:
    """The answer to one event: `decision` is the guard session's (its `message` for the
    model, its `verdict` for the host's form); `stopped` is the stop's reason once the
    run was stopped."""
    return host_named(payload.host).reply(payload, decision, stopped)


def refuse(host: str, reason: str, native: str | None = None, stop: bool = False, person: str | None = None) -> Reply:
    """Deny a before-call event of `host` (`native`: its name in the host's words, the
    guard's `PreToolUse` when unknown) with `reason` for the model."""
    return host_named(host).refuse(native or BEFORE, reason, stop=stop, person=person)
