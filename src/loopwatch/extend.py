"""What you need to write a signal of your own, in one place.

For people who build harnesses and want loopwatch to watch for a kind of circling it
does not know (a deploy repeated with nothing changed, a tool of their own called in a
ring). A signal is a `Signal` subclass with a name, a grade (`PROOF` may stop a run on
its own, `SUSPICION` nudges until corroborated) and its thresholds, a `SignalParams`
whose fields carry their rules (`Count`, `Seconds`, ...). It is fed digested
observations (a `Step` per tool call, a `Line` per output line) and returns a `Finding`
while its streak lasts, worded by a `Message` subclass of your own. Then either:

- `register(MySignal)`: every `Monitor` made afterwards in this process consults it,
  and a configuration may set its thresholds under `[signals.NAME]`; or
- `Monitor(extra_signals=[MySignal(MyParams())])`: one monitor only, params given.

A transcript format loopwatch does not read is a reader module of your own (`NAME`,
`sniff(path, head)`, `read(path, stream=None)` yielding `Session`s of events):
`register_reader("my-format", "mypackage.myreader")` makes `scan`, `evaluate` and
`calibrate` in this process read it.

What this module is not: the way to use loopwatch (that is `loopwatch`: `Monitor`,
`Guard`, the events), nor a way to change the built-in signals or their wording (their
thresholds are set in configuration). The hook (`loopwatch hook`) runs in its own
process and never imports your code: a registered signal serves in-process monitors
(`Monitor`, `Guard`, the framework adapters).

    from loopwatch.extend import PROOF, Count, Finding, Message, Signal, SignalParams, Step, register

    class Redeployed(Message):
        template = "deployed {count} times without a change in between"

        def __init__(self, count: int) -> None:
            self.count = count

    class Params(SignalParams):
        #: deploys in a row, nothing written between them, that earn the nudge
        threshold: Count = 2

    @register
    class Redeploy(Signal[Params]):
        name = "redeploy"
        grade = PROOF
        ...
"""

from __future__ import annotations

from ._core.finding import GRADES, PROOF, SUSPICION, Finding
from ._core.lines import Line
from ._core.messages import Message
from ._core.signals import Signal, register
from ._core.signals.params import AtLeast, Below, Between, Count, Fraction, Rule, Seconds, SignalParams, Size
from ._core.step import Step
from ._readers import register as register_reader
from ._readers.base import Session

__all__ = [
    "GRADES",
    "PROOF",
    "SUSPICION",
    "AtLeast",
    "Below",
    "Between",
    "Count",
    "Finding",
    "Fraction",
    "Line",
    "Message",
    "Rule",
    "Seconds",
    "Session",
    "Signal",
    "SignalParams",
    "Size",
    "Step",
    "register",
    "register_reader",
]
