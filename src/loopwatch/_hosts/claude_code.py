"""Claude Code's shapes, written once: hook payloads, transcripts and the stream-json
of `claude -p`. Used by the hook (`loopwatch._hook.payload`, `.guard`), the transcript
reader (`loopwatch._readers.claude_code`) and `loopwatch run`'s stream parsing.

What Claude Code 2.1.197 was seen to do (real CLI, scripted model; the tests in
tests/test_realclient_claude.py pin each of these):

- A failed call comes as **PostToolUseFailure** with `error: "Exit code N\\n<output>"`
  (the exit code, when there is one, is only in that text). **PostToolUse** fires for
  calls that succeeded; for Bash its `tool_response` is `{stdout, stderr, interrupted,
  isImage, noOutputExpected}`, with no exit code.
- **PostToolBatch** fires once the model's batch of calls is done, with
  `tool_calls: [{tool_name, tool_input, tool_use_id, tool_response}]`; a failed call's
  `tool_response` is then the text `"Exit code N\\n..."`, and a call denied by a
  PreToolUse hook is in it too, its `tool_response` being the denial reason (only
  PostToolBatch fires after a denial).
- A PreToolUse deny is honoured (the tool does not run; the model gets the reason as
  an error tool_result), but `continue: false` is ignored on PreToolUse, PostToolUse
  and PostToolUseFailure. **Only a PostToolBatch answer with `continue: false` ends
  the run**: no further model turn, and the last stream-json line (`type: result`,
  still `subtype: success`, exit status 0) says `terminal_reason: "hook_stopped"`.
- Inside a sub-agent (the `Agent` tool, once called `Task`) every payload carries
  `agent_id`; the parent's PostToolUse for the Agent call has the same id as
  `tool_response.agentId`. A PostToolBatch stop inside a sub-agent ends the sub-agent
  only: its parent gets the tool result and carries on. In stream-json a sub-agent's
  lines carry `parent_tool_use_id` (the Agent call's id); in its session file,
  `isSidechain` and `agentId`.
- After a hook's stop the session file (`~/.claude/projects/<dir>/<session>.jsonl`)
  ends with a `hook_stopped_continuation` attachment carrying the hook's
  `stopReason`; the stream-json output has no such line.
- `claude -p` runs hooks with `CLAUDE_CODE_ENTRYPOINT=sdk-cli`; a turn ends with Stop
  (SubagentStop for a sub-agent); the user's prompt is UserPromptSubmit (`prompt`,
  never read here).
- **Switched off by a project** (2.1.197 and 2.1.332): `{"disableAllHooks": true}` in a
  project's `.claude/settings.json` or `.claude/settings.local.json` turns every hook of
  the user's settings off (8 of 8 identical failing calls ran). Two things hold against
  it: hooks in the managed settings (`/etc/claude-code/managed-settings.json`, a path no
  variable moves; they run whatever the merged settings say, unless the managed settings
  themselves say `disableAllHooks`), which `install claude-code --system` writes; and
  `--settings '{"disableAllHooks": false}'` on the command line (flag settings come
  after the project's and the local ones), which `loopwatch run` adds. A hook's
  `systemMessage` is shown to the person in the interactive UI; under `claude -p` it
  goes to the session file only (a `hook_system_message` attachment).

This module is on the hook's path: standard library only, nothing compiled or built
at import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .._files import open_file
from .base import (
    AFTER,
    BATCH,
    BEFORE,
    FAILED,
    Call,
    ClaudeStyle,
    Payload,
    PayloadError,
    StateFolder,
    SwitchOff,
    read_json,
    same_names,
    text_field,
    trim,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "AGENT_TOOLS",
    "HOOK_EVENTS",
    "HOST",
    "NAME",
    "STOP_EVENT",
    "TOOL_EVENTS",
    "call_failed",
    "exit_code",
    "hook_stop_reason",
    "interrupted",
    "is_user_prompt",
    "line_agent",
    "loopwatch_denial",
    "payload_agent",
    "result_failed",
    "said_stop",
    "spawned_agent",
    "stopped_by_hook",
    "stopped_by_loopwatch",
]

NAME = "claude-code"

#: The tool that runs a sub-agent: `Agent` in 2.1.x (what the model calls and the
#: hooks report), `Task` in older releases (2.1.197 still lists it among its tools).
AGENT_TOOLS = ("Agent", "Task")

#: The events `loopwatch install claude-code` hooks, in this order. PostToolBatch is
#: the one whose `continue: false` ends a run; the others feed the monitor.
HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
)

#: Events that take a tool matcher in settings.json.
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch")

#: The only event whose `continue: false` Claude Code honours (see the module doc).
STOP_EVENT = "PostToolBatch"

_EXIT = r"\A\s*Exit code (-?\d+)\b"  # compiled on first use (then cached by re), not at import


def exit_code(text: Any) -> int | None:
    """The N of Claude Code's `Exit code N` head (PostToolUseFailure's `error`, a
    failed call's text in PostToolBatch and in transcripts), else None."""
    if not isinstance(text, str):
        return None
    found = re.match(_EXIT, text[:200])
    return int(found.group(1)) if found else None


