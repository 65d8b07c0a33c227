"""A `Finding`: what one signal saw, and how sure it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .messages import Message

__all__ = ["GRADES", "PROOF", "SUSPICION", "Finding"]

#: The two grades of evidence. Proof (the identical call with the identical result,
#: in a row; the identical rejected edit resubmitted) may end a run on its own.
#: Suspicion (varied calls meeting the same error, near-identical calls, corrections,
#: churn, chanting, repeated output lines) nudges, and climbs past the nudge only when
#: corroborated (see `policy`).
PROOF = "proof"
SUSPICION = "suspicion"
GRADES = (PROOF, SUSPICION)


class Finding(NamedTuple):
    """One signal's report about one streak.

    `severity` is the streak's strength as a fraction of the signal's threshold:
    0.5 is half-way (worth a warning), 1.0 or more is conclusive. `key` identifies the
    streak (the same pattern keeps the same key while it continues), so the policy can
    climb one ladder per streak. `can_stop` is False for signals whose evidence is too
    thin to end a run (they may warn and nudge only). `grade` is `PROOF` or
    `SUSPICION`; empty means "the grade of the signal that made it" (the monitor fills
    it in from `Signal.grade`), so a signal sets a per-finding grade only where its
    evidence varies (echo: identical rejected calls are proof, near-identical ones are
    not).

    Times are event times in seconds (the caller's monotonic clock); `started_index`
    and `index` count tool calls from 1. `tools` lists the tool names involved, the
    most repeated first.

    `message` says what was seen, as data: its kind (a class of `messages`) and its
    arguments (names, counts, seconds). `description` (for a person) and `hint` (what
    the model should do instead) are rendered from it, in `messages` only.
    """

    signal: str
    severity: float
    key: int
    message: Message
    repeats: int = 0
    period: int = 0
    tools: tuple[str, ...] = ()
    started_at: float = 0.0
    at: float = 0.0
    started_index: int = 0
    index: int = 0  # type: ignore[assignment]  # shadows tuple.index(): the field name is public API
    can_stop: bool = True
    can_block: bool = True
    source_ref: str | None = None
    grade: str = ""

    @property
    def description(self) -> str:
        """The finding as a person reads it: "the same 4-step action cycle ... repeated
        5 times over 9m14s"."""
        return self.message.text()

    @property
    def hint(self) -> str:
        """What the model should do instead."""
        return self.message.hint()

    @property
    def conclusive(self) -> bool:
        return self.severity >= 1.0
