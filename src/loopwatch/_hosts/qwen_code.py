"""Qwen Code's shapes, written once: its hook payloads and answers, its settings, its
session files. Used by the hook, `install`, `doctor` and the Qwen Code reader
(`loopwatch._readers.qwen_code`).

What Qwen Code (`@qwen-code/qwen-code`) 0.23.4 and 0.24.4 were seen to do, driven offline
by a scripted model (tests/test_realclient_qwen.py pins each of these); 0.15.10 where
it differs, from its captured payloads:

- Hooks are Claude Code's shape in `settings.json`: the user's (`~/.qwen`, or
  `$QWEN_HOME`), the project's (`.qwen/settings.json`) and the system's
  (`/etc/qwen-code/settings.json`, or `$QWEN_CODE_SYSTEM_SETTINGS_PATH`), merged with
  the system's last: its `"disableAllHooks": false` holds against a project's `true`.
  A `timeout` of 1000 or more is milliseconds (under 1000, seconds; 0.15 always reads
  milliseconds): 30000 is 30 s in every release.
- Every payload names its event (`hook_event_name`) and session (`session_id`); a call
  is known by `tool_call_id`, the model's id (`tool_use_id` is Qwen's own, and differs
  between PreToolUse and PostToolBatch; 0.15 has only `tool_use_id`). Inside a sub-agent
  (the `agent` tool) every payload carries `agent_id`, which is the spawning call's
  `<subagent_type>-<tool_call_id>`.
- A shell command (`run_shell_command`) that fails comes as **PostToolUseFailure**,
  its `error` the text the model reads, the exit code only as the words `Exit Code: N`
  in it; 0.15 sends it as a plain PostToolUse, `Exit Code: N` in
  `tool_response.llmContent`. That text ends with `Process Group PGID: N`, a new number
  every call in 0.23 (`(none)` in 0.24): the core masks numbers in every result, so
  identical failures stay identical (tests/test_hosts_qwen_code.py holds it).
- **UserPromptSubmit fires before every model request**, not only when the person
  writes: a person's prompt carries `submitted_prompt` (0.15: a non-empty `prompt`),
  a request the agent makes by itself (a continuation) has `prompt: ""` and no
  `submitted_prompt`. The first is the guard's PROMPT, the second its RESUME: never a
  new start for the streaks.
- A PreToolUse refusal is honoured (the model reads the reason as the call's result)
  in `decision: "deny"` and in `hookSpecificOutput.permissionDecision: "deny"`; both
  are sent, since a project hook's `permissionDecision: "allow"` overrides a lone
  `decision: "deny"`. `hookSpecificOutput.additionalContext` after a call is appended
  to that call's result for the model.
- **No answer about a call ends a headless run**: `continue: false` on PreToolUse
  refuses the call and the run goes on; on PostToolUseFailure it is ignored; on
  PostToolUse it *replaces a successful call's result* with the reason (never sent).
  What ends it: `decision: "block"` on a continuation's UserPromptSubmit: no further
  model request, exit 0. The reason shows nowhere in Qwen's output (stream, stderr,
  session file): hook.log and `loopwatch status` say it.
- Inside a sub-agent no UserPromptSubmit fires, so its stop is a SIGINT to the session
  process (`end_run`): the hook's nearest ancestor that is Qwen's node entry with
  `QWEN_CODE_NO_RELAUNCH=true` in its environment (never the launcher or relauncher
  above it: the session would carry on orphaned). Exit 130, no further request.
- Nothing in a payload or the environment says headless: the session process's argv
  does (a prompt, `-p`, `-o json|stream-json`, `--acp`, `--input-format stream-json`,
  and no `-i`), or its stdin not being a terminal.
- A project switches every user and system hook off with `.qwen/settings.json`
  `{"disableAllHooks": true}` (unless the system settings pin it false), with
  `QWEN_CODE_SIMPLE` or `QWEN_CODE_SAFE_MODE` truthy in a project `.qwen/.env` or `.env`
  or a settings `env` (unless the launching environment already sets them), or with a
  hook entry of its own running the very command of the user's (one entry is kept per
  command, the project's first: its timeout and env then decide). Values a `.env` or a
  settings `env` sets reach the hook's environment (`PYTHONPATH` too: the hook runs
  isolated); 0.24 lists their names in `QWEN_CODE_PRIVATE_RELAUNCH_ENV_PROVENANCE`, which
  a project cannot set, and the launcher (the outermost Qwen process) was started without
  them in every release.
- Session files: `~/.qwen/projects/<cwd, "/" as "-">/chats/<session>.jsonl`, a
  sub-agent's `subagents/<session>/agent-<agent_id>.jsonl` beside them.

This module is on the hook's path: standard library only, nothing built at import.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .base import (
    AFTER,
    ALLOW_REPLY,
    BEFORE,
    CALL_EVENTS,
    FAILED,
    PROMPT,
    RESUME,
    SUBAGENT_END,
    TURN_END,
    Call,
    ClaudeStyle,
    Payload,
    PayloadError,
    Reply,
    StateFolder,
    SwitchOff,
    ancestors,
    process_environ,
    read_json,
    text_field,
    trim,
    warn,
    write_stderr_of,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = [
    "AGENT_TOOL",
    "HOOK_EVENTS",
    "HOST",
    "NAME",
    "SHELL_TOOL",
    "exit_code",
    "is_headless",
    "spawned_agent",
]

NAME = "qwen-code"

#: The events `loopwatch install qwen-code` hooks. UserPromptSubmit is both a person's
#: prompt and the point where a stopped run is ended; PostToolBatch is not hooked: it
#: would be a fourth process per call and tells nothing the others do not.
HOOK_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SubagentStop")
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")

SHELL_TOOL = "run_shell_command"
#: The tool that runs a sub-agent: `{description, prompt, subagent_type, run_in_background}`.
AGENT_TOOL = "agent"
_DEFAULT_SUBAGENT = "general-purpose"

# `Exit Code: N` closes the shell tool's text (then `Signal:` and `Process Group PGID:`).
_EXIT = r"^Exit Code: (-?\d+)\s*$"
_EXIT_TAIL = 2048  # the code is among the text's last lines: never search a whole output

#: Variables that switch every hook off when truthy (Qwen's `isTruthy`: 1, true, yes, on).
SWITCH_VARIABLES = ("QWEN_CODE_SIMPLE", "QWEN_CODE_SAFE_MODE")
_TRUTHY = ("1", "true", "yes", "on")
#: Where Qwen says which variables it took from `.env` files and settings `env`.
PROVENANCE = "QWEN_CODE_PRIVATE_RELAUNCH_ENV_PROVENANCE"
#: Set in the session process's environment (and so the hook's): the process that runs
#: the session, not the launcher or relauncher above it.
SESSION_MARK = ("QWEN_CODE_NO_RELAUNCH", "true")

_ENTRY_SCRIPTS = ("@qwen-code/qwen-code/cli.js", "@qwen-code/qwen-code/cli-entry.js")

# Options of `qwen` that take a value (0.24.4 `--help`), and those that take every word
# up to the next option (arrays): what lies between options is the prompt only when no
# option consumed it.
_VALUE_OPTIONS = frozenset(
    {
        "--telemetry-target",
        "--telemetry-otlp-endpoint",
        "--telemetry-otlp-protocol",
        "--telemetry-outfile",
        "--proxy",
        "-m",
        "--model",
        "-p",
        "--prompt",
        "-i",
        "--prompt-interactive",
        "--system-prompt",
        "--append-system-prompt",
        "--output-style",
        "--sandbox-image",
        "--approval-mode",
        "--channel",
        "--mcp-config",
        "--openai-logging-dir",
        "--openai-api-key",
        "--openai-base-url",
        "--input-format",
        "-o",
        "--output-format",
        "--json-fd",
        "--json-file",
        "--json-schema",
        "--input-file",
        "-r",
        "--resume",
        "--session-id",
        "--worktree",
        "--max-session-turns",
        "--max-wall-time",
        "--max-tool-calls",
        "--max-subagent-depth",
        "--auth-type",
    }
)
_ARRAY_OPTIONS = frozenset(
    {
        "--fallback-model",
        "--allowed-mcp-server-names",
        "--allowed-tools",
        "-e",
        "--extensions",
        "--include-directories",
        "--add-dir",
        "--core-tools",
        "--exclude-tools",
        "--disabled-slash-commands",
    }
)


def exit_code(text: Any) -> int | None:
    """The N of the shell tool's `Exit Code: N` line (the last one, near the text's end),
    else None."""
    if not isinstance(text, str):
        return None
    found = None
    for found in re.finditer(_EXIT, text[-_EXIT_TAIL:], re.MULTILINE):
        pass
    return int(found.group(1)) if found else None


def spawned_agent(tool_name: Any, tool_input: Any, call_id: str | None) -> str | None:
    """The `agent_id` the sub-agent an `agent` call runs is given: its type, a dash, and
    the call's id."""
    if tool_name != AGENT_TOOL or not call_id or not isinstance(tool_input, dict):
        return None
    kind = tool_input.get("subagent_type")
    return f"{kind if isinstance(kind, str) and kind else _DEFAULT_SUBAGENT}-{call_id}"