def call_failed(event: str, item: dict[str, Any]) -> bool:
    """Did the call in this hook payload (or PostToolBatch item) fail?

    PostToolUseFailure: always. PostToolUse: never (Claude Code sends failures to
    PostToolUseFailure; a Bash result has no exit code to read). PostToolBatch: an
    `error` field, or a `tool_response` text that starts `Exit code N` with N != 0."""
    if event == "PostToolUseFailure":
        return True
    if event != "PostToolBatch":
        return False
    if item.get("error") or item.get("error_message"):
        return True
    code = exit_code(item.get("tool_response", item.get("tool_result")))
    return code is not None and code != 0


def interrupted(event: str, item: dict[str, Any]) -> bool:
    """The user pressed Esc on this call (PostToolUseFailure `is_interrupt`, or a Bash
    `tool_response.interrupted`): not the agent's doing."""
    if item.get("is_interrupt") is True:
        return True
    response = item.get("tool_response")
    return event == "PostToolUse" and isinstance(response, dict) and response.get("interrupted") is True


def payload_agent(raw: dict[str, Any]) -> str:
    """The sub-agent a hook payload comes from ("" for the main agent)."""
    agent = raw.get("agent_id")
    return agent if isinstance(agent, str) else ""


def spawned_agent(tool_name: Any, tool_response: Any) -> str | None:
    """The id of the sub-agent an Agent call ran (its PostToolUse `tool_response.agentId`,
    the `agent_id` of that sub-agent's own payloads), else None."""
    if tool_name not in AGENT_TOOLS or not isinstance(tool_response, dict):
        return None
    agent = tool_response.get("agentId")
    return agent if isinstance(agent, str) and agent else None


def line_agent(obj: dict[str, Any]) -> str | None:
    """The sub-agent of a stream-json or session-file line, when the line says so
    itself: stream-json's `parent_tool_use_id` (the spawning Agent call), or a
    sidechain line's `agentId`. None for the main agent, or a sidechain line of an
    old single-file session without `agentId` (the reader follows those threads)."""
    parent_call = obj.get("parent_tool_use_id")
    if isinstance(parent_call, str) and parent_call:
        return parent_call
    agent = obj.get("agentId")
    if obj.get("isSidechain") and isinstance(agent, str) and agent:
        return agent
    return None


def result_failed(block: dict[str, Any], text: Any) -> bool:
    """A transcript's tool_result block reports a failure: `is_error`, or a
    `<tool_use_error>` text (older releases)."""
    return block.get("is_error") is True or (isinstance(text, str) and text.lstrip().startswith("<tool_use_error>"))


def is_user_prompt(obj: dict[str, Any], said: bool, has_results: bool) -> bool:
    """A user line that is the person speaking: it says something (text, an image),
    carries no tool results, and is not Claude Code's own (`isMeta` reminders,
    compaction summaries)."""
    return said and not has_results and not obj.get("isMeta") and not obj.get("isCompactSummary")


def loopwatch_denial(block: dict[str, Any], text: Any) -> str | None:
    """ "stop" or "block" when a tool_result is loopwatch's own denial (the call never
    ran), else None."""
    if block.get("is_error") is not True or not isinstance(text, str):
        return None
    head = text.lstrip().removeprefix("Error: ")  # "Error: ...": a session file's toolUseResult copy
    if head.startswith("PreToolUse:"):  # 2.1.332: "PreToolUse:Bash hook error: <the reason>"
        head = head.partition(" hook error: ")[2]
    from .._core.messages import Blocked, Stopped, loopwatch_said

    said = loopwatch_said(head)
    return "stop" if said is Stopped else "block" if said is Blocked else None


def hook_stop_reason(line: dict[str, Any]) -> str | None:
    """The `stopReason` of a hook answer that ended the run, from a stream-json
    `hook_response` line (printed with `--include-hook-events`), else None."""
    if line.get("type") != "system" or line.get("subtype") != "hook_response":
        return None
    stdout = line.get("stdout")
    if not isinstance(stdout, str) or '"continue"' not in stdout:
        return None
    import json

    try:
        answer = json.loads(stdout)
    except ValueError:
        return None
    if not isinstance(answer, dict) or answer.get("continue") is not False:
        return None
    reason = answer.get("stopReason")
    return reason if isinstance(reason, str) else ""


_TRANSCRIPT_TAIL = 256 * 1024  # the stop is among a session file's last lines


