"""What Codex sends and writes, in one place: the hook, the Codex reader and `run`'s
stream parsing all read failures, shell calls and hook trust through this module.

Facts, from the real CLI (`@openai/codex` 0.171.0, captured in `../shared/clients/codex`)
and its source (openai/codex `codex-rs/hooks/src/engine/discovery.rs`,
`codex-rs/config/src/fingerprint.rs`, `codex-rs/hooks/src/lib.rs`):

- The shell tool has three names for one thing: `exec_command` (what the model calls,
  in rollouts: `{"cmd": ...}`), `command_execution` (the item of `codex exec --json`:
  `{"command": "/bin/bash -lc '...'"}`) and `Bash` (what hooks are told: `{"command":
  ...}`). Older rollouts call it `shell`. Per-tool rules written for one apply to all
  (`shared_tool_rules`).
- A failed command: the model-facing output starts with a header (`Chunk ID: <hex>`,
  `Wall time: ...`, `Process exited with code N`, `Original token count`, `Output:`;
  older versions wrote `Exit code: N`); rollouts carry the code in `event_msg` /
  `item_completed` with `item.type: "CommandExecution"` and `exit_code`; `codex exec
  --json` in `item.completed` `command_execution` items (`exit_code`, `status:
  "failed"`). PostToolUse's `tool_response` is the bare output, without header or
  code: the hook reads the code from the rollout, which Codex has already written
  when PostToolUse runs (observed on every call of the captured runs).
- Hooks in `$CODEX_HOME/hooks.json` run only once trusted: `[hooks.state."<key>"]
  trusted_hash = "sha256:<hex>"` in the user's config.toml. `<key>` is
  `<absolute hooks.json path>:<event label>:<group index>:<handler index>`; the hash
  is SHA-256 over the canonical JSON (sorted keys, no spaces) of `{event_name: label,
  matcher?, hooks: [{type: "command", command, timeout, async, statusMessage?}]}`,
  with the timeout defaulted to 600 and the matcher dropped for events that take none.
  Checked against `codex app-server`'s `hooks/list` in the real-client tests.

Standard library only, and nothing heavy at import: the hook imports this module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._files import open_file
from .base import (
    ALLOW_REPLY,
    BEFORE,
    Call,
    ClaudeStyle,
    Payload,
    PayloadError,
    Reply,
    StateFolder,
    SwitchOff,
    same_names,
    text_field,
    trim,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .._core.session import Decision

__all__ = [
    "EVENT_LABELS",
    "EXEC_EVENTS",
    "HOOK_EVENTS",
    "HOST",
    "ROLLOUT_LINES",
    "SHELL_TOOLS",
    "codex_home",
    "hook_key",
    "is_shell",
    "item_exit_code",
    "loopwatch_denial",
    "output_exit_code",
    "output_failed",
    "rollout_exit_code",
    "shared_tool_rules",
    "trusted_hash",
]

#: The line types of a rollout file (`~/.codex/sessions/.../rollout-*.jsonl`).
ROLLOUT_LINES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
#: The event types of the stream `codex exec --json` prints (read by the reader and by `run`).
EXEC_EVENTS = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
    }
)

#: One shell tool under every name Codex gives it (see the module docstring).
SHELL_TOOLS = frozenset({"exec_command", "command_execution", "Bash", "shell"})

#: The events `loopwatch install codex` installs the hook for: the calls before and
#: after they run, a new prompt (every streak starts again), and the end of a turn.
HOOK_EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")

#: Hook event -> the label Codex puts in trust keys and hashes (`hook_event_key_label`).
EVENT_LABELS = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
#: Events whose matcher Codex ignores (`matcher_pattern_for_event` returns None for them).
_NO_MATCHER = frozenset({"user_prompt_submit", "stop"})
_DEFAULT_TIMEOUT = 600  # seconds: Codex's `timeout_sec.unwrap_or(600).max(1)`

# The exit-code header: within the first lines of an output (0.171 puts it third,
# after `Chunk ID` and `Wall time`; older versions first, as `Exit code: N`).
_EXIT = re.compile(r"^(?:Exit code:? |Process exited with code )(-?\d+)\s*$", re.MULTILINE)
_HEADER_LINES = 8
_HEADER_CHARS = 1024  # the header is short; never search a whole output for it

_ROLLOUT_TAIL = 1 << 20  # bytes of a rollout's end searched for a call's exit code
_ROLLOUT_NAME = re.compile(r"\Arollout-.*\.jsonl\Z")


def is_shell(name: str) -> bool:
    return name in SHELL_TOOLS


def shared_tool_rules(tools: Mapping[str, Any]) -> dict[str, Any]:
    """`tools` (a `[tools]` table) with a rule written for any name of the shell tool
    given to the other names too. A rule the user wrote for a name itself wins."""
    out = dict(tools)
    for name in sorted(SHELL_TOOLS):  # a fixed order: the first named rule is shared
        if name in tools:
            for other in SHELL_TOOLS:
                out.setdefault(other, tools[name])
            break
    return out


#: How Codex words a call a PreToolUse hook refused, before the hook's reason (0.171.0).
BLOCKED_BY_HOOK = "Command blocked by PreToolUse hook: "


def loopwatch_denial(output: Any) -> bool:
    """Is a call's output loopwatch's own refusal through the hook (the call never ran)?"""
    if not isinstance(output, str) or not output.startswith(BLOCKED_BY_HOOK):
        return False
    from .._core.messages import loopwatch_said  # the hook's words, one place for both hosts

    return loopwatch_said(output[len(BLOCKED_BY_HOOK) :]) is not None


def output_exit_code(text: Any) -> int | None:
    """The exit code an output's header states, or None when it has none."""
    if not isinstance(text, str):
        return None
    head = "\n".join(text[:_HEADER_CHARS].split("\n", _HEADER_LINES)[:_HEADER_LINES])
    found = _EXIT.search(head)
    return int(found.group(1)) if found else None


