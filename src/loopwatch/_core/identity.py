"""What identifies a call: the input fields that say what a tool does.

Two calls are the same call when the tool and what it is asked to do are the same:
the command, the path, the content, the pattern, the patch. Some fields are written
for the person watching or for the runtime, and a model words them anew at will:
Claude Code's Bash `description` ("List the directory", "Show the folder"), its
`timeout` and `run_in_background`, Codex's `yield_time_ms` and `max_output_tokens`.
Counted, they hide a loop: the real `claude -p` runs the same failing `ls` 12 times of
12 when its description is reworded each time (ignored, it stops at the 4th; `python
bench/identity.py clients` re-measures it).

`IGNORED` names those fields per tool, for the tools of each host, read from what the
real CLIs offer the model (the tools and input schemas Claude Code 2.1.197 and 2.1.332,
Codex 0.171.0, GitHub Copilot CLI 1.0.89 and 1.0.102 and Qwen Code 0.23.4 and 0.24.4 send
in their requests, captured by the real-client tests) and from the recorded sessions in
the shared corpora (Gemini CLI, OpenHands). Every other field identifies the call, a
field unknown here included: an unknown field may change what the call does, and
treating two different calls as one could stop work that was succeeding, while counting
a reworded one only misses a loop.

A tool's rule in the configuration (`[tools.X] identity = [...]` or `ignore = [...]`)
replaces the default; `identifying` is the one place a call's input is reduced to
what identifies it, for the live hook and for replays alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["HOSTS", "IGNORED", "identifying"]

#: Per host, tool name -> the input fields written for the person or the runtime.
HOSTS: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        # Claude Code 2.1.197 and 2.1.332, the input schemas each sends the model:
        # `description` is "what this command does", shown to the person; `timeout`
        # and `run_in_background` say how to wait. `dangerouslyDisableSandbox` stays:
        # a call retried outside the sandbox can succeed where the first could not.
        "claude-code": {
            "Bash": ("description", "timeout", "run_in_background"),
            "Agent": ("description", "run_in_background"),  # the prompt says what it does
            "Task": ("description", "run_in_background"),  # the Agent tool's older name
            "TaskOutput": ("block", "timeout"),
            "Workflow": ("description", "title"),  # "Ignored" by the tool itself
            "ScheduleWakeup": ("reason",),  # "goes to telemetry"
            "SendMessage": ("summary",),  # "shown as a preview in the UI"
            "TaskCreate": ("activeForm",),  # "shown in spinner"
            "TaskUpdate": ("activeForm",),
        },
        # Codex 0.171.0 (its tool schemas; the shell is `exec_command {cmd}` in rollouts;
        # its hooks are told `Bash {command}` only). `justification` is the approval
        # question put to the person; `workdir`, `shell`, `tty`, `login` and
        # `sandbox_permissions` change what runs, so they stay.
        "codex": {
            "exec_command": ("justification", "yield_time_ms", "max_output_tokens"),
            "write_stdin": ("yield_time_ms", "max_output_tokens"),
            "shell": ("justification", "timeout_ms"),  # older Codex: `{command: [...], workdir, ...}`
            "shell_command": ("justification", "timeout_ms"),
            "update_plan": ("explanation",),  # the plan itself is what changes
        },
        # Cline 3.0.57 and 3.0.65: no tool's schema has a free-text field, but an input
        # key the schema does not name is passed through unused; a model that adds a
        # `description` (seen reworded at every call of the same failing command) gets
        # past Cline's own identical-call check with it.
        "cline": {
            "run_commands": ("description",),
            "read_files": ("description",),
            "editor": ("description",),
            "search_codebase": ("description",),
        },
        # GitHub Copilot CLI 1.0.89 and 1.0.102 (the tool schemas each sends the model):
        # `bash.description` is "a short human-readable description" for the person,
        # `initial_wait` how long to wait for output; `task`'s `description` is a "3-5 word
        # UI intent" and `name` a "short agent name" (the prompt says what it does); `sql`
        # and `session_store_sql` carry "a 2-5 word summary". `shellId` stays (a shell
        # named again keeps its working folder), and so do `mode` and `detach`.
        "copilot": {
            "bash": ("description", "initial_wait"),
            "task": ("description", "name"),
            "sql": ("description",),
            "session_store_sql": ("description",),
        },
        # opencode 1.17.19 and 1.18.33 (the tool schemas each sends the model): its bash
        # declares no `description`, but one the model sends anyway reaches the tool's input
        # unchecked (seen), and the model words it for the person; `timeout` says how long to
        # wait. A task's `description` is "a short (3-5 words) description" (its `prompt`
        # says what it does). `workdir` stays: where a command runs changes what it does.
        "opencode": {
            "bash": ("description", "timeout"),
            "task": ("description",),
            "webfetch": ("timeout",),
        },
        # Gemini CLI 0.58.0 and 0.61.0 (the function declarations each sends the model;
        # corpus-tb2 sessions): the shell's `description` is "shown to the user", its
        # `is_background` and `delay_ms` say how to wait; `replace`'s `instruction` and
        # `enter_plan_mode`'s `reason` are prose about what the call does;
        # `wait_for_previous` (on the tools that offer it) only orders parallel calls.
        # `dir_path` stays: where a command runs changes what it does. Not here:
        # `update_topic` (narration only: never counted, `hosts.monitors.HOST_TOOLS`).
        "gemini-cli": {
            "run_shell_command": ("description", "is_background", "delay_ms"),
            "replace": ("instruction",),
            "enter_plan_mode": ("reason",),
            "invoke_agent": ("wait_for_previous",),
            "read_background_output": ("delay_ms", "wait_for_previous"),
            "list_background_processes": ("wait_for_previous",),
        },
        # Qwen Code 0.23.4 and 0.24.4, the input schemas each sends the model: the
        # shell's `description` is "for the user", an agent's "a short description of
        # the task" (its `prompt` says what it does), a wakeup's and a goal update's
        # `reason` are "shown to the user", a message's `summary` is "for UI display",
        # an artifact's `title` and `description` are for "the client artifact list";
        # `timeout`, `is_background` and `run_in_background` say how to wait. The same
        # failing command with its description reworded ran 12 times of 12 past Qwen's
        # own detector (which counts identical inputs).
        "qwen-code": {
            "run_shell_command": ("description", "timeout", "is_background"),
            "agent": ("description", "run_in_background"),
            "monitor": ("description",),
            "loop_wakeup": ("reason",),
            "update_goal": ("reason",),
            "send_message": ("summary",),
            "record_artifact": ("title", "description"),
        },
        # OpenHands CodeAct tools (corpus-tb2 sessions): the model's own risk rating
        # and a soft timeout say nothing of what runs.
        "openhands": {
            "execute_bash": ("timeout", "security_risk"),
            "execute_ipython_cell": ("security_risk",),
            "str_replace_editor": ("security_risk",),
            "browser": ("security_risk",),
        },
        # Common framework shapes: the OpenAI Responses API's shell actions
        # (`commands`, `timeout_ms`, `max_output_length`; `local_shell`'s `command`,
        # `timeout_ms`), as the Agents SDK passes them on.
        "frameworks": {
            "shell": ("timeout_ms", "max_output_length"),
            "local_shell": ("timeout_ms",),
        },
    }
)


def _merged(hosts: Mapping[str, Mapping[str, tuple[str, ...]]]) -> Mapping[str, frozenset[str]]:
    """One table by tool name: a name two hosts share ignores what either ignores
    (every field here is one no host uses to say what the call does)."""
    out: dict[str, set[str]] = {}
    for tools in hosts.values():
        for tool, fields in tools.items():
            out.setdefault(tool, set()).update(fields)
    return MappingProxyType({tool: frozenset(fields) for tool, fields in out.items()})


#: Tool name -> the input fields that do not identify its calls (all hosts).
IGNORED: Mapping[str, frozenset[str]] = _merged(HOSTS)


def identifying(value: Any, identity: tuple[str, ...] | None, ignore: frozenset[str]) -> Any:
    """The part of a call's input that identifies it: only the `identity` fields when
    they are given, else every field but those in `ignore`. An input that is not a
    table (a patch's text, a list) is returned whole, and so is one that has none of
    the `identity` fields (`identity = ["command"]` meeting tb2's `Bash {cmd}`): an
    empty identity would make every call of the tool the same call."""
    if not isinstance(value, dict):
        return value
    if identity is not None:
        kept = {k: value[k] for k in identity if k in value}
        return kept if kept else value
    if ignore and not ignore.isdisjoint(value):
        return {k: v for k, v in value.items() if k not in ignore}
    return value
