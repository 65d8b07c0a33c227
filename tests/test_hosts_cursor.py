"""Cursor as a host: its payloads, its answers, its settings, and the hook answering a
session's events, end to end (the real `loopwatch hook cursor EVENT` command).

Every payload here is written from Cursor's hooks documentation (the fields it lists for
each event), never captured from the real CLI: `cursor-agent` cannot be run here (no
package registry has it; it needs an account). These tests say that the documented
protocol is implemented; they do not say that Cursor behaves as documented."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hook_support import SRC
from loopwatch._cli import cli
from loopwatch._core.config import Config
from loopwatch._core.session import Decision
from loopwatch._core.verdict import Action, Verdict
from loopwatch._hosts import cursor, host
from loopwatch._hosts.base import AFTER, BEFORE, PROMPT, TURN_END, PayloadError
from loopwatch._hosts.monitors import config_for

HOST = host("cursor")
LOOP = "ls /nonexistent-dir-xyz"
MISSING = "ls: cannot access '/nonexistent-dir-xyz': No such file or directory"


class Session:
    """One Cursor conversation seen through its hooks, each event sent to the real hook
    command as `install` writes it (`loopwatch hook cursor EVENT`)."""

    def __init__(self, root: Path, profile: str, conversation: str = "conv-0001") -> None:
        self.root, self.profile, self.conversation = root, profile, conversation
        self.work = root / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.turn = 0

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": SRC,
            "HOME": str(self.root / "home"),
            "LOOPWATCH_STATE_DIR": str(self.root / "state"),
            "LOOPWATCH_PROFILE": self.profile,
        }

    def base(self, event: str) -> dict:
        return {
            "conversation_id": self.conversation,
            "generation_id": f"gen-{self.turn:04d}",
            "hook_event_name": event,
            "workspace_roots": [str(self.work)],
        }

    def send(self, event: str, fields: dict) -> dict | None:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwatch", "hook", "cursor", event],
            input=json.dumps({**self.base(event), **fields}).encode(),
            env=self.env(),
            capture_output=True,
            cwd=self.work,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr.decode()[-500:]
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def shell(self, command: str, output: str) -> dict | None:
        """One shell call as Cursor makes it: the before-event, then (unless denied) the
        after-event. The before-event's answer."""
        self.turn += 1
        answer = self.send("beforeShellExecution", {"command": command, "cwd": str(self.work)})
        if not denied(answer):
            assert self.send("afterShellExecution", {"command": command, "output": output, "duration": 12}) is None
        return answer


def denied(answer: dict | None) -> bool:
    return bool(answer) and answer.get("permission") == "deny"


# -- payloads ---------------------------------------------------------------------------------


def doc(event: str, **fields) -> dict:
    """A payload of the documented shape: the fields every event has, then its own."""
    return {
        "conversation_id": "conv-1",
        "generation_id": "gen-1",
        "hook_event_name": event,
        "workspace_roots": ["/home/user/project"],
        **fields,
    }


def test_each_documented_event_is_the_guards_event():
    before = HOST.parse(doc("beforeShellExecution", command="npm test", cwd="/home/user/project"))
    assert (before.event, before.native, before.session, before.agent) == (BEFORE, "beforeShellExecution", "conv-1", "")
    # the folder is not identity
    assert [(c.name, c.input) for c in before.calls] == [("shell", {"command": "npm test"})]
    after = HOST.parse(doc("afterShellExecution", command="npm test", output="1 failed", duration=150))
    assert after.event == AFTER and after.calls[0].result == "1 failed" and not after.calls[0].error
    assert HOST.parse(doc("beforeSubmitPrompt", prompt="fix it", attachments=[])).event == PROMPT
    assert HOST.parse(doc("stop", status="completed", loop_count=0)).event == TURN_END
    assert before.cwd == "/home/user/project"
    assert HOST.parse(doc("stop", status="completed")).cwd == "/home/user/project"  # from workspace_roots