def _code(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def item_exit_code(item: Any) -> tuple[str, int] | None:
    """(call id, exit code) of a finished command item: a rollout's `item_completed`
    `CommandExecution` or a `codex exec --json` `command_execution`. The code is the
    item's `exit_code`; an item with none is 1 when its `status` is `failed`, else 0.
    None for any other item. The one rule for a command item, wherever it is read."""
    if not isinstance(item, dict) or item.get("type") not in ("CommandExecution", "command_execution"):
        return None
    call_id = item.get("id")
    if not isinstance(call_id, str):
        return None
    code = _code(item.get("exit_code"))
    if code is None:
        code = 1 if item.get("status") == "failed" else 0
    return call_id, code


def output_status(output: Any, loads: Callable[[str], Any] = json.loads) -> tuple[Any, bool | None]:
    """A tool output's text and whether the call failed, by what the output says
    (None: it does not say). The one rule for a Codex output, for the hook's
    PostToolUse `tool_response` and a rollout's `function_call_output` alike:
    - an object: `exit_code` (or `exitCode`) not 0, `success: false` or
      `is_error: true` is a failure, `exit_code` 0 or `success: true` a success; its
      text is under `content` or `output`;
    - a JSON string `{"output": ..., "metadata": {"exit_code": N}}` (older rollouts):
      N, and the text is `output`;
    - else the exit-code header (`output_exit_code`).
    A failure said anywhere wins. `loads` parses the JSON string form (the reader
    passes a faster parser)."""
    failed: bool | None = None
    if isinstance(output, dict):
        code = _code(output.get("exit_code", output.get("exitCode")))
        if code is not None:
            failed = code != 0
        if isinstance(output.get("success"), bool):
            failed = bool(failed) or not output["success"]
        if output.get("is_error") is True:
            failed = True
        output = output.get("content", output.get("output", output))
    if not isinstance(output, str):
        return output, failed
    if output.startswith("{") and '"metadata"' in output:
        try:
            parsed = loads(output)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            metadata = parsed.get("metadata")
            code = _code(metadata.get("exit_code")) if isinstance(metadata, dict) else None
            if code is not None:
                failed = bool(failed) or code != 0
            return parsed["output"], failed
    code = output_exit_code(output)
    if code is not None:
        failed = bool(failed) or code != 0
    return output, failed


def output_failed(output: Any) -> bool:
    """Did a call fail, by what its output says (`output_status`)? The hook's rule, and the
    rollout reader's."""
    return bool(output_status(output)[1])


def rollout_exit_code(path: Any, call_id: Any) -> int | None:
    """The exit code of call `call_id` in the rollout at `path` (a PostToolUse
    payload's `transcript_path`), or None. Reads only the rollout's last MiB, and
    only a file named like a rollout; never raises."""
    if not isinstance(path, str) or not isinstance(call_id, str) or not _ROLLOUT_NAME.match(os.path.basename(path)):
        return None
    needle = json.dumps(call_id).encode()
    try:
        with open_file(path) as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - _ROLLOUT_TAIL))
            tail = fh.read(_ROLLOUT_TAIL)
    except OSError:
        return None
    for line in reversed(tail.split(b"\n")):
        if needle not in line or b"CommandExecution" not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        payload = obj.get("payload") if isinstance(obj, dict) else None
        if isinstance(payload, dict) and payload.get("type") == "item_completed":
            found = item_exit_code(payload.get("item"))
            if found is not None and found[0] == call_id:
                return found[1]
    return None


