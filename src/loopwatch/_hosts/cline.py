"""Cline CLI's shapes, written once: hook payloads, answers, hook files, session files and
`cline --json` output. Used by the hook, `install`/`doctor` and the Cline reader
(`loopwatch._readers.cline`).

What the real CLI was seen to do (npm `cline` 3.0.57 and 3.0.65, offline against a
scripted model; tests/test_realclient_cline.py pins each of these):

- **Hooks are files**, one per event (`PreToolUse`, `PostToolUse`, `TaskStart`,
  `TaskComplete`, `SessionShutdown`, ...), found in `~/Documents/Cline/Hooks` and
  `$CLINE_DIR|~/.cline/hooks` (the user's) and `<workspace>/.clinerules/hooks`,
  `<workspace>/.cline/hooks` (a project's, run with no trust asked). Every file of an
  event runs, one after the other in order of full path (a locale comparison), and is
  killed after 120 s; its stdout is one JSON answer, its exit status and stderr are
  ignored. The command comes from the shebang (`#!/bin/sh` runs `sh FILE`, looked up on
  PATH). `UserPromptSubmit` never runs; only PreToolUse and PostToolUse are waited for.
- **Payloads** name their event (`hookName`: `tool_call`, `tool_result`, ...), the session
  (`sessionContext.rootSessionId`, also the folder of its session files), the agent
  (`agent_id`; a sub-agent run by `spawn_agent` has `parent_agent_id`, the main agent
  null), the call (`tool_call {id, name, input}`; after it, `tool_result {id, name, input,
  output, error?}` with the input as it ran, after any hook's `overrideInput`).
- **A failing command is not a failing call**: `run_commands` answers one item per command,
  `{"query", "result", "error": "Command exited with code N", "success": false}`, while
  `postToolUse.success` stays true; the exit code is only in that text. A call Cline's own
  repeat check aborted (at the 5th identical call) reads `"Command failed: Command was
  aborted"`. A tool-level error (an input it cannot use) is `output {"error": ...}` with
  `tool_result.error` set. A call's result is its `output` alone: the times and duration
  Cline reports beside it differ at every call, and would make identical failures look
  different.
- **Answers**: `cancel: true` (PreToolUse: the call does not run; PostToolUse: its result is
  dropped) ends the run, sub-agent only inside a sub-agent, with no further model request
  and exit status 0; `--json` then says only "aborted by another client", so the person is
  told another way (`say`). `context` reaches the model as a `<hook_context>` user message
  after the call's result. There is no "deny": a call is refused by `overrideInput`, an
  input that fails harmlessly (`refusal_input`): a command that prints loopwatch's reason
  and exits 1. An input Cline cannot use counts as a mistake (3 in a row end the run), and
  Cline's own check aborts a run at the 5th identical input, so every refusal is a valid
  input and a different one (the call id and a nonce in it). The last `overrideInput` of
  the chain wins: a project hook that sorts after loopwatch's can undo a refusal, never a
  cancel.
- **Attended or not**: the session's manifest (`<sessions>/<id>/<id>.json`, `"interactive"`)
  is written before the first hook runs; in hub mode the hook's parent is the hub daemon,
  whose command line says nothing.
- A project `.env` (and `.env.local`, ...) in the folder Cline was started in is loaded into
  Cline's environment, and so into the hook's, for variables not already set (`${VAR}`
  expanded): hooks run with `python -I`, and what such a file sets may only tighten the
  guard (`env_files`; Cline's own process still has the environment it was started with,
  `started_environ`, which tells the user's variables from the file's).

Standard library only, nothing heavy at import: the hook imports this module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .base import (
    AFTER,
    ALLOW_REPLY,
    BEFORE,
    Call,
    FileHooks,
    Payload,
    PayloadError,
    Reply,
    StateFolder,
    SwitchOff,
    ancestors,
    trim,
    write_stderr_of,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = [
    "HOOK_EVENTS",
    "HOST",
    "NAME",
    "SHELL_TOOL",
    "call_input",
    "hook_event_of",
    "interrupted",
    "loopwatch_refused",
    "output_failed",
    "refusal_input",
    "sessions_dirs",
]

NAME = "cline"

#: The events `loopwatch install cline` writes hook files for: the only two Cline waits for.
HOOK_EVENTS = ("PreToolUse", "PostToolUse")

#: `hookName` in a payload -> the name of the hook file that runs for it.
HOOK_NAMES: Mapping[str, str] = {
    "tool_call": "PreToolUse",
    "tool_result": "PostToolUse",
    "agent_start": "TaskStart",
    "agent_resume": "TaskResume",
    "agent_abort": "TaskCancel",
    "agent_end": "TaskComplete",
    "agent_error": "TaskError",
    "prompt_submit": "UserPromptSubmit",
    "session_shutdown": "SessionShutdown",
}
_FILE_EVENTS = {name.lower(): name for name in (*HOOK_NAMES.values(), "PreCompact")}
#: The endings Cline runs a hook file with (besides none), case aside.
_EXTENSIONS = frozenset({".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".py", ".ps1"})

#: The shell tool, and the keys a model names its command by (the schema says `commands`;
#: Cline also runs `command` and `cmd`, a string or a list).
SHELL_TOOL = "run_commands"
_COMMAND_KEYS = ("commands", "command", "cmd")
#: The sub-agent tool.
SPAWN_TOOL = "spawn_agent"
#: What an item of a call Cline's own repeat check aborted says (the call never ran).
ABORTED = "Command failed: Command was aborted"

#: Where the user's hooks go: `~/Documents/Cline/Hooks` depends on HOME alone, which a
#: project's `.env` cannot set (`~/.cline/hooks` moves with `CLINE_DIR`, which it can).
USER_HOOKS = os.path.join("Documents", "Cline", "Hooks")
#: A project's hook folders and plugin folder, as Cline lists them under the workspace.
PROJECT_HOOKS = (os.path.join(".clinerules", "hooks"), os.path.join(".cline", "hooks"))
PROJECT_PLUGINS = os.path.join(".cline", "plugins")
#: The `.env` files Bun loads from the folder Cline was started in.
DOTENV = (".env", ".env.local", ".env.development", ".env.development.local", ".env.production", ".env.test")


def hook_event_of(name: str) -> str | None:
    """The event a hook file of this name runs for, as Cline reads names (its extension,
    if one Cline knows, and case aside); None for a file Cline never runs."""
    stem, ext = os.path.splitext(name)
    if ext.lower() not in _EXTENSIONS:
        stem = name if not ext else ""
    return _FILE_EVENTS.get(stem.strip().lower()) if stem else None


# -- calls ----------------------------------------------------------------------------------


def call_input(name: str, value: Any) -> Any:
    """A call's input as loopwatch identifies it: for `run_commands`, the command list under
    `commands` whichever key and shape the model used (Cline runs `{"cmd": "ls"}` as
    `{"commands": ["ls"]}`); other keys kept as they are (`description`, which Cline passes
    through unused, is left out by `_core.identity`). Any other tool's input as it is."""
    if name != SHELL_TOOL or not isinstance(value, dict) or "commands" in value:
        if name == SHELL_TOOL and isinstance(value, dict) and isinstance(value.get("commands"), str):
            return {**value, "commands": [value["commands"]]}
        return value
    for key in _COMMAND_KEYS[1:]:
        if key in value:
            commands = value[key]
            out = {k: v for k, v in value.items() if k != key}
            out["commands"] = [commands] if isinstance(commands, str) else commands
            return out
    return value


