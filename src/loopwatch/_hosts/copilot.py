"""GitHub Copilot CLI's shapes, written once: hook payloads and answers, its session files'
facts, where its hooks go and what switches them off. Used by the hook, by `install` and
`doctor`, and by the reader of its session files (`loopwatch._readers.copilot`).

What the real CLI (`@github/copilot` 1.0.89 and 1.0.102, headless `copilot -p`, driven
offline by a scripted model; tests/test_realclient_copilot.py pins each of these) was seen
to do:

- **Hooks** are read from `$COPILOT_HOME/hooks/*.json` (default `~/.copilot`) in Copilot's
  own form, `{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": CMD,
  "timeoutSec": N}]}}`, in every folder, trusted or not; a project's `.github/hooks/*.json`
  (at the git root) only in a folder the user trusts; and root-owned policy files in
  `/etc/github-copilot/policy.d/*.json` (not group or world writable) before all of them.
  Hooks run one at a time, policy, then user, then project.
- **Payloads** carry no event name and no call id: `{sessionId, timestamp, cwd, toolName,
  toolArgs}` (`toolArgs` an object), plus `toolResult: {resultType, textResultForLlm}`
  after a call (`postToolUse`) or `error` when the tool failed (`postToolUseFailure`). So
  `install` writes one command per event, the event's name on its command line. A call
  the hook refused gets no after-call event at all.
- **A failing shell command is a success** to Copilot (`resultType: "success"`, and
  `postToolUse`, never `postToolUseFailure`): its exit code is only in the text's last
  line, `<shellId: N completed with exit code K>`, and N grows with every call of the
  session. The hook reads K, and writes N as `#` (`normalise`) so that identical failures
  give identical results.
- **Answers**: a `preToolUse` answer `{"permissionDecision": "deny",
  "permissionDecisionReason": R}` refuses the call (the model is handed `Denied by
  preToolUse hook: R`, which is also what a person reading the output sees); after a call,
  `{"additionalContext": M}` reaches the model with the result. `systemMessage` is shown
  nowhere, and `continue: false` is ignored everywhere: nothing a hook answers ends a run.
- **A hook that exits non-zero refuses the call** (Copilot fails closed on a broken
  hook); one that times out lets it run. So the command `install` writes ends in
  `|| true`: a hook that cannot even start (its Python gone, loopwatch uninstalled)
  allows, as it does on every other host; the refusals loopwatch means are JSON answers.
- **Ending a run**: SIGINT to the native `copilot` process (the one whose executable is
  `copilot`, with `-p` on its command line; never the `node` launcher in front of it,
  which dies and leaves the session running) ends `copilot -p` at once: the refused call
  never runs, no further model request is made, and the process exits 0 with an `abort`
  line in its output. `end_run` does exactly that, for a headless run only: an
  interactive session (no `-p`) is never signalled.
- **Attended or not**: `-p`/`--prompt` on the native process's command line says
  headless; an interactive session gives hooks `COPILOT_LOADER_PID`.
- **Sessions**: `sessionId` is the session (`~/.copilot/session-state/<id>/events.jsonl`).
  A sub-agent (the `task` tool) runs under its own `sessionId`; 1.0.102 adds `agentId`
  (that id) and `parentAgentId` (the parent session's), 1.0.89 neither. So a 1.0.102
  sub-agent is an agent of its parent's session, and a 1.0.89 one a session of its own:
  kept apart from its parent either way. `agentStop` ends a turn of the main agent and
  of a sub-agent alike (`subagentStop` would count a sub-agent's end twice).
- **Switched off by a project**: `{"disableAllHooks": true}` in `.github/copilot/settings.json`,
  `.github/copilot/settings.local.json`, `.claude/settings.json` or
  `.claude/settings.local.json` at the git root of a trusted folder turns the user's hooks
  off from the next session on (written during a session, it takes effect at the next).
  Only the policy level holds against it (`install copilot --system`). `disabledHooks`
  ("content-hash keys" of hooks not to run, by the settings schema; not tried) is treated
  as a switch-off too. A project's own hooks run after the user's and can rewrite the
  arguments of a call loopwatch allowed (`modifiedArgs`): `doctor` says when there are any.
- Project `.env` files never reach a hook's environment.

Standard library only, nothing built at import: the hook imports this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from . import HOST_WRITERS
from .base import (
    AFTER,
    ALLOW_REPLY,
    BEFORE,
    FAILED,
    PROMPT,
    TURN_END,
    Call,
    JsonHooks,
    Payload,
    PayloadError,
    Reply,
    StateFolder,
    SwitchOff,
    ancestors,
    is_ours,
    text_field,
    trim,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = [
    "HOOK_EVENTS",
    "HOST",
    "NAME",
    "POLICY_DIR",
    "WRITERS",
    "copilot_home",
    "exit_code",
    "loopwatch_denial",
    "normalise",
    "read_jsonc",
    "result_text",
]

NAME = "copilot"

#: The events `loopwatch install copilot` hooks, in Copilot's words, and the guard's word
#: for each. `permissionRequest` is left out (it repeats `preToolUse` for the calls that
#: need approval), `subagentStop` too (`agentStop` also ends a sub-agent's turn).
EVENTS: Mapping[str, str] = MappingProxyType(
    {
        "preToolUse": BEFORE,
        "postToolUse": AFTER,
        "postToolUseFailure": FAILED,
        "userPromptSubmitted": PROMPT,
        "agentStop": TURN_END,
    }
)
HOOK_EVENTS = tuple(EVENTS)

#: Where Copilot reads policy hooks: root-owned, not writable by group or others.
POLICY_DIR = "/etc/github-copilot/policy.d"

#: The state folder's settings (hooks, `disableAllHooks`) and its trust list.
USER_SETTINGS = "settings.json"
USER_CONFIG = "config.json"

#: A project's settings files that can switch user hooks off, at its git root.
PROJECT_SETTINGS = (
    os.path.join(".github", "copilot", "settings.json"),
    os.path.join(".github", "copilot", "settings.local.json"),
    os.path.join(".claude", "settings.json"),
    os.path.join(".claude", "settings.local.json"),
)
#: A project's own hook files (at its git root).
PROJECT_HOOKS = os.path.join(".github", "hooks")

# The trailer Copilot puts after a shell command's output, and its other notes on a shell
# (a detached command, one still running). Read in the text's last KiB only.
_TAIL = 1024
_EXIT = r"<(?:detached command with )?shellId: [^>\s]+ completed with exit code (-?\d+)>\s*\Z"
_SHELL_ID = r"(<(?:[a-z ]{0,48} )?shellId: )\d+"

#: Copilot's tools that write a file, and the input field that names it: its `create`
#: and `edit` (1.0.89, 1.0.102). Writers for Copilot's sessions only (`hosts.monitors`):
#: other agents give these names to other tools.
WRITERS: Mapping[str, str | None] = MappingProxyType(HOST_WRITERS["copilot"])

#: How Copilot words a call a `preToolUse` hook refused, before the hook's reason.
DENIED_BY_HOOK = "Denied by preToolUse hook: "


def exit_code(text: Any) -> int | None:
    """The exit code of a shell call, from its result's last line, else None."""
    if not isinstance(text, str):
        return None
    found = re.search(_EXIT, text[-_TAIL:])
    return int(found.group(1)) if found else None