def codex_home(env: Mapping[str, str] | None = None) -> str:
    """The folder Codex reads config.toml and hooks.json from, spelled as Codex spells
    it in trust keys: `$CODEX_HOME` with symlinks resolved (Codex canonicalizes it), else
    `~/.codex` as it is (observed with `hooks/list` on 0.171.0)."""
    env = os.environ if env is None else env
    if env.get("CODEX_HOME"):
        return os.path.realpath(env["CODEX_HOME"])
    return os.path.join(os.path.abspath(os.path.expanduser("~")), ".codex")


def hook_key(hooks_json: str, event: str, group: int, handler: int) -> str:
    """The key of one hooks.json entry in `[hooks.state]` (Codex's `hook_key`)."""
    return f"{hooks_json}:{EVENT_LABELS[event]}:{group}:{handler}"


def trusted_hash(event: str, handler: Mapping[str, Any], matcher: str | None = None) -> str:
    """The hash Codex records for a trusted command hook (its `command_hook_hash`).
    `handler` is the entry as written in hooks.json."""
    import hashlib  # here, not at import: hashlib loads OpenSSL, and the hook never needs it

    label = EVENT_LABELS[event]
    timeout = handler.get("timeout", handler.get("timeoutSec"))
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler["command"],
        "timeout": max(1, int(timeout))
        if isinstance(timeout, int) and not isinstance(timeout, bool)
        else _DEFAULT_TIMEOUT,
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": label, "hooks": [normalized]}
    if matcher is not None and label not in _NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


#: Set by `loopwatch run` for the command it supervises (`supervise.supervisor.SUPERVISED`;
#: not imported from there: the hook path stays small).
SUPERVISED = "LOOPWATCH_SUPERVISED"

#: A project's Codex configuration (read once the project is trusted in Codex).
PROJECT_CONFIG = os.path.join(".codex", "config.toml")


def hooks_switched_off(config: Any) -> str | None:
    """The key of a parsed config.toml that turns hooks off (`[features] hooks = false`,
    or its older name `codex_hooks`), else None."""
    features = config.get("features") if isinstance(config, dict) else None
    if not isinstance(features, dict):
        return None
    for key in ("hooks", "codex_hooks"):
        if features.get(key) is False:
            return f"features.{key}"
    return None


