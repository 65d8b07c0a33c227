"""Gemini CLI's shapes, written once: hook payloads and answers, settings, session
files and the `-o stream-json` output (the hook, `install`, `doctor` and the Gemini CLI
reader, `loopwatch._readers.gemini_cli`, all read them here).

What Gemini CLI (`@google/gemini-cli`) 0.58.0 and 0.61.0 were seen to do, the same in
both (real CLI, scripted Gemini API; tests/test_realclient_gemini.py pins each):

- Hooks live in `settings.json` under `hooks.<Event>`, as Claude Code's, with the
  timeout in **milliseconds**. Settings merge: system defaults < user
  (`~/.gemini/settings.json`, `$GEMINI_CLI_HOME`) < project (`<cwd>/.gemini/settings.json`,
  that folder only) < system (`/etc/gemini-cli/settings.json`,
  `$GEMINI_CLI_SYSTEM_SETTINGS_PATH`); `hooks` lists are joined, `hooksConfig.disabled`
  lists are joined, `hooksConfig.enabled` is the last one set. Hooks run only in a
  folder the user trusts (`~/.gemini/trustedFolders.json`); headless, an untrusted
  folder does not start at all (exit 55).
- Payloads: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`
  (ISO, the CLI's clock); BeforeTool adds `tool_name`, `tool_input`; AfterTool adds
  `tool_response {llmContent, returnDisplay, error?}`. **No call id, no agent field.**
  BeforeAgent fires once per prompt, AfterAgent at the end of the agent's turn.
- A failing shell command (`run_shell_command`) is no error: `tool_response` has no
  `error`, the exit code is only the line `Exit Code: N` in `llmContent` (after
  `Output: ...`, with `Signal:`, `Background PIDs:` and `Process Group PGID: N`, all
  inside an `<untrusted_context>` wrapper); a tool that fails (a missing file) has
  `error {message, type}`. `Process Group PGID` is the process group of that one run,
  new at every call: it is taken out of the result (`shell_result`), or two identical
  failures would never look alike.
- Answers: BeforeTool `{"decision": "deny", "reason": R}` refuses the call (the model
  reads "Tool execution blocked: R"; no AfterTool follows); AfterTool
  `hookSpecificOutput.additionalContext` is appended to the call's output for the model
  (`<hook_context>...</hook_context>`); `{"continue": false, "stopReason": R}` at
  BeforeTool (the call does not run) or AfterTool ends `gemini -p` at once: no further
  model request, exit 0; `systemMessage` is shown to the person.
- Calls of one model turn run in parallel, and so do their hooks (the state store
  queues them); a refused call is never reported again.
- Sub-agents (`invoke_agent`; the sub-agent ends with `complete_task`) run the same
  hooks with the same `session_id` and nothing that names them: the hook tells their
  calls by when they come (`loopwatch._hook.spawns`). A stop answered inside a sub-agent
  does not end the run (it reads as a failed call and the sub-agent carries on): every
  later call of the stopped sub-agent is refused but `complete_task`, so it ends at
  once, and its parent's AfterTool(`invoke_agent`) then ends the run.
- Nothing in the payload or the hook's environment says whether a person watches: the
  session process (the hook's parent, `node .../gemini`) has `-p` in its command line,
  or no terminal on stdin or stdout (`echo PROMPT | gemini`); `-i` and `--acp` are
  interactive; `CI=true` is headless.
- A project can switch the user's hooks off: `.gemini/settings.json` with
  `"hooksConfig": {"enabled": false}` (a system `"enabled": true` holds against it:
  `loopwatch install gemini-cli --system`), or `"hooksConfig": {"disabled": [NAME]}`
  naming the hook (nothing holds against it: the agent's write is refused, `doctor`
  names the file). A project `.env` (or `.gemini/.env`) reaches the hook's environment;
  the session process's environment at start does not have what it added
  (`started_environ`), so `loopwatch._trust` lets it only tighten.
- Its own loop detection refuses an identical call at the 5th request (4 ran) and
  ends the run at the next; a `description` reworded at every call gets past it (12 of
  12 ran): `description` is not the call's identity (`_core.identity`).
- Sessions: `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl` (JSON Lines: a
  head, message records (the last record of an id wins), `$set` and `$rewindTo`
  records), sub-agents in `chats/<session id>/<agent id>.jsonl`.

This module is on the hook's path: standard library only, nothing compiled or built at
import.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .base import (
    AFTER,
    BEFORE,
    PROMPT,
    TURN_END,
    Call,
    ClaudeStyle,
    Payload,
    PayloadError,
    Reply,
    SettingsError,
    StateFolder,
    SwitchOff,
    ancestors,
    is_ours,
    process_environ,
    read_json,
    text_field,
    trim,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BLOCKED",
    "FINISH_TOOLS",
    "HOOK_EVENTS",
    "HOOK_NAME",
    "HOST",
    "NAME",
    "SHELL",
    "SPAWN_TOOLS",
    "STOPPED",
    "call_result",
    "content_text",
    "gemini_home",
    "loopwatch_denial",
    "shell_result",
    "system_settings",
    "unwrapped",
]

NAME = "gemini-cli"

#: The events `loopwatch install gemini-cli` hooks, in this order.
HOOK_EVENTS = ("BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent")
_EVENTS = MappingProxyType({"BeforeTool": BEFORE, "AfterTool": AFTER, "BeforeAgent": PROMPT, "AfterAgent": TURN_END})

#: The `name` of loopwatch's entries: what `hooksConfig.disabled` would have to name.
HOOK_NAME = "loopwatch"

SHELL = "run_shell_command"
#: The tool the main agent runs a sub-agent with, and the one a sub-agent ends with.
SPAWN_TOOLS = frozenset({"invoke_agent"})
FINISH_TOOLS = frozenset({"complete_task"})

#: How Gemini CLI words a call a BeforeTool hook refused, and one a hook's stop ended,
#: before the hook's reason (the model's functionResponse, the session file, stream-json).
BLOCKED = "Tool execution blocked: "
STOPPED = "Agent execution stopped by hook: "

_WRAPPER = ("<untrusted_context>", "</untrusted_context>")
_HOOK_CONTEXT = ("<hook_context>", "</hook_context>")
# The lines Gemini CLI puts after a shell command's `Output: ...` (tools/shell.js).
_TRAILER = re.compile(r"^(Error|Exit Code|Signal|Background PIDs|Process Group PGID): (.*)$")
_BACKGROUND = re.compile(r"\(PID: \d+\)")
_TERMINATION = re.compile(r"^Termination Reason: (\w+)", re.MULTILINE)


def content_text(value: Any) -> str:
    """The text of a tool's `llmContent`: a string, or a list of parts (`{"text": ...}`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list):
        return "\n".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def unwrapped(text: str) -> str:
    """A tool's output without what Gemini CLI and its hooks put around it: the
    `<untrusted_context>` wrapper, and the `<hook_context>` blocks a hook's
    `additionalContext` appended (loopwatch's own nudge among them), so a nudge never
    makes two identical results look different."""
    body = text.rstrip()
    while body.endswith(_HOOK_CONTEXT[1]):
        at = body.rfind(_HOOK_CONTEXT[0])
        if at < 0:
            break
        body = body[:at].rstrip()
    head = body.lstrip()
    if head.startswith(_WRAPPER[0]) and head.endswith(_WRAPPER[1]):
        return head[len(_WRAPPER[0]) : -len(_WRAPPER[1])].strip("\n")
    return body if body != text.rstrip() else text