def _entry(argv: list[str]) -> int | None:
    """Where Qwen's own entry is in a process's argv (node's script, or the `qwen`
    command), else None."""
    for i, arg in enumerate(argv[:3]):
        if arg.endswith(_ENTRY_SCRIPTS) or os.path.basename(arg) == "qwen":
            return i
    return None


def is_headless(args: list[str]) -> str | None:
    """The words that say a run with these arguments (after `qwen`) is one nobody
    watches, "" for an interactive one, None when the arguments alone cannot tell (no
    prompt: the run is headless only when its stdin is not a terminal). Qwen's own rule:
    interactive with `-i`, or with no prompt and a terminal on stdin."""
    prompt = said = ""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            prompt = prompt or " ".join(args[i + 1 :])
            break
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in ("-i", "--prompt-interactive"):
            return ""
        if name in _VALUE_OPTIONS:
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if name in ("-p", "--prompt"):
                said = said or "qwen -p"
            elif name in ("-o", "--output-format") and value in ("json", "stream-json"):
                said = said or f"qwen -o {value}"
            elif name == "--input-format" and value == "stream-json":
                said = said or "qwen --input-format stream-json"
        elif name in _ARRAY_OPTIONS:
            i += 1
            while i < len(args) and not args[i].startswith("-"):
                i += 1
            continue
        elif name == "--acp":
            said = said or "qwen --acp"
        elif not arg.startswith("-") and arg:
            prompt = prompt or arg
        i += 1
    if prompt:
        return said or "qwen with a prompt"
    return said or None


