"""The hook's saved state as plain data: JSON that cannot name code.

A session's state (its `Monitor`, with every signal inside) is written as JSON built
from numbers, strings, booleans and lists only. Whatever is not a JSON scalar is a
list whose first item is a one-letter tag:

    "\x7f9f3a..."              bytes (digests): DEL, then hex (a string, so a digest
                                costs one JSON token; a str that itself starts with
                                DEL is written ["u", text])
    ["f", "inf"]                a float JSON cannot spell (inf, -inf, nan)
    ["l", ...] ["t", ...]       list, tuple
    ["s", ...] ["z", ...]       set, frozenset
    ["q", maxlen, ...]          collections.deque
    ["d", k1, v1, k2, v2, ...]  dict (keys of any stored type); ["m", ...] a read-only
                                one, ["k", ...] an OrderedDict, ["c", ...] a Counter
    ["n", TAG, field, ...]      a registered NamedTuple (Step, Finding, Verdict, Params...)
                                (shared ones, like a Step several signals hold, once)
    ["e", TAG, value]           a registered Enum member (Action)
    ["o", TAG, name, value...]  a registered plain object (Monitor, Policy, each signal...)
    ["r", N]                    the N-th object already read (shared references: every
                                mutable container and object, numbered on entry, and
                                every NamedTuple, numbered once built)

TAG is looked up in `REGISTRY`, a closed table built from the classes themselves
(below): a name read from disk is only ever a key into that table, never imported,
never resolved as a dotted path, never called. Objects are made with
`object.__new__` and their attributes set as data; NamedTuples with
`tuple.__new__`; enum members by value. No `__init__`, `__reduce__`, `__setstate__`
or any other code of the class runs while loading.

The walker is generic: it stores any registered object's `__dict__` with no code
per signal, so a signal may change its internals freely. A class it meets that is
not registered makes `dumps` fail (and the test that feeds every kind of event
fails with the class's name): nothing unknown is ever stored, nothing is pickled.

The envelope carries `FORMAT` and `layout()`, a digest of the registry: every tag,
every NamedTuple's fields, every enum's values and the names each registered
class's methods use. A row written by another version of loopwatch (older, newer,
or a changed signal) has another digest and is refused as a whole: the session
starts afresh, which is all a foreign or tampered row can ever cost.

What this does not do: authenticate rows. Whoever can write the database can make a
session look stopped or fresh; they cannot make loopwatch run anything.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter, OrderedDict, deque
from enum import Enum
from types import MappingProxyType
from typing import Any

__all__ = ["FORMAT", "StateError", "dumps", "layout", "loads", "registry"]

#: Bumped when the encoding itself changes (the tags above).
FORMAT = 1


class StateError(ValueError):
    """A state that cannot be stored or loaded; the message says why."""


# Attributes that are the process's, not the session's: skipped when saving, made
# afresh when loading. A lock cannot be shared between processes; a warning callback
# belongs to whoever made the monitor.
def _transients() -> dict[type, dict[str, Any]]:
    from .._core.monitor import Monitor
    from .._core.policy import Policy

    return {Monitor: {"_lock": threading.Lock}, Policy: {"on_warning": lambda: None}}


def _classes(extra: tuple[type, ...]) -> list[type]:
    """Every class a session's state may hold. Explicit on purpose: adding a class
    to a signal's state means adding it here (a test says so)."""
    from .._core.config import Config, ToolRule
    from .._core.finding import Finding
    from .._core.lines import Line, LineCutter, _Screen
    from .._core.messages import MESSAGES
    from .._core.monitor import Monitor
    from .._core.periodic import TailCycles
    from .._core.policy import Policy
    from .._core.signals import SIGNALS
    from .._core.signals.unchanged import _Check
    from .._core.step import Step
    from .._core.text import PassageCutter
    from .._core.verdict import Action, Verdict

    core: list[type] = [
        Monitor,
        Policy,
        Config,
        ToolRule,
        Step,
        Finding,
        Verdict,
        Action,
        LineCutter,
        Line,
        _Screen,
        PassageCutter,
        TailCycles,
        _Check,
    ]
    core += MESSAGES.values()  # a finding holds its message (`messages`)
    for signal in SIGNALS.values():
        core += [signal, signal.Params]
    return core + list(extra)