def shell_result(text: str) -> tuple[str, int | None, bool]:
    """A shell call's output as the model read it: (the text without its wrapper, the
    hook context loopwatch added and the numbers that change at every run; the exit
    code its trailer states, None when none; whether a signal or a spawn error ended
    it). The trailer is read from the end, so a program printing `Exit Code: 0` in its
    own output is not taken for it."""
    text = unwrapped(text)
    lines = text.split("\n")
    code: int | None = None
    broken = text.startswith("Command was automatically cancelled")  # its timeout
    for i in range(len(lines) - 1, 0, -1):
        found = _TRAILER.match(lines[i])
        if found is None:
            break
        key, value = found.groups()
        if key == "Exit Code":
            try:
                code = int(value)
            except ValueError:
                broken = True
        elif key in ("Signal", "Error"):
            broken = True
        else:  # Process Group PGID, Background PIDs: new numbers at every run
            del lines[i]
    return _BACKGROUND.sub("(PID: …)", "\n".join(lines)), code, broken


def call_result(name: str, response: Any) -> tuple[str, bool, bool]:
    """(the result the model read, failed, interrupted by the person) of one call, from
    an AfterTool `tool_response` (or a session file's `{"output": ...}` / `{"error": ...}`
    response, which has the same text)."""
    if not isinstance(response, dict):
        return content_text(response), False, False
    error = response.get("error")
    text = content_text(response.get("llmContent", response.get("output")))
    failed = bool(error)
    if not text and error:
        text = error.get("message", "") if isinstance(error, dict) else str(error)
        text = text if isinstance(text, str) else ""
    if name == SHELL:
        text, code, broken = shell_result(text)
        interrupted = text.startswith("Command was cancelled by user")
        return text, failed or broken or (code is not None and code != 0), interrupted
    text = unwrapped(text)
    if name in SPAWN_TOOLS:
        reason = _TERMINATION.search(text)
        failed = failed or (reason is not None and reason.group(1) != "GOAL")
    return text, failed, False


