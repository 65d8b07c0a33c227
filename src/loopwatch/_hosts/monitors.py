"""A monitor for a source: the one place a host's rules are put under a configuration.

    monitor = monitor_for("codex", config)

`source` is what the events come from: a host (`claude-code`, `codex`, as the hook and
`run` name them) or a reader's format name (`codex` rollouts, `swe-agent`, ...; None
when unknown). What a source adds to the user's configuration, under the user's own
`[tools.X]` rules (theirs win):

- Codex: its shell tool's names (`exec_command`, `command_execution`, `Bash`,
  `shell`) are one tool, so a rule written for one applies to all
  (`codex.shared_tool_rules`): a `[tools.Bash]` rule holds for a rollout's
  `exec_command` calls as for the hook's `Bash` ones.
- Claude Code: polling a background shell (`BashOutput`) is waiting, not looping.
- GitHub Copilot CLI: the same for `read_bash`; its `create` and `edit` write files.
- Gemini CLI: `update_topic` (narration) and `complete_task` (a sub-agent's answer)
  are never counted; `read_background_output` is waiting.
- Cursor: its `write`, `edit` and `delete` write files (from its documentation).
- opencode: its `write` and `edit` write files (names too common to be writers of every
  source: another's `edit` may only look at a file).
- Qwen Code: its `edit` and `notebook_edit` write files (the same).

Every source gets the call identity of `core.identity` (`Config.rule`), and a
recorded source its calibration where the replay asks for one (`Config.for_source`,
applied by the replay engine, never to a live run). The hook, `run`, `Guard`, `scan`,
`evaluate` and `calibrate` all build their monitors here, one per agent.

Here, in `hosts`, because it is the host's knowledge applied to the core's monitor:
below the readers, so every front end and the analysis can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .._core.config import Config, ToolRule
from .._core.monitor import Monitor
from .._core.verdict import Verdict
from . import HOST_WRITERS, codex

__all__ = ["HOST_TOOLS", "config_for", "monitor_for"]

#: Tool rules a host's tools get unless the configuration has its own for them.
HOST_TOOLS: Mapping[str, Mapping[str, ToolRule]] = {
    "claude-code": {"BashOutput": ToolRule(role="poller")},
    # GitHub Copilot CLI: its writing tools, under names too common to be writers for
    # every source (SWE-agent's `edit` is a command); `read_bash` reads a running shell.
    "copilot": {
        **{tool: ToolRule(role="writer") for tool in HOST_WRITERS["copilot"]},
        "read_bash": ToolRule(role="poller"),
    },
    # Cline: its editor, under a name too common to be a writer for every source.
    "cline": {tool: ToolRule(role="writer") for tool in HOST_WRITERS["cline"]},
    # Gemini CLI: `update_topic` only narrates (a title, a summary: no action), and
    # `complete_task` is how a sub-agent hands back its result; reading a background
    # command's output again is waiting.
    "gemini-cli": {
        "update_topic": ToolRule(role="exempt"),
        "complete_task": ToolRule(role="exempt"),
        "read_background_output": ToolRule(role="poller"),
    },
    # Cursor (from its documentation): its writing tools, as its stream-json names them.
    "cursor": {tool: ToolRule(role="writer") for tool in HOST_WRITERS["cursor"]},
    # opencode 1.17.19 and 1.18.33 (`apply_patch` is a writer of every source already).
    "opencode": {"write": ToolRule(role="writer"), "edit": ToolRule(role="writer")},
    # Qwen Code 0.23.4 and 0.24.4: its `edit` and `notebook_edit`.
    "qwen-code": {tool: ToolRule(role="writer") for tool in HOST_WRITERS["qwen-code"]},
}


def config_for(source: str | None, config: Config) -> Config:
    """`config` with the rules of `source` (see the module's doc) under its own."""
    tools = dict(config.tools)
    for tool, rule in HOST_TOOLS.get(source or "", {}).items():
        tools.setdefault(tool, rule)
    if source == "codex":
        tools = codex.shared_tool_rules(tools)
    if tools == config.tools:
        return config
    return config._replace(tools=tools)


def monitor_for(
    source: str | None,
    config: Config,
    *,
    on_warning: Callable[[Verdict], object] | None = None,
    make: Callable[..., Monitor] = Monitor,
) -> Monitor:
    """A fresh monitor for one agent of `source`, under `config` and the source's rules.
    `make` builds it (a `Monitor` subclass; the replay engine passes its own)."""
    return make(config_for(source, config), on_warning=on_warning)