def _items(output: Any) -> list[dict[str, Any]]:
    """The per-item results of an output: run_commands and read_files give a list, the
    editor one object."""
    if isinstance(output, list):
        return [item for item in output if isinstance(item, dict)]
    if isinstance(output, dict) and "success" in output:
        return [output]
    return []


def interrupted(output: Any) -> bool:
    """Did Cline's own repeat check abort this call (it never ran)?"""
    items = _items(output)
    return bool(items) and all(item.get("error") == ABORTED for item in items)


def output_failed(output: Any, tool_error: Any = None, success: Any = None) -> bool:
    """Did the call fail? A tool-level error (`tool_result.error`, an output `{"error":
    ...}`, `postToolUse.success: false`), or any item of the output that says
    `success: false` (a command's non-zero exit, a file that could not be read, an edit
    that found no text). The one rule for a Cline result, the hook's and the reader's."""
    if tool_error or success is False:
        return True
    if isinstance(output, dict) and "error" in output and "success" not in output:
        return True
    return any(item.get("success") is False for item in _items(output))


# -- refusing one call -----------------------------------------------------------------------------

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
_REASON_CHARS = 1000


def _nonce(call_id: str | None) -> str:
    """The call's id (only the characters a path and a shell word take) and a random part:
    every refusal is a different input, so Cline's own identical-call check never counts
    refusals, whatever ids the model gives."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "", call_id or "")[:64]
    return f"{safe}-{os.urandom(4).hex()}" if safe else os.urandom(6).hex()


def refusal_input(name: str, call_id: str | None, reason: str) -> dict[str, Any] | None:
    """An input for tool `name` that does not do what the model asked and fails at once,
    harmlessly, saying why: Cline's way to refuse one call (`overrideInput`). None for a
    tool with no such input (the call then runs, and the model is told)."""
    nonce = _nonce(call_id)
    if name == SHELL_TOOL:
        import shlex

        said = _UNSAFE.sub(" ", reason)[:_REASON_CHARS]
        return {"commands": [f": loopwatch-refused {nonce}; printf '%s\\n' {shlex.quote(said)} >&2; exit 1"]}
    # A path under /dev/null can be neither read nor created: the call fails, nothing is
    # written (the editor creates missing files, even in missing folders).
    path = f"/dev/null/loopwatch-refused-{nonce}"
    if name == "editor":
        return {"path": path, "old_text": "loopwatch", "new_text": "loopwatch"}
    if name == "read_files":
        return {"files": [{"path": path}]}
    return None


#: The top-level keys of a session's messages file (`<id>.messages.json`): what tells it
#: from other files that hold a `messages` list.
SESSION_KEYS = frozenset({"version", "updated_at", "agent", "sessionId", "messages"})

#: What marks an input as loopwatch's refusal (`refusal_input`).
REFUSED_MARK = "loopwatch-refused"


def loopwatch_refused(value: Any) -> bool:
    """Is this input, or this output (whose items repeat the input as their `query`),
    loopwatch's refusal of a call (`refusal_input`): the call asked for never ran?"""
    if isinstance(value, dict):
        commands = value.get("commands")
        if isinstance(commands, list):
            return any(isinstance(c, str) and c.startswith(f": {REFUSED_MARK} ") for c in commands)
        files = value.get("files")
        if isinstance(files, list):
            return any(isinstance(f, dict) and _refused_path(f.get("path")) for f in files)
        return _refused_path(value.get("path")) or _refused_path(value.get("query"))
    if isinstance(value, list):
        return bool(value) and all(loopwatch_refused(item) for item in value)
    return False