def test_the_event_named_on_the_command_line_wins_and_one_is_needed():
    payload = doc("afterShellExecution", command="ls", output="")
    assert HOST.parse(payload, "beforeShellExecution").event == BEFORE
    del payload["hook_event_name"]
    assert HOST.parse(payload, "afterShellExecution").event == AFTER
    with pytest.raises(PayloadError, match="names no event"):
        HOST.parse(payload)
    with pytest.raises(PayloadError, match="conversation_id"):
        HOST.parse({"hook_event_name": "stop"})
    with pytest.raises(PayloadError, match="command"):
        HOST.parse(doc("beforeShellExecution", cwd="/"))


def test_an_mcp_call_is_named_as_its_tool_and_its_error_flag_is_a_failure():
    # The documentation shows `tool_input` as JSON text and as an object: both read alike.
    text = HOST.parse(doc("beforeMCPExecution", tool_name="db_query", tool_input='{"sql": "select 1"}', url="x"))
    obj = HOST.parse(doc("beforeMCPExecution", tool_name="db_query", tool_input={"sql": "select 1"}, command="npx s"))
    assert text.calls[0].name == obj.calls[0].name == "db_query"
    assert text.calls[0].input == obj.calls[0].input == {"sql": "select 1"}
    failed = HOST.parse(
        doc(
            "afterMCPExecution",
            tool_name="db_query",
            tool_input='{"sql": "select 1"}',
            result_json='{"content": [{"type": "text", "text": "no such table"}], "isError": true}',
            duration=250,
        )
    )
    worked = HOST.parse(
        doc("afterMCPExecution", tool_name="db_query", tool_input="{}", result_json='{"content": []}', duration=3)
    )
    assert failed.event == AFTER and failed.calls[0].error and not worked.calls[0].error
    with pytest.raises(PayloadError, match="tool_name"):
        HOST.parse(doc("beforeMCPExecution", tool_input="{}"))


def test_a_file_edit_is_a_write_of_its_path():
    edit = HOST.parse(
        doc("afterFileEdit", file_path="/p/calc.py", edits=[{"old_string": "a - b", "new_string": "a + b"}])
    )
    (call,) = edit.calls
    assert edit.event == AFTER and call.name == "edit" and call.input["path"] == "/p/calc.py"
    assert cursor.WRITERS[call.name] == "path" and call.result == "/p/calc.py" and not call.error
    assert config_for("cursor", Config.make()).rule(call.name).role == "writer"  # as the hook's monitor weighs it


# -- answers ----------------------------------------------------------------------------------


def _decision(action: Action, message: str | None = None) -> Decision:
    return Decision(action, message, "the same shell call 4 times", Verdict(action, description="same"))


def test_a_refusal_is_a_deny_with_a_message_for_the_agent_and_one_for_the_person():
    payload = HOST.parse(doc("beforeShellExecution", command=LOOP, cwd="/"))
    blocked = HOST.reply(payload, _decision(Action.BLOCK, "loopwatch blocked this call: change it"), None).stdout
    assert blocked == {
        "permission": "deny",
        "user_message": blocked["user_message"],
        "agent_message": "loopwatch blocked this call: change it",
    }
    assert "the same shell call 4 times" in blocked["user_message"]
    stopped = HOST.reply(payload, _decision(Action.STOP, "loopwatch stopped the run: stop"), "why").stdout
    assert stopped["permission"] == "deny" and stopped["user_message"].startswith("loopwatch stopped")


def test_an_allowed_call_gets_no_answer_so_cursor_still_asks_the_person():
    """`"permission": "allow"` would approve a call Cursor would have asked about."""
    payload = HOST.parse(doc("beforeShellExecution", command="rm -rf build", cwd="/"))
    assert HOST.reply(payload, _decision(Action.ALLOW), None).stdout is None
    assert HOST.reply(payload, _decision(Action.WARN), None).stdout is None


