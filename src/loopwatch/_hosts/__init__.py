"""What each agent CLI sends and writes, one module per host (standard library only): the only place that knows its shapes.

`HOSTS` lists them (`host(name)` gives one); `base` holds the contract every host module
fulfils. `WRITERS` is the one table of tools that write files, across hosts: the readers mark
their successful calls as writes and the hook gives them the `writer` role (a write is
progress: it resets same-error counts and ends churn and stagnation); `HOST_WRITERS` the
same for tools that write in one host's runs only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Host

__all__ = ["HOSTS", "HOST_WRITERS", "WRITERS", "host"]

#: Every agent CLI loopwatch guards live: its name -> its module in this package, which
#: defines `HOST` (the contract is `base.Host`). Imported on first use: the hook loads
#: only the module of the host it answers.
HOSTS: dict[str, str] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "copilot": "copilot",
    "cursor": "cursor",
    "gemini-cli": "gemini_cli",
    "cline": "cline",
    "opencode": "opencode",
    "qwen-code": "qwen_code",
}


#: Per host, tools whose success writes a file but whose names are too common to be writers
#: for every source (SWE-agent's `edit` is a command): writers in that host's runs only.
HOST_WRITERS: dict[str, dict[str, str | None]] = {
    # GitHub Copilot CLI 1.0.89 and 1.0.102: `create {path, file_text}`, `edit {path, old_str, new_str}`.
    "copilot": {"create": "path", "edit": "path"},
    # Qwen Code 0.23.4 and 0.24.4: `edit {file_path, old_string, new_string}`,
    # `notebook_edit {notebook_path, ...}`.
    "qwen-code": {"edit": "file_path", "notebook_edit": "notebook_path"},
    # Cline 3.0.57 and 3.0.65: `editor {path, old_text?, new_text, insert_line?}` (it creates a
    # missing file).
    "cline": {"editor": "path"},
    # Cursor, from its documentation: stream-json's `writeToolCall`, `editToolCall` and
    # `deleteToolCall` (`args.path`), and the hook's `afterFileEdit`, all read as these.
    "cursor": {"write": "path", "edit": "path", "delete": "path"},
}


def host(name: str) -> Host:
    """The host called `name` (a key of `HOSTS`; KeyError for another)."""
    import importlib

    found: Host = importlib.import_module(f"{__name__}.{HOSTS[name]}").HOST
    return found


#: Tools whose success writes a file, with the input field that names it (None: the
#: input names no single file; a patch names its files in its text).
WRITERS: dict[str, str | None] = {
    # Claude Code's editing tools (its tool reference; every one seen in the shared
    # transcripts of Claude Code 2.1.197).
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    # Codex's patch tool (0.171.0 rollouts: `custom_tool_call` apply_patch).
    "apply_patch": None,
    # Gemini CLI's (0.58.0 and 0.61.0: the tools it offers the model); `write_file` is
    # Qwen Code's too (0.23.4, 0.24.4).
    "write_file": "file_path",
    "replace": "file_path",
    # The file editor of SWE-agent and OpenHands, as ATIF trajectories name it.
    "str_replace_editor": "path",
}
