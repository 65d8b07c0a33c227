"""`loopwatch install qwen-code` (user, `--project`, `--system`), `uninstall`, and what
`doctor qwen-code` says on a fresh HOME: installed or not, runnable, and each project
file that would switch the guard off (or would have, but for the system's settings)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs the CLI in processes of its own

SRC = str(Path(__file__).resolve().parent.parent / "src")


class Machine:
    """A fresh HOME with a project folder, the loopwatch CLI run there as a user would."""

    def __init__(self, root: Path) -> None:
        self.home, self.project = root / "home", root / "project"
        self.system = root / "etc" / "qwen-code" / "settings.json"
        self.home.mkdir()
        self.project.mkdir()

    def env(self, **more: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "QWEN", "XDG_"))}
        return {
            **keep,
            "HOME": str(self.home),
            "PYTHONPATH": SRC,
            "QWEN_CODE_SYSTEM_SETTINGS_PATH": str(self.system),
            **more,
        }

    def loopwatch(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "loopwatch", *args],
            env=self.env(**env),
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def user(self) -> Path:
        return self.home / ".qwen" / "settings.json"

    def doctor(self, **env: str) -> tuple[int, list[dict]]:
        done = self.loopwatch("doctor", "qwen-code", "--json", **env)
        return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


EVENTS = ["PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "SubagentStop"]


def test_install_writes_every_event_with_a_timeout_every_release_reads_as_30_seconds(machine):
    machine.user().parent.mkdir()
    machine.user().write_text(json.dumps({"general": {"enableAutoUpdate": False}, "$version": 4}))
    done = machine.loopwatch("install", "qwen-code")
    assert done.returncode == 0, done.stderr
    settings = json.loads(machine.user().read_text())
    assert settings["general"] == {"enableAutoUpdate": False} and settings["$version"] == 4
    assert list(settings["hooks"]) == EVENTS
    # Isolated (`-I`): a project's `.env` (PYTHONPATH) and folder reach no import of the hook's.
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command.startswith(f"{sys.executable} -I ") and command.endswith("loopwatch hook qwen-code")
    for event, groups in settings["hooks"].items():
        ((entry,),) = [g["hooks"] for g in groups]
        assert entry == {"type": "command", "command": command, "timeout": 30000}
        assert groups[0].get("matcher") == ("*" if event.startswith(("PreToolUse", "PostToolUse")) else None)
    again = machine.loopwatch("install", "qwen-code")
    assert "already installed" in again.stdout and json.loads(machine.user().read_text()) == settings
    assert machine.loopwatch("uninstall", "qwen-code").returncode == 0
    left = json.loads(machine.user().read_text())
    assert left["general"] == {"enableAutoUpdate": False} and not any(left["hooks"].values())


def test_the_project_scope_is_portable(machine):
    assert machine.loopwatch("install", "qwen-code", "--project").returncode == 0
    settings = json.loads((machine.project / ".qwen" / "settings.json").read_text())
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "loopwatch hook qwen-code"


def test_the_system_scope_pins_hooks_on_and_is_readable_by_every_user(machine):
    done = machine.loopwatch("install", "qwen-code", "--system")
    assert done.returncode == 0, done.stderr
    settings = json.loads(machine.system.read_text())
    assert settings["disableAllHooks"] is False and list(settings["hooks"]) == EVENTS
    assert stat.S_IMODE(machine.system.stat().st_mode) == 0o644
    assert "no project's settings override" in done.stdout and "QWEN_CODE_SIMPLE=0" in done.stdout
    assert machine.loopwatch("uninstall", "qwen-code", "--system").returncode == 0
    assert not any(json.loads(machine.system.read_text())["hooks"].values())


def test_other_hosts_have_no_system_scope(machine):
    from loopwatch._hosts import host

    assert "system" not in host("cline").scopes  # a host with no level above the user's
    done = machine.loopwatch("install", "cline", "--system")
    assert done.returncode == 2 and "--system is not a Cline settings scope" in done.stderr, done.stderr


def _lines(found: list[dict], status: str) -> list[str]:
    return [line["text"] for line in found if line["status"] == status]


def test_doctor_says_what_is_missing_then_that_all_is_well(machine):
    code, found = machine.doctor()
    assert code == 1 and any("not installed: run `loopwatch install qwen-code`" in t for t in _lines(found, "problem"))
    machine.loopwatch("install", "qwen-code")
    code, found = machine.doctor(PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    problems = [t for t in _lines(found, "problem") if "`qwen` not found on PATH" not in t]
    assert problems == [], found
    assert any(t.startswith("hook installed for 6 events") for t in _lines(found, "ok"))
    assert any(t.startswith("hook runs: a dry-run call answered") for t in _lines(found, "ok"))


def test_doctor_runs_the_systems_command_too(machine):
    machine.loopwatch("install", "qwen-code", "--system")
    _, found = machine.doctor()
    assert any(t.startswith("hook runs: a dry-run call answered") for t in _lines(found, "ok")), found


SWITCH_OFFS = [
    # (file in the project, its text, the words doctor says)
    (".qwen/settings.json", '{"disableAllHooks": true}', '"disableAllHooks": true turns every hook off'),
    (
        ".qwen/settings.json",
        '{\n  // JSON with comments, as Qwen reads it\n  "disableAllHooks": true\n}',
        '"disableAllHooks": true turns every hook off',
    ),
    (".qwen/settings.json", '{"env": {"QWEN_CODE_SIMPLE": "1"}}', '"env" sets QWEN_CODE_SIMPLE=1'),
    (".qwen/.env", "QWEN_CODE_SAFE_MODE=true\n", "QWEN_CODE_SAFE_MODE=true: Qwen Code then runs no hook"),
    (".env", "export QWEN_CODE_SIMPLE='yes'\n", "QWEN_CODE_SIMPLE=yes: Qwen Code then runs no hook"),
]


@pytest.mark.parametrize("name,text,said", SWITCH_OFFS)
def test_doctor_names_a_project_file_that_switches_the_guard_off(machine, name, text, said):
    machine.loopwatch("install", "qwen-code")
    path = machine.project / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    code, found = machine.doctor()
    assert code == 1
    assert any(t.startswith(f"{path}: ") and said in t for t in _lines(found, "problem")), found


def test_the_system_pin_and_the_users_own_environment_hold_and_doctor_says_nothing(machine):
    machine.loopwatch("install", "qwen-code", "--system")
    (machine.project / ".qwen").mkdir()
    (machine.project / ".qwen" / "settings.json").write_text('{"disableAllHooks": true}')
    (machine.project / ".env").write_text("QWEN_CODE_SIMPLE=1\n")
    _, found = machine.doctor(QWEN_CODE_SIMPLE="0")
    assert not [t for t in _lines(found, "problem") if str(machine.project) in t], found


def test_doctor_names_a_project_entry_that_replaces_the_users_hook(machine):
    machine.loopwatch("install", "qwen-code")
    mine = json.loads(machine.user().read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    (machine.project / ".qwen").mkdir()
    project = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": mine, "timeout": 0.001}]}]}}
    (machine.project / ".qwen" / "settings.json").write_text(json.dumps(project))
    code, found = machine.doctor()
    assert code == 1 and any("runs loopwatch's own command" in t for t in _lines(found, "problem")), found
