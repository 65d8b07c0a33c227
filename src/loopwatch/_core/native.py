"""`mypyc_attr`: what the optional compiled build (setup.py, `LOOPWATCH_COMPILE=1`) is told
about a class; mypyc reads it from the source, and when run it changes nothing.

`allow_interpreted_subclasses`: plain Python may extend the compiled class, and its
`__new__` runs no `__init__` (without it, a compiled class's `__new__` does), so the
hook's state codec makes an empty object and sets its attributes as data, as it does
for a plain class. (`serializable` would say the second only, but then constructing the
class from plain Python runs no `__init__` at all.) Without mypy installed (the
pure-Python install) a no-op stands in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["mypyc_attr"]

_C = TypeVar("_C")

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # no mypy installed: nothing reads it

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_C], _C]:
        return lambda cls: cls
