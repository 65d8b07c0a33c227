"""Words: one class per kind of finding, and what the model is told.

As pyflakes does (`pyflakes.messages`): each kind of finding is a small class with its
`template`, the sentence a person reads, and its arguments, set by `__init__` as
attributes. The arguments are names, counts and seconds only (the tool names involved,
how many times, over how long), never a call's input, result or output, so a record may
keep them (`Message.args`) and anyone may word them again. The wording lives here and
nowhere else: a signal says *what* it saw by making a message; `Finding.description`
and `Finding.hint` render it; durations are worded by `duration`, one way everywhere.

What loopwatch says when it acts is worded here too, by a class per kind of act
(`Nudged`, `Blocked`, `StillCircling`, `Stopped`, `Warned`, `Unchecked`): `for_model`, what
the model reads (what it is circling, and what to do instead), and `for_person`, what the
person watching reads (a hook's `systemMessage` or `stopReason`, an exception). What the
model reads may also name the call being repeated, a short label built from the event at
hand (which the model has just written itself): that is passed in when the sentence is
made, never stored in a message. `loopwatch_said` tells loopwatch's refusals from other
text in a transcript, by the same classes.

What this does not do: decide anything. Severity, grade and what may stop belong to the
signal and the policy.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "MESSAGES",
    "ActionCycle",
    "Apologies",
    "Blocked",
    "Chant",
    "DoneAgain",
    "FewDistinct",
    "Guarded",
    "InventedTool",
    "Message",
    "MuchTheSame",
    "NothingNew",
    "Nudged",
    "PromptedOnly",
    "ProviderRetries",
    "RecurringError",
    "RepeatedOutput",
    "Said",
    "SameCorrection",
    "SameResult",
    "ShiftingCycle",
    "StillCircling",
    "Stopped",
    "StoppedAfter",
    "StuckTerminal",
    "UnchangedCheck",
    "Unchecked",
    "Warned",
    "duration",
    "label",
    "loopwatch_said",
    "tools_phrase",
    "without_told",
]

_LABEL_FIELDS = ("command", "cmd", "file_path", "path", "pattern", "query", "url")
_LABEL_MAX = 80

#: What a message's arguments may be: names, counts, seconds, flags, a few tool names.
Arg = str | int | float | bool | tuple[str, ...]


def label(name: str, value: Any) -> str:
    """A short label for a call: `pytest -x`, `Read a.py`, or the tool name."""
    text = None
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        for key in _LABEL_FIELDS:
            item = value.get(key)
            if isinstance(item, str) and item:
                text = item if key in ("command", "cmd") else f"{name} {item}"
                break
        commands = value.get("commands")  # a list of commands (Cline's run_commands)
        if text is None and isinstance(commands, list) and all(isinstance(c, str) for c in commands):
            text = "; ".join(commands)
    if not text:
        return name
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_MAX else text[: _LABEL_MAX - 1] + "…"


def duration(seconds: float) -> str:
    """`9m14s`, `2h03m`, `42s`: every duration loopwatch words, worded one way."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def tools_phrase(tools: tuple[str, ...]) -> str:
    return ", ".join(tools)


class Message:
    """One kind of finding: its wording (`template`, `hint_template`) and its arguments.

    A subclass declares its arguments in `__init__` (typed, each an attribute) and its
    `template`, a `str.format` template over them; `{over}` in a template stands for
    the span, " over 9m14s", or nothing under a second (`span` is an argument of
    every message that has one). A subclass whose wording depends on its arguments
    beyond a plain substitution overrides `fields`; one whose model-facing sentence
    may name the call overrides `for_model`.

    Messages are plain data: equal when their kind and arguments are, and stored as
    their attributes by the hook's state codec.
    """

    template: ClassVar[str] = ""
    hint_template: ClassVar[str] = "change your approach before trying again"

    @property
    def kind(self) -> str:
        """The message's name in records: its class name."""
        return type(self).__name__

    @property
    def args(self) -> dict[str, Arg]:
        """The arguments, as a record keeps them."""
        return dict(vars(self))

    def fields(self) -> dict[str, Any]:
        """What the templates are filled with: the arguments, and `over`."""
        out: dict[str, Any] = dict(vars(self))
        span = out.get("span")
        out["over"] = f" over {duration(span)}" if isinstance(span, (int, float)) and span >= 1 else ""
        return out

    def text(self) -> str:
        """The finding as a person reads it (`Finding.description`)."""
        return self.template.format(**self.fields())

    def hint(self) -> str:
        """What the model should do instead (`Finding.hint`)."""
        return self.hint_template.format(**self.fields())

    def for_model(self, call_label: str = "") -> str:
        """What the model is told it is circling; `call_label` names the call at hand."""
        return self.text()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), tuple(vars(self).items())))

    def __repr__(self) -> str:
        return f"{self.kind}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class _SameCall(Message):
    """A streak of one call: the model is told the call by its label."""

    count: int

    def for_model(self, call_label: str = "") -> str:
        if not call_label:
            return self.text()
        return f"you ran `{call_label}` {self.count} times and got the same result each time"


