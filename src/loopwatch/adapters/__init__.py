"""Guards for agent frameworks, one module each, each an optional extra.

    loopwatch.adapters.langchain       pip install 'loopwatch[langchain]'
    loopwatch.adapters.openai_agents   pip install 'loopwatch[openai-agents]'
    loopwatch.adapters.pydantic_ai     pip install 'loopwatch[pydantic-ai]'
    loopwatch.adapters.mcp_proxy       pip install 'loopwatch[mcp]'   (`loopwatch mcp-proxy`)
    loopwatch.adapters.otel            pip install 'loopwatch[otel]'
    loopwatch.adapters.claude_agent_sdk  pip install 'loopwatch[claude-agent-sdk]'

Each speaks its framework's own protocol for nudging, blocking and stopping, over one
`loopwatch.Guard`. Importing this package imports no framework; importing an adapter
imports its framework, and says which extra to install if it is missing.
"""

from __future__ import annotations

__all__ = ["LoopStopped"]


class LoopStopped(RuntimeError):
    """Raised where a framework ends a run by an exception: loopwatch stopped it.

    `reason` is for a person ("the same Bash call returned the same result 4 times in a
    row over 1m12s"); `decision` is the guard's `Decision`."""

    def __init__(self, reason: str, decision: object = None) -> None:
        from .._core.messages import Stopped

        super().__init__(Stopped(reason).for_person())
        self.reason = reason
        self.decision = decision
