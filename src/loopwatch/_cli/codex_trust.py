"""Recording Codex's own trust for the hooks `loopwatch install codex` wrote.

Codex skips hooks.json entries it has not been told to trust, without a message
(nothing reaches loopwatch). Trust is a `[hooks.state."<key>"]` table with
`trusted_hash = "sha256:..."` in the user's config.toml; the key and hash are computed
exactly as Codex computes them (`loopwatch._hosts.codex`). This module trusts exactly
loopwatch's own entries, with the hash of exactly what was written, and edits
config.toml with tomlkit, which keeps every other line the user wrote as it was
(comments, spacing, order): our tables are added at the end of `[hooks.state]` without a
blank line of their own, so removing them gives back the user's text byte for byte (a
missing final newline excepted). The result is parsed back before it is written: if it
does not parse, or does not give our keys our hashes, or the user wrote `hooks` or
`hooks.state` inline (`state = { ... }`, a form loopwatch does not edit), nothing is
written and the caller is told what the user must do instead.

Not handled: hooks.json files other than `$CODEX_HOME/hooks.json` and a project's
`.codex/hooks.json` (Codex reads no others), and trust for anyone else's hooks.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w
import tomlkit
from tomlkit.items import Table

from .._hosts import codex

__all__ = ["Entry", "TrustError", "entries", "state_of", "tables_toml", "trust", "untrust"]


class TrustError(Exception):
    """Trust could not be recorded safely; the message says what the user must do."""


@dataclass(frozen=True)
class Entry:
    """One loopwatch hook entry as Codex identifies it."""

    event: str
    key: str
    hash: str


def entries(hooks_json: Path, settings: dict[str, Any], is_ours: Any) -> list[Entry]:
    """loopwatch's entries in a hooks.json document (`settings`) at `hooks_json`, whose
    absolute path Codex uses in the keys."""
    found: list[Entry] = []
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        if event not in codex.EVENT_LABELS or not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher") if isinstance(group.get("matcher"), str) else None
            for h, handler in enumerate(group["hooks"]):
                if is_ours(handler) and handler.get("type", "command") == "command":
                    found.append(
                        Entry(
                            event,
                            codex.hook_key(str(hooks_json), event, g, h),
                            codex.trusted_hash(event, handler, matcher),
                        )
                    )
    return found


def config_path(env: dict[str, str] | None = None) -> Path:
    """The user's config.toml, where Codex reads hook trust from (only user layers count)."""
    return Path(codex.codex_home(env)) / "config.toml"


def state_of(config: Path) -> dict[str, dict[str, Any]]:
    """The `[hooks.state]` tables of a config.toml (empty when it has none or is unreadable)."""
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    state = data.get("hooks", {}).get("state", {}) if isinstance(data.get("hooks"), dict) else {}
    return {k: v for k, v in state.items() if isinstance(v, dict)} if isinstance(state, dict) else {}


def trust(config: Path, wanted: list[Entry]) -> str | None:
    """The new text of `config` with `wanted` trusted, or None when nothing changes.
    Raises TrustError when that cannot be done safely."""
    text = _read(config)
    current = _parse(text, config)
    state = _state(current)
    if all(isinstance(state.get(e.key), dict) and state[e.key].get("trusted_hash") == e.hash for e in wanted):
        return None
    document = tomlkit.parse(text)
    tables = _state_table(document, create=True)
    if tables is None:
        raise TrustError(_manual(config, wanted, "its [hooks.state] is written in a form loopwatch does not edit"))
    for entry in wanted:
        mine = tables.get(entry.key)
        if isinstance(mine, Table):
            mine["trusted_hash"] = entry.hash
        elif mine is not None:
            raise TrustError(_manual(config, wanted, "its [hooks.state] is written in a form loopwatch does not edit"))
        else:
            table = tomlkit.table()
            table.comment(f"trusted by `loopwatch install codex` ({entry.event})")
            table.add("trusted_hash", entry.hash)
            tables.append(entry.key, table)
            table.trivia.indent = ""  # no blank line of ours: removing the table restores the text
    text = tomlkit.dumps(document)
    try:
        check = _state(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        raise TrustError(_manual(config, wanted, "the trust tables would not be valid TOML there")) from None
    for entry in wanted:
        got = check.get(entry.key, {}).get("trusted_hash") if isinstance(check.get(entry.key), dict) else None
        if got != entry.hash:
            raise TrustError(_manual(config, wanted, "its [hooks.state] is written in a form loopwatch does not edit"))
    return text


def untrust(config: Path, gone: list[Entry]) -> str | None:
    """The new text of `config` without the trust tables of `gone` (only where they
    still hold our hash), or None when nothing changes. Never raises for a config it
    cannot read: it then leaves it alone."""
    try:
        text = _read(config)
        state = _state(_parse(text, config))
    except TrustError:
        return None
    ours = [e.key for e in gone if isinstance(state.get(e.key), dict) and state[e.key].get("trusted_hash") == e.hash]
    document = tomlkit.parse(text)
    tables = _state_table(document, create=False)
    if not ours or tables is None:
        return None
    for key in ours:
        del tables[key]
    # `[hooks.state]` and `[hooks]` that only held ours had no header of their own
    # (super tables): they go with them
    hooks = document["hooks"]
    if isinstance(hooks, Table) and not tables and tables.is_super_table():
        del hooks["state"]
        if not hooks and hooks.is_super_table():
            del document["hooks"]
    new = tomlkit.dumps(document)
    return None if new == text else new


def write(config: Path, text: str) -> None:
    """Replace `config` atomically by `loopwatch._safefile`, keeping its mode (0600 for
    a new one) and the previous version as `config.toml.loopwatch.bak`; a symlinked
    config.toml is edited where it points."""
    from .. import _safefile as safefile

    safefile.write(config, text, links="edit", backup=True)


# -- editing -----------------------------------------------------------------------------


def _state_table(document: tomlkit.TOMLDocument, *, create: bool) -> Table | None:
    """The `hooks.state` table of a parsed config.toml, added (as tables with no header
    of their own) when `create` and absent; None when absent, or written inline."""
    where: tomlkit.TOMLDocument | Table = document
    for name in ("hooks", "state"):
        table = where.get(name)
        if table is None:
            if not create:
                return None
            table = tomlkit.table(is_super_table=True)
            where.append(name, table)
            table.trivia.indent = ""  # no blank line of ours: removing the table restores the text
        if not isinstance(table, Table):
            return None
        where = table
    return where if isinstance(where, Table) else None


def _read(config: Path) -> str:
    try:
        return config.read_text(encoding="utf-8") if config.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustError(f"{config}: cannot read ({exc}); nothing was changed") from None


def _parse(text: str, config: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TrustError(f"{config}: not valid TOML ({exc}); nothing was changed") from None


def _state(data: dict[str, Any]) -> dict[str, Any]:
    hooks = data.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    return state if isinstance(state, dict) else {}


def tables_toml(wanted: list[Entry]) -> str:
    """The trust tables of `wanted` as TOML, for a person to read or copy."""
    return tomli_w.dumps({"hooks": {"state": {e.key: {"trusted_hash": e.hash} for e in wanted}}})


def _manual(config: Path, wanted: list[Entry], why: str) -> str:
    tables = "\n".join(f"  {line}" if line else "" for line in tables_toml(wanted).splitlines())
    return (
        f"{config}: {why}, so loopwatch did not record Codex's trust. Codex skips untrusted hooks "
        f"without a message: add these tables to {config} yourself, or trust the loopwatch hooks "
        f"in Codex's /hooks:\n{tables}"
    )
