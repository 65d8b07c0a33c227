"""What every transcript reader yields: `Session`s of core events.

A reader module exposes:
- `NAME`: the format's name (`swe-agent`, `claude-code`, ...), as `--format` takes it;
- `sniff(path: str, head: bytes) -> bool`: does this file look like the format? `head`
  is the file's first 64 KiB (may be cut mid-line);
- `read(path: str, stream: BinaryIO | None = None) -> Iterator[Session]`: the sessions in
  the file, each with its events in order. Readers of JSON Lines stream the file line by
  line (never load it whole) and skip a broken line, counting it in `Session.skipped`.

Every event carries `source_ref`, pointing back into the file in the format's own form
(`trajectory[4]`, `messages[7]`, `steps[2]`, `line 12`, 1-based lines), and `at`: the
file's own timestamps where it has them (seconds, any origin), else None (the monitor
then counts one second per event).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReadError", "Session"]


class ReadError(Exception):
    """The file cannot be read as this format; the message says why, for a person."""


@dataclass
class Session:
    """One recorded session.

    `events` is an iterable consumed once. `session` is an id from the file, or the
    file's stem. `tokens` and `cost` are the session's totals where the format records
    them; per-step figures ride on the events (`ToolCall.tokens`, `ToolCall.cost`).
    `skipped` lists human messages about lines that could not be read
    (`line 17: not JSON`); it may grow while `events` is consumed.
    """

    format: str
    session: str
    events: Iterable[Any]
    tokens: int | None = None
    cost: float | None = None
    outcome: str | None = None
    skipped: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.events)