class SameResult(_SameCall):
    """`repeat`: the identical call getting the identical result, in a row."""

    template = "the same {tool} call returned the same result {count} times in a row{over}"
    hint_template = "read the result, then change the command, the code or the approach before running it again"

    def __init__(self, tool: str, count: int, span: float = 0.0) -> None:
        self.tool, self.count, self.span = tool, count, span


class MuchTheSame(_SameCall):
    """`echo`: (nearly) the same call getting much the same result, in a row."""

    template = "{alike} {tool} call got much the same result {count} times in a row{over}"
    hint_template = (
        "the result is not changing in substance; change what you do, not just its wording, before trying again"
    )

    def __init__(self, tool: str, count: int, identical: bool, span: float = 0.0) -> None:
        self.tool, self.count, self.identical, self.span = tool, count, identical, span

    def fields(self) -> dict[str, Any]:
        return super().fields() | {"alike": "the same" if self.identical else "nearly the same"}


class ActionCycle(Message):
    """`cycle`: a cycle of `period` actions repeated `count` times."""

    template = "the same {period}-step action cycle ({names}) repeated {count} times{again}{over}"
    hint_template = (
        "you have been doing these {period} things over and over with the same results; "
        "stop, say what you expected to change, and try a different approach"
    )

    def __init__(self, period: int, names: tuple[str, ...], count: int, begun_again: bool, span: float = 0.0) -> None:
        self.period, self.names, self.count, self.begun_again, self.span = period, names, count, begun_again, span

    def fields(self) -> dict[str, Any]:
        return super().fields() | {
            "names": tools_phrase(_first_rotation(self.names)),
            "again": " and begun again" if self.begun_again else "",
        }


def _first_rotation(names: tuple[str, ...]) -> tuple[str, ...]:
    """A cycle named from the rotation of its steps that sorts first: a cycle has no first
    step, and its finding is made wherever a round ends, so the nudge and the stop of one
    loop name it alike."""
    return min((names[k:] + names[:k] for k in range(len(names))), default=names)


class ShiftingCycle(ActionCycle):
    """`cycle`: a cycle whose rounds shift (line ranges move, results nearly alike)."""

    template = "nearly the same {period}-step action cycle ({names}) repeated {count} times{again}{over}"


class NothingNew(Message):
    """`stagnation`: replayed actions and no new one."""

    template = "{count} actions in a row that the run had already done, with no new action{over}"
    hint_template = (
        "everything you have done for a while repeats earlier steps with the same results; "
        "step back, state what is blocking you, and try something you have not tried"
    )

    def __init__(self, count: int, span: float = 0.0) -> None:
        self.count, self.span = count, span


class FewDistinct(Message):
    """`churn`: few distinct calls in a window, nothing written."""

    template = "only {distinct} distinct calls in the last {window}, and no file written"
    hint_template = (
        "you keep making the same few calls without changing anything; decide what you need to learn "
        "or change, and do that"
    )

    def __init__(self, distinct: int, window: int) -> None:
        self.distinct, self.window = distinct, window