def normalise(text: Any) -> Any:
    """A result's text with the shell's number in Copilot's notes written as `#`: the
    number grows with every call of a session, so without this two identical failures
    would never have the same result. Everything else is kept as it is."""
    if not isinstance(text, str) or "shellId: " not in text[-_TAIL:]:
        return text
    cut = max(0, len(text) - _TAIL)
    return text[:cut] + re.sub(_SHELL_ID, r"\1#", text[cut:])


def result_text(text: Any, tool: str) -> Any:
    """A call's result as loopwatch reads it, live and in session files: `normalise`d,
    and without what hooks appended after it (`additionalContext`, loopwatch's own nudge
    among them: `\n\nTool "bash" succeeded. Additional guidance from postToolUse
    hooks:\n...`), which the call did not produce."""
    if not isinstance(text, str):
        return text
    cut = text.rfind(f'\n\nTool "{tool}" succeeded. Additional guidance from postToolUse hooks:\n')
    return normalise(text[:cut] if cut >= 0 else text)


def loopwatch_denial(text: Any) -> str | None:
    """ "stop" or "block" when a call's result is loopwatch's own refusal (the call never
    ran), else None."""
    if not isinstance(text, str) or not text.startswith(DENIED_BY_HOOK):
        return None
    from .._core.messages import Stopped, loopwatch_said

    said = loopwatch_said(text[len(DENIED_BY_HOOK) :])
    return "stop" if said is Stopped else "block" if said is not None else None