def _tag(cls: type) -> str:
    return f"{cls.__module__.removeprefix('loopwatch._core.').removeprefix('loopwatch.')}:{cls.__qualname__}"


def _kind(cls: type) -> str:
    if issubclass(cls, Enum):
        return "e"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "n"
    slotted = any(vars(klass).get("__slots__") for klass in cls.__mro__)  # Generic's empty slots are no slots
    if cls.__new__ is not object.__new__ or slotted or issubclass(cls, (tuple, list, dict, set)):
        raise TypeError(f"{_tag(cls)}: only plain classes, NamedTuples and enums can be stored")
    return "o"


class _Registry:
    def __init__(self, classes: list[type]) -> None:
        self.by_tag: dict[str, tuple[type, str]] = {}
        self.by_class: dict[type, tuple[str, str]] = {}
        for cls in classes:
            tag, kind = _tag(cls), _kind(cls)
            if tag in self.by_tag and self.by_tag[tag][0] is not cls:
                raise TypeError(f"two stored classes share the tag {tag}")
            self.by_tag[tag] = (cls, kind)
            self.by_class[cls] = (tag, kind)
        self.transients = _transients()
        self.layout = self._layout()

    def _layout(self) -> str:
        parts = [f"format {FORMAT}"]
        for tag in sorted(self.by_tag):
            cls, kind = self.by_tag[tag]
            if kind == "n":
                shape = ",".join(cls._fields)  # type: ignore[attr-defined]  # kind "n": a NamedTuple class
            elif kind == "e" and issubclass(cls, Enum):
                shape = ",".join(f"{m.name}={m.value}" for m in cls)
            else:
                names: set[str] = set()
                for klass in cls.__mro__[:-1]:
                    for member in vars(klass).values():
                        code = getattr(member, "__code__", None) or getattr(
                            getattr(member, "fget", None), "__code__", None
                        )
                        if code is not None:
                            names.update(code.co_names)
                shape = ",".join(sorted(names))
            parts.append(f"{tag} {kind} {shape}")
        from .._core.fingerprint import blake2b  # the bare BLAKE2: hashlib would load OpenSSL

        return blake2b("\n".join(parts).encode(), digest_size=8).hexdigest()


_REGISTRY: _Registry | None = None


def registry() -> _Registry:
    global _REGISTRY
    if _REGISTRY is None:
        from .session import SessionState
        from .spawns import Spawns

        _REGISTRY = _Registry(_classes((SessionState, Spawns)))
    return _REGISTRY


def layout() -> str:
    """The digest of what this version stores; a row with another is refused."""
    return registry().layout


# -- saving ---------------------------------------------------------------------------------


def dumps(value: Any) -> bytes:
    """The envelope for `value`, as ASCII JSON bytes. Raises StateError for anything
    that is not plain data or a registered class."""
    reg = registry()
    memo: dict[int, int] = {}
    body = _Encoder(reg, memo).encode(value)
    return json.dumps(
        {"loopwatch_state": FORMAT, "layout": reg.layout, "state": body}, separators=(",", ":"), allow_nan=False
    ).encode("ascii")