class Codex(ClaudeStyle):
    """Codex: the facts of the module's docstring, as the host contract."""

    name = "codex"
    title = "Codex"
    # Seen in 0.171.0's CODEX_HOME: config.toml, sqlite stores, skills, shell_snapshots,
    # and the rollouts in sessions/YYYY/MM/DD/; users' also hold auth.json (credentials),
    # history.jsonl (prompts), log/ and archived_sessions/ (rollouts too).
    state_folders = (
        StateFolder(("sessions", "archived_sessions"), (), name=".codex"),
        StateFolder(("sessions", "archived_sessions"), ("sessions", "auth.json")),
        StateFolder(("sessions", "archived_sessions"), ("sessions", "config.toml")),
    )
    binary = "codex"
    package = "@openai/codex"
    tested = ("0.171.0",)
    events = same_names(HOOK_EVENTS)
    hooked_events = HOOK_EVENTS
    switch_paths = r"\.codex[/\\]+config\.toml"
    switch_keys = r"(?:codex_)?hooks\W{0,4}\s*[=:]\s*false"

    def parse(self, raw: dict[str, Any], event: str | None = None) -> Payload:
        event = text_field(raw, "hook_event_name", required=True)
        session = text_field(raw, "session_id", required=True)
        assert event is not None and session is not None
        calls: tuple[Call, ...] = ()
        if event in ("PreToolUse", "PostToolUse"):
            calls = (self._call(raw, event),)
        return Payload(self.name, event, session, text_field(raw, "agent_id") or "", text_field(raw, "cwd"), calls)

    def _call(self, raw: dict[str, Any], event: str) -> Call:
        name = raw.get("tool_name")
        if not isinstance(name, str) or not name:
            raise PayloadError(f"{event}: missing tool_name")
        call_id = raw.get("tool_use_id")
        call_id = call_id if isinstance(call_id, str) else None
        tool_input = trim(raw.get("tool_input"))
        if event == BEFORE:
            return Call(name, tool_input, call_id)
        result = raw.get("tool_response", raw.get("tool_result"))
        failed = output_failed(result)
        if not failed and is_shell(name) and output_exit_code(result) is None:
            # Codex's PostToolUse gives the bare output, no exit code: the rollout has it.
            code = rollout_exit_code(raw.get("transcript_path"), call_id)
            failed = code is not None and code != 0
        return Call(name, tool_input, call_id, trim(result), failed)

    def reply(self, payload: Payload, decision: Decision, stopped: str | None) -> Reply:
        if payload.event == BEFORE and stopped is not None and os.environ.get(SUPERVISED):
            # Under `loopwatch run`, which ends `codex exec` at this very call. A Codex hook
            # can only block it, and a blocked call never reaches `codex exec --json`: `run`
            # would not see the loop go on (observed with 0.171.0: 9 more model turns).
            return ALLOW_REPLY
        return super().reply(payload, decision, stopped)

    def refuse(self, native: str, reason: str, *, stop: bool = False, person: str | None = None) -> Reply:
        # Exit 2 with the reason on stderr (an empty stderr runs the call); Codex rejects
        # `continue: false` on PreToolUse as invalid output and then runs the call.
        return Reply(None, reason + "\n", 2)

    def headless(self, argv: list[str]) -> str | None:
        for i, arg in enumerate(argv[:3]):
            if os.path.basename(arg) in ("codex", "codex.js"):
                rest = [a for a in argv[i + 1 :] if not a.startswith("-")]
                return "codex exec" if "exec" in rest[:3] or rest[:1] == ["e"] else ""
        return None

    def probe_payload(self, folder: str, cwd: str) -> dict[str, Any]:
        return {
            "session_id": "loopwatch-doctor",
            "turn_id": "loopwatch-doctor-turn",
            "transcript_path": None,
            "cwd": cwd,
            "hook_event_name": "PostToolUse",
            "model": "loopwatch-doctor",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": "true"},
            "tool_response": "",
            "tool_use_id": "call_doctor",
        }

    def settings_file(self, scope: str, env: Mapping[str, str], cwd: Path) -> Path:
        from pathlib import Path  # not at import: the hook never needs it

        if scope == "user":
            base = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")
            return Path(base) / "hooks.json"
        return cwd / ".codex" / "hooks.json"

    def switch_offs(self, cwd: Path, env: Mapping[str, str]) -> list[SwitchOff]:
        import tomllib

        path = cwd / PROJECT_CONFIG
        try:
            with open_file(str(path)) as fh:
                config = tomllib.loads(fh.read(1 << 20).decode("utf-8"))
        except (OSError, ValueError):
            return []
        key = hooks_switched_off(config)
        if key is None:
            return []
        return [SwitchOff(str(path), f"{key} = false turns every hook off in a trusted project, loopwatch's too")]


HOST = Codex()
