"""Cursor's shapes (the Cursor CLI, `cursor-agent`, and the agent of the Cursor editor),
written once: hook payloads and answers, the shape of `--output-format stream-json`,
where its hooks go. Used by the hook, by `install` and `doctor`, and by the reader of
its stream-json output (`loopwatch._readers.cursor`).

**Built from Cursor's documentation alone** (its hooks page and the CLI's output-format
reference, December 2026): `cursor-agent` is not on a package registry and needs an
account, so no test here has run it. Everything below is what the documentation says,
never what a real run was seen to do; `install`, `doctor` and the README say so.

- **Hooks** are read from `~/.cursor/hooks.json` (the user's) and `<project>/.cursor/hooks.json`
  (a project's), in the form `{"version": 1, "hooks": {"beforeShellExecution":
  [{"command": CMD}], ...}}`. A hook gets one JSON object on stdin and may answer one
  on stdout. `install` writes one entry per event, the event's name on its command
  line as well (a payload's `hook_event_name` is used when the command line names
  none).
- **Payloads** all carry `conversation_id` (the session), `generation_id` (one model
  turn: not identity), `hook_event_name` and `workspace_roots`:
  - `beforeShellExecution {command, cwd}`, then `afterShellExecution {command, output,
    duration}`: a shell call, named `shell` here with `{command}` as its input (the
    folder is not identity);
  - `beforeMCPExecution {tool_name, tool_input}` (`tool_input` an object or JSON
    text), then `afterMCPExecution {tool_name, tool_input, result_json, duration}`: an
    MCP tool call, named as the tool is; its result failed when `result_json` says
    `isError: true`;
  - `afterFileEdit {file_path, edits}`: an edit the agent made, a call named `edit`
    with `{path, edits}` (as stream-json names an edit; a writer: an edit is
    progress), with no before-call event;
  - `beforeSubmitPrompt {prompt}`: the person wrote; `stop {status, loop_count}`: the
    agent's turn ended.
  The documented after-shell payload has no exit code: a failing command is told
  from a succeeding one only by its output (the same output again is what counts).
- **Answers**: a before-call event's `{"permission": "deny", "user_message": ...,
  "agent_message": ...}` refuses the call, the agent being handed `agent_message`.
  After-call events and `afterFileEdit` read no answer, so the model never sees a
  nudge: the first thing loopwatch says to it is a refusal. `beforeSubmitPrompt` is
  answered `{"continue": true}` (loopwatch never holds back a person's prompt), and
  `stop` with nothing (its only answer, `followup_message`, would make the agent go
  on).
- **Ending a run**: no documented answer ends one. A stop refuses every later call of
  the session (shell and MCP) until the person writes again; the agent may still
  write text, read and edit files (no before-event for those is hooked), and stops when
  it gives up. `loopwatch run` ending the process is the way to end it for sure.
- **Attended or not**: `cursor-agent -p` / `--print` on the command line says headless
  (the CLI's print mode); anything else (the editor, the interactive CLI) is attended.
- **Not hooked**: the generic `preToolUse` / `postToolUse` of newer builds (they would
  report every shell and MCP call a second time), `beforeReadFile` (reads are not
  refused), the Tab hooks. No setting is documented that lets a project switch the
  user's hooks off, so none is looked for.

Standard library only, nothing built at import: the hook imports this module.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from . import HOST_WRITERS
from .base import (
    AFTER,
    ALLOW_REPLY,
    BEFORE,
    PROMPT,
    TURN_END,
    Call,
    JsonHooks,
    Payload,
    PayloadError,
    Reply,
    StateFolder,
    is_ours,
    text_field,
    trim,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = ["HOOK_EVENTS", "HOST", "NAME", "SHELL", "WRITERS", "mcp_failed", "parse_json_text"]

NAME = "cursor"

#: The events `loopwatch install cursor` hooks, in Cursor's words, and the guard's word
#: for each (`afterFileEdit` reports a write that ran).
EVENTS: Mapping[str, str] = MappingProxyType(
    {
        "beforeShellExecution": BEFORE,
        "afterShellExecution": AFTER,
        "beforeMCPExecution": BEFORE,
        "afterMCPExecution": AFTER,
        "afterFileEdit": AFTER,
        "beforeSubmitPrompt": PROMPT,
        "stop": TURN_END,
    }
)
HOOK_EVENTS = tuple(EVENTS)

#: The name a shell call gets (the hooks report no tool name for it), live and in a
#: stream-json file alike.
SHELL = "shell"
#: The name an edit reported by `afterFileEdit` gets.
EDIT = "edit"

#: Cursor's tools that write a file, and the input field that names it (its
#: stream-json `writeToolCall` / `editToolCall`, and `afterFileEdit`). Writers for
#: Cursor's runs only (`hosts.monitors`): other agents give these names to other tools.
WRITERS: Mapping[str, str | None] = MappingProxyType(HOST_WRITERS["cursor"])

#: The settings file, in the user's home and at a project's root.
HOOKS_FILE = os.path.join(".cursor", "hooks.json")


def parse_json_text(value: Any) -> Any:
    """A value Cursor may give as JSON text (`tool_input`, `result_json`): parsed when
    it is JSON, else as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def mcp_failed(result: Any) -> bool:
    """Does an MCP tool's result (parsed) say the call failed (`isError: true`, the
    MCP protocol's own flag)?"""
    return isinstance(result, dict) and result.get("isError") is True