class _Encoder:
    __slots__ = ("keep", "memo", "reg")

    def __init__(self, reg: _Registry, memo: dict[int, int]) -> None:
        self.reg, self.memo = reg, memo
        self.keep: list[Any] = []  # objects seen, alive until the end so ids stay unique

    def _shared(self, value: Any) -> list[Any] | None:
        ref = self.memo.get(id(value))
        if ref is not None:
            return ["r", ref]
        self.memo[id(value)] = len(self.memo)
        self.keep.append(value)
        return None

    def encode(self, value: Any) -> Any:
        t = type(value)
        if t is str:
            return value if value[:1] != "\x7f" else ["u", value]
        if t is int or t is bool or value is None:
            return value
        if t is bytes:
            return "\x7f" + value.hex()
        if t is float:
            return value if math.isfinite(value) else ["f", repr(value)]
        enc = self.encode
        if t is tuple:  # ints inline: a Step's sketches are 144 of them
            return ["t", *[v if type(v) is int else enc(v) for v in value]]
        if t is list:
            return self._shared(value) or ["l", *[v if type(v) is int else enc(v) for v in value]]
        if t is dict:
            return self._shared(value) or ["d", *self._pairs(value)]
        if t is set:
            return self._shared(value) or ["s", *[enc(v) for v in value]]
        if t is frozenset:
            return ["z", *[enc(v) for v in value]]
        if t is deque:
            return self._shared(value) or ["q", value.maxlen, *[enc(v) for v in value]]
        if t is MappingProxyType:
            return ["m", *self._pairs(value)]
        if t is OrderedDict:
            return self._shared(value) or ["k", *self._pairs(value)]
        if t is Counter:
            return self._shared(value) or ["c", *self._pairs(value)]
        found = self.reg.by_class.get(t)
        if found is None:
            raise StateError(
                f"{t.__module__}.{t.__qualname__} is not a class the hook may store "
                "(add it to loopwatch._hook.codec._classes if it is plain data)"
            )
        tag, kind = found
        if kind == "n":
            ref = self.memo.get(id(value))
            if ref is not None:
                return ["r", ref]
            out_tuple = ["n", tag, *[enc(v) for v in value]]
            self.memo[id(value)] = len(self.memo)  # numbered once built, as the reader does
            self.keep.append(value)
            return out_tuple
        if kind == "e":
            return ["e", tag, enc(value.value)]
        shared = self._shared(value)
        if shared is not None:
            return shared
        skip = self.reg.transients.get(t, {})
        out: list[Any] = ["o", tag]
        for name, item in value.__dict__.items():
            if name not in skip:
                out.append(name)
                out.append(enc(item))
        return out

    def _pairs(self, mapping: Any) -> list[Any]:
        enc = self.encode
        out: list[Any] = []
        for key, item in mapping.items():
            out.append(enc(key))
            out.append(enc(item))
        return out


# -- loading --------------------------------------------------------------------------------


def loads(blob: bytes | str) -> Any:
    """The value of an envelope written by `dumps` of this same version. Raises
    StateError for anything else: not JSON, another format or layout, an unknown
    tag, a malformed item."""
    try:
        envelope = json.loads(blob)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise StateError(f"not a loopwatch state ({type(exc).__name__})") from None
    if not isinstance(envelope, dict) or "loopwatch_state" not in envelope:
        raise StateError("not a loopwatch state")
    reg = registry()
    if envelope.get("loopwatch_state") != FORMAT or envelope.get("layout") != reg.layout:
        raise StateError(
            f"written by another version of loopwatch (format {envelope.get('loopwatch_state')!r}, "
            f"layout {str(envelope.get('layout'))[:16]!r}; this one: {FORMAT}, {reg.layout})"
        )
    try:
        return _Decoder(reg).decode(envelope.get("state"))
    except StateError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, RecursionError, OverflowError) as exc:
        raise StateError(f"malformed state ({type(exc).__name__}: {str(exc)[:100]})") from None