def transcript_stop_reason(session_id: str, env: Mapping[str, str]) -> str | None:
    """Why a hook ended session `session_id`, from its session file
    (`$CLAUDE_CONFIG_DIR` or `~/.claude`, `projects/*/<session_id>.jsonl`): the message
    of its last `hook_stopped_continuation` attachment (a hook's `stopReason`). None
    when there is no such file or line. For a stop that came after a call ran, which
    the stream-json output does not show (no denial text, no hook answer without
    `--include-hook-events`)."""
    import glob
    import json
    import os

    if not session_id or not all(c.isalnum() or c == "-" for c in session_id):
        return None  # an id from the stream names a file: nothing but a uuid's letters
    base = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")
    found = None
    for path in glob.glob(os.path.join(glob.escape(base), "projects", "*", f"{session_id}.jsonl")):
        try:
            with open_file(path) as fh:
                fh.seek(max(0, os.path.getsize(path) - _TRANSCRIPT_TAIL))
                tail = fh.read().splitlines()
        except OSError:
            continue
        for raw in tail:
            if b"hook_stopped_continuation" not in raw:
                continue
            try:
                attachment = json.loads(raw).get("attachment")
            except (ValueError, AttributeError):
                continue
            if isinstance(attachment, dict) and attachment.get("type") == "hook_stopped_continuation":
                message = attachment.get("message")
                found = message if isinstance(message, str) else ""
    return found


def stopped_by_hook(result_line: dict[str, Any]) -> bool:
    """The `result` line of a stream-json run says a hook ended it."""
    return result_line.get("type") == "result" and result_line.get("terminal_reason") == "hook_stopped"


def stopped_by_loopwatch(result_line: dict[str, Any], saw_loopwatch_stop: bool, hook_stop_reasons: list[str]) -> bool:
    """A run that a hook ended, and the hook was loopwatch: the run's last denial was
    loopwatch's stop (the usual way: the repeat is refused before it runs), or, with
    `--include-hook-events`, a hook answer's `stopReason` was loopwatch's."""
    if not stopped_by_hook(result_line):
        return False
    return saw_loopwatch_stop or any(said_stop(reason) for reason in hook_stop_reasons)


def said_stop(reason: str) -> bool:
    """Is a hook's `stopReason` loopwatch's stop?"""
    from .._core.messages import Stopped, loopwatch_said

    return loopwatch_said(reason) is Stopped


#: A project's settings files, in the folder Claude Code was started in (`.claude/settings.json`
#: is shared with the repository; `.local` is the person's own, but a repository can ship it too).
PROJECT_SETTINGS = (os.path.join(".claude", "settings.json"), os.path.join(".claude", "settings.local.json"))


#: The managed settings: read for every user of the machine, their hooks run whatever a
#: project says (Linux; no variable moves it).
MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"

#: What `loopwatch run` adds to a `claude` command line: flag settings outrank a project's.
KEEP_ON = ("--settings", '{"disableAllHooks": false}')