class RecurringError(Message):
    """`same_error`: one error back from varied calls (`capped`: the calls counted
    reached the number remembered, so there may be more)."""

    template = "the same {tool} error came back {count} times from {from_calls}{over}"
    hint_template = (
        "variations of the same call keep failing the same way; find the cause of this error "
        "(read it, check the environment) before another variation"
    )

    def __init__(self, tool: str, count: int, calls: int, capped: bool, span: float = 0.0) -> None:
        self.tool, self.count, self.calls, self.capped, self.span = tool, count, calls, capped, span

    def fields(self) -> dict[str, Any]:
        if self.calls == 1 and not self.capped:
            return super().fields() | {"from_calls": "one call"}
        return super().fields() | {"from_calls": f"{self.calls}{' or more' if self.capped else ''} different calls"}


class InventedTool(Message):
    """`correction`: the harness refused the same invented tool again."""

    template = "the harness refused the same invented tool {count} times"
    hint_template = "that tool does not exist; use only the tools you were given"

    def __init__(self, count: int) -> None:
        self.count = count


class SameCorrection(Message):
    """`correction`: the same format correction again (`in_row` 0: scattered)."""

    template = "the harness gave the same correction {count} times{row}"
    hint_template = (
        "the harness keeps rejecting your reply for the same reason; read its message and follow the "
        "required format exactly"
    )

    def __init__(self, count: int, in_row: int = 0) -> None:
        self.count, self.in_row = count, in_row

    def fields(self) -> dict[str, Any]:
        return super().fields() | {"row": f", {self.in_row} in a row" if self.in_row else ""}


class Apologies(Message):
    """`apology`: apologising messages in a row."""

    template = "the model apologised in {count} messages in a row"
    hint_template = (
        "apologising and retrying the same way has not worked; explain what is failing and try a "
        "different approach, or ask for help"
    )

    def __init__(self, count: int) -> None:
        self.count = count


class Chant(Message):
    """`chanting`: a passage, or a cycle of passages, repeated within one response."""

    template = "the model repeated the same {what} {count} times in one response"
    hint_template = "you are repeating yourself; stop, summarise what you know, and take one concrete next step"

    def __init__(self, period: int, count: int) -> None:
        self.period, self.count = period, count

    def fields(self) -> dict[str, Any]:
        return super().fields() | {"what": "passage" if self.period == 1 else f"{self.period} passages"}


#: How a streak of output lines is described, by `RepeatedOutput.how`.
_HOW = {
    "exact": "",
    "retry": " (a retry message)",
    "failing": " (a failing cycle)",
    "burst": " (close together: too quick for an agent's rounds)",
    "masked": " (alike once numbers are masked)",
    "waiting": " (alone each time: a heartbeat, waiting)",
}


class RepeatedOutput(Message):
    """`repeated_lines`: an output line, or a cycle of lines, repeated in a row.

    `how`: `exact` (repeated numbers and all, over time), `retry` (a retry message is
    among the lines), `failing` (a failing cycle, over time), `burst` (exact or failing,
    but too close together to be an agent's rounds: a burst of output, or copies a
    second apart), `masked` (alike only once numbers are masked) or `waiting` (one
    line alone each time, a beat apart: a heartbeat)."""

    template = "{what} repeated {count} times in a row{how_text}"
    hint_template = "the output is repeating itself; stop retrying and look at why"

    def __init__(self, period: int, count: int, how: str) -> None:
        self.period, self.count, self.how = period, count, how

    def fields(self) -> dict[str, Any]:
        what = "the same output line" if self.period == 1 else f"the same {self.period}-line output cycle"
        return super().fields() | {"what": what, "how_text": _HOW[self.how]}


class ProviderRetries(Message):
    """`retry_storm`: provider retries in a row, and no answer."""

    template = "{count} provider retries in a row{over} with no answer"
    hint_template = "the model provider keeps failing; wait and resume later"

    def __init__(self, count: int, span: float = 0.0) -> None:
        self.count, self.span = count, span


class UnchangedCheck(Message):
    """`unchanged`: one check gave the identical result across edits."""

    template = "the same {tool} call gave the identical result {count} times, with files written between{over}"
    hint_template = (
        "your edits are not changing what the check says; find out why the edited code is not what runs "
        "(the wrong file, a cached build, the wrong process) or change the approach"
    )

    def __init__(self, tool: str, count: int, span: float = 0.0) -> None:
        self.tool, self.count, self.span = tool, count, span

    def for_model(self, call_label: str = "") -> str:
        if not call_label:
            return self.text()
        return f"your edits are not changing what `{call_label}` says: the identical result {self.count} times"


