"""`loopwatch status`: what the hook currently sees in recent sessions.

Reads the hook's state database (read-only queries; the hook keeps writing). Shows,
per session and agent: the profile and why it was chosen, the tool calls counted,
the nudges, blocks and stops, the strongest finding of each signal, and the last
decisions, so a user can tell why a call was blocked; for one session, which input
fields identify a call of each of its host's tools (`core.identity`, `[tools.X]`).
"""

from __future__ import annotations

import os
import time
from typing import Any, NoReturn

import click

from ._common import fail

__all__ = ["status"]


@click.command()
@click.argument("session", required=False)
@click.option("--limit", default=10, show_default=True, help="Sessions (and decisions per session) to show.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON object per line, per session and agent (no line when there is none).",
)
def status(session: str | None, limit: int, as_json: bool) -> None:
    """Show recent hooked sessions, or one SESSION (an id or its first characters).

    \b
    loopwatch status            # the latest sessions, newest first
    loopwatch status 3f2a       # one session: findings and the latest decisions

    State lives in $LOOPWATCH_STATE_DIR or $XDG_STATE_HOME/loopwatch.
    """
    import sqlite3

    from .._hook.settings import state_dir
    from .._hook.state import Store

    folder = state_dir()
    path = os.path.join(folder, "state.db")
    if not os.path.lexists(path):
        # With --json: no record (JSON lines, none), the note on stderr.
        click.echo(
            f"no hooked sessions yet (no state in {folder}); install with `loopwatch install claude-code`", err=as_json
        )
        return
    try:
        if not os.path.isfile(path):
            raise OSError(f"{path} is not a file")
        store = Store(folder, write=False)
        try:
            rows = store.sessions(limit=limit, session=session)
            details = [_details(store, row, limit) for row in rows]
        finally:
            store.close()
    except (sqlite3.Error, OSError) as exc:
        _fail(f"cannot read the hook's state in {path}: {exc}")
    if not rows and session:
        raise click.ClickException(f"no session starting with {session!r}")
    if not rows:
        click.echo("no hooked sessions yet", err=as_json)
        return
    if as_json:
        from .._encode import json_bytes

        for item in details:
            click.echo(json_bytes(item).decode())
        return
    for item in details:
        _show(item, full=session is not None)


def _fail(message: str) -> NoReturn:
    """One line on stderr and exit 2: the state could not be read."""
    fail("status", message)


def _details(store: Any, row: dict[str, Any], limit: int) -> dict[str, Any]:
    item = dict(row)
    try:
        state = store.state(row["session"], row["agent"])
    except Exception as exc:  # noqa: BLE001 - a state from another version can fail in any way: say so, show the rest
        item["error"] = f"state unreadable ({str(exc)[:80]}); the hook starts this session afresh at its next call"
        state = None
    if state is not None:
        record = state.monitor.record()
        item.update(
            origin=getattr(state, "origin", ""),
            profile_reason=state.profile_reason,
            stopped=state.stopped,
            warnings=record["warnings"],
            findings=record["findings"],
            calibration=record["calibration"],
            identity=_identity(state.monitor.config, state.host),
        )
    item["decisions"] = list(store.decisions(row["session"], row["agent"], limit))
    return item


def _identity(config: Any, host: str) -> dict[str, dict[str, list[str]]]:
    """Which input fields identify a call, for the host's tools and the user's own
    rules: `{"only": [...]}` (an identity list) or `{"ignored": [...]}`."""
    from .._core.identity import HOSTS

    names = sorted(set(HOSTS.get(host, {})) | set(config.tools))
    out: dict[str, dict[str, list[str]]] = {}
    for name in names:
        rule = config.rule(name)
        out[name] = (
            {"only": list(rule.identity)} if rule.identity is not None else {"ignored": sorted(rule.ignore or ())}
        )
    return out


def _identity_text(rules: dict[str, dict[str, list[str]]]) -> str:
    """The rules that leave out some of the input, wrapped for a terminal."""
    import textwrap

    parts = []
    for name, rule in rules.items():
        if "only" in rule:
            parts.append(f"{name} by {', '.join(rule['only'])} only")
        elif rule["ignored"]:
            parts.append(f"{name} not by {', '.join(rule['ignored'])}")
    said = "; ".join(parts) if parts else "none"
    return textwrap.fill(
        f"calls identified by what they do, every tool by its whole input but: {said}",
        width=96,
        initial_indent="  ",
        subsequent_indent="    ",
    )


def _ago(at: float) -> str:
    from .._core.messages import duration

    return duration(time.time() - at) + " ago"


def _show(item: dict[str, Any], full: bool) -> None:
    from .terminal import console

    shown = console()
    agent = f" agent {item['agent']}" if item["agent"] else ""
    shown.print(f"session {item['session']}{agent}", style="bold", soft_wrap=True)
    why = f" ({item['profile_reason']})" if item.get("profile_reason") else ""
    click.echo(
        f"  {item['host']}, {item['profile']}{why}; last call {_ago(item['updated'])}; "
        f"{item['actions']} tool calls, {item['nudges']} nudges, {item['blocks']} blocks, {item['stops']} stops"
    )
    if item.get("origin"):
        click.echo(f"  {item['origin']}")
    if item.get("error"):
        click.echo(f"  {item['error']}")
    if item.get("stopped"):
        shown.print(f"  stopped: {item['stopped']}", style="red", soft_wrap=True)
    findings = sorted(item.get("findings", []), key=lambda f: -f["severity"])
    for finding in findings if full else findings[:1]:
        strength = "conclusive" if finding["severity"] >= 1 else f"{finding['severity']:.0%} of threshold"
        click.echo(f"  {finding['signal']}: {finding['description']} ({strength})")
    decisions = item.get("decisions", [])
    for decision in decisions if full else decisions[-1:]:
        tool = f" {decision['tool']}" if decision["tool"] else ""
        signal = f" ({decision['signal']})" if decision["signal"] else ""
        said = f": {decision['description']}" if decision["description"] else ""
        click.echo(f"  {_ago(decision['at'])}: {decision['action']} at {decision['event']}{tool}{signal}{said}")
    if full and item.get("identity"):
        click.echo(_identity_text(item["identity"]))
    if full and item.get("calibration"):
        figures = ", ".join(f"{k}={v}" for k, v in item["calibration"].items() if v)
        if figures:
            click.echo(f"  figures: {figures}")
    click.echo()
