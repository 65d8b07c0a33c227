"""`loopwatch install` / `uninstall` against settings files that already hold hooks."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from loopwatch._cli.install import install, uninstall

CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/.claude/hooks/block-rm.sh"}]},
        ],
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [
                    {"type": "command", "command": 'npx prettier --write "$CLAUDE_FILE_PATHS"'},
                ],
            },
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send Claude"}]}],
    },
    "model": "opus",
}

CODEX_HOOKS = {
    "hooks": {
        "SessionStart": [
            {
                "matcher": "startup|resume",
                "hooks": [{"type": "command", "command": "python3 ~/.codex/hooks/context.py"}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "uvx ruff check --fix", "timeout": 30}]}],
    }
}


def run(command, *args):
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    return result


def entries(settings: dict, event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


@pytest.mark.parametrize(
    "agent,original,events",
    [
        (
            "claude-code",
            CLAUDE_SETTINGS,
            [
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "PostToolBatch",
                "UserPromptSubmit",
                "Stop",
                "SubagentStop",
            ],
        ),
        ("codex", CODEX_HOOKS, ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"]),
    ],
)
def test_install_merges_is_idempotent_backs_up_and_uninstall_removes_only_ours(tmp_path, agent, original, events):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(original, indent=2))
    result = run(install, agent, "--settings", str(path))
    assert result.exit_code == 0, result.output
    once = json.loads(path.read_text())
    assert json.loads((tmp_path / "settings.json.loopwatch.bak").read_text()) == original
    for event in events:
        ours = [c for c in entries(once, event) if "loopwatch hook" in c]
        assert len(ours) == 1 and ours[0].endswith(f"-m loopwatch hook {agent}")
    for event, groups in original["hooks"].items():  # every original entry is still there, first
        assert once["hooks"][event][: len(groups)] == groups
    assert {k: v for k, v in once.items() if k != "hooks"} == {k: v for k, v in original.items() if k != "hooks"}

    result = run(install, agent, "--settings", str(path))
    assert "already installed" in result.output
    assert json.loads(path.read_text()) == once

    result = run(uninstall, agent, "--settings", str(path))
    assert result.exit_code == 0
    assert json.loads(path.read_text()) == original
    assert "nothing to do" in run(uninstall, agent, "--settings", str(path)).output


def test_uninstall_keeps_a_users_entry_sharing_a_group_with_ours(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "*",
                            "hooks": [
                                {"type": "command", "command": "/usr/bin/python3 -m loopwatch hook claude-code"},
                                {"type": "command", "command": "audit-log --tool"},
                            ],
                        }
                    ]
                }
            }
        )
    )
    run(uninstall, "claude-code", "--settings", str(path))
    assert json.loads(path.read_text()) == {
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "audit-log --tool"}]}]}
    }


def test_install_into_a_new_user_settings_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    result = run(install, "claude-code")
    assert result.exit_code == 0
    settings = json.loads((tmp_path / "claude" / "settings.json").read_text())
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "*"
    assert "matcher" not in settings["hooks"]["Stop"][0]
    assert not (tmp_path / "claude" / "settings.json.loopwatch.bak").exists()


def test_invalid_settings_are_left_untouched(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": {,}')
    result = CliRunner().invoke(install, ["claude-code", "--settings", str(path)])
    assert result.exit_code == 2 and "not valid JSON" in result.output  # bad input: one line, exit 2
    assert path.read_text() == '{"hooks": {,}'


def test_a_custom_command_must_run_the_hook(tmp_path):
    result = CliRunner().invoke(install, ["codex", "--settings", str(tmp_path / "h.json"), "--command", "echo hi"])
    assert result.exit_code == 2 and "loopwatch hook" in result.output