def test_a_prompt_is_never_held_back_and_nothing_asks_the_agent_to_go_on():
    prompt = HOST.parse(doc("beforeSubmitPrompt", prompt="go"))
    assert HOST.reply(prompt, _decision(Action.ALLOW), None).stdout == {"continue": True}
    stop = HOST.parse(doc("stop", status="completed", loop_count=0))
    assert HOST.reply(stop, _decision(Action.STOP, "x"), "why").stdout is None  # no followup_message
    after = HOST.parse(doc("afterShellExecution", command="ls", output=""))
    assert HOST.reply(after, _decision(Action.NUDGE, "loopwatch: circles"), None).stdout is None


def test_a_headless_run_is_told_by_the_print_flag():
    assert HOST.headless(["cursor-agent", "-p", "fix it", "--output-format", "stream-json"]) == "cursor-agent -p"
    assert HOST.headless(["/home/u/.local/bin/cursor-agent", "--print", "x"]) == "cursor-agent -p"
    node = ["node", "/home/u/.local/share/cursor-agent/versions/2026.11.01/index.js", "-p", "x"]
    assert HOST.headless(node) == "cursor-agent -p"
    assert HOST.headless(["cursor-agent"]) == ""  # the interactive CLI: attended
    assert HOST.headless(["/usr/bin/agent", "-p", "x"]) is None  # another program called `agent`
    assert HOST.headless(["claude", "-p", "x"]) is None


def test_it_says_it_is_built_from_the_documentation():
    assert HOST.documented_only and HOST.tested == ()
    assert "documentation" in (cursor.__doc__ or "") and "never" in (cursor.__doc__ or "")


# -- settings ---------------------------------------------------------------------------------


def test_install_writes_one_entry_per_event_keeps_others_and_uninstalls_only_its_own():
    theirs = {"command": "./hooks/audit.sh"}
    settings = {"version": 1, "hooks": {"beforeShellExecution": [theirs], "afterFileEdit": [{"command": "fmt"}]}}
    once = HOST.install(settings, "/py -m loopwatch hook cursor")
    assert HOST.install(once, "/py -m loopwatch hook cursor") == once and once["version"] == 1
    assert once["hooks"]["beforeShellExecution"] == [
        theirs,
        {"command": "/py -m loopwatch hook cursor beforeShellExecution"},
    ]
    assert set(HOST.hooked(once)) == set(cursor.HOOK_EVENTS)
    assert HOST.uninstall(once) == settings
    assert HOST.install({}, "loopwatch hook cursor")["version"] == 1


def test_the_settings_files_of_each_scope(tmp_path):
    assert HOST.settings_file("user", {"HOME": "/home/u"}, tmp_path) == Path("/home/u/.cursor/hooks.json")
    assert HOST.settings_file("project", {"HOME": "/home/u"}, tmp_path) == tmp_path / ".cursor" / "hooks.json"