def _stdin_terminal(pid: int) -> bool | None:
    """Is process `pid`'s stdin a terminal? None when it cannot be read."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/0")
    except OSError:
        return None
    return target.startswith(("/dev/pts/", "/dev/tty", "/dev/console"))


def session_process(start: int | None = None) -> tuple[int, list[str]] | None:
    """(pid, argv) of the Qwen Code session process this hook runs under: the nearest
    ancestor that runs Qwen's entry, when its environment marks it as the session
    (`SESSION_MARK`). None otherwise: the launcher and relauncher above it are never
    taken for it."""
    for pid, argv in ancestors(8, start):
        if _entry(argv) is None:
            continue
        return (pid, argv) if (process_environ(pid) or {}).get(SESSION_MARK[0]) == SESSION_MARK[1] else None
    return None


def _stopped_for_person(reason: str) -> str:
    from .._core.messages import Stopped

    return Stopped(reason).for_person()


def _interrupt(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGINT)
    except OSError:
        pass


def _provenance(raw: str | None) -> dict[str, str] | None:
    """The variables Qwen says it took from `.env` files and settings `env`, or None
    where it does not say (before 0.24)."""
    if not raw:
        return None
    try:
        said = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(said, dict):
        return None
    out: dict[str, str] = {}
    for key, origin in (("dotEnv", "a .env file Qwen Code loaded"), ("settingsEnv", 'a Qwen Code settings "env"')):
        names = said.get(key)
        for name in names if isinstance(names, list) else []:
            if isinstance(name, str):
                out.setdefault(name, origin)
    return out


def _account_home() -> str:
    """This account's home folder, from the password database (not `$HOME`, which a
    project's `.env` may set)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return os.path.expanduser("~")


