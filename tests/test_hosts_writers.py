"""Tools that write files: `hosts.WRITERS` (which input field names the file, for the
readers) and the writer role every front end gives them (`core.config.WRITERS`)."""

from __future__ import annotations

import json

import pytest

from loopwatch._core.config import Config
from loopwatch._hosts import WRITERS
from loopwatch._hosts.monitors import HOST_TOOLS
from loopwatch._readers import read


def test_every_writer_the_readers_know_has_the_writer_role_everywhere():
    config = Config.make()
    assert all(config.rule(name).role == "writer" for name in WRITERS), WRITERS
    # A host adds no role of its own but its pollers (Claude Code's, Copilot's, Gemini CLI's),
    # Gemini CLI's narration and sub-agent answer (never counted), and the writers of a host
    # whose writing tools have names too common to be writers for every source (Copilot's
    # `create` and `edit`, opencode's `write` and `edit`, Qwen Code's `edit` and `notebook_edit`,
    # Cursor's `write`, `edit` and `delete`, Cline's `editor`: SWE-agent's `edit` is a command):
    # the defaults are the core's.
    assert {(host, tool): rule.role for host, rules in HOST_TOOLS.items() for tool, rule in rules.items()} == {
        ("claude-code", "BashOutput"): "poller",
        ("copilot", "read_bash"): "poller",
        ("copilot", "create"): "writer",
        ("copilot", "edit"): "writer",
        ("gemini-cli", "read_background_output"): "poller",
        ("gemini-cli", "update_topic"): "exempt",
        ("gemini-cli", "complete_task"): "exempt",
        ("opencode", "write"): "writer",
        ("opencode", "edit"): "writer",
        ("qwen-code", "edit"): "writer",
        ("qwen-code", "notebook_edit"): "writer",
        ("cline", "editor"): "writer",
        ("cursor", "write"): "writer",
        ("cursor", "edit"): "writer",
        ("cursor", "delete"): "writer",
    }
    assert "edit" not in WRITERS and config.rule("edit").role == ""
    assert "editor" not in WRITERS and config.rule("editor").role == ""


def _atif(tmp_path, name, arguments, error=False):
    trajectory = {
        "schema_version": "ATIF-v1.2",
        "session_id": "s",
        "agent": {"name": "demo", "version": "1"},
        "steps": [
            {"step_id": 1, "timestamp": "2025-01-01T00:00:00Z", "source": "user", "message": "fix it"},
            {
                "step_id": 2,
                "timestamp": "2025-01-01T00:00:05Z",
                "source": "agent",
                "message": "",
                "tool_calls": [{"tool_call_id": "t1", "function_name": name, "arguments": arguments}],
                "observation": {"results": [{"source_call_id": "t1", "content": "done"}]},
                "extra": {"tool_result_is_error": error},
            },
        ],
    }
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(trajectory))
    (session,) = read(str(path))
    return [e for e in session.events if type(e).__name__ == "ToolCall"]


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_an_atif_call_of_a_writer_is_a_write_unless_it_failed(tmp_path, name):
    field = WRITERS[name] or "input"
    (call,) = _atif(tmp_path, name, {field: "a.py"})
    assert call.changed
    (call,) = _atif(tmp_path, name, {field: "a.py"}, error=True)
    assert call.changed == ()


def test_an_atif_call_of_another_tool_writes_nothing(tmp_path):
    (call,) = _atif(tmp_path, "Read", {"file_path": "a.py"})
    assert call.changed == ()