class _Decoder:
    __slots__ = ("objects", "reg")

    def __init__(self, reg: _Registry) -> None:
        self.reg = reg
        self.objects: list[Any] = []

    def _new(self, value: Any) -> Any:
        self.objects.append(value)
        return value

    def decode(self, item: Any) -> Any:
        t = type(item)
        if t is str:
            return item if item[:1] != "\x7f" else bytes.fromhex(item[1:])
        if t is int or t is bool or t is float or item is None:
            return item
        if t is not list or not item or type(item[0]) is not str:
            raise StateError(f"malformed state item of type {t.__name__}")
        tag, dec = item[0], self.decode
        if tag == "u":
            return _one(item, str)
        if tag == "t":  # ints inline, as written
            return tuple([v if type(v) is int else dec(v) for v in item[1:]])
        if tag == "l":
            out_list: list[Any] = self._new([])
            out_list.extend([v if type(v) is int else dec(v) for v in item[1:]])
            return out_list
        if tag == "d":
            return self._pairs(self._new({}), item, 1)
        if tag == "s":
            out_set: set[Any] = self._new(set())
            out_set.update(self._items(item, 1))
            return out_set
        if tag == "z":
            return frozenset(dec(v) for v in item[1:])
        if tag == "q":
            maxlen = item[1] if len(item) > 1 else None
            if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                raise StateError("malformed deque")
            out_deque: deque[Any] = self._new(deque(maxlen=maxlen))
            out_deque.extend(self._items(item, 2))
            return out_deque
        if tag == "k":
            return self._pairs(self._new(OrderedDict()), item, 1)
        if tag == "c":
            return self._pairs(self._new(Counter()), item, 1)
        if tag == "m":
            return MappingProxyType(self._pairs({}, item, 1))
        if tag == "f":
            text = _one(item, str)
            if text not in ("inf", "-inf", "nan"):
                raise StateError("malformed float")
            return float(text)
        if tag == "r":
            ref = _one(item, int)
            if not 0 <= ref < len(self.objects):
                raise StateError("reference to an object not read yet")
            return self.objects[ref]
        if tag in ("n", "e", "o"):
            if len(item) < 2 or type(item[1]) is not str:
                raise StateError("malformed object")
            found = self.reg.by_tag.get(item[1])
            if found is None or found[1] != tag:
                raise StateError(f"unknown class {item[1][:80]!r}")
            cls = found[0]
            if tag == "n":
                fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]  # tag "n": a NamedTuple class
                if len(item) - 2 != len(fields):
                    raise StateError(f"{item[1]}: {len(item) - 2} fields, expected {len(fields)}")
                return self._new(tuple.__new__(cls, [dec(v) for v in item[2:]]))
            if tag == "e":
                return cls(dec(_one(item[1:], object)))
            obj = self._new(object.__new__(cls))
            if len(item) % 2:
                raise StateError(f"{item[1]}: malformed attributes")
            attrs = obj.__dict__
            for k in range(2, len(item), 2):
                name = item[k]
                if type(name) is not str or not name.isidentifier() or name.startswith("__"):
                    raise StateError(f"{item[1]}: bad attribute name")
                attrs[name] = dec(item[k + 1])
            for name, make in self.reg.transients.get(cls, {}).items():
                attrs[name] = make()
            return obj
        raise StateError(f"unknown tag {tag[:10]!r}")

    def _items(self, item: list[Any], start: int) -> list[Any]:
        """Decoded items from `start`: plain ones (ints, None, strings that are not
        digests) inline, the rest through `decode` (a digest-keyed map of 1,024 entries
        is most of a state, and a call per item was most of its cost)."""
        dec = self.decode
        return [
            v if (kind := type(v)) is int or v is None or (kind is str and v[:1] != "\x7f") else dec(v)
            for v in item[start:]
        ]

    def _pairs(self, out: Any, item: list[Any], start: int) -> Any:
        if (len(item) - start) % 2:
            raise StateError("malformed mapping")
        values = self._items(item, start)
        for key, value in zip(values[::2], values[1::2]):  # not .update(): a Counter would count the pairs
            out[key] = value
        return out


def _one(item: list[Any], kind: type) -> Any:
    if len(item) != 2 or (kind is not object and type(item[1]) is not kind):
        raise StateError(f"malformed {item[0]!r} item")
    return item[1]