def copilot_home(env: Mapping[str, str]) -> str:
    """Copilot's state folder: `$COPILOT_HOME`, else `~/.copilot`."""
    return env.get("COPILOT_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".copilot")


def project_root(cwd: Path) -> Path:
    """Where Copilot reads a project's files: the git root above `cwd`, else `cwd`."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


# Possessive, and an unclosed string or comment runs to the end: linear on any text.
_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\Z)|//[^\n]*+|/\*(?:[^*]|\*(?!/))*+(?:\*/|\Z)', re.DOTALL)


def read_jsonc(path: Path, limit: int = 1 << 20) -> Any:
    """A small JSON file that may hold `//` and `/* */` comments (Copilot writes its
    config.json so), or None when absent, too large or unreadable. Never raises."""
    import json

    from .._files import open_file

    try:
        with open_file(str(path)) as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text))
    except (ValueError, RecursionError):
        return None


def _identity(get: Callable[[str], Any]) -> tuple[str, str]:
    """(session, agent) of a payload: a 1.0.102 sub-agent's events name its parent's
    session (`parentAgentId`) and itself (`agentId`); everything else is the main agent
    of its own `sessionId`."""
    session, agent, parent = get("sessionId"), get("agentId"), get("parentAgentId")
    if isinstance(parent, str) and parent and isinstance(agent, str) and agent and agent != parent:
        return parent, agent
    if not isinstance(session, str) or not session:
        raise PayloadError("missing sessionId")
    return session, ""


def _arguments(value: Any) -> Any:
    if isinstance(value, str):  # an object in every release seen; a JSON string is read too
        import json

        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class Copilot(JsonHooks):
    """GitHub Copilot CLI: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "GitHub Copilot CLI"
    binary = "copilot"
    package = "@github/copilot"
    tested = ("1.0.89", "1.0.102")
    events = EVENTS
    hooked_events = HOOK_EVENTS
    scopes = ("user", "project", "system")
    ends_by = "SIGINT to the headless copilot process"
    reports_refusals = False  # a refused call gets no after-call event
    timeout_key = "timeoutSec"
    install_notes = MappingProxyType(
        {
            "project": (
                "Copilot runs a project's hooks only in folders you trust, and the same project can switch them off: "
                "`loopwatch install copilot` (your own hooks) or `--system` (a policy no project overrides) hold better."
            ),
            "system": (
                "Copilot reads this policy file for every user, before any other hook, whatever a project says. "
                "It must stay owned by root and writable by root alone; the Python written in it must be one "
                "every user can run."
            ),
        }
    )
    switch_paths = (
        r"(?:\.github[/\\]+copilot[/\\]+settings(?:\.local)?|\.claude[/\\]+settings(?:\.local)?"
        r"|\.copilot[/\\]+settings)\.json"
    )
    switch_keys = r"disableAllHooks\W{0,4}\s*:\s*true|disabledHooks"
    state_folders = (
        # `scan ~/.copilot`: only its sessions; settings, trust, logs, caches left out by name.
        StateFolder(("session-state",), ("session-state", USER_CONFIG)),
        # One session's folder: its events; workspace.yaml, checkpoints, snapshots left out.
        StateFolder(("events.jsonl",), ("events.jsonl", "workspace.yaml")),
    )

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        if event is None:  # no event name in Copilot's payloads: the command line says it
            event = text_field(raw, "hookName") or text_field(raw, "hook_event_name")
            if not event:
                raise PayloadError(
                    "a Copilot payload names no event: the hook command must (`loopwatch install copilot`)"
                )
        session, agent = _identity(raw.get)
        guard = EVENTS.get(event, event)
        calls: tuple[Call, ...] = ()
        if guard in (BEFORE, AFTER, FAILED):
            calls = (self._call(raw, guard, event),)
        return Payload(NAME, guard, session, agent, text_field(raw, "cwd"), calls, native=event)

    def _call(self, raw: dict[str, Any], guard: str, event: str) -> Call:
        name = raw.get("toolName")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{event}: missing toolName")
        tool_input = trim(_arguments(raw.get("toolArgs")))
        if guard == BEFORE:
            return Call(name, tool_input)
        if guard == FAILED:
            return Call(name, tool_input, None, trim(raw.get("error")), True)
        result = raw.get("toolResult")
        kind = result.get("resultType") if isinstance(result, dict) else None
        text = result.get("textResultForLlm") if isinstance(result, dict) else result
        text = result_text(text, name)
        code = exit_code(text)
        failed = kind in ("failure", "timeout") or (code is not None and code != 0)
        # "rejected" / "denied": the person (or a rule) said no; the agent did nothing.
        refused = kind in ("rejected", "denied")
        return Call(name, tool_input, None, trim(text), failed, refused)

    def parse_oversize(self, fields: Mapping[str, str], event: str | None = None) -> Payload:
        if not event:
            raise PayloadError("oversize Copilot payload: the hook command names no event")
        session, agent = _identity(fields.get)
        guard = EVENTS.get(event, event)
        calls: tuple[Call, ...] = ()
        tool = fields.get("toolName")
        if guard in (BEFORE, AFTER, FAILED) and tool:
            marker = {"loopwatch": "oversize", "nonce": os.urandom(8).hex()}
            calls = (Call(tool, marker, None, None, guard == FAILED),)
        return Payload(NAME, guard, session, agent, None, calls, oversize=True, native=event)

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        from .._core.messages import Stopped
        from .._core.verdict import Action

        event = payload.event
        if event == BEFORE:
            if decision.blocks and decision.message is not None:
                return self.refuse(
                    payload.native, decision.message, stop=decision.action is Action.STOP, person=decision.reason
                )
            return ALLOW_REPLY
        if event in (AFTER, FAILED):
            message = decision.message if decision.action is not Action.ALLOW else None
            if stopped is not None and decision.verdict.action.rank < Action.STOP.rank:
                message = Stopped(stopped, held=True).for_model()  # a call that ran after the stop
            return Reply({"additionalContext": message}) if message else ALLOW_REPLY
        return ALLOW_REPLY  # a prompt, a turn's end: Copilot shows a person nothing a hook says

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        # Exit 0 with the decision: a non-zero exit would refuse too, but Copilot would hand
        # the model "hook errored" instead of the reason. The reason is what a person sees.
        return Reply({"permissionDecision": "deny", "permissionDecisionReason": reason})

    def detect_profile(self, env: Mapping[str, str], payload: Payload | None = None) -> tuple[str, str] | None:
        # Undocumented, and only ever set for the interactive session; `-p` runs are
        # told apart by their command line (`headless`).
        return ("attended", "COPILOT_LOADER_PID: interactive") if env.get("COPILOT_LOADER_PID") else None

    def headless(self, argv: list[str]) -> str | None:
        rest = _copilot_args(argv)
        if rest is None:
            return None
        return "copilot -p" if _prompted(rest) else ""

    def end_run(self, payload: Payload, reason: str, log: Callable[[str], object]) -> bool:
        found = _session_process()
        if isinstance(found, str):
            log(f"run not ended: {found}")
            return False
        pid, began = found
        import signal

        # Logged first: Copilot may end this hook's process as soon as it is interrupted.
        log(f"sending SIGINT to copilot pid {pid} (the headless session process) to end the run")
        try:
            _signal(pid, began, signal.SIGINT)
        except OSError as exc:
            log(f"run not ended: SIGINT to copilot pid {pid} failed ({exc.strerror or exc})")
            return False
        return True

    probe_event = "postToolUse"

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "sessionId": "loopwatch-doctor",
            "timestamp": 0,
            "cwd": cwd,
            "toolName": "bash",
            "toolArgs": {"command": "true", "description": "loopwatch doctor"},
            "toolResult": {"resultType": "success", "textResultForLlm": "<shellId: 0 completed with exit code 0>"},
        }

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # here, not at import: the hook never needs it

        if scope == "user":
            return Path(copilot_home(env)) / "hooks" / "loopwatch.json"
        if scope == "system":
            return Path(POLICY_DIR) / "loopwatch.json"
        return project_root(cwd) / PROJECT_HOOKS / "loopwatch.json"

    def group(self, event: str, command: str) -> dict[str, Any]:
        # One entry per event, the event on its command line; `|| true`: see the docstring.
        return {"type": "command", "bash": f"{command} {event} || true", self.timeout_key: self.timeout}

    def commands(self, group: Any) -> list[str]:
        if not isinstance(group, dict):
            return []
        return [c for c in (group.get("bash"), group.get("command")) if isinstance(c, str) and is_ours(c)][:1]

    def _without(self, group: Any) -> Any:
        return None if self.commands(group) else group

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = super().install(settings, command, scope)
        return {"version": out.pop("version", 1), **out}

    def unread(self, scope: str, path: Path) -> str | None:
        if scope != "system" or not path.exists():
            return None
        info = path.stat()
        if info.st_uid != 0:
            return f"{path} is not owned by root: Copilot skips a policy file that is not"
        if info.st_mode & 0o022:
            return f"{path} is writable by group or others: Copilot skips such a policy file (chmod 644 it)"
        return None

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        from pathlib import Path  # here, not at import: the hook never needs it

        found: list[SwitchOff] = []
        home = Path(copilot_home(env))
        policy = self.held(env, cwd)  # the policy level runs whatever `disableAllHooks` says

        def all_off(path: Path, what: str, kind: str = "off") -> SwitchOff:
            return (
                SwitchOff(str(path), f"{what}; held on by {policy}", "held")
                if policy
                else SwitchOff(str(path), what, kind)
            )

        user = read_jsonc(home / USER_SETTINGS)
        if isinstance(user, dict) and user.get("disableAllHooks") is True:
            found.append(
                all_off(
                    home / USER_SETTINGS,
                    '"disableAllHooks": true turns your own hooks off, loopwatch\'s too (policy hooks still run)',
                )
            )
        if isinstance(user, dict) and isinstance(user.get("disabledHooks"), list) and user["disabledHooks"]:
            found.append(
                SwitchOff(
                    str(home / USER_SETTINGS), '"disabledHooks" may name loopwatch\'s hooks, which Copilot then skips'
                )
            )
        root = project_root(cwd)
        trusted = _trusted(root, home, env)
        later = "" if trusted else " once you trust this folder in Copilot"
        for name in PROJECT_SETTINGS:
            settings = read_jsonc(root / name)
            if not isinstance(settings, dict):
                continue
            if settings.get("disableAllHooks") is True:
                found.append(
                    all_off(
                        root / name,
                        f'"disableAllHooks": true turns your hooks off, loopwatch\'s too{later} '
                        "(only `loopwatch install copilot --system` holds against it)",
                        "off" if trusted else "later",
                    )
                )
            if isinstance(settings.get("disabledHooks"), list) and settings["disabledHooks"]:
                found.append(
                    SwitchOff(
                        str(root / name),
                        f'"disabledHooks" may name loopwatch\'s hooks, which Copilot then skips{later}',
                        "off" if trusted else "later",
                    )
                )
            hooks = settings.get("hooks")
            if isinstance(hooks, dict) and any(hooks.values()):
                found.append(SwitchOff(str(root / name), _PROJECT_HOOK + later, "undo"))
        folder = root / PROJECT_HOOKS
        try:
            names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
        except OSError:
            names = []
        for name in names:
            settings = read_jsonc(folder / name)
            hooks = settings.get("hooks") if isinstance(settings, dict) else None
            # A project install of loopwatch's own hook is not one of them.
            if isinstance(hooks, dict) and any(hooks.values()) and not self.hooked(settings):
                found.append(SwitchOff(str(folder / name), _PROJECT_HOOK + later, "undo"))
        return found


