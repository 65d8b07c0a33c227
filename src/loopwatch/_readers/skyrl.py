"""SkyRL's rollout dumps: `trainer.dump_eval_results`, `{export_path}/dumped_evals/*/{data_source}.jsonl`.

Each line is one rollout, as SkyRL writes it (`dump_per_dataset_eval_results`):
`input_prompt` and `output_response` (decoded with the special tokens kept, so the turns
are `<|im_start|>role ... <|im_end|>`), `score`, `stop_reason`, `env_class`, `env_extras`,
`data_source`. One session a line (`FILE:LINE`); the turns are read as `_rollout_text`
says (a SkyRL-Gym environment's action tags, `<search>`, `<sql>`, are tool calls named so);
`source_ref` is `line L turn N`. `aggregated_results.jsonl`, the metrics beside them, is
not a transcript.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from .base import Session
from .jsonio import head_objects
from .verl import rollout_lines

__all__ = ["NAME", "read", "sniff"]

NAME = "skyrl"
_KEYS = frozenset({"input_prompt", "output_response"})


def sniff(path: str, head: bytes) -> bool:
    first = head_objects(head, 1)
    return bool(first) and _KEYS <= first[0].keys() and isinstance(first[0].get("output_response"), str)


def read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]:
    """One session per rollout line. Raises ReadError when no line is a SkyRL rollout."""
    yield from rollout_lines(path, stream, NAME, "output_response", _KEYS)
