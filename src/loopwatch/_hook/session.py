"""What the hook keeps for one (session, agent) between its calls: plain data.

A module of its own so that the state codec (which must know every class it may store)
and the store (which saves and loads it) both import it, and not each other.
"""

from __future__ import annotations

from .._core.monitor import Monitor
from .._core.session import GuardSession
from .spawns import Spawns

__all__ = ["SessionState"]


class SessionState(GuardSession):
    """What is kept for one (session, agent): the guard session (the monitor, the stop,
    the calls refused and the ids of the calls already counted: Claude Code reports a
    call by PostToolUse and again by PostToolBatch), where it runs, and counts of the
    decisions taken, and (main agent) which sub-agents run now."""

    def __init__(self, monitor: Monitor, host: str, profile: str, reason: str) -> None:
        super().__init__(monitor, count_once=True)
        self.host = host
        self.profile = profile
        self.profile_reason = reason
        self.counts: dict[str, int] = {}
        self.origin = ""  # which configuration file set the mode (HookSettings.origin)
        self.clock: tuple[float, float] | None = None  # (wall, steady) seconds when the session began
        self.last_at = 0.0  # the time of its latest event
        #: The sub-agents running now, for a host whose payloads do not name the agent
        #: (`spawns`; kept in the main agent's state only).
        self.spawns: Spawns | None = None

    def time(self, wall: float, steady: float) -> float:
        """The time of an event that happens now, given the wall clock and a steady one
        (seconds since boot, the same in every process): the session's first wall time
        plus the steady time since, so a wall clock set back (or forward) moves nothing.
        The steady clock starts again at a reboot: then the wall clock is taken, never
        earlier than the latest event."""
        if self.clock is None or steady < self.clock[1]:
            self.clock = (max(wall, self.last_at), steady)
        at = self.clock[0] + (steady - self.clock[1])
        self.last_at = max(at, self.last_at)
        return self.last_at
