"""What the hook keeps for one (session, agent) between its calls: plain data.

A module of its own so that the state codec (which must know every class it may store)
and the store (which saves and loads it) both import it, and not each other.
"""

from __future__ import annotations

from collections import deque

from ..core.monitor import Monitor

__all__ = ["SessionState"]

_SEEN = 512  # tool_use_ids remembered per agent, to count a call once (PostToolUse and PostToolBatch)


class SessionState:
    """What is kept for one (session, agent): the monitor, the ids of the calls
    already counted, the stop reason once the run was stopped, and counts of the
    decisions taken."""

    def __init__(self, monitor: Monitor, host: str, profile: str, reason: str) -> None:
        self.monitor = monitor
        self.host = host
        self.profile = profile
        self.profile_reason = reason
        self.seen: deque[str] = deque(maxlen=_SEEN)
        self.stopped: str | None = None
        self.counts: dict[str, int] = {}
        self.origin = ""  # which configuration file set the mode (HookSettings.origin)
