"""`loopwatch install` and `loopwatch uninstall`: put the hook into an agent's settings.

Where each host reads its hooks, and how an entry is written, is its host module's
(`loopwatch._hosts.<host>.HOST`: `settings_file`, `install`, `uninstall`). Claude Code
reads `settings.json` (user: `~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR`; project:
`.claude/settings.json`; local: `.claude/settings.local.json`); Codex reads `hooks.json`
next to its config (user: `$CODEX_HOME/hooks.json`, default `~/.codex/hooks.json`;
project: `.codex/hooks.json`) and runs them only once trusted: `install` records that
trust for exactly loopwatch's entries in the user's config.toml (`codex_trust`). A host
may offer a `system` scope (`--system`): settings for every user that no project
overrides, written readable by all (Claude Code: its managed settings,
/etc/claude-code/managed-settings.json; GitHub Copilot CLI: a policy file in
/etc/github-copilot/policy.d/; Gemini CLI: `/etc/gemini-cli/settings.json` or
`$GEMINI_CLI_SYSTEM_SETTINGS_PATH`; Qwen Code: `/etc/qwen-code/settings.json` or
`$QWEN_CODE_SYSTEM_SETTINGS_PATH`; where the host also pins hooks on). A scope whose
file holds no hook but a setting that keeps every user's hooks on whatever a project says
(`Host.shape` "pin": Codex's `--system`, `[features] hooks = true` in
/etc/codex/requirements.toml) is edited by the host's `pin`, and `uninstall` takes out
only loopwatch's pin.

A host whose hooks are files of their own (`settings_shape == "files"`, Cline: one file
per event in `~/Documents/Cline/Hooks`, or a project's `.clinerules/hooks` with
`--project`) gets loopwatch's files written there, each marked as loopwatch's; a file of
the same name that is not loopwatch's is never touched (install refuses, naming it). Its
hook runs Python isolated (`-I`, `Host.isolated`), so the environment a project can set
reaches no import. opencode's guard is one such file, a plugin (`loopwatch.js` in
`~/.config/opencode/plugin/`, or a project's `.opencode/plugin/`). `--system`, where the
host has such a level (opencode's managed `/etc/opencode/opencode.json`), writes the
machine's settings, which no project overrides, readable by every user (0644).

Installing merges with the hooks already there, is idempotent (installing twice
leaves one entry per event), and keeps the previous file as `<name>.loopwatch.bak`
whenever it changes anything. Uninstalling removes only entries whose command runs
`loopwatch hook` (hook files marked as loopwatch's); everything else is left as it was.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from .. import _exits as exits
from .. import _safefile as safefile
from .._hosts import HOSTS
from .._hosts import host as host_named
from .._hosts.base import OURS, Host, SettingsError
from .._hosts.base import is_ours as _command_is_ours
from ._common import CONTEXT, BadInput

__all__ = ["OURS", "install", "is_ours", "settings_path", "uninstall"]


def is_ours(hook: Any) -> bool:
    """A settings entry (`{"type": "command", "command": ...}`) that runs `loopwatch hook`."""
    return isinstance(hook, dict) and _command_is_ours(hook.get("command"))


def default_command(agent: str, scope: str = "user") -> str:
    """For the user's own settings (and `--local`, never shared), the interpreter that
    runs this command, so the hook finds this loopwatch whatever the agent's PATH is.
    For a project's shared settings, `loopwatch hook AGENT`: no path of this machine,
    so the same file works on a teammate's (whose `loopwatch` is on PATH).

    The interpreter runs without `site` (`-S`): a process per tool call should not pay
    for every `.pth` file of the environment. The folders the hook imports from are
    named instead (`hook_folders`), after the standard library on the path (nothing
    there can shadow a standard module); when one no longer holds its package
    (reinstalled elsewhere), `site` runs after all, so the command still finds them the
    usual way. `-P`: no module of the working folder (the agent's project) is imported,
    so no file the agent writes there runs as the guard.

    A host that runs its hooks isolated (`Host.isolated`) gets `-I` instead of `-P`: no
    `PYTHON*` variable either."""
    if scope == "project":
        return f"loopwatch hook {agent}"
    python = shlex.quote(sys.executable)
    flags = "-I -S" if host_named(agent).isolated else "-P -S"
    return f"{python} {flags} -c {shlex.quote(hook_code(hook_folders()))} loopwatch hook {agent}"


#: The packages the hook imports beyond the standard library: loopwatch, and rapidfuzz
#: (a signal compares near-repeats with it, on first use).
HOOK_PACKAGES = ("loopwatch", "rapidfuzz")


def hook_folders() -> dict[str, str]:
    """Each of `HOOK_PACKAGES` -> the folder it is imported from here."""
    import importlib.util

    found = {}
    for name in HOOK_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise BadInput(f"cannot find {name}, which the hook imports: is loopwatch installed whole?")
        found[name] = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))
    return found


def hook_code(folders: dict[str, str]) -> str:
    """The `python -S -c` program of `default_command`: the packages from `folders`
    (package -> folder), else from wherever `site` finds them; then `loopwatch hook`
    with the words after `-c`."""
    paths = list(dict.fromkeys(folders.values()))
    markers = [os.path.join(folder, name, "__init__.py") for name, folder in folders.items()]
    # Double-quoted literals (JSON's are Python's), so the shell's single quotes wrap it whole.
    return (
        f"import os, sys; sys.path.extend({json.dumps(paths)}) "
        f"if all(map(os.path.isfile, {json.dumps(markers)})) "
        'else __import__("site").main(); from loopwatch.__main__ import main; sys.exit(main(sys.argv[2:]))'
    )


def settings_path(agent: str, scope: str) -> Path:
    """The settings file `install AGENT` writes for `scope`, from here."""
    return host_named(agent).settings_file(scope, os.environ, Path.cwd())


def _read(path: Path, inside: Path | None = None) -> dict[str, Any]:
    """The settings at `path` ({} when there are none yet). Anything that keeps them from
    being read or edited safely (a link loop, a folder that is a file, no permission, a
    file that is not a JSON object) is one line and exit status 2: nothing is changed."""
    try:
        target = safefile.check(path, links="edit", inside=inside)
        if not target.exists():
            return {}
        text = target.read_text(encoding="utf-8")
    except safefile.UnsafeWrite as exc:
        raise BadInput(f"{exc}; nothing was changed") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise BadInput(f"{path}: cannot read: {why}; nothing was changed") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc}); nothing was changed") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected a JSON object; nothing was changed")
    return data


def _write(
    path: Path,
    before: dict[str, Any],
    after: dict[str, Any],
    dry_run: bool,
    inside: Path | None = None,
    mode: int = 0o600,
) -> bool:
    """Write the settings by `loopwatch._safefile`: no link planted beside the file is
    followed, its mode is kept (a new one is `mode`), a symlinked settings file is
    edited where it points (within `inside`, a project's folder, for its settings)."""
    if after == before and path.exists():
        return False
    return _put(path, json.dumps(after, indent=2, ensure_ascii=False) + "\n", dry_run, inside, mode)


def _put(path: Path, text: str, dry_run: bool, inside: Path | None = None, mode: int = 0o600) -> bool:
    """Write `text` as `_write` does (`dry_run`: print it)."""
    if dry_run:
        click.echo(text, nl=False)
        return True
    try:
        kept = safefile.write(path, text, mode=mode, links="edit", backup=True, inside=inside)
    except safefile.UnsafeWrite as exc:
        raise BadInput(f"{exc}; nothing was changed") from None
    except OSError as exc:
        hint = " (the system settings are every user's: run this as root)" if mode == 0o644 else ""
        raise BadInput(f"{path}: cannot write: {exc.strerror or exc}{hint}; nothing was changed") from None
    if kept is not None:
        click.echo(f"backup: {kept}")
    return True


def _read_files(host: Host, folder: Path) -> dict[str, str]:
    """A host's own files in `folder` (`Host.read_folder`; {} when it does not exist yet);
    one line and exit status 2 when the folder cannot be read."""
    try:
        if folder.exists() and not folder.is_dir():
            raise BadInput(f"{folder}: not a folder; nothing was changed")
        return host.read_folder(folder)
    except OSError as exc:
        raise BadInput(f"{folder}: cannot read: {exc.strerror or exc}; nothing was changed") from None


def _write_files(
    host: Host,
    folder: Path,
    before: dict[str, str],
    after: dict[str, str],
    dry_run: bool,
    inside: Path | None = None,
    mode: int | None = None,
) -> bool:
    """Write the hook files of `after` that differ from `before` and remove loopwatch's
    that `after` leaves out (never another file): each written whole by
    `loopwatch._safefile`, as a regular file (a link there is refused: the host skips
    links, and none is followed). A project's folder must stay within `inside`."""
    if inside is not None:
        real, root = os.path.realpath(folder), os.path.realpath(inside)
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise BadInput(f"{folder}: links out of {inside} (to {real}); nothing was changed")
    changes = {name: text for name, text in after.items() if before.get(name) != text}
    gone = [name for name in before if name not in after]
    if not changes and not gone:
        return False
    if dry_run:
        for name, text in changes.items():
            click.echo(f"# {folder / name}\n{text}", nl=False)
        for name in gone:
            click.echo(f"# remove {folder / name}")
        return True
    try:
        for name, text in changes.items():
            safefile.write(folder / name, text, mode=host.file_mode if mode is None else mode, links="refuse")
        for name in gone:
            path = folder / name
            safefile.check(path)
            path.unlink(missing_ok=True)
    except safefile.UnsafeWrite as exc:
        raise BadInput(f"{exc}; stopped there") from None
    except OSError as exc:
        raise BadInput(f"{folder}: cannot write: {exc.strerror or exc}; stopped there") from None
    return True


def _load(host: Host, path: Path, inside: Path | None) -> dict[str, Any]:
    return _read_files(host, path) if host.settings_shape == "files" else _read(path, inside)


def _store(
    host: Host,
    path: Path,
    before: dict[str, Any],
    after: dict[str, Any],
    dry_run: bool,
    inside: Path | None,
    scope: str = "user",
) -> bool:
    # The machine's settings are read by every user's agent: readable by all (root writes them).
    mode = 0o644 if scope == "system" else None
    if host.settings_shape == "files":
        return _write_files(host, path, before, after, dry_run, inside, mode)
    return _write(path, before, after, dry_run, inside, 0o600 if mode is None else mode)


def _write_trust(config: Path, text: str) -> None:
    from . import codex_trust

    try:
        codex_trust.write(config, text)
    except safefile.UnsafeWrite as exc:
        raise BadInput(f"{exc}; Codex's trust was not recorded") from None
    except OSError as exc:
        raise BadInput(f"{config}: cannot write: {exc.strerror or exc}") from None


_AGENT = click.argument("agent", type=click.Choice(list(HOSTS)), required=False)
_SCOPE = click.option(
    "--user",
    "scope",
    flag_value="user",
    default=True,
    help="The user's settings: every session on this machine (default).",
)
_PROJECT = click.option(
    "--project",
    "scope",
    flag_value="project",
    help="This project's shared settings (.claude/, .codex/, .clinerules/hooks/, ...).",
)
_LOCAL = click.option(
    "--local", "scope", flag_value="local", help="Claude Code only: .claude/settings.local.json (not committed)."
)
_SYSTEM = click.option(
    "--system",
    "scope",
    flag_value="system",
    help="Settings for every user of this machine that no project can switch off, where the agent has them "
    "(Claude Code: its managed settings; Codex: a pin in /etc/codex/requirements.toml that keeps hooks on; "
    "GitHub Copilot CLI: a policy file in /etc; Gemini CLI: /etc/gemini-cli/settings.json; opencode: "
    "/etc/opencode/opencode.json; Qwen Code: /etc/qwen-code/settings.json; run as root).",
)
_FILE = click.option(
    "--settings",
    "settings_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write this settings file instead.",
)
_DRY = click.option("--dry-run", is_flag=True, help="Print the new settings instead of writing them.")


def _project(scope: str, settings_file: Path | None) -> Path | None:
    """The folder a project's settings file (or a link there) must stay within."""
    return Path.cwd() if scope in ("project", "local") and settings_file is None else None


def _target(agent: str, scope: str, settings_file: Path | None) -> Path:
    if settings_file is not None:
        return settings_file
    found = host_named(agent)
    if scope not in found.scopes:
        others = " or ".join(f"--{s}" for s in found.scopes)
        raise click.UsageError(f"--{scope} is not a {found.title} settings scope; use {others}")
    try:
        return found.settings_file(scope, os.environ, Path.cwd())
    except OSError as exc:
        raise BadInput(f"cannot find {found.title}'s settings: {exc.strerror or exc}") from None


def _hosts_here() -> None:
    """`install` with no host: what is on this machine, and what each needs."""
    from .._hosts.base import is_installed_here

    click.echo("loopwatch guards these agent CLIs (`loopwatch install HOST`):")
    for name in HOSTS:
        found = host_named(name)
        here = is_installed_here(found, os.environ)
        where = f"found: {here}" if here else "not found on PATH"
        note = " (built from its documentation; untested against the real CLI)" if found.documented_only else ""
        click.echo(f"  {name:<12} {found.title}: {where}{note}")
    click.echo("Then `loopwatch doctor HOST` checks that the guard is in place and runs.")


@click.command(context_settings=CONTEXT, epilog=exits.epilog("install"))
@_AGENT
@_SCOPE
@_PROJECT
@_LOCAL
@_SYSTEM
@_FILE
@click.option(
    "--command", "command", help="The hook command to write (default: this Python running `-m loopwatch hook AGENT`)."
)
@_DRY
def install(agent: str | None, scope: str, settings_file: Path | None, command: str | None, dry_run: bool) -> None:
    """Install loopwatch's live guard into an agent CLI (with no AGENT: list them).

    \b
    loopwatch install claude-code            # ~/.claude/settings.json
    loopwatch install claude-code --project  # .claude/settings.json
    loopwatch install codex                  # ~/.codex/hooks.json
    loopwatch install copilot                # ~/.copilot/hooks/loopwatch.json
    sudo loopwatch install copilot --system  # /etc/github-copilot/policy.d/loopwatch.json
    sudo loopwatch install claude-code --system  # /etc/claude-code/managed-settings.json
    sudo loopwatch install codex --system    # /etc/codex/requirements.toml: hooks pinned on
    loopwatch install gemini-cli --system    # /etc/gemini-cli/settings.json
    loopwatch install cline                  # ~/Documents/Cline/Hooks/
    loopwatch install opencode               # ~/.config/opencode/plugin/loopwatch.js
    loopwatch install opencode --system      # /etc/opencode/opencode.json
    loopwatch install qwen-code --system     # /etc/qwen-code/settings.json

    The hook then watches every tool call: it nudges the model when it goes in
    circles, blocks a call repeated with nothing changed, and, in a run nobody
    watches (`claude -p`, `copilot -p`, ...), ends a run that will not stop. Codex: the hook's
    entries are also trusted in ~/.codex/config.toml (Codex skips untrusted hooks
    silently); a Codex hook cannot end `codex exec`, so guard unattended runs with
    `loopwatch run -- codex exec --json`. Existing hooks are kept; running this
    twice changes nothing; the previous file is kept as *.loopwatch.bak. `--system`
    (where the CLI has such a level) writes the machine's settings, which a project's
    cannot switch off. Disable at any time with LOOPWATCH_MODE=off, or `loopwatch
    uninstall AGENT`.
    """
    if agent is None:
        _hosts_here()
        return
    found = host_named(agent)
    path = _target(agent, scope, settings_file)
    if found.shape(scope) == "pin":
        _pin(found, scope, path, dry_run, settings_file)
        return
    shared = scope == "project" and settings_file is None
    given = command is not None
    command = command or default_command(agent, "project" if shared else "user")
    if shared and not command.startswith("loopwatch "):
        click.echo(f"note: {path} is shared, and this command may not run on another machine: {command}", err=True)
    if shared and shutil.which("loopwatch") is None:
        click.echo(
            "note: `loopwatch` is not on PATH here; the project's hook runs `loopwatch hook ...` from PATH", err=True
        )
    if given and not OURS.search(command):
        raise click.UsageError("--command must run `loopwatch hook` (that is how uninstall finds it)")
    inside = _project(scope, settings_file)
    before = _load(found, path, inside)
    try:
        after = found.install(before, command, scope if settings_file is None else "user")
    except SettingsError as exc:
        raise BadInput(f"{path}: {exc}; nothing was changed") from None
    changed = _store(found, path, before, after, dry_run, inside, scope)
    if agent == "codex":
        _trust_codex(path, scope, settings_file, after, changed, dry_run)
        return
    if dry_run:
        return
    _said_installed(agent, found.title, path, changed, found.hooked_events, command)
    if settings_file is None and scope in found.install_notes:
        click.echo(found.install_notes[scope])


def _said_installed(name: str, title: str, path: Path, changed: bool, events: tuple[str, ...], command: str) -> None:
    click.echo(f"{'installed into' if changed else 'already installed in'} {path}: {', '.join(events)}")
    click.echo(f"{title} now runs, around every tool call: {command}")
    if not command.startswith("loopwatch "):
        click.echo("(this Python's path is written there: remove or move this environment, and the guard goes with it)")
    click.echo(f"Check that it works: loopwatch doctor {name}")


def _pin(host: Any, scope: str, path: Path, dry_run: bool, settings_file: Path | None, remove: bool = False) -> None:
    """A scope of shape "pin" (`Host.pin`): pin the host's hooks on in `path`, readable
    by every user; with `remove`, take loopwatch's pin out again."""
    try:
        target = safefile.check(path, links="edit")
        text = target.read_text(encoding="utf-8") if target.exists() else ""
    except safefile.UnsafeWrite as exc:
        raise BadInput(f"{exc}; nothing was changed") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise BadInput(f"{path}: cannot read: {why}; nothing was changed") from None
    try:
        new = host.pin(text, remove=remove)
    except SettingsError as exc:
        raise BadInput(f"{path}: {exc}; nothing was changed") from None
    changed = new is not None and _put(path, new, dry_run, mode=0o644)
    if dry_run:
        return
    if remove:
        click.echo(
            f"removed loopwatch's pin of {host.title}'s hooks from {path}"
            if changed
            else f"nothing to do: no pin of loopwatch's in {path}"
        )
        return
    click.echo(f"{'pinned' if changed else 'already pinned'} in {path}: {host.pinned}")
    if settings_file is None and scope in host.install_notes:
        click.echo(host.install_notes[scope])


def _codex_key_path(path: Path, scope: str, settings_file: Path | None) -> Path | None:
    """hooks.json as Codex names it in trust keys, or None for a file Codex never reads."""
    from .._hosts import codex

    if settings_file is not None:
        return None
    if scope == "user":
        return Path(codex.codex_home()) / "hooks.json"
    return Path(os.path.realpath(path))


def _trust_codex(
    path: Path, scope: str, settings_file: Path | None, after: dict[str, Any], changed: bool, dry_run: bool
) -> None:
    """Record Codex's trust for exactly loopwatch's entries: Codex silently skips
    untrusted hooks, so an install without it would do nothing."""
    from . import codex_trust

    events = ", ".join(host_named("codex").hooked_events)
    key_path = _codex_key_path(path, scope, settings_file)
    if key_path is None:
        if not dry_run:
            click.echo(f"{'installed into' if changed else 'already installed in'} {path}: {events}")
        click.echo(
            "Codex reads hooks only from $CODEX_HOME/hooks.json and a project's .codex/hooks.json, "
            "so no trust was recorded for this file.",
            err=True,
        )
        return
    config = codex_trust.config_path()
    wanted = codex_trust.entries(key_path, after, is_ours)
    try:
        text = codex_trust.trust(config, wanted)
    except codex_trust.TrustError as exc:
        if not dry_run:
            click.echo(f"{'installed into' if changed else 'already installed in'} {path}: {events}")
        raise BadInput(f"NOT active yet: {exc}") from None
    if dry_run:
        if text is not None:
            click.echo(f"# and in {config}:")
            click.echo(codex_trust.tables_toml(wanted), nl=False)
        return
    if text is not None:
        _write_trust(config, text)
    click.echo(f"{'installed into' if changed else 'already installed in'} {path}: {events}")
    click.echo(
        f"{'trusted' if text is not None else 'already trusted'} in {config} (Codex runs only hooks it trusts; "
        "these entries, nothing else):"
    )
    for entry in wanted:
        click.echo(f"  {entry.key}  {entry.hash}")
    click.echo(
        "A change to these entries makes Codex skip them until trusted again: run this command again. "
        "`loopwatch doctor` checks it."
    )
    if scope == "project":
        click.echo("Codex reads a project's .codex/ only when the project itself is trusted in Codex.")
    click.echo(
        "Note: in `codex exec` a hook can warn and block repeats but cannot end the run; for unattended "
        "runs use `loopwatch run -- codex exec --json ...`, which does."
    )


@click.command(context_settings=CONTEXT, epilog=exits.epilog("uninstall"))
@_AGENT
@_SCOPE
@_PROJECT
@_LOCAL
@_SYSTEM
@_FILE
@_DRY
def uninstall(agent: str | None, scope: str, settings_file: Path | None, dry_run: bool) -> None:
    """Remove loopwatch's hook entries (only those) from an agent CLI's settings.

    Nothing else changes: a setting `install --system` wrote beside them (Gemini CLI's
    `hooksConfig.enabled: true`, which keeps every hook on) stays. Where `--system` is
    only a pin (Codex's), `uninstall --system` takes it out (a pin loopwatch wrote, none
    other)."""
    if agent is None:
        raise click.UsageError(f"name the agent CLI: one of {', '.join(HOSTS)}")
    path = _target(agent, scope, settings_file)
    found = host_named(agent)
    if found.shape(scope) == "pin":
        _pin(found, scope, path, dry_run, settings_file, remove=True)
        return
    try:
        there = path.exists()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}; nothing was changed") from None
    if not there:
        click.echo(f"nothing to do: {path} does not exist")
        return
    inside = _project(scope, settings_file)
    before = _load(found, path, inside)
    changed = _store(found, path, before, found.uninstall(before), dry_run, inside, scope)
    if not dry_run:
        click.echo(f"removed loopwatch from {path}" if changed else f"nothing to do: no loopwatch entries in {path}")
    if agent == "codex" and not dry_run:
        from . import codex_trust

        key_path = _codex_key_path(path, scope, settings_file)
        config = codex_trust.config_path()
        text = codex_trust.untrust(config, codex_trust.entries(key_path, before, is_ours)) if key_path else None
        if text is not None:
            _write_trust(config, text)
            click.echo(f"removed loopwatch's hook trust from {config}")
