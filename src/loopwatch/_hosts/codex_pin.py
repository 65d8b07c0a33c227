"""Pinning Codex's hooks on for every user of a machine: `[features] hooks = true` in
Codex's requirements file (`/etc/codex/requirements.toml`), which an administrator's
policy holds over every config.toml, a project's `[features] hooks = false` included
(`loopwatch._hosts.codex` has what was observed).

`install codex --system` writes the pin, `uninstall codex --system` removes it (`Codex.pin`:
a scope of shape "pin" in the host contract). The file is edited with tomlkit, which keeps
every line the administrator wrote as it was (comments, spacing, order); the pin's line carries a comment of ours (`MARK`), and only a
pin with it is ever removed. The result is parsed back before it is written. Refused,
with nothing changed: a file that is not TOML, a `features` that is not a table loopwatch
can edit (an inline table, a value), and a pin of hooks *off*, which is an
administrator's decision to keep.

Not here: loopwatch's hook itself (each user's `hooks.json`, `install codex`), and any
other requirement.
"""

from __future__ import annotations

import tomllib

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Item, Table

from .base import SettingsError

__all__ = ["MARK", "PinError", "pin", "unpin"]

#: The comment on the pin's line: how `unpin` knows the pin is loopwatch's.
MARK = "loopwatch install codex --system: hooks stay on whatever a project says"


class PinError(SettingsError):
    """The pin cannot be written safely; the message says why."""


def pin(text: str) -> str | None:
    """`text` (a requirements file's, "" for none) with hooks pinned on, or None when
    they already are. Raises PinError."""
    features = _features(text)
    if features.get("hooks") is True:
        return None
    if features.get("hooks") is False:
        raise PinError("it pins features.hooks = false (an administrator's decision: loopwatch leaves it)")
    document = tomlkit.parse(text)
    table = document.get("features")
    if table is None:
        table = tomlkit.table()
        document.append("features", table)
    elif not isinstance(table, Table) or table.is_super_table():
        raise PinError("its [features] is written in a form loopwatch does not edit: add `hooks = true` there")
    value = tomlkit.item(True)
    value.comment(MARK)
    table["hooks"] = value
    new = tomlkit.dumps(document)
    if _features(new).get("hooks") is not True:
        raise PinError("the pin would not read back as features.hooks = true: add it by hand")
    return new


def unpin(text: str) -> str | None:
    """`text` without loopwatch's pin (only a pin carrying `MARK`), or None when it has
    none. A table left empty by it goes too."""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError:
        return None
    table = document.get("features")
    if not isinstance(table, Table) or "hooks" not in table:
        return None
    value = table.item("hooks")
    if not isinstance(value, Item) or MARK not in (value.trivia.comment or ""):
        return None
    del table["hooks"]
    if not table:
        del document["features"]
    return tomlkit.dumps(document)


def _features(text: str) -> dict[str, object]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PinError(f"not valid TOML ({exc})") from None
    features = data.get("features", {})
    if not isinstance(features, dict):
        raise PinError("its `features` is not a table")
    return features