class UnchangedTree(Message):
    """`unchanged`, as proof: one check gave the identical result across edits, and the
    working folder stayed exactly as it was (the edits did not land)."""

    template = (
        "the same {tool} call gave the identical result {count} times, with edits tried between and no file "
        "of the working folder changed{over}"
    )
    hint_template = (
        "your edits are not landing: no file changed, so the check cannot change either; read the file as "
        "it is now and make an edit that applies, or change the approach"
    )

    def __init__(self, tool: str, count: int, span: float = 0.0) -> None:
        self.tool, self.count, self.span = tool, count, span

    def for_model(self, call_label: str = "") -> str:
        if not call_label:
            return self.text()
        return f"your edits are not landing: no file changed, and `{call_label}` gave the identical result {self.count} times"


class StuckTerminal(Message):
    """`wedged`: calls in a row that ran nothing: only their echo, a continuation prompt,
    or nothing at all from a command that always prints."""

    template = "{count} commands in a row got back only their echo or nothing at all{over}: none of them ran"
    hint_template = (
        "the shell is waiting for the rest of an unfinished command (an open quote or heredoc) or is held by "
        "a program that has not returned; wait for it or end it (Ctrl-C, or close the quote), and check that a "
        "normal prompt comes back before running anything else"
    )

    def __init__(self, count: int, span: float = 0.0) -> None:
        self.count, self.span = count, span


class PromptedOnly(Message):
    """`text_only`: text replies with no tool call, in a row."""

    template = "{count} replies in a row were text only, with no tool call"
    hint_template = (
        "the harness is waiting for an action; call a tool to do the next step, or call its finish tool if the "
        "task is done"
    )

    def __init__(self, count: int) -> None:
        self.count = count


class DoneAgain(Message):
    """`reverify`: the task declared complete again and again, with more checks between."""

    template = "the task was declared complete {count} times ({tool}), checked again after each"
    hint_template = (
        "if your checks pass, the task is done: confirm completion now instead of checking again; if they "
        "do not, say what is still wrong and fix that"
    )

    def __init__(self, tool: str, count: int) -> None:
        self.tool, self.count = tool, count


class DoneAgainUnchanged(Message):
    """`reverify`, as proof: the task declared complete again and again, with checks
    between that left every file of the working folder as it was."""

    template = (
        "the task was declared complete {count} times ({tool}), checked again after each, and no file of the "
        "working folder changed between"
    )
    hint_template = (
        "nothing has changed since you first declared the task complete, so checking again cannot tell you "
        "anything new: confirm completion now, or say what is still wrong and fix that"
    )

    def __init__(self, tool: str, count: int) -> None:
        self.tool, self.count = tool, count


#: Every kind of message, by name (`Message.kind`): what a record's `message` names.
MESSAGES: dict[str, type[Message]] = {
    cls.__name__: cls
    for cls in (
        SameResult,
        MuchTheSame,
        ActionCycle,
        ShiftingCycle,
        NothingNew,
        FewDistinct,
        RecurringError,
        InventedTool,
        SameCorrection,
        Apologies,
        Chant,
        RepeatedOutput,
        ProviderRetries,
        StuckTerminal,
        PromptedOnly,
        UnchangedCheck,
        UnchangedTree,
        DoneAgain,
        DoneAgainUnchanged,
    )
}


# -- what loopwatch says when it acts ---------------------------------------------------------

_HINT = "change your approach before trying again"


class Said:
    """What loopwatch says when it acts, worded for the person watching (`for_person`:
    a hook's `systemMessage` or `stopReason`, an exception, a final message).

    `what` is the finding's message, or, where only a person's wording is at hand (a stop
    remembered between calls, a sub-agent's stop), that wording.
    """

    person_head: ClassVar[str] = "loopwatch"

    def __init__(self, what: Message | str) -> None:
        self.what = what

    @property
    def reason(self) -> str:
        """What was seen, for a person: the finding's description."""
        return self.what.text() if isinstance(self.what, Message) else self.what

    def for_person(self) -> str:
        return f"{self.person_head}: {self.reason}"


