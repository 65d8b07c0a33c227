"""mini-swe-agent `.traj.json` files (`trajectory_format: "mini-swe-agent-1"`).

`messages[]` is a plain chat. The action is the one ```` ```bash ```` block of an
assistant message; its observation is the next user message
(`<returncode>N</returncode><output>...</output>`), and a non-zero return code is a
failure. A user message starting "Please always provide EXACTLY ONE action" is a
harness correction, not an observation. `source_ref = "messages[i]"`, the index of the
assistant message in `messages[]`; `Session.meta["step_of"]` maps it to the 1-based
assistant ordinal that labels use. Times come from each response's `created`; tokens
and cost from its `usage`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import Correction, ModelText, Turn
from ._common import load_json, mapping_at, shell_call
from .base import ReadError, Session
from .jsonio import keys_at, number_of, tokens_of

__all__ = ["CORRECTIONS", "NAME", "bash_block", "read", "sniff"]

NAME = "mini-swe-agent"

_BLOCK = re.compile(r"```(?:bash|sh)?\s*\n(.*?)\n?```", re.DOTALL)
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)  # mini-swe-agent's own action_regex
#: the top-level keys of a trajectory
_TOP = frozenset({"info", "messages", "trajectory_format", "instance_id"})
#: how the harness starts its rejection of a reply that is not exactly one action
CORRECTIONS = ("Please always provide EXACTLY ONE action", "Please always provide exactly one action")


def sniff(path: str, head: bytes) -> bool:
    """One JSON document whose top-level keys are a trajectory's, by structure: a
    session's text that only mentions mini-swe-agent is not one."""
    text = head.lstrip()
    if text[:1] != b"{":
        return False
    top = set(keys_at(text, 1))
    if not top or top - _TOP:
        return False  # another document; JSON Lines name all their lines' keys at depth 1
    if "trajectory_format" in top or "mini_version" in keys_at(text, 2):  # info.mini_version
        return True
    if "messages" in top:
        return b"<returncode>" in text  # its observation template, in the messages
    return path.endswith(".traj.json")  # only `info` seen: the head may be all patch text


def bash_block(text: str) -> str | None:
    """The action of an assistant message: its one ```` ```bash ```` block, as the
    harness reads it (mini-swe-agent's `action_regex`, exactly one match), so an
    unlabelled code block quoted in the thought does not hide the action (12% of the
    executed steps of the gemini-3-pro run were lost that way); else its one fenced
    block of any kind."""
    labelled = _BASH_BLOCK.findall(text)
    if len(labelled) == 1:
        block: str = labelled[0]  # one group: findall gives its text
        return block.strip()
    if labelled:
        return None  # several actions: the harness rejects the message
    blocks = _BLOCK.findall(text)
    return blocks[0].strip() if len(blocks) == 1 else None


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    data = load_json(path, stream)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise ReadError("not a mini-swe-agent trajectory: no messages[] list")
    info = mapping_at(data, "info")
    stats = mapping_at(info, "model_stats")
    session = Session(
        format=NAME,
        session=str(data.get("instance_id") or path.rsplit("/", 1)[-1].split(".traj")[0]),
        events=(),
        cost=number_of(stats, "instance_cost"),
        outcome=info.get("exit_status"),
    )
    step_of: dict[str, int] = {}
    session.meta["step_of"] = step_of
    session.events = _events(data["messages"], step_of, session)
    yield session


def _events(messages: list[Any], step_of: dict[str, int], session: Session) -> Iterator[Any]:
    ordinal = 0
    total_tokens = 0
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        ordinal += 1
        ref = f"messages[{i}]"
        step_of[ref] = ordinal
        content = _text(message.get("content"))
        at, tokens, cost = _usage(message.get("extra"))
        if tokens:
            total_tokens += tokens
        reply = messages[i + 1] if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
        observation = _text(reply.get("content")) if reply is not None and reply.get("role") == "user" else None
        yield ModelText(content, at=at, source_ref=ref)
        yield Turn(at=at, tokens=tokens, cost=cost, source_ref=ref)
        if observation is not None and observation.lstrip().startswith(CORRECTIONS):
            yield Correction(observation.split("\n", 1)[0], at=at, source_ref=ref)  # the rejected step
            continue
        command = bash_block(content)
        if command is None or observation is None:
            continue
        yield shell_call(command, observation, ref, at=at, tokens=tokens, cost=cost)
    session.tokens = total_tokens or None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _usage(extra: Any) -> tuple[float | None, int | None, float | None]:
    response = extra.get("response") if isinstance(extra, dict) else None
    if not isinstance(response, dict):
        return None, None, None
    created = response.get("created")
    usage = mapping_at(response, "usage")
    tokens = tokens_of(usage, "prompt_tokens", "completion_tokens")  # a wrong-typed field is dropped
    cost = number_of(usage, "cost")
    at = float(created) if isinstance(created, (int, float)) and not isinstance(created, bool) else None
    return at, tokens or None, cost
