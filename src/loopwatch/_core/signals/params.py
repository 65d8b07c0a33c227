"""`SignalParams`: the base of every signal's `Params`, its thresholds.

A signal declares only its own fields, each with its default and its reason, and the
rule it obeys as the field's `Annotated` metadata::

    class Params(SignalParams):
        #: Copies in a row that earn the nudge (the reason, with its evidence).
        threshold: Count = 3
        #: Seconds the streak must span.
        window: Annotated[float, Seconds()] = 60.0

From those declarations the base gives what every signal would otherwise write by hand:
`enabled` (False when a field that can turn the signal off is 0) and `check()` (the
first field out of its range, worded as `config` reports it: "threshold: 1 would
make every single occurrence a loop; ..."). It also gives what `config`, `evaluation`
and the hook's state need of a params object: `_fields`, `_replace`, equality, a
repr, immutability (and positional or keyword construction in field order).

What it deliberately does not do: check types or finiteness (`config._make_params`
does, for every setting alike, before `check()`), or validate on construction (a
params object made in code is trusted, as a NamedTuple was).
"""

from __future__ import annotations

import sys
import typing
from typing import Annotated, Any, ClassVar, Self, dataclass_transform

__all__ = ["AtLeast", "Below", "Between", "Count", "Fraction", "Rule", "Seconds", "SignalParams", "Size"]


class Rule:
    """What values one field may hold. `switch`: 0 turns the signal off."""

    switch: bool = False

    def on(self, value: Any) -> bool:
        """Does this value leave the signal on? (Asked of switches only.)"""
        return bool(value > 0)

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        """What is wrong with `value` for field `name`, or None."""
        return None


class CountRule(Rule):
    """A count threshold: 0 turns the signal off, 1 is refused (every single
    occurrence would be a loop), 2 or more."""

    switch = True

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        if value == 1:
            return f"{name}: 1 would make every single occurrence a loop; use 2 or more, or 0 to turn it off"
        if value < 0:
            return f"{name}: must be 0 (off) or 2 or more"
        return None


class Size(Rule):
    """A size that turns the signal off at 0 and means nothing at 1 (a window of one
    call, one replay): 0, or 2 or more (`unit` names what is counted)."""

    switch = True

    def __init__(self, unit: str = "") -> None:
        self.unit = unit

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        if value < 0 or value == 1:
            return f"{name}: must be 0 (off) or 2 or more{' ' + self.unit if self.unit else ''}"
        return None


class Between(Rule):
    """A bounded number, `low` to `high`; with `off`, 0 too, which turns the signal
    off (and anything under `low` leaves it off)."""

    def __init__(self, low: int, high: int, *, off: bool = False) -> None:
        self.low, self.high, self.off, self.switch = low, high, off, off

    def on(self, value: Any) -> bool:
        return bool(value >= self.low)

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        if (self.off and value == 0) or self.low <= value <= self.high:
            return None
        return f"{name}: must be between {self.low} and {self.high}{' (0 turns it off)' if self.off else ''}"


class Below(Rule):
    """A count under another field (`other`), when that one is on: 1 to other - 1;
    0 turns the signal off."""

    switch = True

    def __init__(self, other: str) -> None:
        self.other = other

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        other = getattr(params, self.other)
        if other and not 0 <= value < other:
            return f"{name}: must be between 1 and {self.other} - 1 (0 turns it off)"
        return None


class Seconds(Rule):
    """Seconds, 0 or more (NaN refused); with `off`, 0 turns the signal off."""

    def __init__(self, *, off: bool = False) -> None:
        self.off, self.switch = off, off

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        if not value >= 0:
            return f"{name}: seconds must be >= 0{' (0 turns it off)' if self.off else ''}"
        return None


class Fraction(Rule):
    """A fraction in (0, 1]: a similarity. With `off` (`off="shifting cycles"`), 0 is
    allowed too and turns that part of the signal off (not the whole signal)."""

    def __init__(self, *, off: str = "") -> None:
        self.off = off

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        if self.off and value == 0:
            return None
        if not 0.0 < value <= 1.0:
            hint = f" (0 turns {self.off} off)" if self.off else ""
            return f"{name}: {value} is not in {'[0, 1]' if self.off else '(0, 1]'}{hint}"
        return None


class AtLeast(Rule):
    """A number no smaller than `low` (`unit` names what is counted)."""

    def __init__(self, low: int, unit: str) -> None:
        self.low, self.unit = low, unit

    def problem(self, name: str, value: Any, params: SignalParams) -> str | None:
        if value < self.low:
            return f"{name}: at least {self.low} {self.unit}"
        return None


#: The most common field: a count threshold (see `CountRule`).
Count = Annotated[int, CountRule()]


def _own_hints(cls: type) -> dict[str, Any]:
    """The annotations `cls` itself declares, evaluated in its module (as
    `typing.get_type_hints` would, without evaluating every base's again: the hook
    makes these classes on every start)."""
    module = sys.modules.get(cls.__module__)
    namespace = vars(module) if module is not None else {}
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 -- inspect: a heavy import
    return {n: eval(a, namespace, dict(vars(cls))) if isinstance(a, str) else a for n, a in own.items()}


@dataclass_transform(frozen_default=True)
class SignalParams:
    """The base of a signal's `Params`: fields declared as annotated class
    attributes with defaults (every field has one); see the module docstring."""

    #: The field names, in declaration order (as a NamedTuple's).
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}
    #: The rule of each field that has one.
    _rules: ClassVar[dict[str, Rule]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hints = _own_hints(cls)
        names = tuple(n for n in hints if typing.get_origin(hints[n]) is not ClassVar)
        missing = [n for n in names if n not in cls.__dict__]
        if missing:
            raise TypeError(f"{cls.__qualname__}: every field needs a default ({', '.join(missing)})")
        cls._fields = tuple(cls._fields) + names
        cls._field_defaults = {**cls._field_defaults, **{n: cls.__dict__[n] for n in names}}
        rules = dict(cls._rules)
        for name in names:
            found = [m for m in getattr(hints[name], "__metadata__", ()) if isinstance(m, Rule)]
            if found:
                rules[name] = found[0]
        cls._rules = rules

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__qualname__} takes {len(fields)} fields, {len(args)} given")
        values = dict(self._field_defaults)
        values.update(zip(fields, args))
        for name, value in kwargs.items():
            if name not in values:
                raise TypeError(f"{type(self).__qualname__} has no field {name!r}")
            values[name] = value
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__qualname__} is immutable: use _replace")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__qualname__} is immutable")

    def _replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (as a NamedTuple's `_replace`)."""
        return type(self)(**{**self._asdict(), **changes})

    def _asdict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._fields}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SignalParams) and type(other) is type(self) and self._asdict() == other._asdict()

    def __hash__(self) -> int:
        return hash((type(self), tuple(self._asdict().values())))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{k}={v!r}' for k, v in self._asdict().items())})"

    @property
    def enabled(self) -> bool:
        """Is the signal on? Off when any field that can turn it off does."""
        return all(rule.on(getattr(self, name)) for name, rule in self._rules.items() if rule.switch)

    @classmethod
    def off(cls) -> dict[str, Any]:
        """The settings that turn the signal off: its first switch at 0 (`enabled` is
        False when any switch is). For a configuration that leaves one signal on."""
        name = next(n for n, rule in cls._rules.items() if rule.switch)
        return {name: type(cls._field_defaults[name])(0)}

    def check(self) -> str | None:
        """The first field out of its range, as "field: what is wrong", or None."""
        for name, rule in self._rules.items():
            problem = rule.problem(name, getattr(self, name), self)
            if problem:
                return problem
        return None
