"""What each agent CLI sends and writes, one module per host (standard library only): the only place that knows its shapes.

`WRITERS` is the one table of tools that write files, across hosts: the readers mark
their successful calls as writes and the hook gives them the `writer` role (a write is
progress: it resets same-error counts and ends churn and stagnation).
"""

__all__ = ["WRITERS"]

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
    # The file editor of SWE-agent and OpenHands, as ATIF trajectories name it.
    "str_replace_editor": "path",
}
