"""The agent being guarded must not switch its guard off: a write of a project setting
that turns the host's hooks off is refused before it runs, whatever the tool; every
other write of the same files goes through."""

from __future__ import annotations

import json

import pytest

from loopwatch._core.messages import Blocked, loopwatch_said
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
from loopwatch._hosts import host
from loopwatch._hosts.base import Call

CLAUDE_OFF = json.dumps({"disableAllHooks": True}, indent=2)

REFUSED = [
    ("claude-code", "Write", {"file_path": "/repo/.claude/settings.json", "content": CLAUDE_OFF}),
    ("claude-code", "Write", {"file_path": ".claude/settings.local.json", "content": '{"disableAllHooks":true}'}),
    (
        "claude-code",
        "Edit",
        {"file_path": "/repo/.claude/settings.json", "old_string": "{", "new_string": '{\n  "disableAllHooks": true,'},
    ),
    ("claude-code", "Bash", {"command": "echo '{\"disableAllHooks\": true}' > .claude/settings.json"}),
    ("codex", "Bash", {"command": "printf '[features]\\nhooks = false\\n' >> .codex/config.toml"}),
    ("codex", "apply_patch", "*** Begin Patch\n*** Add File: .codex/config.toml\n+[features]\n+codex_hooks = false\n"),
    # Qwen Code: its settings, bare or safe mode by `.env` or settings "env", and an entry of
    # the project's own running loopwatch's command (it replaces the user's).
    ("qwen-code", "write_file", {"file_path": "/repo/.qwen/settings.json", "content": '{"disableAllHooks": true}\n'}),
    ("qwen-code", "write_file", {"file_path": "/repo/.qwen/.env", "content": "QWEN_CODE_SIMPLE=1\n"}),
    ("qwen-code", "write_file", {"file_path": "/repo/.env", "content": "API=x\nQWEN_CODE_SAFE_MODE=true\n"}),
    (
        "qwen-code",
        "edit",
        {
            "file_path": "/repo/.qwen/settings.json",
            "old_string": "{",
            "new_string": '{"env": {"QWEN_CODE_SIMPLE": "1"},',
        },
    ),
    ("qwen-code", "run_shell_command", {"command": "echo QWEN_CODE_SIMPLE=1 >> .env", "description": "x"}),
    (
        "qwen-code",
        "write_file",
        {
            "file_path": "/repo/.qwen/settings.json",
            "content": '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", '
            '"command": "/usr/bin/python3 -m loopwatch hook qwen-code", "timeout": 0.001}]}]}}',
        },
    ),
]

ALLOWED = [
    ("claude-code", "Write", {"file_path": "/repo/.claude/settings.json", "content": '{"disableAllHooks": false}'}),
    ("claude-code", "Write", {"file_path": "/repo/.claude/settings.json", "content": '{"permissions": {}}'}),
    ("claude-code", "Bash", {"command": "grep -rn disableAllHooks docs/"}),
    (
        "claude-code",
        "Write",
        {"file_path": "/repo/docs/hooks.md", "content": '"disableAllHooks": true switches them off'},
    ),
    ("codex", "Bash", {"command": "cat .codex/config.toml"}),
    ("codex", "Bash", {"command": "printf '[features]\\nhooks = true\\n' >> .codex/config.toml"}),
    ("qwen-code", "write_file", {"file_path": "/repo/.qwen/settings.json", "content": '{"disableAllHooks": false}'}),
    ("qwen-code", "write_file", {"file_path": "/repo/.env", "content": "DATABASE_URL=postgres://x\n"}),
    ("qwen-code", "write_file", {"file_path": "/repo/src/env.py", "content": "QWEN_CODE_SIMPLE = 1"}),
    ("qwen-code", "run_shell_command", {"command": "grep -rn disableAllHooks .qwen/", "description": "x"}),
    ("qwen-code", "write_file", {"file_path": "/repo/.environment", "content": "QWEN_CODE_SIMPLE=1"}),
]


@pytest.mark.parametrize("name,tool,tool_input", REFUSED)
def test_a_write_that_switches_hooks_off_is_named(name, tool, tool_input):
    assert host(name).switches_off(Call(tool, tool_input), "/repo") is not None


@pytest.mark.parametrize("name,tool,tool_input", ALLOWED)
def test_any_other_write_of_the_same_files_is_not(name, tool, tool_input):
    assert host(name).switches_off(Call(tool, tool_input), "/repo") is None


@pytest.mark.parametrize("profile", ["attended", "unattended"])
def test_the_hook_refuses_it_before_it_runs_and_does_not_count_it(tmp_path, monkeypatch, profile):
    """Claude Code: the write is denied with loopwatch's refusal (a reader tells it as
    one), and the denied call, reported again by PostToolBatch, is not counted as run."""
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "CLAUDE_CODE_ENTRYPOINT", "LOOPWATCH_SUPERVISED"):
        monkeypatch.delenv(name, raising=False)
    store = Store(tmp_path / "state")
    base = {"session_id": "s1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path)}
    call = {
        "tool_name": "Write",
        "tool_input": {"file_path": str(tmp_path / ".claude" / "settings.json"), "content": CLAUDE_OFF},
        "tool_use_id": "toolu_1",
    }
    try:
        pre = handle(parse(json.dumps({**base, **call, "hook_event_name": "PreToolUse"}).encode()), {}, store)
        spec = pre.stdout["hookSpecificOutput"]
        assert spec["permissionDecision"] == "deny"
        assert loopwatch_said(spec["permissionDecisionReason"]) is Blocked
        assert "settings.json" in spec["permissionDecisionReason"] and "ask them" in spec["permissionDecisionReason"]
        assert "switch it off" in pre.stdout["systemMessage"]
        batch = {
            **base,
            "hook_event_name": "PostToolBatch",
            "tool_calls": [{**call, "tool_response": spec["permissionDecisionReason"]}],
        }
        handle(parse(json.dumps(batch).encode()), {}, store)
        state = store.state("s1", "")
        assert state is not None and state.monitor.record()["actions"] == 0
        assert [d["action"] for d in store.decisions("s1", "")] == ["block"]
    finally:
        store.close()
