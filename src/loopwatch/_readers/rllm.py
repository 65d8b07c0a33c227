"""rLLM's episode JSON: `EpisodeLogger`, `{episode_log_dir}/episodes/{mode}_step_{S}_epoch_{E}/episode_*.json`.

One file is one episode, as rLLM's `EpisodeLogger.log_episode` writes it: `episode_id`,
`task`, `is_correct`, `termination_reason`, `metrics`, and `trajectories`, each with
`name`, `uid`, `reward` and `steps` (`observation`, `thought`, `action`, `reward`, `done`,
`model_response`, `chat_completions`). Each trajectory is a session (`EPISODE/NAME`, or
`EPISODE` alone when there is one), with the outcome `resolved` or `unresolved` from
`is_correct`.

A step's `chat_completions` is the conversation up to and including the model's reply;
when each step's extends the previous one (rLLM's agents keep one growing history),
the last step's list is the whole trajectory. Otherwise each step is its observation
(a user turn, from the second step on) and its last assistant message (else its
`model_response`). Turns are read as `_rollout_text` says (structured `tool_calls` and
`<tool_call>` text alike); `source_ref` is `steps[S]` or, for one history, `messages[N]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any, BinaryIO

from . import _rollout_text
from ._common import load_json
from .base import ReadError, Session
from .jsonio import keys_at, session_name

__all__ = ["NAME", "read", "sniff"]

NAME = "rllm"


def sniff(path: str, head: bytes) -> bool:
    text = head.lstrip()
    if not text.startswith(b"{") or b'"trajectories"' not in text:
        return False
    top = set(keys_at(text, 1))
    return "trajectories" in top and bool({"episode_id", "is_correct", "termination_reason"} & top)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """One session per trajectory of the episode. Raises ReadError when the file is not one."""
    data = load_json(path, stream)
    if not isinstance(data, dict) or not isinstance(data.get("trajectories"), list):
        raise ReadError("not an rLLM episode (expected an object with `trajectories`)")
    episode = data.get("episode_id") or data.get("id") or session_name(path)
    correct = data.get("is_correct")
    trajectories = [t for t in data["trajectories"] if isinstance(t, dict)]
    if not trajectories:
        raise ReadError("an rLLM episode with no trajectory")
    for index, trajectory in enumerate(trajectories):
        name = trajectory.get("name") if isinstance(trajectory.get("name"), str) else str(index)
        session = Session(NAME, str(episode) if len(trajectories) == 1 else f"{episode}/{name}", ())
        if isinstance(correct, bool):
            session.outcome = "resolved" if correct else "unresolved"
        if isinstance(trajectory.get("reward"), int | float):
            session.meta["reward"] = trajectory["reward"]
        steps = trajectory.get("steps")
        session.events = _events(steps if isinstance(steps, list) else [], session)
        yield session


def _events(steps: list[Any], session: Session) -> Iterator[Any]:
    histories: list[Any] = [s.get("chat_completions") for s in steps if isinstance(s, dict)]
    if (
        histories
        and len(histories) == len(steps)
        and all(isinstance(h, list) for h in histories)
        and _growing(histories)
    ):
        yield from _rollout_text.events(histories[-1], "messages")
        return
    turns: list[Any] = []
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            session.skipped.append(f"steps[{index}]: not a step object")
            continue
        observation = step.get("observation")
        if index and isinstance(observation, str) and observation.strip():
            turns.append({"role": "user", "content": observation})
        history = step.get("chat_completions")
        reply = (
            next(
                (m for m in reversed(history) if isinstance(m, dict) and m.get("role") == "assistant"),
                None,
            )
            if isinstance(history, list)
            else None
        )
        if reply is None and isinstance(step.get("model_response"), str):
            reply = {"role": "assistant", "content": step["model_response"]}
        if reply is not None:
            turns.append(reply)
    yield from _rollout_text.events(turns, "steps")


def _growing(histories: list[list[Any]]) -> bool:
    return all(len(b) >= len(a) and b[: len(a)] == a for a, b in pairwise(histories))