def _session(raw: Mapping[str, Any]) -> str:
    session = raw.get("conversation_id")
    if not isinstance(session, str) or not session:
        raise PayloadError("missing conversation_id")
    return session


def _cwd(raw: Mapping[str, Any]) -> str | None:
    cwd = text_field(raw, "cwd")
    if cwd:
        return cwd
    roots = raw.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return None


class Cursor(JsonHooks):
    """Cursor: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "Cursor"
    binary = "cursor-agent"
    package = None  # not on a package registry: https://cursor.com/install
    tested = ()
    documented_only = True
    events = EVENTS
    hooked_events = HOOK_EVENTS
    scopes = ("user", "project")
    reports_refusals = False  # a refused call gets no after-call event
    # `scan ~/.cursor`: its hooks, MCP servers, CLI configuration and chats' stores are
    # left out by name, never opened: no file in it has a documented transcript shape
    # (stream-json is what `cursor-agent -p` prints, saved where the user chooses).
    state_folders = (StateFolder((), (), name=".cursor"),)
    install_notes = MappingProxyType(
        {
            "user": (
                "Cursor's hooks are built from its documentation alone: loopwatch has not been run with the real "
                "Cursor. No documented answer ends a Cursor run: once stopped, every shell and MCP call is refused "
                "until you write again."
            ),
            "project": (
                "Cursor's hooks are built from its documentation alone: loopwatch has not been run with the real "
                "Cursor. This file is the project's: anyone who can change the project can remove it "
                "(`loopwatch install cursor` writes your own)."
            ),
        }
    )

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        native = event or text_field(raw, "hook_event_name")
        if not native:
            raise PayloadError("a Cursor payload names no event, and neither does the hook command")
        session = _session(raw)
        guard = EVENTS.get(native, native)
        calls: tuple[Call, ...] = ()
        if native in ("beforeShellExecution", "afterShellExecution"):
            calls = (self._shell(raw, native),)
        elif native in ("beforeMCPExecution", "afterMCPExecution"):
            calls = (self._mcp(raw, native),)
        elif native == "afterFileEdit":
            calls = (self._edit(raw),)
        return Payload(NAME, guard, session, "", _cwd(raw), calls, native=native)

    @staticmethod
    def _shell(raw: Mapping[str, Any], native: str) -> Call:
        command = raw.get("command")
        if not isinstance(command, str):
            raise PayloadError(f"{native}: missing command")
        tool_input = trim({"command": command})
        if native == "beforeShellExecution":
            return Call(SHELL, tool_input)
        output = raw.get("output")
        return Call(SHELL, tool_input, None, trim(output if output is not None else ""), False)

    @staticmethod
    def _mcp(raw: Mapping[str, Any], native: str) -> Call:
        name = raw.get("tool_name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{native}: missing tool_name")
        tool_input = trim(parse_json_text(raw.get("tool_input")))
        if native == "beforeMCPExecution":
            return Call(name, tool_input)
        result = parse_json_text(raw.get("result_json"))
        return Call(name, tool_input, None, trim(result), mcp_failed(result))

    @staticmethod
    def _edit(raw: Mapping[str, Any]) -> Call:
        path = raw.get("file_path")
        if not isinstance(path, str) or not path:
            raise PayloadError("afterFileEdit: missing file_path")
        # The edit's text is part of its identity (the same edit again is a repeat);
        # the result is the path: an edit that ran reports nothing else.
        return Call(EDIT, trim({"path": path, "edits": raw.get("edits")}), None, path, False)

    def parse_oversize(self, fields: Mapping[str, str], event: str | None = None) -> Payload:
        native = event or fields.get("hook_event_name")
        session = fields.get("conversation_id")
        if not native or not session:
            raise PayloadError("oversize Cursor payload without a readable event name and conversation_id")
        guard = EVENTS.get(native, native)
        calls: tuple[Call, ...] = ()
        name = SHELL if "Shell" in native else fields.get("tool_name") if "MCP" in native else EDIT
        if guard in (BEFORE, AFTER) and name:
            marker = {"loopwatch": "oversize", "nonce": os.urandom(8).hex()}
            calls = (Call(name, marker),)
        return Payload(NAME, guard, session, "", None, calls, oversize=True, native=native)

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        from .._core.verdict import Action

        event = payload.event
        if event == BEFORE:
            if decision.blocks and decision.message is not None:
                return self.refuse(
                    payload.native, decision.message, stop=decision.action is Action.STOP, person=decision.reason
                )
            # Nothing, not `"permission": "allow"`: that would also approve a call
            # Cursor would have asked the person about.
            return ALLOW_REPLY
        if payload.native == "beforeSubmitPrompt":
            return Reply({"continue": True})
        # After a call, an edit, a turn's end: Cursor reads no answer that could reach
        # the model or end the run (see the module's doc).
        return ALLOW_REPLY

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        from .._core.messages import Blocked, Stopped

        told = (Stopped if stop else Blocked)(person or reason).for_person()
        return Reply({"permission": "deny", "user_message": told, "agent_message": reason})

    def headless(self, argv: list[str]) -> str | None:
        for i, arg in enumerate(argv[:3]):
            if _is_cursor_agent(arg):
                rest = argv[i + 1 :]
                if any(a in ("-p", "--print") for a in rest):
                    return "cursor-agent -p"
                return ""
        return None

    probe_event = "afterShellExecution"

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "conversation_id": "loopwatch-doctor",
            "generation_id": "loopwatch-doctor",
            "hook_event_name": "afterShellExecution",
            "workspace_roots": [cwd],
            "command": "true",
            "output": "",
            "duration": 1,
        }

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # here, not at import: the hook never needs it

        if scope == "user":
            return Path(env.get("HOME") or os.path.expanduser("~")) / HOOKS_FILE
        return cwd / HOOKS_FILE

    def group(self, event: str, command: str) -> dict[str, Any]:
        return {"command": f"{command} {event}"}

    def commands(self, group: Any) -> list[str]:
        if not isinstance(group, dict):
            return []
        command = group.get("command")
        return [command] if isinstance(command, str) and is_ours(command) else []

    def _without(self, group: Any) -> Any:
        return None if self.commands(group) else group

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = super().install(settings, command, scope)
        return {"version": out.pop("version", 1), **out}


def _is_cursor_agent(arg: str) -> bool:
    """Is this a command line's word for the Cursor CLI (`cursor-agent`, or the `agent`
    it installs under `~/.local/share/cursor-agent/`)? A bare `agent` elsewhere is
    another program's."""
    base = os.path.basename(arg)
    return base in ("cursor-agent", "cursor-agent.exe") or (base in ("agent", "index.js") and "cursor-agent" in arg)


HOST = Cursor()
