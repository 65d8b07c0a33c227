"""Which agent a call is of, for a host whose payloads do not say (`Host.spawn_tools`).

Gemini CLI runs a sub-agent inside one tool call of its main agent (`invoke_agent`),
under the same session id, and no payload names the agent. What tells the calls apart
is when they come (Gemini CLI 0.58.0 and 0.61.0, its scheduler and the real-client
tests):

- a sub-agent runs between the before and the after event of the call that runs it;
- the calls of one model turn are all checked first (their before events) and none of
  them runs until every check is done. So the main agent's other calls of the turn that
  runs a sub-agent were stamped (`Payload.stamp`, the host's clock) before the hook
  answering the spawning call recorded it, and the sub-agent's first call is stamped
  after that hook answered (and after a model turn of the sub-agent's own);
- the main agent waits for the sub-agent: it makes no new call while one runs, and a
  sub-agent has no tool to run another;
- a finishing tool (`Host.finish_tools`, `complete_task`) exists only in a sub-agent.

So, while a sub-agent runs, a call stamped after it was recorded is the sub-agent's;
one stamped earlier is the main agent's (a parallel call of the same turn). A call's
after event goes to the agent its before event went to (matched by tool and input).
Sub-agents running at once (several spawning calls in one turn) share one key: their
calls cannot be told apart, so they are watched as one agent. A new prompt or the end of
the main agent's turn means none runs any more.

Kept in the main agent's state (`SessionState.spawns`): digests, keys and times only.
"""

from __future__ import annotations

__all__ = ["Spawns"]

#: Sub-agent calls remembered until their after event (a refused call has none).
_MAX_PENDING = 256


class Spawns:
    """The sub-agents running now in one session (see the module docstring)."""

    def __init__(self) -> None:
        self.running: list[list[object]] = []  # [digest of the spawning call, wall time recorded]
        self.key = ""  # the running sub-agents' agent key ("" when none runs)
        self.started = 0  # how many keys were handed out in this session
        self.pending: list[list[str]] = []  # [digest, key] of sub-agent calls not yet reported

    def before(self, digest: str, stamp: float | None, *, spawn: bool, finish: bool) -> str:
        """The agent of a call about to run ("" for the main agent)."""
        if not self.running:
            return ""
        since = min(float(at) for _, at in self.running)  # type: ignore[arg-type]
        later = stamp is None or stamp > since
        if spawn and later:
            # Only the main agent spawns, and it waits while a sub-agent runs: what was
            # recorded is stale (its after event never came).
            self.clear()
            return ""
        if finish or later:
            self.pending.append([digest, self.key])
            del self.pending[:-_MAX_PENDING]
            return self.key
        return ""

    def spawned(self, digest: str, now: float) -> str:
        """A spawning call of the main agent was let run (now, wall time): the key its
        sub-agent's calls go to."""
        if not self.running:
            self.started += 1
            self.key = f"sub-agent-{self.started}"
        self.running.append([digest, now])
        return self.key

    def after(self, digest: str, *, spawn: bool) -> tuple[str, str | None]:
        """The agent of a call that ran, and for a spawning call the key of the sub-agent
        it ran (None when it was not recorded)."""
        if spawn:
            for i, (running, _) in enumerate(self.running):
                if running == digest:
                    key = self.key
                    del self.running[i]
                    if not self.running:
                        self.clear()
                    return "", key
            return "", None
        for i, (pending, key) in enumerate(self.pending):
            if pending == digest:
                del self.pending[i]
                return key, None
        return "", None

    def clear(self) -> None:
        """No sub-agent runs any more."""
        self.running.clear()
        self.pending.clear()
        self.key = ""