def config_dir(env: Mapping[str, str]) -> str:
    """The user's Claude Code folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    return env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")


class ClaudeCode(ClaudeStyle):
    """Claude Code: the facts of the module's docstring, as the host contract."""

    name = NAME
    title = "Claude Code"
    # Seen in the state folders of 2.1.197 and 2.1.332 (projects, backups, plugins,
    # shell-snapshots, session-env) and in users' (settings, credentials, todos, statsig,
    # file-history, history.jsonl): only `projects/` holds sessions. A session's agents
    # write their own transcripts in its folder beside it: `subagents/agent-<id>.jsonl`
    # (with an `agent-<id>.meta.json` sidecar), a workflow's in
    # `subagents/workflows/<run>/` (beside its `journal.jsonl`); its `tool-results/` and
    # `workflows/` (scripts, run records) are no sessions.
    state_folders = (
        StateFolder(("projects",), (), name=".claude"),
        # a copy under another name, known by what only it holds beside `projects/`
        StateFolder(("projects",), ("projects", ".credentials.json")),
        StateFolder(("projects",), ("projects", "todos")),
        StateFolder(("projects",), ("projects", "shell-snapshots")),
        StateFolder((), ("subagents",), beside=".jsonl", parts=("subagents/**/agent-*.jsonl",)),
    )
    binary = "claude"
    package = "@anthropic-ai/claude-code"
    tested = ("2.1.197", "2.1.332")
    events = same_names(HOOK_EVENTS)
    hooked_events = HOOK_EVENTS
    scopes = ("user", "project", "local", "system")
    matcher_events = frozenset(TOOL_EVENTS)
    install_notes = MappingProxyType(
        {
            "system": (
                "Claude Code reads these managed settings for every user of this machine, and runs their hooks "
                'whatever a project\'s settings say ("disableAllHooks" included). Keep the file writable by root '
                "alone; the Python written in it must be one every user can run."
            ),
        }
    )
    switch_off_remedy = "`sudo loopwatch install claude-code --system` (managed settings, which no project overrides)"
    switch_paths = r"\.claude[/\\]+settings(?:\.local)?\.json"
    switch_keys = r"disableAllHooks\W{0,4}\s*:\s*true"

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        event = text_field(raw, "hook_event_name", required=True)
        session = text_field(raw, "session_id", required=True)
        assert event is not None and session is not None
        calls: tuple[Call, ...] = ()
        if event in (BEFORE, AFTER, FAILED):
            calls = (self._call(raw, event),)
        elif event == BATCH:
            items = raw.get("tool_calls", raw.get("tool_results"))
            if not isinstance(items, list):
                raise PayloadError("PostToolBatch: expected a list in tool_calls")
            calls = tuple(self._call(item, event) for item in items[:256] if isinstance(item, dict))
        return Payload(NAME, event, session, payload_agent(raw), text_field(raw, "cwd"), calls)

    def _call(self, raw: dict[str, Any], event: str) -> Call:
        name = raw.get("tool_name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{event}: missing tool_name")
        call_id = raw.get("tool_use_id")
        call_id = call_id if isinstance(call_id, str) else None
        tool_input = trim(raw.get("tool_input"))
        if event == BEFORE:
            return Call(name, tool_input, call_id)
        if event == FAILED:
            result = raw.get("error", raw.get("error_message"))
        else:
            result = raw.get("tool_response", raw.get("tool_result"))
            if event == BATCH and (raw.get("error") or raw.get("error_message")):
                result = raw.get("error", raw.get("error_message"))
        spawned = spawned_agent(name, raw.get("tool_response")) if event == AFTER else None
        return Call(name, tool_input, call_id, trim(result), call_failed(event, raw), interrupted(event, raw), spawned)

    def detect_profile(self, env: Mapping[str, str], payload: Payload | None = None) -> tuple[str, str] | None:
        # `CLAUDE_CODE_ENTRYPOINT` is undocumented; an `sdk-*` value is what hooks see
        # under `claude -p` (`sdk-cli`) and the Agent SDK (`sdk-ts`, `sdk-py`).
        entry = env.get("CLAUDE_CODE_ENTRYPOINT", "")
        return ("unattended", f"CLAUDE_CODE_ENTRYPOINT={entry}") if entry.startswith("sdk") else None

    def headless(self, argv: list[str]) -> str | None:
        for i, arg in enumerate(argv[:3]):
            if os.path.basename(arg) == "claude" or arg.endswith("claude-code/cli.js"):
                rest = argv[i + 1 :]
                return "claude -p" if any(a in ("-p", "--print") or a.startswith("--print=") for a in rest) else ""
        return None

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "session_id": "loopwatch-doctor",
            "transcript_path": os.path.join(folder, "t.jsonl"),
            "cwd": cwd,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "true", "description": "loopwatch doctor"},
            "tool_use_id": "toolu_doctor",
            "tool_response": {
                "stdout": "",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": True,
            },
        }

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # not at import: the hook never needs it

        if scope == "user":
            return Path(config_dir(env)) / "settings.json"
        if scope == "system":
            return Path(MANAGED_SETTINGS)
        return cwd / PROJECT_SETTINGS[1 if scope == "local" else 0]

    def held(self, env: Mapping[str, str], cwd: Path) -> str | None:
        managed = read_json(self.settings_file("system", env, cwd))
        if isinstance(managed, dict) and managed.get("disableAllHooks") is True:
            return None  # the managed settings switch every hook off, their own too
        return super().held(env, cwd)

    def keep_on(self, argv: list[str]) -> list[str] | None:
        if not argv or os.path.basename(argv[0]) != self.binary:
            return None
        if any(arg == "--settings" or arg.startswith("--settings=") for arg in argv[1:]):
            return None  # the user's own flag settings: ours would replace them
        return [argv[0], *KEEP_ON, *argv[1:]]

    def switch_off_files(self, cwd: str) -> list[str]:
        return [os.path.join(cwd, name) for name in PROJECT_SETTINGS]

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        found = []
        held = None
        for path in (self.settings_file("user", env, cwd), *(cwd / name for name in PROJECT_SETTINGS)):
            settings = read_json(path)
            if isinstance(settings, dict) and settings.get("disableAllHooks") is True:
                held = held or self.held(env, cwd)
                what = '"disableAllHooks": true turns every hook off, loopwatch\'s too'
                found.append(
                    SwitchOff(str(path), f"{what}; held on by {held}" if held else what, "held" if held else "off")
                )
        return found


HOST = ClaudeCode()