def loopwatch_denial(text: Any) -> str | None:
    """ "stop" or "block" when a call's result is loopwatch's own refusal through the hook
    (the call never ran), else None."""
    if not isinstance(text, str):
        return None
    for prefix in (BLOCKED, STOPPED):
        if text.startswith(prefix):
            from .._core.messages import Blocked, Stopped, loopwatch_said

            said = loopwatch_said(text[len(prefix) :])
            return "stop" if said is Stopped else "block" if said is Blocked else None
    return None


def stamp(value: Any) -> float | None:
    """An ISO time (`2026-12-06T02:21:49.579Z`) as epoch seconds, else None."""
    if not isinstance(value, str) or not 20 <= len(value) <= 40:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(value).timestamp()  # a "Z" is UTC (3.11)
    except ValueError:
        return None


def gemini_home(env: Mapping[str, str]) -> str:
    """The folder Gemini CLI takes for the home (`$GEMINI_CLI_HOME`, else `$HOME`)."""
    return env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")


def system_settings(env: Mapping[str, str]) -> Path:
    """The system settings file, which no project overrides (`getSystemSettingsPath`)."""
    from pathlib import Path  # here, not at import: the hook never needs it

    if env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH"):
        return Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"])
    if sys.platform == "darwin":
        return Path("/Library/Application Support/GeminiCli/settings.json")
    if sys.platform == "win32":
        return Path("C:\\ProgramData\\gemini-cli\\settings.json")
    return Path("/etc/gemini-cli/settings.json")


def _hooks_config(settings: Any) -> Mapping[str, Any]:
    table = settings.get("hooksConfig") if isinstance(settings, dict) else None
    return table if isinstance(table, dict) else {}


def _names_us(entry: Any) -> bool:
    """Does a `hooksConfig.disabled` entry name loopwatch's hook (its `name`, or its
    command where an entry has no name)?"""
    return isinstance(entry, str) and (entry == HOOK_NAME or is_ours(entry))


def _is_gemini(arg: str) -> bool:
    base = os.path.basename(arg)
    return base == "gemini" or arg.endswith(("gemini-cli/bundle/gemini.js", "gemini-cli/dist/index.js"))


_HEADLESS_FLAGS = ("-p", "--prompt")
_INTERACTIVE_FLAGS = ("-i", "--prompt-interactive", "--acp", "--experimental-acp")