def _says_off(path: Path) -> bool:
    """Does a settings file that is not plain JSON (Qwen reads JSON with comments) say
    `"disableAllHooks": true`?"""
    from .._files import open_file

    try:
        with open_file(str(path)) as fh:
            text = fh.read(_ENV_LIMIT).decode("utf-8", "replace")
    except OSError:
        return False
    return re.search(r'"disableAllHooks"\s*:\s*true\b', text) is not None


def _truthy(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in _TRUTHY


def qwen_home(env: Mapping[str, str]) -> str:
    """The user's Qwen Code folder: `$QWEN_HOME`, else `~/.qwen`."""
    return env.get("QWEN_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".qwen")


def system_settings(env: Mapping[str, str]) -> str:
    """The system settings file Qwen Code reads last (its values win)."""
    import sys

    explicit = env.get("QWEN_CODE_SYSTEM_SETTINGS_PATH")
    if explicit:
        return explicit
    if sys.platform == "darwin":
        return "/Library/Application Support/QwenCode/settings.json"
    if sys.platform == "win32":
        return "C:\\ProgramData\\qwen-code\\settings.json"
    return "/etc/qwen-code/settings.json"


#: A project's files that can switch hooks off: its settings, and the `.env` files Qwen
#: loads into its environment.
PROJECT_SETTINGS = os.path.join(".qwen", "settings.json")
ENV_FILES = (os.path.join(".qwen", ".env"), ".env")
_ENV_LIMIT = 1 << 20


def env_file(cwd: Path, env: Mapping[str, str]) -> Path | None:
    """The project `.env` file Qwen Code loads for a session started in `cwd`: the first
    `.qwen/.env` or `.env` from `cwd` up, short of the home folder."""
    from pathlib import Path

    found = _env_file(str(cwd), env.get("HOME") or os.path.expanduser("~"))
    return Path(found) if found is not None else None


def _env_file(cwd: str, home: str) -> str | None:
    """`env_file` in strings (the hook's path loads no pathlib)."""
    home, folder = os.path.realpath(home), os.path.realpath(cwd)
    while folder != home:
        for name in ENV_FILES:
            if os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def read_env_file(path: Path | str) -> dict[str, str]:
    """KEY=VALUE lines of a `.env` file (`export` and quotes allowed); {} when unreadable."""
    from .._files import open_file

    try:
        with open_file(str(path)) as fh:
            text = fh.read(_ENV_LIMIT).decode("utf-8", "replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        out[key.strip()] = value
    return out


class QwenCode(ClaudeStyle):
    """Qwen Code: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "Qwen Code"
    binary = "qwen"
    package = "@qwen-code/qwen-code"
    tested = ("0.23.4", "0.24.4")
    events = MappingProxyType(
        {
            "PreToolUse": BEFORE,
            "PostToolUse": AFTER,
            "PostToolUseFailure": FAILED,
            "UserPromptSubmit": PROMPT,  # or RESUME: `parse` tells them apart
            "Stop": TURN_END,
            "SubagentStop": SUBAGENT_END,
        }
    )
    hooked_events = HOOK_EVENTS
    scopes = ("user", "project", "system")
    matcher_events = frozenset(TOOL_EVENTS)
    timeout = 30000  # milliseconds in every release (1000 or more is read as ms)
    ends_by = "its next model request refused; a sub-agent's run, by SIGINT to the Qwen Code session"
    # A refused call is reported only by PostToolBatch, which is not hooked.
    reports_refusals = False
    # Its hooks get the environment a project's `.env` sets (PYTHONPATH included), and run
    # in the project's folder: the hook's Python imports nothing from either.
    isolated = True
    install_notes = MappingProxyType(
        {
            "system": (
                'The system settings also say "disableAllHooks": false, which no project\'s settings override. '
                "A project's .qwen/.env can still set QWEN_CODE_SIMPLE=1 or QWEN_CODE_SAFE_MODE=1 (no hooks at all): "
                "export QWEN_CODE_SIMPLE=0 QWEN_CODE_SAFE_MODE=0 where you start qwen, and `loopwatch doctor qwen-code` "
                "names such a file."
            ),
        }
    )
    # `~/.qwen` (or `$QWEN_HOME`): its transcripts only; settings, usage records, caches,
    # a chat's `.runtime.json` and a sub-agent's `.meta.json` are left out by name.
    state_folders = (
        StateFolder(
            ("projects/*/chats/*.jsonl", "projects/*/subagents/*/agent-*.jsonl"),
            ("installation_id", "output-language.md", "projects"),
        ),
    )
    oversize_fields = MappingProxyType(
        {
            "event": "hook_event_name",
            "session": "session_id",
            "tool": "tool_name",
            "call_id": "tool_call_id",
            "agent": "agent_id",
        }
    )
    # A project's settings or `.env`, and what in them switches hooks off: the setting, a
    # variable that turns bare or safe mode on, or an entry running loopwatch's command.
    switch_paths = r"\.qwen[/\\]+(?:settings\.json|\.env)\b|(?<![\w.])\.env\b"
    switch_keys = r"disableAllHooks\W{0,4}\s*:\s*true|QWEN_CODE_(?:SIMPLE|SAFE_MODE)\b|loopwatch(?:\.exe)?\s+hook\b"

    # -- the live guard ------------------------------------------------------------------------

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        native = text_field(raw, "hook_event_name", required=True)
        session = text_field(raw, "session_id", required=True)
        assert native is not None and session is not None
        agent = text_field(raw, "agent_id") or ""
        cwd = text_field(raw, "cwd")
        if native in TOOL_EVENTS:
            guard = self.events[native]
            return Payload(NAME, guard, session, agent, cwd, (self._call(raw, guard),), native=native)
        if native == "UserPromptSubmit":
            guard = PROMPT if _person_wrote(raw) else RESUME
            return Payload(NAME, guard, session, agent, cwd, native=native)
        return Payload(NAME, self.events.get(native, native), session, agent, cwd, native=native)

    def _call(self, raw: dict[str, Any], event: str) -> Call:
        name = raw.get("tool_name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{event}: missing tool_name")
        call_id = raw.get("tool_call_id", raw.get("tool_use_id"))
        call_id = call_id if isinstance(call_id, str) and call_id else None
        tool_input = raw.get("tool_input")
        if event == BEFORE:
            return Call(name, trim(tool_input), call_id)
        if event == FAILED:
            result = raw.get("error")
            return Call(name, trim(tool_input), call_id, trim(result), True, raw.get("is_interrupt") is True)
        response = raw.get("tool_response")
        result = response.get("llmContent", response) if isinstance(response, dict) else response
        code = exit_code(result) if name == SHELL_TOOL else None
        failed = code is not None and code != 0  # 0.15: a failed command is a plain PostToolUse
        spawned = spawned_agent(name, tool_input, call_id)
        return Call(name, trim(tool_input), call_id, trim(result), failed, False, spawned)

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        from .._core.messages import Stopped
        from .._core.verdict import Action

        if payload.event == RESUME:
            return self._end(stopped) if stopped is not None else ALLOW_REPLY
        if payload.event in CALL_EVENTS:
            # Never `continue: false` after a call: on PostToolUse it replaces the result of
            # a call that ran. What the model must read rides on the result; the run ends at
            # the next request (RESUME).
            message = decision.message if decision.action is not Action.ALLOW else None
            if message is None and stopped is not None:
                message = Stopped(stopped, held=True).for_model()
            if message is None:
                return warn(decision.verdict)
            return Reply({"hookSpecificOutput": {"hookEventName": payload.native, "additionalContext": message}})
        return super().reply(payload, decision, stopped)

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        # Both forms: a project hook's `permissionDecision: "allow"` overrides a lone
        # top-level deny. `continue: false` here would only refuse, never end the run.
        return Reply(
            {
                "decision": "deny",
                "reason": reason,
                "hookSpecificOutput": {
                    "hookEventName": native,
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                },
            }
        )

    def _end(self, stopped: str) -> Reply:
        """The answer to a continuation of a stopped run: no further model request."""
        from .._core.messages import Stopped

        why = Stopped(stopped).for_person()
        return Reply({"decision": "block", "reason": why, "continue": False, "stopReason": why, "systemMessage": why})

    def headless(self, argv: list[str]) -> str | None:
        at = _entry(argv)
        if at is None:
            return None
        return is_headless(argv[at + 1 :]) or ""

    def headless_process(self, pid: int, argv: list[str]) -> str | None:
        at = _entry(argv)
        if at is None:
            return None
        said = is_headless(argv[at + 1 :])
        if said is not None:
            return said
        return "qwen with no terminal on stdin" if _stdin_terminal(pid) is False else ""

    def end_run(self, payload: Payload, reason: str, log: Callable[[str], object]) -> bool:
        # The main agent's run ends at its next request (RESUME), by the hook's own answer:
        # the person is told on the session's stderr, where Qwen shows nothing of it. A
        # sub-agent makes no such request: its session process is interrupted, as Ctrl-C
        # would, once this hook has written its answer and its log (Qwen aborts the hooks
        # still running when interrupted).
        if not payload.agent and payload.event != RESUME:
            return False
        found = session_process()
        if found is None:
            log("no Qwen Code session process found among the hook's parents: the person was not told")
            return not payload.agent
        pid, argv = found
        how = self.headless_process(pid, argv)
        if not payload.agent:
            if how:  # an interactive session shows the block's reason itself
                write_stderr_of(pid, f"{_stopped_for_person(reason)} (no further model request)\n")
            return True
        if not how:
            log(f"not ended: the Qwen Code session (pid {pid}) is interactive; the person decides")
            return False
        import atexit

        write_stderr_of(pid, f"{_stopped_for_person(reason)} (SIGINT to Qwen Code: a sub-agent kept going)\n")
        log(f"SIGINT to the Qwen Code session (pid {pid}, {how}) as this hook exits: sub-agent {payload.agent[:60]}")
        atexit.register(_interrupt, pid)
        return True

    def env_files(self, cwd: str, env: Mapping[str, str]) -> list[str]:
        found = _env_file(cwd, _account_home())
        return [found] if found is not None else []

    def started_environ(self) -> dict[str, str] | None:
        # The outermost Qwen process above the hook: the launcher, started by the user. The
        # session process below it is started with the project's `.env` already loaded.
        outer = None
        for pid, argv in ancestors(8):
            if _entry(argv) is None:
                if outer is not None:
                    break
                continue
            outer = pid
        return process_environ(outer) if outer is not None else None

    def env_from_files(self, env: Mapping[str, str]) -> dict[str, str]:
        said = _provenance(env.get(PROVENANCE))
        if said is not None:  # 0.24: Qwen names them
            return said
        # 0.23 does not: a variable whose value is the one the project's settings "env"
        # sets is taken as the project's (as for Claude Code's); its `.env`: `env_files`.
        project = env.get("QWEN_PROJECT_DIR") or os.getcwd()
        path = os.path.join(project, PROJECT_SETTINGS)
        settings = read_json(path)
        table = settings.get("env") if isinstance(settings, dict) else None
        if not isinstance(table, dict):
            return {}
        return {
            name: path for name, value in table.items() if isinstance(value, str) and value and env.get(name) == value
        }

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "session_id": "loopwatch-doctor",
            "transcript_path": os.path.join(folder, "t.jsonl"),
            "cwd": cwd,
            "hook_event_name": "PostToolUse",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "permission_mode": "yolo",
            "prompt_id": "loopwatch-doctor########0",
            "tool_name": SHELL_TOOL,
            "tool_input": {"command": "true", "description": "loopwatch doctor"},
            "tool_response": {
                "llmContent": "Command: true\nDirectory: (root)\nOutput: (empty)\nError: (none)\nExit Code: 0\n"
                "Signal: (none)\nProcess Group PGID: (none)",
                "returnDisplay": "",
            },
            "tool_use_id": "toolu_doctor",
            "tool_call_id": "call_doctor",
            "duration_ms": 1,
        }

    # -- its settings --------------------------------------------------------------------------

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # not at import: the hook never needs it

        if scope == "user":
            return Path(qwen_home(env)) / "settings.json"
        if scope == "system":
            return Path(system_settings(env))
        return cwd / PROJECT_SETTINGS

    def install(self, settings: Any, command: str, scope: str = "user") -> Any:
        out = super().install(settings, command, scope)
        if scope == "system":
            out["disableAllHooks"] = False  # the system's settings are merged last: a project's `true` loses
        return out

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        system = read_json(self.settings_file("system", env, cwd))
        system = system if isinstance(system, dict) else {}
        pinned = system.get("disableAllHooks") is False
        system_env: dict[str, Any] = system["env"] if isinstance(system.get("env"), dict) else {}
        user_path, project_path = self.settings_file("user", env, cwd), self.settings_file("project", env, cwd)
        found: list[SwitchOff] = []
        for path in (user_path, project_path):
            settings = read_json(path)
            if settings is None and _says_off(path):  # JSON with comments, which Qwen reads
                settings = {"disableAllHooks": True}
            if not isinstance(settings, dict):
                continue
            if settings.get("disableAllHooks") is True and not pinned:
                found.append(SwitchOff(str(path), '"disableAllHooks": true turns every hook off, loopwatch\'s too'))
            table = settings.get("env")
            for name in SWITCH_VARIABLES:
                value = table.get(name) if isinstance(table, dict) else None
                if _truthy(value) and not env.get(name) and name not in system_env:
                    found.append(SwitchOff(str(path), f'"env" sets {name}={value}: Qwen Code then runs no hook at all'))
        dotenv = env_file(cwd, env)
        if dotenv is not None:
            values = read_env_file(dotenv)
            for name in SWITCH_VARIABLES:
                if _truthy(values.get(name)) and not env.get(name):
                    found.append(SwitchOff(str(dotenv), f"{name}={values[name]}: Qwen Code then runs no hook at all"))
        project = read_json(project_path)
        if isinstance(project, dict):
            mine = {c for s in (read_json(user_path), system) for cmds in self.hooked(s).values() for c in cmds}
            same = {c for cmds in self.hooked(project).values() for c in cmds if c in mine}
            if same:
                found.append(
                    SwitchOff(
                        str(project_path),
                        "a hook entry runs loopwatch's own command, and Qwen Code keeps only the project's "
                        "(its timeout and env then decide whether the guard runs)",
                    )
                )
        return found

    def hooked(self, settings: Any) -> dict[str, list[str]]:
        return super().hooked(settings) if isinstance(settings, dict) else {}


def _person_wrote(raw: Mapping[str, Any]) -> bool:
    """A UserPromptSubmit the person sent (not a request the agent makes by itself):
    `submitted_prompt` present (0.23+); without `prompt_id` (0.15), a non-empty prompt."""
    if isinstance(raw.get("submitted_prompt"), str):
        return True
    if "prompt_id" in raw:
        return False
    prompt = raw.get("prompt")
    return isinstance(prompt, str) and bool(prompt.strip())


HOST = QwenCode()
