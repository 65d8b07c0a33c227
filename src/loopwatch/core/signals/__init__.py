"""The signals, one module each. `SIGNALS` maps each name to its class, in the order
they are consulted."""

from __future__ import annotations

from typing import Any

from .apology import Apology
from .base import Signal
from .chanting import Chanting
from .churn import Churn
from .correction import CorrectionSignal
from .cycle import Cycle
from .echo import Echo
from .repeat import Repeat
from .repeated_lines import RepeatedLines
from .retry_storm import RetryStorm
from .reverify import Reverify
from .same_error import SameError
from .stagnation import Stagnation
from .text_only import TextOnly
from .unchanged import Unchanged
from .wedged import Wedged

__all__ = ["SIGNALS", "Signal"]

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
