"""verl's rollout dumps: `trainer.rollout_data_dir` (and `validation_data_dir`), one `{step}.jsonl` a step.

Each line is one rollout, as verl's trainer writes it (`_dump_generations`): `input` (the
prompt, decoded), `output` (the response, decoded with the special tokens skipped: the
model's turns, its `<tool_call>` blocks and the `<tool_response>` answers of a multi-turn
rollout), `gts`, `score` (the rollout's reward), `step`, and the reward function's extra
fields (`request_id` among them when the agent loop set it). One session a line, named by
`request_id`, else `FILE:LINE`; its `score` and `step` are kept in `Session.meta`. The
turns are read as `_rollout_text` says; `source_ref` is `line L turn N`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from . import _rollout_text
from .base import ReadError, Session
from .jsonio import JsonLines, head_objects, session_name

__all__ = ["NAME", "read", "sniff"]

NAME = "verl"
_KEYS = frozenset({"input", "output", "score"})


def sniff(path: str, head: bytes) -> bool:
    first = head_objects(head, 1)
    return bool(first) and _KEYS <= first[0].keys() and isinstance(first[0].get("output"), str)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """One session per rollout line. Raises ReadError when no line is a verl rollout."""
    yield from rollout_lines(path, stream, NAME, "output", _KEYS)


def rollout_lines(path: str, stream: BinaryIO | None, name: str, field: str, keys: frozenset[str]) -> Iterator[Session]:
    """Sessions of a JSON Lines file of decoded rollouts, the response text under `field`
    (verl's and SkyRL's dumps differ in their keys only)."""
    skipped: list[str] = []
    found = False
    for number, record in JsonLines(path, stream, skipped):
        text = record.get(field)
        if not keys <= record.keys() or not isinstance(text, str):
            skipped.append(f"line {number}: not a {name} rollout (no `{field}` text)")
            continue
        found = True
        rid = record.get("request_id") or record.get("uid")
        session = Session(name, str(rid) if isinstance(rid, str | int) else f"{session_name(path)}:{number}", ())
        session.meta.update(line=number, **{k: record[k] for k in ("score", "step") if _plain(record.get(k))})
        session.events = _rollout_text.events(_rollout_text.messages(text), f"line {number} turn ")
        session.skipped.extend(skipped)
        skipped.clear()
        yield session
    if not found:
        raise ReadError(f"not a {name} rollout dump{f' ({skipped[0]})' if skipped else ''}")


def _plain(value: Any) -> bool:
    return isinstance(value, int | float | str) and not isinstance(value, bool)
