"""`loopwatch install` / `uninstall` against settings files that already hold hooks."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner

from loopwatch._cli.install import default_command, hook_code, install, uninstall

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
        assert len(ours) == 1 and ours[0] == default_command(agent)
        assert ours[0].startswith(f"{shlex.quote(sys.executable)} -P -S -c ")
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


PAYLOAD = {
    "session_id": "s1",
    "transcript_path": "/nonexistent/t.jsonl",
    "cwd": "/nonexistent",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_1",
}


def _run_installed(argv: list[str], cwd, tmp_path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPWATCH_")}
    env["LOOPWATCH_STATE_DIR"] = str(tmp_path / "state")
    env.pop("PYTHONPATH", None)  # the command itself must find this loopwatch
    return subprocess.run(
        argv,
        input=json.dumps({**PAYLOAD, "cwd": str(cwd)}),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_the_installed_command_never_imports_a_loopwatch_the_project_holds(tmp_path):
    """The hook runs in the agent's project: a `loopwatch` package the agent writes
    there must not run as the guard (it could answer allow to everything)."""
    project = tmp_path / "project"
    (project / "loopwatch").mkdir(parents=True)
    (project / "loopwatch" / "__init__.py").write_text("raise SystemExit('planted')\n")
    (project / "loopwatch" / "__main__.py").write_text("raise SystemExit('planted')\n")
    done = _run_installed(shlex.split(default_command("claude-code")), project, tmp_path)
    assert done.returncode == 0 and "planted" not in done.stderr, done.stderr
    assert (tmp_path / "state" / "state.db").exists()  # this loopwatch answered, and kept its state


def test_the_installed_command_finds_loopwatch_through_site_when_its_folder_is_gone(tmp_path):
    """Named by its folder, loopwatch is still found the usual way (`site`) once that
    folder no longer holds it (reinstalled elsewhere)."""
    argv = shlex.split(default_command("claude-code"))
    code = argv.index("-c") + 1
    argv[code] = hook_code({"loopwatch": str(tmp_path / "gone"), "rapidfuzz": str(tmp_path / "gone")})
    site = subprocess.run(
        [sys.executable, "-I", "-c", "import loopwatch"], capture_output=True, cwd=tmp_path, timeout=120
    )
    if site.returncode != 0:
        pytest.skip("this interpreter's site-packages holds no loopwatch")
    done = _run_installed(argv, tmp_path, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "state" / "state.db").exists()


def test_the_installed_command_keeps_a_sessions_state_across_near_repeats(tmp_path):
    """Calls alike but not the same are compared with the one package the hook imports
    beyond the standard library (rapidfuzz): run without `site`, the command must still
    find it, or every such call would throw the session's state away."""
    argv = shlex.split(default_command("claude-code"))
    for i in range(4):
        call = {
            **PAYLOAD,
            "hook_event_name": "PostToolUse",
            "tool_input": {"command": f"ls /nonexistent-dir/sub{i}"},
            "tool_response": {
                "stdout": "",
                "stderr": f"ls: cannot access '/nonexistent-dir/sub{i}'",
                "interrupted": False,
            },
            "tool_use_id": f"toolu_{i}",
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPWATCH_")}
        env.pop("PYTHONPATH", None)
        env["LOOPWATCH_STATE_DIR"] = str(tmp_path / "state")
        done = subprocess.run(
            argv,
            input=json.dumps({**call, "cwd": str(tmp_path)}),
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    log = tmp_path / "state" / "hook.log"
    assert not log.exists() or "could not be loaded" not in log.read_text(), log.read_text()
