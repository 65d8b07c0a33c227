"""What the hook keeps for one (session, agent) between its calls: plain data.

A module of its own so that the state codec (which must know every class it may store)
and the store (which saves and loads it) both import it, and not each other.
"""

from __future__ import annotations

from .._core.monitor import Monitor
from .._core.session import GuardSession

__all__ = ["SessionState"]


class SessionState(GuardSession):
    """What is kept for one (session, agent): the guard session (the monitor, the stop,
    the calls refused and the ids of the calls already counted: Claude Code reports a
    call by PostToolUse and again by PostToolBatch), where it runs, and counts of the
    decisions taken."""

    def __init__(self, monitor: Monitor, host: str, profile: str, reason: str) -> None:
        super().__init__(monitor, count_once=True)
        self.host = host
        self.profile = profile
        self.profile_reason = reason
        self.counts: dict[str, int] = {}
        self.origin = ""  # which configuration file set the mode (HookSettings.origin)
