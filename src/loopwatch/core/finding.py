"""A `Finding`: what one signal saw, and how sure it is."""

from __future__ import annotations

from typing import NamedTuple

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
    most repeated first. `hint` is what the model should do instead.
    """

    signal: str
    severity: float
    key: int
    description: str
    repeats: int = 0
    period: int = 0
    tools: tuple[str, ...] = ()
    started_at: float = 0.0
    at: float = 0.0
    started_index: int = 0
    index: int = 0
    can_stop: bool = True
    can_block: bool = True
    hint: str = ""
    source_ref: str | None = None
    grade: str = ""

    @property
    def conclusive(self) -> bool:
        return self.severity >= 1.0