class Warned(Said):
    """A warning: for the person watching only; the model is not told."""


class Told(Said):
    """What the model is told (`for_model`): `head`, what it is circling (naming the call
    at hand by `call_label`, which is never stored), and what to do instead."""

    head: ClassVar[str] = "loopwatch"

    def __init__(self, what: Message | str, call_label: str = "") -> None:
        super().__init__(what)
        self.call_label = call_label

    def for_model(self) -> str:
        if not isinstance(self.what, Message):
            return f"{self.head}: {self.what}."
        hint = self.what.hint() or _HINT
        return f"{self.head}: {self.what.for_model(self.call_label)}. {hint[0].upper()}{hint[1:]}."


class Nudged(Told):
    """A nudge: added to what the model reads next."""

    head = "loopwatch: you appear to be going in circles"


class Blocked(Told):
    """A call refused before it ran; the model reads this as the call's result."""

    head = "loopwatch blocked this call"
    person_head = "loopwatch blocked a call"


class StillCircling(Told):
    """A block decided after the call already ran: worded as what it is, a warning
    that the call ran and the model is still circling."""

    head = "loopwatch: this call ran, but you are still going in circles"


class Stopped(Told):
    """The run is stopped. `held`: the guard holds the stop (every later call is
    refused until the user writes), so the model is also told to stop calling tools."""

    head = person_head = "loopwatch stopped the run"
    #: What the model is told to do once the guard holds the stop.
    held_tail: ClassVar[str] = "Do not call more tools; say what went wrong and wait for the user."

    def __init__(self, what: Message | str, call_label: str = "", *, held: bool = False) -> None:
        super().__init__(what, call_label)
        self.held = held

    def for_model(self) -> str:
        text = super().for_model()
        return f"{text} {self.held_tail}" if self.held else text


class StoppedAfter(Stopped):
    """The run is stopped after a call that ran, where the host shows the stop as that
    call's result (Gemini CLI replaces it): worded apart from a refusal, which a reader
    takes for a call that never ran."""

    head = person_head = "loopwatch stopped the run after this call"


class Guarded(Blocked):
    """A call refused because it would switch the guard off: it writes `what` (a settings
    file's path) so that the host's hooks no longer run. Only the user may do that."""

    head = "loopwatch refused this call"
    person_head = "loopwatch refused a call that would switch it off"

    def for_model(self) -> str:
        return (
            f"{self.head}: it would change {self.reason} so that the hooks the user installed no longer run "
            "(loopwatch's guard among them). Only the user may change that: if it is needed, ask them"
        )


class Unchecked(Told):
    """A call the hook could not check (`why`: the kind of failure), denied because
    the user set it to fail closed."""

    head = "loopwatch could not check this call"

    def for_model(self) -> str:
        return f"{self.head} ({self.reason}) and is set to fail closed; see hook.log in the loopwatch state folder"


#: The refusals a reader may meet in a transcript, by their head.
_REFUSALS: dict[str, type[Told]] = {Stopped.head: Stopped, Blocked.head: Blocked, Guarded.head: Blocked}


#: What a host may append to a call's result from loopwatch's hook (Qwen Code puts a
#: hook's additional context after the result, "\n\n" between).
_APPENDED = (Nudged.head, StillCircling.head, Stopped.head, Blocked.head)


def without_told(text: str) -> str:
    """`text` (a call's result as a transcript recorded it) without what loopwatch's hook
    had appended to it: the call's own result, which the live hook judged."""
    at = text.rfind("\n\nloopwatch")
    if at >= 0 and text.startswith(_APPENDED, at + 2):
        return text[:at]
    return text


def loopwatch_said(text: str) -> type[Told] | None:
    """Which of loopwatch's refusals `text` is (`Stopped` or `Blocked`), or None.

    For readers of transcripts and streams, where only the text the model was handed
    is kept: the text is read in the form the classes write ("<head>: <reason>"),
    its head compared whole."""
    head, colon, _ = text.partition(": ")
    return _REFUSALS.get(head) if colon else None