def test_the_cli_installs_for_the_user_and_the_project_and_says_it_is_untested(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    runner = CliRunner()
    user = runner.invoke(cli, ["install", "cursor"])
    project = runner.invoke(cli, ["install", "cursor", "--project"])
    assert user.exit_code == 0 and project.exit_code == 0, user.output + project.output
    for path in (home / ".cursor" / "hooks.json", work / ".cursor" / "hooks.json"):
        written = json.loads(path.read_text())
        assert written["version"] == 1 and list(HOST.hooked(written)) == list(cursor.HOOK_EVENTS)
        assert all(c.endswith(f"hook cursor {event}") for event, cs in HOST.hooked(written).items() for c in cs)
    assert "documentation" in user.output
    listing = runner.invoke(cli, ["install"])
    assert "cursor" in listing.output and "untested against the real CLI" in listing.output
    doctor = runner.invoke(cli, ["doctor", "cursor"], env={"LOOPWATCH_STATE_DIR": str(tmp_path / "state")})
    assert "hook installed for 7 events" in doctor.output
    assert "built from its documentation alone: untested against the real CLI" in doctor.output
    removed = runner.invoke(cli, ["uninstall", "cursor"])
    assert removed.exit_code == 0 and HOST.hooked(json.loads((home / ".cursor" / "hooks.json").read_text())) == {}


# -- the hook, end to end ---------------------------------------------------------------------


def test_unattended_the_repeated_failing_command_is_refused_from_its_fifth_call(tmp_path):
    """No documented answer ends a Cursor run: once stopped, every call is refused."""
    session = Session(tmp_path, "unattended")
    answers = [session.shell(LOOP, MISSING) for _ in range(12)]
    ran = [a for a in answers if not denied(a)]
    assert len(ran) <= 5 and len(ran) == 4, len(ran)  # the documented output carries no exit code
    assert all(denied(a) for a in answers[len(ran) :])
    assert answers[len(ran)]["agent_message"].startswith("loopwatch stopped the run")
    assert denied(session.shell("git status", "clean"))  # any call, until the person writes
    assert session.send("beforeSubmitPrompt", {"prompt": "try another folder"}) == {"continue": True}
    assert not denied(session.shell("ls /tmp", "a b c"))  # the person wrote: the stop is lifted


def test_attended_the_repeated_call_is_refused_and_other_calls_still_run(tmp_path):
    session = Session(tmp_path, "attended")
    answers = [session.shell(LOOP, MISSING) for _ in range(12)]
    ran = [a for a in answers if not denied(a)]
    assert len(ran) <= 5 and all(denied(a) for a in answers[len(ran) :])
    assert all(not a["agent_message"].startswith("loopwatch stopped") for a in answers[len(ran) :])
    assert not denied(session.shell("ls /tmp", "a b c"))  # refused, not stopped: another call runs


def test_thirteen_varied_healthy_calls_all_run(tmp_path):
    session = Session(tmp_path, "unattended")
    calls = [
        ("ls", "README.md setup.py"),
        ("cat setup.py", "from setuptools import setup"),
        ("python -m pytest -q", "F\n1 failed"),
        ("git status --short", " M calc.py"),
        ("python -m pytest -q", ".\n1 passed"),
        ("git diff --stat", " calc.py | 2 +-"),
        ("wc -l calc.py", "3 calc.py"),
        ("python -c 'print(1 + 1)'", "2"),
        ("ls tests", "test_calc.py"),
        ("grep -n def calc.py", "1:def add(a, b):"),
        ("head -1 README.md", "# calc"),
        ("python -m pytest -q tests", ".\n1 passed"),
        ("git log --oneline -1", "abc123 start"),
    ]
    answers = [session.shell(command, output) for command, output in calls]
    assert answers == [None] * 13  # every call ran, nothing was said


def test_the_same_failing_test_run_between_edits_is_not_stopped(tmp_path):
    """Five rounds of the same failing test, each after an edit, are work going on:
    nothing is refused, and the test passing at the end runs too."""
    session = Session(tmp_path, "unattended")
    for round in range(5):
        assert not denied(session.shell("python -m pytest -q", "F\nE assert -1 == 3\n1 failed"))
        edit = {"file_path": str(session.work / "calc.py"), "edits": [{"old_string": f"v{round}", "new_string": "x"}]}
        assert session.send("afterFileEdit", edit) is None
    assert not denied(session.shell("python -m pytest -q", ".\n1 passed"))


def test_conversations_are_kept_apart(tmp_path):
    one, two = Session(tmp_path, "unattended", "conv-a"), Session(tmp_path, "unattended", "conv-b")
    for _ in range(4):
        one.shell(LOOP, MISSING)
    assert denied(one.shell(LOOP, MISSING))
    assert not denied(two.shell(LOOP, MISSING))  # the other conversation's first call
