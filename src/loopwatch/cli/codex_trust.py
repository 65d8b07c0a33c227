"""Recording Codex's own trust for the hooks `loopwatch install codex` wrote.

Codex skips hooks.json entries it has not been told to trust, without a message
(nothing reaches loopwatch). Trust is a `[hooks.state."<key>"]` table with
`trusted_hash = "sha256:..."` in the user's config.toml; the key and hash are computed
exactly as Codex computes them (`loopwatch.hosts.codex`). This module trusts exactly
loopwatch's own entries, with the hash of exactly what was written, and edits
config.toml as text so every other line the user wrote is kept as it was (comments
included). The result is parsed back before it is written: if it does not parse, or
does not give our keys our hashes (e.g. the user wrote `hooks.state` as an inline
table, which TOML forbids extending), nothing is written and the caller is told what
the user must do instead.

Not handled: hooks.json files other than `$CODEX_HOME/hooks.json` and a project's
`.codex/hooks.json` (Codex reads no others), and trust for anyone else's hooks.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..hosts import codex

__all__ = ["Entry", "TrustError", "entries", "state_of", "trust", "untrust"]


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
    for entry in wanted:
        text = _set_hash(text, entry)
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
    new = text
    for entry in gone:
        if isinstance(state.get(entry.key), dict) and state[entry.key].get("trusted_hash") == entry.hash:
            new = _drop_table(new, entry.key)
    return None if new == text else new


def write(config: Path, text: str) -> None:
    """Replace `config` atomically by `loopwatch.safefile`, keeping its mode (0600 for
    a new one) and the previous version as `config.toml.loopwatch.bak`; a symlinked
    config.toml is edited where it points."""
    from .. import safefile

    safefile.write(config, text, links="edit", backup=True)


# -- text editing -------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[")


def _header(key: str) -> str:
    return f"[hooks.state.{json.dumps(key, ensure_ascii=False)}]"


def _table_span(lines: list[str], key: str) -> tuple[int, int] | None:
    """Lines [start, end) of the table `[hooks.state."<key>"]` as written by us (or
    spelled the same way by the user)."""
    want = _header(key)
    for i, line in enumerate(lines):
        if line.strip() == want:
            end = i + 1
            while end < len(lines) and not _HEADER.match(lines[end]):
                end += 1
            return i, end
    return None


def _set_hash(text: str, entry: Entry) -> str:
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, entry.key)
    value = f"trusted_hash = {json.dumps(entry.hash)}\n"
    if span is None:
        if text and not text.endswith("\n"):
            text += "\n"
        return f"{text}\n# trusted by `loopwatch install codex` ({entry.event})\n{_header(entry.key)}\n{value}"
    start, end = span
    body = [line for line in lines[start + 1 : end] if not re.match(r"\s*trusted_hash\s*=", line)]
    return "".join(lines[: start + 1] + [value] + body + lines[end:])


def _drop_table(text: str, key: str) -> str:
    lines = text.splitlines(keepends=True)
    span = _table_span(lines, key)
    if span is None:
        return text
    start, end = span
    if start > 0 and lines[start - 1].startswith("# trusted by `loopwatch install codex`"):
        start -= 1
    if start > 0 and not lines[start - 1].strip():
        start -= 1
    return "".join(lines[:start] + lines[end:])


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


def _manual(config: Path, wanted: list[Entry], why: str) -> str:
    tables = "\n".join(f"  {_header(e.key)}\n  trusted_hash = {json.dumps(e.hash)}" for e in wanted)
    return (
        f"{config}: {why}, so loopwatch did not record Codex's trust. Codex skips untrusted hooks "
        f"without a message: add these tables to {config} yourself, or trust the loopwatch hooks "
        f"in Codex's /hooks:\n{tables}"
    )