_PROJECT_HOOK = "this project's own hooks run after loopwatch's and can rewrite a call it let through (`modifiedArgs`)"


def _trusted(root: Path, home: Path, env: Mapping[str, str]) -> bool:
    """Does Copilot read this project's files: the folder (or one above it) is in
    `trustedFolders` of its config.json, or the environment opts in for every folder."""
    if env.get("COPILOT_ALLOW_ALL") == "true" or env.get("GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS") == "true":
        return True
    config = read_jsonc(home / USER_CONFIG)
    folders = config.get("trustedFolders") if isinstance(config, dict) else None
    if not isinstance(folders, list):
        return False
    here = os.path.realpath(root)
    for folder in folders:
        if isinstance(folder, str) and folder:
            real = os.path.realpath(os.path.expanduser(folder))
            if here == real or here.startswith(real.rstrip(os.sep) + os.sep):
                return True
    return False


def _copilot_args(argv: list[str]) -> list[str] | None:
    """The arguments of a Copilot command line (the native `copilot`, or the npm launcher
    `node .../copilot`), else None."""
    if not argv:
        return None
    first = os.path.basename(argv[0])
    if first in ("copilot", "copilot.exe"):
        return argv[1:]
    if first in ("node", "node.exe") and len(argv) > 1 and os.path.basename(argv[1]) in ("copilot", "npm-loader.js"):
        return argv[2:]
    return None


