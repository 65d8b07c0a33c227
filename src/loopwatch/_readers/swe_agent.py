"""SWE-agent `.traj` files (0.x and 1.x), and the CodeR multi-agent variant of them.

One JSON object; `trajectory[]` holds the steps (`action`, `observation`, `thought`;
1.x adds `response`, `execution_time`, a dict `state`, the `query` sent to the model
and `extra_info`, and its `history` messages carry `message_type` and `agent: "main"`).
Each step becomes a `ToolCall` with `source_ref = "trajectory[i]"` (0-based). The tool
name is the ACI command (`edit`, `open`, `find_file`, 1.x's `str_replace_editor`, ...)
or `bash` for a shell command; the input is the whole action text. The format records
no error flag and no changed files, so both are read from the observation: a failure
by its wording (`command not found`, `Your proposed edit has introduced new syntax
error`, the editor's `No replacement was performed`, 1.x refusing an interactive
command, ...), a write by an `edit`/`create` that applied, or a `str_replace_editor`
`create`, `str_replace`, `insert` or `undo_edit` that did (the file it names). There are
no timestamps (one second per step).

The synthetic last entry (`exit_cost`, `exit_format`, ... with `Exited`) is an exit,
not an action. In CodeR files the sub-agent of each step (Manager, Reproducer, ...) is
in `history[]`; it is reported as `ToolCall.agent`, and a sub-agent's own `exit_cost`
inside the trajectory is skipped like the final one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from .._core.events import ToolCall
from ._common import empty_search, load_json, mapping_at, shell_error, shell_writes
from .base import ReadError, Session
from .jsonio import keys_at

__all__ = ["NAME", "read", "sniff"]

NAME = "swe-agent"

#: the top-level keys of a trajectory (0.x, a few with `messages`; 1.x's `replay_config`)
_TOP = frozenset({"environment", "trajectory", "history", "info", "messages", "replay_config"})
_EXITS = {"exit_cost", "exit_context", "exit_format", "exit_error", "exit_api", "exit"}
_ACI = {
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "create",
    "edit",
    "search_dir",
    "search_file",
    "find_file",
    "submit",
    "plan",
    "succeed",
    "fail",
    "insert",
    "append",
    "str_replace_editor",
    "filemap",
    "skip",
}
_REJECTED = "Your proposed edit has introduced new syntax error"
#: SWE-agent 1.x's `str_replace_editor`: the commands that write, and its replies when
#: nothing was done (the edit tool's own wording).
_EDITOR_WRITES = frozenset({"create", "str_replace", "insert", "undo_edit"})
_EDITOR_REFUSED = re.compile(
    r"^(?:No replacement was performed|The path \S.* (?:does not exist|is not an absolute path|is a directory)"
    r"|File already exists at:|Invalid `\w+` parameter|Parameter `\w+` is required|No edit history found)"
)
#: 1.x's bash tool refusing a command it would hang on (`vim`, `python` with no script).
_NOT_SUPPORTED = re.compile(r"^Operation '.*' is not supported by this environment\.", re.DOTALL)


def sniff(path: str, head: bytes) -> bool:
    """One JSON document with a top-level `trajectory` whose steps have an `action`
    and an `observation`, by structure (not words a session's text may hold)."""
    text = head.lstrip()
    if text[:1] != b"{":
        return False
    top = set(keys_at(text, 1))
    if not top or top - _TOP:
        return False  # another document; JSON Lines name all their lines' keys at depth 1
    if "trajectory" in top and {"action", "observation"} <= set(keys_at(text, 3)):  # trajectory[i]'s keys
        return True
    return path.endswith(".traj") and "messages" not in top  # the head may end before the first step's keys


def tool_name(action: str) -> str:
    word = action.strip().split(None, 1)[0] if action.strip() else ""
    return word if word in _ACI else "bash"


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    data = load_json(path, stream)
    if not isinstance(data, dict) or not isinstance(data.get("trajectory"), list):
        raise ReadError("not a SWE-agent trajectory: no trajectory[] list")
    trajectory = data["trajectory"]
    agents = _agents(data.get("history"), len(trajectory))
    info = mapping_at(data, "info")
    stats = mapping_at(info, "model_stats")
    tokens = _int(stats.get("tokens_sent"), 0) + _int(stats.get("tokens_received"), 0) or None
    cost = stats.get("instance_cost") if isinstance(stats.get("instance_cost"), (int, float)) else None
    steps = len(trajectory) or 1
    session = Session(
        format=NAME,
        session=_stem(path),
        events=(),
        tokens=tokens,
        cost=cost,
        outcome=info.get("exit_status"),
        meta={"coder": agents is not None},
    )
    step_of: dict[str, int] = {}
    session.meta["step_of"] = step_of
    # Per-step cost is not recorded: spread the total evenly for "saved" figures.
    per_tokens = tokens // steps if tokens else None
    per_cost = cost / steps if cost else None
    session.events = _events(trajectory, agents, step_of, per_tokens, per_cost, session.skipped)
    yield session


def _events(
    trajectory: list[Any],
    agents: list[Any] | None,
    step_of: dict[str, int],
    tokens: int | None,
    cost: float | None,
    skipped: list[str],
) -> Iterator[ToolCall]:
    open_file = None
    for i, entry in enumerate(trajectory):
        ref = f"trajectory[{i}]"
        if not isinstance(entry, dict):
            skipped.append(f"{ref}: not an object")
            continue
        action = entry.get("action")
        observation = entry.get("observation")
        if not isinstance(action, str):
            skipped.append(f"{ref}: no action text")
            continue
        observation = observation if isinstance(observation, str) else ""
        if action.strip() in _EXITS or observation.startswith("Exited"):
            continue
        open_file = _open_file(entry.get("state")) or open_file
        name = tool_name(action)
        error = (
            shell_error(observation)
            or (name == "bash" and empty_search(action, observation))
            or _NOT_SUPPORTED.match(observation) is not None
            or (name == "str_replace_editor" and _EDITOR_REFUSED.match(observation) is not None)
        )
        changed: tuple[str, ...] = ()
        if name in ("edit", "insert", "append", "create") and not observation.startswith(_REJECTED) and not error:
            changed = (open_file or "?",)
        elif name == "str_replace_editor" and not error:
            changed = _editor_writes(action)
        elif name == "bash" and not error and shell_writes(action):
            changed = ("?",)
        step_of[ref] = i + 1
        yield ToolCall(
            name=name,
            input={"command": action},
            result=observation,
            error=error,
            changed=changed,
            agent=agents[i] if agents is not None and i < len(agents) else None,
            source_ref=ref,
            tokens=tokens,
            cost=cost,
        )


def _editor_writes(action: str) -> tuple[str, ...]:
    """The file a `str_replace_editor` command that writes names (`create PATH ...`)."""
    words = action.split(None, 3)
    if len(words) >= 3 and words[1] in _EDITOR_WRITES:
        return (words[2],)
    return ()


def _agents(history: Any, steps: int) -> list[Any] | None:
    """CodeR: the agent of each assistant turn, in trajectory order; None for SWE-agent
    (whose one agent is `primary` in 0.x, `main` in 1.x)."""
    if not isinstance(history, list):
        return None
    turns = [h for h in history if isinstance(h, dict) and h.get("role") == "assistant" and not h.get("is_demo")]
    names = [t.get("agent") for t in turns]
    if not any(n and n not in ("primary", "main") for n in names):
        return None
    return names if len(names) == steps else None


def _open_file(state: Any) -> str | None:
    """The file open in the ACI's window after a step: from the state, a JSON text in
    0.x, an object in 1.x."""
    if isinstance(state, dict):
        value = state.get("open_file")
        return value if isinstance(value, str) and value not in ("n/a", "") else None
    if isinstance(state, str) and '"open_file"' in state:
        import orjson

        try:
            value = orjson.loads(state).get("open_file")
        except (orjson.JSONDecodeError, AttributeError):
            return None
        return value if isinstance(value, str) and value not in ("n/a", "") else None
    return None


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.split(".traj")[0] if ".traj" in name else name