def _refused_path(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    text: str = value
    if text.startswith(f": {REFUSED_MARK} "):
        return True
    return text.removeprefix("edit:").startswith(f"/dev/null/{REFUSED_MARK}-")


# -- where Cline keeps things -----------------------------------------------------------------


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def cline_dir(env: Mapping[str, str]) -> str:
    """`$CLINE_DIR`, else `~/.cline`."""
    return (env.get("CLINE_DIR") or "").strip() or os.path.join(_home(env), ".cline")


def sessions_dirs(env: Mapping[str, str], argv: list[str] | None = None) -> list[str]:
    """Where Cline writes session files, as it resolves them (`CLINE_SESSION_DATA_DIR`,
    `CLINE_DATA_DIR/sessions`, `(CLINE_DIR|~/.cline)/data/sessions`), first the folders a
    Cline command line `argv` names (`--data-dir`, `--config`)."""
    found: list[str] = []
    for flag, tail in (("--data-dir", ("sessions",)), ("--config", ("data", "sessions"))):
        if argv and flag in argv[:-1]:
            found.append(os.path.join(argv[argv.index(flag) + 1], *tail))
    explicit = (env.get("CLINE_SESSION_DATA_DIR") or "").strip()
    data = (env.get("CLINE_DATA_DIR") or "").strip() or os.path.join(cline_dir(env), "data")
    found.append(explicit or os.path.join(data, "sessions"))
    return found


_SESSION_ID = re.compile(r"\A[A-Za-z0-9_-]{1,128}\Z")
_MANIFEST_LIMIT = 8 << 20


def session_manifest(session: str, env: Mapping[str, str], argv: list[str] | None = None) -> dict[str, Any] | None:
    """The manifest Cline keeps of session `session` (`<sessions>/<id>/<id>.json`), or None.
    Read only for its `interactive` and `status`; never raises."""
    if not _SESSION_ID.match(session):
        return None  # an id from a payload names a file: nothing but an id's letters
    for folder in sessions_dirs(env, argv):
        found = _read_json(os.path.join(folder, session, f"{session}.json"), _MANIFEST_LIMIT)
        if isinstance(found, dict):
            return found
    return None


def _read_json(path: str, limit: int) -> Any:
    """A small JSON file, or None when it is absent, too large or not JSON; never raises."""
    from .._files import open_file

    try:
        with open_file(path) as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


# -- the process running the session -------------------------------------------------------------

#: Options of `cline` that take a value (so a word after them is not the prompt).
_VALUE_OPTIONS = frozenset(
    {
        "-c",
        "--cwd",
        "--compaction",
        "--id",
        "-P",
        "--provider",
        "-k",
        "--key",
        "-m",
        "--model",
        "-s",
        "--system",
        "-t",
        "--timeout",
        "--config",
        "--data-dir",
        "--hooks-dir",
        "--auto-approve",
    }
)


def _is_cline(arg: str) -> bool:
    base = os.path.basename(arg)
    return base in ("cline", ".cline") or arg.replace("\\", "/").endswith("cline/bin/cline")


def _cline_argv(argv: list[str]) -> list[str] | None:
    """The arguments after `cline` in a command line, or None when it is not Cline's."""
    for i, arg in enumerate(argv[:3]):
        if _is_cline(arg):
            return argv[i + 1 :]
    return None


def _parent_cline() -> tuple[int, list[str]] | None:
    """(pid, arguments) of the Cline process that runs this hook, when it is Cline's own
    command (local mode) and not the hub daemon; None otherwise."""
    for pid, argv in ancestors(1):
        rest = _cline_argv(argv)
        if rest is not None and "--cline-hub-daemon" not in rest:
            return pid, rest
    return None


# -- the host ------------------------------------------------------------------------------


def _first_root(raw: Mapping[str, Any]) -> str | None:
    roots = raw.get("workspaceRoots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    info = raw.get("workspaceInfo")
    root = info.get("rootPath") if isinstance(info, dict) else None
    return root if isinstance(root, str) else None


def _sort_key(path: str) -> tuple[tuple[int, str], ...]:
    """An approximation of the order Cline sorts hook files in (`localeCompare`: the
    Unicode collation's root order, letters case aside, punctuation before digits before
    letters): enough to tell which of two hook paths runs first."""
    out = []
    for char in path:
        rank = _PUNCTUATION.find(char)
        if rank >= 0:
            out.append((0, f"{rank:03d}"))
        elif char.isdigit():
            out.append((1, char))
        else:
            out.append((2, char.casefold()))
    return tuple(out)


# Punctuation and symbols in the root collation's order (ASCII).
_PUNCTUATION = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


class Cline(FileHooks):
    """Cline CLI: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "Cline"
    binary = "cline"
    package = "cline"
    tested = ("3.0.57", "3.0.65")
    events = MappingProxyType({"PreToolUse": BEFORE, "PostToolUse": AFTER})
    hooked_events = HOOK_EVENTS
    isolated = True
    # `~/.cline/data` (its session folders beside settings, databases, caches, logs and
    # locks: a cache holds a `.jsonl` of typed prompts), and one session's folder (its
    # manifest beside the messages: `<id>.json`, ids being `<ms since 1970>_<5 letters>`).
    state_folders = (
        StateFolder(keep=("sessions",), marker=("sessions", "settings", "db")),
        StateFolder(keep=("*.messages.json",), marker=("[0-9]*_*.messages.json", "[0-9]*_*.json")),
    )
    oversize_fields = MappingProxyType(
        {"event": "hookName", "session": "rootSessionId", "tool": "name", "call_id": "id", "agent": "agent_id"}
    )
    # A folder whose hook files Cline runs (the user's, or a project's) or whose plugins it
    # loads, named by the agent's edit or by a shell line that writes, moves or removes.
    # Judged per tool (`switches_off`): an edit by its path, a command by its own text.
    switch_paths = (
        r"Documents[/\\]+Cline(?:[/\\]+Hooks(?![A-Za-z0-9_.-])|[/\\]*(?![/\\A-Za-z0-9_.-]))"
        r"|\.clinerules[/\\]+hooks|\.cline[/\\]+(?:hooks|plugins)"
    )
    switch_keys = (
        r"(?:^|[\s;&|(`])(?:mv|cp|rm|ln|tee|touch|mkdir|rmdir|chmod|install|rsync|unlink|truncate|dd|sed\s+-i"
        r"|git\s+(?:mv|rm|checkout|restore|apply))\b|>(?![&>]?\s*/dev/null|&)"
    )

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        named = raw.get("hookName")
        native = HOOK_NAMES.get(named) if isinstance(named, str) else None
        native = native or event
        if not native:
            raise PayloadError("missing hookName")
        context = raw.get("sessionContext")
        session = context.get("rootSessionId") if isinstance(context, dict) else None
        if not isinstance(session, str) or not session:
            raise PayloadError("missing sessionContext.rootSessionId")
        parent = raw.get("parent_agent_id")
        agent_id = raw.get("agent_id")
        sub = isinstance(parent, str) and bool(parent)
        agent = agent_id if sub and isinstance(agent_id, str) and agent_id else ""
        guard_event = self.events.get(native, native)
        calls: tuple[Call, ...] = ()
        if guard_event == BEFORE:
            calls = (self._call(raw.get("tool_call"), native, ran=False),)
        elif guard_event == AFTER:
            calls = (self._call(raw.get("tool_result"), native, ran=True, post=raw.get("postToolUse")),)
        return Payload(
            NAME, guard_event, session, agent, _first_root(raw), calls, native=native, parent=parent if sub else None
        )

    def _call(self, item: Any, native: str, *, ran: bool, post: Any = None) -> Call:
        if not isinstance(item, dict):
            raise PayloadError(f"{native}: missing {'tool_result' if ran else 'tool_call'}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{native}: missing the tool's name")
        call_id = item.get("id")
        call_id = call_id if isinstance(call_id, str) and call_id else None
        tool_input = trim(call_input(name, item.get("input")))
        if not ran:
            return Call(name, tool_input, call_id)
        output = item.get("output")
        success = post.get("success") if isinstance(post, dict) else None
        failed = output_failed(output, item.get("error"), success)
        refused = loopwatch_refused(item.get("input"))
        return Call(name, tool_input, call_id, trim(output), failed, interrupted(output), refused=refused)

    def parse_oversize(self, fields: Mapping[str, str], event: str | None = None) -> Payload:
        named = fields.get("hookName")
        native = event or (HOOK_NAMES.get(named) if named else None)
        found = dict(fields)
        if native:
            found["hookName"] = native
        if "parent_agent_id" not in fields:
            found.pop("agent_id", None)  # the main agent: its parent is null, no string to find
        payload = super().parse_oversize(found, native)
        payload.parent = fields.get("parent_agent_id")
        return payload

    def switches_off(self, call: Call, cwd: str | None) -> str | None:
        value = call.input if isinstance(call.input, dict) else {}
        if call.name == "editor":  # every edit writes its path
            path = value.get("path")
            found = re.search(self.switch_paths, path) if isinstance(path, str) else None
            return found.group(0) if found else None
        if call.name != SHELL_TOOL:
            return None
        commands = value.get("commands")
        for command in [commands] if isinstance(commands, str) else commands if isinstance(commands, list) else []:
            if not isinstance(command, str) or not re.search(self.switch_keys, command):
                continue
            found = re.search(self.switch_paths, command)
            if found:
                return found.group(0)
        return None

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        from .._core.messages import Stopped
        from .._core.verdict import Action

        verdict = decision.verdict
        if payload.event == BEFORE:
            if not decision.blocks or decision.message is None:
                return ALLOW_REPLY
            if decision.action is Action.STOP:
                return self.refuse(payload.native, decision.message, stop=True, person=decision.reason)
            call = payload.calls[0]
            replaced = refusal_input(call.name, call.call_id, decision.message)
            if replaced is None:  # no input refuses this tool: it runs, and the model is told
                return Reply({"context": f"{decision.message} (Cline cannot refuse a {call.name} call: it ran.)"})
            return Reply({"overrideInput": replaced, "context": decision.message})
        if payload.event == AFTER:
            if stopped is not None and verdict.action.rank < Action.STOP.rank:
                return Reply({"cancel": True, "errorMessage": Stopped(stopped).for_person()})
            if decision.action is Action.STOP:
                return Reply({"cancel": True, "errorMessage": Stopped(verdict.description or "").for_person()})
            if decision.action in (Action.NUDGE, Action.BLOCK) and decision.message:
                return Reply({"context": decision.message})
        return ALLOW_REPLY

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        # Without the call in hand (a payload that could not be read, under `fail =
        # "closed"`) no input can be put in its place: ending the run is the refusal Cline
        # honours. With `stop`, the same answer.
        from .._core.messages import Stopped

        return Reply({"cancel": True, "errorMessage": Stopped(person or reason).for_person()})

    def detect_profile(self, env: Mapping[str, str], payload: Payload | None = None) -> tuple[str, str] | None:
        if payload is None:
            return None
        parent = _parent_cline()
        manifest = session_manifest(payload.session, env, parent[1] if parent else None)
        said = manifest.get("interactive") if manifest is not None else None
        if isinstance(said, bool):
            return (
                ("attended", "Cline session: interactive") if said else ("unattended", "Cline session: not interactive")
            )
        return None

    def headless(self, argv: list[str]) -> str | None:
        rest = _cline_argv(argv)
        if rest is None or "--cline-hub-daemon" in rest:
            return None  # the hub runs every session, watched or not: its command line says nothing
        if "--json" in rest:
            return "cline --json"
        if any(a in ("-i", "--tui", "--acp") for a in rest):
            return ""
        skip = False
        for arg in rest:
            if skip:
                skip = False
            elif arg in _VALUE_OPTIONS:
                skip = True
            elif not arg.startswith("-"):
                return "cline PROMPT"  # a prompt on the command line runs it with nobody asked
        return ""

    def say(self, payload: Payload, text: str) -> bool:
        # Cline prints nothing a hook answers; in local mode the hook's parent is the Cline
        # process, and its stderr is where the person running it looks. Not in the TUI
        # (drawn on that terminal) nor the hub (its stderr is a log no one reads).
        parent = _parent_cline()
        if parent is None or self.headless(["cline", *parent[1]]) == "":
            return False
        return write_stderr_of(parent[0], _UNSAFE.sub(" ", text).strip()[:2000] + "\n")

    def env_files(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        # Bun loads them from the folder Cline was started in: its process's (the hub
        # daemon's, in hub mode), which `-c DIR` does not change; and the workspace's.
        folders = [cwd]
        try:
            folders.append(os.readlink(f"/proc/{os.getppid()}/cwd"))
        except OSError:
            pass
        found: list[str] = []
        for folder in dict.fromkeys(folders):
            found.extend(os.path.join(folder, name) for name in DOTENV if os.path.isfile(os.path.join(folder, name)))
        return found

    def started_environ(self) -> dict[str, str] | None:
        # Cline's own process (local mode) started with the user's environment; what Bun
        # loaded from a `.env` afterwards is not in the environment it was started with. The
        # hub daemon was started by a Cline process that had loaded one: it cannot say.
        parent = _parent_cline()
        if parent is None:
            return None
        try:
            with open(f"/proc/{parent[0]}/environ", "rb") as fh:
                block = fh.read()
        except OSError:
            return None
        out: dict[str, str] = {}
        for item in block.split(b"\0"):
            key, sep, value = item.partition(b"=")
            if sep:
                out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        return out

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        output = [{"query": "true", "result": "", "success": True}]
        return {
            "clineVersion": "",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "taskId": "conv_loopwatch_doctor",
            "sessionContext": {"rootSessionId": "loopwatch-doctor"},
            "workspaceRoots": [cwd],
            "workspaceInfo": {"rootPath": cwd, "hint": os.path.basename(cwd)},
            "userId": "unknown",
            "agent_id": "agent_loopwatch_doctor",
            "parent_agent_id": None,
            "hookName": "tool_result",
            "iteration": 1,
            "tool_result": {
                "id": "call_doctor",
                "name": SHELL_TOOL,
                "input": {"commands": ["true"]},
                "output": output,
                "durationMs": 1,
            },
            "postToolUse": {
                "toolName": SHELL_TOOL,
                "parameters": {"commands": '["true"]'},
                "result": json.dumps(output),
                "success": True,
                "executionTimeMs": 1,
            },
        }

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # not at import: the hook never needs it

        if scope == "user":
            return Path(_home(env), USER_HOOKS)
        rules = cwd / ".clinerules"
        if rules.exists() and not rules.is_dir():  # the older rules file: Cline reads `.cline/hooks` too
            return cwd / PROJECT_HOOKS[1]
        return cwd / PROJECT_HOOKS[0]

    def event_of(self, name: str) -> str | None:
        # Every event's file: a loopwatch file of an event no longer hooked is found, and removed.
        return hook_event_of(name)

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        return self.start_warnings(str(cwd), env)

    def start_warnings(self, cwd: str, env: Mapping[str, str]) -> list[SwitchOff]:
        found: list[SwitchOff] = []
        mine = os.path.join(_home(env), USER_HOOKS)
        for folder in PROJECT_HOOKS:
            where = os.path.join(cwd, folder)
            try:
                files = self.hook_files(where)
            except OSError:
                continue
            for name, head in files.items():
                event = hook_event_of(name) or ""
                path = os.path.join(where, name)
                if event not in HOOK_EVENTS or not head or self.ours(head):
                    continue  # not run (a link, an empty file), or loopwatch's own (`install --project`)
                if _sort_key(path) < _sort_key(os.path.join(mine, event)):
                    continue  # runs before loopwatch's: its answer cannot undo loopwatch's
                found.append(
                    SwitchOff(
                        path,
                        f"a project {event} hook Cline runs after loopwatch's (in order of path), with no trust "
                        "asked: its answer can undo a refusal (not a stop)",
                        "undo",
                    )
                )
        plugins = os.path.join(cwd, PROJECT_PLUGINS)
        try:
            entries = [e for e in sorted(os.listdir(plugins)) if not e.startswith(".")]
        except OSError:
            entries = []
        if entries:
            found.append(
                SwitchOff(
                    plugins,
                    "project plugins Cline loads with no trust asked: they run after every hook and can undo "
                    "a refusal (not a stop)",
                    "undo",
                )
            )
        return found


HOST = Cline()