def _prompted(args: list[str]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg in ("-p", "--prompt") or arg.startswith("--prompt="):
            return True
    return False


def _session_process() -> tuple[int, str] | str:
    """The headless session this hook runs in: (pid, start time) of the nearest ancestor
    that is the native `copilot` executable with `-p` on its command line; else why not.
    The npm launcher (`node`) is passed over; an interactive session is never chosen."""
    for pid, argv in ancestors(8):
        try:
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if exe not in ("copilot", "copilot (deleted)"):
            continue
        rest = _copilot_args(argv)
        if rest is None or not _prompted(rest):
            return f"copilot pid {pid} is an interactive session (no -p): never ended by loopwatch"
        began = _started(pid)
        if began is None:
            return f"copilot pid {pid} could not be identified"
        return pid, began
    return "no headless copilot process among the hook's ancestors"


def _started(pid: int) -> str | None:
    """A process's start time (its /proc stat field), to tell it from a later one with
    the same pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _signal(pid: int, began: str, sig: int) -> None:
    """Send `sig` to `pid` only if it is still the process found (same start time):
    through a pidfd where the system has one, so a pid reused in between is never hit."""
    import signal

    opened = getattr(os, "pidfd_open", None)
    fd = None
    if opened is not None:
        try:
            fd = opened(pid)
        except OSError:
            fd = None
    try:
        if _started(pid) != began:
            raise ProcessLookupError(3, "the copilot process is gone")
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
    finally:
        if fd is not None:
            os.close(fd)


HOST = Copilot()
