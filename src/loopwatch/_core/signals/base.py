"""The shape every signal has.

A signal watches one kind of circling. It is fed digested observations (never raw
content), keeps a bounded state, and after each observation it handles returns its
current `Finding` for the streak in progress, or None when there is none. Returning the
finding on every observation while the streak lasts is what lets the policy climb one
ladder per streak, and drop the ladder when the streak ends.

Signals read no clock: times come in with the observations.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Generic, TypeVar

from ..finding import PROOF, Finding
from ..lines import Line
from ..step import Step
from .params import SignalParams

__all__ = ["Signal", "SignalParams"]

P = TypeVar("P", bound=SignalParams)


class Signal(Generic[P]):
    """Base class: override the `on_*` methods the signal needs.

    `name` is the signal's name in configuration and records; `Params` its
    thresholds, a `SignalParams` (every field documented with its reason, and its
    range declared: `signals.params`), given as the base's argument,
    `class Repeat(Signal[Params])`, so that `self.params` has that type and
    `Repeat.Params` is set; `can_stop` and `can_block` say whether its
    evidence may end a run or block a call. What a finding says is a message class of
    `loopwatch._core.messages` (its wording lives there, not in the signal).

    `grade` is the grade of its evidence, a plain class attribute (a str):
    `"proof"` (`finding.PROOF`) when what it counts cannot happen in a run that is
    making progress (the identical call getting the identical result, in a row; the
    identical rejected edit resubmitted): such a streak may stop the run on its own;
    `"suspicion"` (`finding.SUSPICION`) when healthy runs show the same
    shape now and then (varied calls meeting the same error, near-identical calls,
    corrections, churn, chanting, repeated output lines): it nudges, and climbs past
    the nudge only when the policy finds it corroborated (by a second signal, or by the
    streak going on unchanged for `evidence.confirm` rounds past the nudge with no new
    success in between). The base class says proof, so that a signal's grade is what
    its own file declares; every signal whose evidence is less than proof must set
    `grade = "suspicion"` in its class body::

        class RetryStorm(Signal):
            name = "retry_storm"
            grade = "suspicion"

    A finding may carry its own `grade` where the evidence varies within one signal;
    an empty `Finding.grade` takes the signal's. Each signal's docstring says its grade
    and why.
    """

    name: ClassVar[str] = ""
    Params: ClassVar[type[SignalParams]]
    can_stop: ClassVar[bool] = True
    can_block: ClassVar[bool] = True
    grade: ClassVar[str] = PROOF
    #: Its streak outlasts a user message (`reset` keeps it, as a terminal held by a
    #: program stays held when a harness says "please continue"): the policy keeps the
    #: streak's rungs and rounds across one too, so it nudges once and may climb.
    spans_user: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # `class Repeat(Signal[Params])` says the params type once; `Repeat.Params`
        # (what config and the hook's state look up) is taken from it.
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            if typing.get_origin(base) is Signal and "Params" not in cls.__dict__:
                (params,) = typing.get_args(base)
                if isinstance(params, type) and issubclass(params, SignalParams):
                    cls.Params = params

    def __init__(self, params: P) -> None:
        self.params: P = params

    # Observations. Each returns the finding for the current streak, or None.
    def on_step(self, step: Step) -> Finding | None:
        return None

    def on_text(self, apology: bool, at: float, index: int) -> Finding | None:
        """One whole model message: only whether it apologises is passed on."""
        return None

    def on_passage(self, passage: bytes, at: float, index: int) -> Finding | None:
        """One sentence-like passage of a streamed response, digested."""
        return None

    def on_line(self, line: Line, at: float, index: int) -> Finding | None:
        """One output line, digested (numbers masked, and as shown)."""
        return None

    def on_retry(self, at: float, index: int) -> Finding | None:
        return None

    def on_turn(self, at: float, index: int) -> Finding | None:
        return None

    def on_correction(self, message: bytes, at: float, index: int, invented: bool = False) -> Finding | None:
        """A harness correction, digested; `invented`: it refuses a tool that does not
        exist (the tool's name is in the message, so in the digest)."""
        return None

    def on_user(self, at: float, index: int) -> Finding | None:
        """A new user message (an automatic prompt of a harness, or a person), seen
        after every streak was reset; `index` counts the tool calls so far."""
        return None

    def reset_response(self) -> None:
        """A model response ended (for signals that watch within one response)."""

    def reset(self) -> None:
        """A new user message: forget every streak (calibration figures are kept)."""

    def predict(self, call: bytes) -> Finding | None:
        """Would a call with this digest continue a conclusive streak? For the
        pre-dispatch guard; only signals that can tell before the result say so."""
        return None

    def calibration(self) -> dict[str, Any]:
        """The figures a person needs to choose this signal's thresholds."""
        return {}