class GeminiCli(ClaudeStyle):
    """Gemini CLI: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "Gemini CLI"
    binary = "gemini"
    package = "@google/gemini-cli"
    tested = ("0.58.0", "0.61.0")
    events = _EVENTS
    hooked_events = HOOK_EVENTS
    scopes = ("user", "project", "system")
    matcher_events = frozenset({"BeforeTool", "AfterTool"})
    timeout = 30_000  # milliseconds: `_hook.settings.HOST_TIMEOUT`
    reports_refusals = False
    state_folders = (
        # `scan ~/.gemini` (0.58.0, 0.61.0): only `tmp/`, where the sessions are; its settings,
        # trust records, credentials, extensions and history are left out by name.
        StateFolder(("tmp",), ("tmp", "settings.json")),
        # One project's folder under `tmp/`: its chats (sub-agents' in `chats/<session>/`) and
        # `/chat save` checkpoints; `logs.json` (prompts typed) and `checkpoints/` are not sessions.
        StateFolder(("chats", "checkpoint-*.json"), ("chats", "logs.json")),
        StateFolder(("chats", "checkpoint-*.json"), ("chats", "checkpoints")),
    )
    spawn_tools = SPAWN_TOOLS
    finish_tools = FINISH_TOOLS
    # A write of a settings file (a project's, the user's, the system's) that turns
    # hooks off or lists hooks to skip.
    switch_paths = r"(?:\.gemini|gemini-cli|GeminiCli)[/\\]+settings\.json"
    switch_keys = r"hooksConfig|\"?disabled\"?\s*:|\benabled\W{0,4}\s*:\s*false"

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        native = text_field(raw, "hook_event_name", required=True)
        session = text_field(raw, "session_id", required=True)
        assert native is not None and session is not None
        calls: tuple[Call, ...] = ()
        if native in ("BeforeTool", "AfterTool"):
            calls = (self._call(raw, native),)
        return Payload(
            NAME,
            _EVENTS.get(native, native),
            session,
            "",
            text_field(raw, "cwd"),
            calls,
            native=native,
            stamp=stamp(raw.get("timestamp")),
        )

    def _call(self, raw: dict[str, Any], native: str) -> Call:
        name = raw.get("tool_name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{native}: missing tool_name")
        tool_input = trim(raw.get("tool_input"))
        if native == "BeforeTool":
            return Call(name, tool_input)
        text, failed, interrupted = call_result(name, raw.get("tool_response"))
        return Call(name, tool_input, None, trim(text), failed, interrupted)

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        from .._core.messages import Blocked, Stopped

        out: dict[str, Any] = {"decision": "deny", "reason": reason}
        if stop:  # the call does not run, and the run ends (the reason is then the stop's)
            out["continue"] = False
            out["stopReason"] = out["systemMessage"] = Stopped(person or reason).for_person()
        elif person:
            out["systemMessage"] = Blocked(person).for_person()
        return Reply(out)

    def stop_reply(self, native: str, reason: str) -> Reply:
        # After a call ran: Gemini CLI shows the stop as the call's result, so it is
        # worded as a stop after the call (a reader must not take it for a refusal).
        from .._core.messages import StoppedAfter

        why = StoppedAfter(reason).for_person()
        return Reply({"continue": False, "stopReason": why, "systemMessage": why})

    def detect_profile(self, env: Mapping[str, str], payload: Payload | None = None) -> tuple[str, str] | None:
        # Gemini CLI's own rule (`isHeadlessMode`): CI runs are headless.
        if env.get("GEMINI_CLI_INTEGRATION_TEST") != "true":
            for name in ("CI", "GITHUB_ACTIONS"):
                if env.get(name) == "true":
                    return "unattended", f"{name}=true"
        return None

    def headless(self, argv: list[str]) -> str | None:
        for i, arg in enumerate(argv[:3]):
            if _is_gemini(arg):
                rest = argv[i + 1 :]
                if any(a in _HEADLESS_FLAGS or a.startswith("--prompt=") for a in rest):
                    return "gemini -p"
                return ""
        return None

    def headless_process(self, pid: int, argv: list[str]) -> str | None:
        verdict = self.headless(argv)
        if verdict != "":
            return verdict
        i = next(i for i, arg in enumerate(argv[:3]) if _is_gemini(arg))
        if any(a in _INTERACTIVE_FLAGS or a.startswith("--prompt-interactive=") for a in argv[i + 1 :]):
            return ""
        for fd in (0, 1):  # `echo PROMPT | gemini`, `gemini > log`: no terminal, nobody watches
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                return ""  # cannot tell: attended (nudge and block, never stop)
            if not target.startswith(("/dev/pts/", "/dev/tty")):
                return "gemini without a terminal"
        return ""

    def started_environ(self) -> dict[str, str] | None:
        for pid, argv in ancestors(6):
            if self.headless(argv) is None:
                continue
            return process_environ(pid)
        return None

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "session_id": "loopwatch-doctor",
            "transcript_path": os.path.join(folder, "session-doctor.jsonl"),
            "cwd": cwd,
            "hook_event_name": "AfterTool",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "tool_name": SHELL,
            "tool_input": {"command": "true", "description": "loopwatch doctor"},
            "tool_response": {
                "llmContent": "<untrusted_context>\nOutput: (empty)\nProcess Group PGID: 1\n</untrusted_context>",
                "returnDisplay": "",
            },
        }

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # here, not at import: the hook never needs it

        if scope == "user":
            return Path(gemini_home(env)) / ".gemini" / "settings.json"
        if scope == "system":
            return system_settings(env)
        return cwd / ".gemini" / "settings.json"

    def group(self, event: str, command: str) -> dict[str, Any]:
        group = super().group(event, command)
        group["hooks"][0] = {"name": HOOK_NAME, **group["hooks"][0]}
        return group

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = super().install(settings, command, scope)
        if scope == "system":
            # The system level is merged last: `enabled: true` there holds against a
            # project's (or the user's) `enabled: false`.
            table = out.get("hooksConfig", {})
            if not isinstance(table, dict):
                raise SettingsError('the settings file\'s "hooksConfig" is not an object; fix it by hand first')
            out["hooksConfig"] = {**table, "enabled": True}
        return out

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        from pathlib import Path  # here, not at import: the hook never needs it

        system_file = system_settings(env)
        pinned = _hooks_config(read_json(system_file)).get("enabled") is True
        files = [
            system_file.with_name("system-defaults.json")
            if not env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH")
            else Path(env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"]),
            self.settings_file("user", env, cwd),
            self.settings_file("project", env, cwd),
            system_file,
        ]
        found = []
        for path in files:
            table = _hooks_config(read_json(path))
            if table.get("enabled") is False and not pinned:
                found.append(
                    SwitchOff(str(path), '"hooksConfig": {"enabled": false} turns every hook off, loopwatch\'s too')
                )
            disabled = table.get("disabled")
            if isinstance(disabled, list) and any(_names_us(entry) for entry in disabled):
                found.append(
                    SwitchOff(
                        str(path),
                        '"hooksConfig": {"disabled": [...]} names loopwatch\'s hook, and Gemini CLI skips it '
                        "(every level's list counts: nothing overrides it)",
                    )
                )
        return found

    def runs_here(self, cwd: Path, env: Mapping[str, str]) -> str | None:
        """Gemini CLI's folder trust (`checkPathTrust`): hooks run only in a trusted folder."""
        from pathlib import Path  # here, not at import: the hook never needs it

        if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
            return "GEMINI_RESTRICTED_MODE or GEMINI_CLI_TRUST_WORKSPACE=false is set: Gemini CLI runs no hooks"
        if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
            return None
        enabled = True
        for path in (self.settings_file("user", env, cwd), system_settings(env)):  # system last: it wins
            settings = read_json(path)
            security = settings.get("security") if isinstance(settings, dict) else None
            trust = security.get("folderTrust") if isinstance(security, dict) else None
            if isinstance(trust, dict) and isinstance(trust.get("enabled"), bool):
                enabled = trust["enabled"]
        if not enabled:
            return None
        rules_file = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(
            gemini_home(env), ".gemini", "trustedFolders.json"
        )
        rules = read_json(Path(rules_file))
        trusted = _trusted(str(cwd), rules if isinstance(rules, dict) else {})
        if trusted is True:
            return None
        how = "is marked DO_NOT_TRUST" if trusted is False else "is not trusted"
        return (
            f"{cwd} {how} in Gemini CLI ({rules_file}): it runs no hooks there, loopwatch's included "
            "(`gemini -p` refuses to start; interactively it asks): trust the folder when Gemini CLI asks"
        )

    def env_files(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        """The one `.env` Gemini CLI loads (`findEnvFile`: the first of `.gemini/.env` and
        `.env` from `cwd` up to the root, then the user's `~/.gemini/.env`, `~/.env`),
        when it is a project's."""
        home = os.path.realpath(gemini_home(env))
        own = {os.path.join(home, ".gemini", ".env"), os.path.join(home, ".env")}
        folder = os.path.abspath(cwd)
        while True:
            for candidate in (os.path.join(folder, ".gemini", ".env"), os.path.join(folder, ".env")):
                if os.path.isfile(candidate):
                    real = os.path.join(os.path.realpath(os.path.dirname(candidate)), os.path.basename(candidate))
                    return [] if real in own else [candidate]
            parent = os.path.dirname(folder)
            if parent == folder:
                return []
            folder = parent


def _trusted(location: str, rules: Mapping[str, Any]) -> bool | None:
    """Gemini CLI's `isPathTrusted`: the longest rule whose folder holds `location`."""
    real = os.path.realpath(location)
    best, verdict = -1, ""
    for rule, level in rules.items():
        if level not in ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST"):
            continue
        effective = os.path.realpath(os.path.dirname(rule) if level == "TRUST_PARENT" else rule)
        if (real == effective or real.startswith(effective.rstrip(os.sep) + os.sep)) and len(rule) > best:
            best, verdict = len(rule), level
    if not verdict:
        return None
    return verdict != "DO_NOT_TRUST"


HOST = GeminiCli()
