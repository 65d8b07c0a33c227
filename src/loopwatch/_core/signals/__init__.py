"""The signals, one module each. `SIGNALS` maps each name to its class, in the order
they are consulted; `register` adds a signal of your own after them."""

from __future__ import annotations

from typing import Any, TypeVar

from ..finding import GRADES
from .apology import Apology
from .base import Signal
from .chanting import Chanting
from .churn import Churn
from .correction import CorrectionSignal
from .cycle import Cycle
from .echo import Echo
from .params import SignalParams
from .repeat import Repeat
from .repeated_lines import RepeatedLines
from .retry_storm import RetryStorm
from .reverify import Reverify
from .same_error import SameError
from .stagnation import Stagnation
from .text_only import TextOnly
from .unchanged import Unchanged
from .wedged import Wedged

__all__ = ["SIGNALS", "Signal", "register"]

SIGNALS: dict[str, type[Signal[Any]]] = {
    cls.name: cls
    for cls in (
        Repeat,
        Cycle,
        Stagnation,
        Churn,
        Echo,
        SameError,
        CorrectionSignal,
        Apology,
        RepeatedLines,
        RetryStorm,
        Chanting,
        Wedged,
        TextOnly,
        Unchanged,
        Reverify,
    )
}


S = TypeVar("S", bound=type[Signal[Any]])


def register(cls: S) -> S:
    """Add a signal class of your own to `SIGNALS` (usable as a class decorator).

    Every monitor made afterwards in this process consults it, after the built-in
    signals and under the same policy, and a configuration may set its thresholds
    (`[signals.NAME]`); a configuration made before it was registered gives it its
    defaults. The hook runs in its own process and never imports your code, so it
    does not see it. A name is registered once."""
    if not (isinstance(cls, type) and issubclass(cls, Signal)):
        raise TypeError(f"register: expected a Signal subclass, got {cls!r}")
    if not cls.name or cls.name in SIGNALS:
        raise ValueError(f"register: {cls.__name__} needs a name of its own, not {cls.name!r}")
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and issubclass(params, SignalParams)):
        raise TypeError(
            f"register: {cls.__name__} needs its Params, a SignalParams (`class {cls.__name__}(Signal[P])`)"
        )
    if cls.grade not in GRADES:
        raise ValueError(f"register: {cls.__name__}.grade is {cls.grade!r}, not one of {', '.join(GRADES)}")
    SIGNALS[cls.name] = cls
    return cls
