"""An agent CLI's own folder, scanned as a user would (`loopwatch scan ~/.claude`): its
transcripts read, everything else left out by its name (never opened: a credentials file
is not even read), counted and said; a Claude Code session and its sub-agents' files
read as one session, one monitor per agent; a path named by the user still read; and a
scan that finds no transcript at all says so in one line, exit 2, for every command.

The folders are written here in the shapes Claude Code 2.1.197 / 2.1.332 and Codex
0.171.0 were seen to write (the real CLIs' own folders are scanned in
tests/test_realclient_subagents.py)."""

from __future__ import annotations

import builtins
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import jsonl, looping_events
from readers_support import FIXTURES, calls

from loopwatch._analysis.replay import replay
from loopwatch._cli import cli
from loopwatch._readers import read
from loopwatch import Config

SESSION = "5b40da0f-27b4-44ef-ba53-15f865800f69"
AGENT = "a3bc3387f62446208"
WORKFLOW_AGENT = "a51826e3113cbfc84"


def scan(*args: Any):
    return CliRunner().invoke(cli, ["scan", "--no-progress", *map(str, args)])


def records(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


# -- a Claude Code session with a looping sub-agent, in its real layout --------------------


class Lines:
    """Lines of a Claude Code session file, each a second after the last."""

    def __init__(self, session: str, agent: str | None, start: int) -> None:
        self.session, self.agent, self.clock, self.parent = session, agent, start, None
        self.lines: list[dict] = []
        self.calls = 0

    def _line(self, kind: str, message: dict, **extra: Any) -> dict:
        self.clock += 1
        uuid = f"{self.agent or 'main'}-{len(self.lines)}"
        line = {
            "parentUuid": self.parent,
            "isSidechain": self.agent is not None,
            **({"agentId": self.agent} if self.agent else {}),
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": f"2026-12-06T03:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
            "userType": "external",
            "cwd": "/home/user/work",
            "sessionId": self.session,
            "version": "2.1.332",
            **extra,
        }
        self.parent = uuid
        self.lines.append(line)
        return line

    def prompt(self, text: str) -> None:
        self._line("user", {"role": "user", "content": text})

    def call(self, name: str, input: dict, result: str, error: bool = False) -> str:
        self.calls += 1
        call_id = f"toolu_{self.agent or 'main'}_{self.calls}"
        self._line(
            "assistant",
            {
                "id": f"msg_{self.agent or 'main'}_{self.calls}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": input}],
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        )
        self._line(
            "user",
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result, "is_error": error}],
            },
        )
        return call_id

    def say(self, text: str) -> None:
        self._line(
            "assistant",
            {"id": f"msg_{self.agent or 'main'}_say", "role": "assistant", "content": [{"type": "text", "text": text}]},
        )

    def text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)


LOOPS = 8  # the sub-agent's calls: the same failing listing


def write_session(project: Path, session: str = SESSION, workflow: bool = True) -> Path:
    """A session whose one Agent call ran a sub-agent that listed a missing folder
    `LOOPS` times (and a workflow agent that ran once): the session file, its folder
    with the agents' files and their sidecars, tool results, a workflow's journal."""
    project.mkdir(parents=True, exist_ok=True)
    main = Lines(session, None, 0)
    main.prompt("Delegate the listing.")
    sub = Lines(session, AGENT, 2)
    sub.prompt("List the directory.")
    for _ in range(LOOPS):
        sub.call("Bash", {"command": "ls /nonexistent-dir-xyz"}, "Exit code 2\nls: cannot access", error=True)
    sub.say("Done.")
    # the Agent call is asked before the sub-agent starts and answered after it ends
    main.call(
        "Agent", {"description": "List", "prompt": "List the directory.", "subagent_type": "general-purpose"}, "Done."
    )
    main.lines[-1]["timestamp"] = "2026-12-06T03:01:00.000Z"
    main.clock = 61
    main.say("The sub-agent is done.")
    (project / f"{session}.jsonl").write_text(main.text())
    folder = project / session
    (folder / "subagents").mkdir(parents=True)
    (folder / "subagents" / f"agent-{AGENT}.jsonl").write_text(sub.text())
    (folder / "subagents" / f"agent-{AGENT}.meta.json").write_text(
        json.dumps({"agentType": "general-purpose", "description": "List", "toolUseId": "toolu_main_1"})
    )
    (folder / "tool-results").mkdir()
    (folder / "tool-results" / "b1.txt").write_text("a long output\n")
    if workflow:
        run = folder / "subagents" / "workflows" / "wf_1"
        run.mkdir(parents=True)
        other = Lines(session, WORKFLOW_AGENT, 70)
        other.prompt("Check the tests.")
        other.call("Bash", {"command": "pytest -q"}, "3 passed")
        (run / f"agent-{WORKFLOW_AGENT}.jsonl").write_text(other.text())
        (run / f"agent-{WORKFLOW_AGENT}.meta.json").write_text(json.dumps({"agentType": "workflow-subagent"}))
        (run / "journal.jsonl").write_text(json.dumps({"runId": "wf_1", "step": 1}) + "\n")
        (folder / "workflows" / "scripts").mkdir(parents=True)
        (folder / "workflows" / "scripts" / "check-wf_1.js").write_text("export const meta = {}\n")
        (folder / "workflows" / "wf_1.json").write_text(json.dumps({"runId": "wf_1", "result": {}}))
    return project / f"{session}.jsonl"


#: a Claude Code state folder's own files, named like transcripts (and a few not)
CLAUDE_OWN = {
    "settings.json": '{"hooks": {}}',
    "settings.local.json": '{"permissions": {}}',
    ".credentials.json": '{"claudeAiOauth": {"accessToken": "not-a-token"}}',
    "history.jsonl": '{"display": "fix the tests", "timestamp": 1, "project": "/home/user/work"}\n',
    f"todos/{SESSION}-agent-{SESSION}.json": "[]",
    "plugins/installed_plugins.json": '{"version": 2, "plugins": {}}',
    "plugins/store/cc-plugin-agents-md_builtin.json": '{"name": "agents-md"}',
    "stats-cache.json": '{"version": 1}',
    "statsig/statsig.cached.evaluations.abc": "{}",
    "shell-snapshots/snapshot-bash-1.sh": "export A=1\n",
    f"file-history/{SESSION}/3f2a@v1": "old contents\n",
    "backups/.claude.json.backup.1": "{}",
}


def claude_home(root: Path, name: str = ".claude") -> tuple[Path, Path]:
    state = root / name
    for relative, text in CLAUDE_OWN.items():
        (state / relative).parent.mkdir(parents=True, exist_ok=True)
        (state / relative).write_text(text)
    session = write_session(state / "projects" / "-home-user-work")
    return state, session


#: left out by name: CLAUDE_OWN's entries at the top of the folder (files and folders), and
#: the session folder's own (tool results, workflow scripts and records); its `subagents/`
#: is read with the session
CLAUDE_LEFT_OUT = 11 + 2


# -- a session and its agents' files: one session ---------------------------------------------


def test_a_session_and_its_agents_files_are_read_as_one_session(tmp_path):
    session_file = write_session(tmp_path / "project")
    (session,) = list(read(str(session_file)))
    found = calls(session)
    by_agent: dict[str | None, list[str]] = {}
    for call in found:
        by_agent.setdefault(call.agent, []).append(call.name)
    assert by_agent == {None: ["Agent"], AGENT: ["Bash"] * LOOPS, WORKFLOW_AGENT: ["Bash"]}
    # in the order they ran: the sub-agent's calls while the Agent call was running
    assert [c.name for c in found] == ["Bash"] * LOOPS + ["Agent", "Bash"]
    refs = [c.source_ref for c in found]
    assert refs[0] == f"subagents/agent-{AGENT}.jsonl line 2" and refs[LOOPS] == "line 2"  # where each asked


def test_the_looping_sub_agent_is_stopped_on_its_own_monitor(tmp_path):
    session_file = write_session(tmp_path / "project", workflow=False)
    (session,) = list(read(str(session_file)))
    result = replay(session, Config(profile="unattended"), str(session_file))
    assert result.actions == LOOPS + 1
    assert result.verdict is not None and result.verdict["signal"] in ("repeat", "same_error")
    assert result.verdict["source_ref"].startswith(f"subagents/agent-{AGENT}.jsonl line ")


def test_a_sub_agents_file_named_by_itself_is_read_alone(tmp_path):
    write_session(tmp_path / "project")
    agent_file = tmp_path / "project" / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    (record,) = records(scan(agent_file, "--json"))
    assert record["path"] == str(agent_file) and record["actions"] == LOOPS


# -- a host's state folder: its transcripts only -----------------------------------------------


def _by_path(result, root: Path) -> dict[str, dict]:
    return {os.path.relpath(r["path"], root): r for r in records(result)}


@pytest.mark.parametrize("name", [".claude", "claude-copy"])  # the folder, or a copy under another name
def test_scanning_claude_codes_folder_reads_its_sessions_and_leaves_its_own_files_out(tmp_path, name):
    state, session_file = claude_home(tmp_path, name)
    result = scan(state, "--json")
    found = _by_path(result, state)
    assert list(found) == [os.path.relpath(session_file, state)]
    assert found[os.path.relpath(session_file, state)]["actions"] == LOOPS + 2
    assert all(r["error"] is None for r in found.values())
    assert result.exit_code == 1  # the looping sub-agent would have been stopped; nothing unreadable
    said = f"Left out by name: {CLAUDE_LEFT_OUT} files and folders of Claude Code's state"
    assert said in result.stderr
    table = scan(state)
    assert f"Scanned 1 file: 1 session, {LOOPS + 2} actions." in table.stdout
    assert said in table.stdout and table.stderr == ""


def test_a_credentials_file_is_never_opened(tmp_path, monkeypatch):
    state, _ = claude_home(tmp_path)
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path) if not isinstance(path, int) else "")
        return real_os_open(path, *args, **kwargs)

    def any_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(os.fspath(path) if not isinstance(path, int) else "")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", any_open)
    monkeypatch.setattr(io, "open", any_open)
    result = scan(state, "--json", "--jobs", "1")
    assert result.exit_code == 1
    assert any(p.endswith(f"{SESSION}.jsonl") for p in opened)  # the watch works
    own = [p for p in opened if os.path.basename(p) in (".credentials.json", "settings.json", "history.jsonl")]
    assert own == []


def test_a_file_of_the_folder_named_by_the_user_is_read(tmp_path):
    state, _ = claude_home(tmp_path)
    (record,) = records(scan(state / "settings.json", "--json"))
    assert "unknown format" in record["error"]


def test_below_the_state_folder_its_rules_still_hold(tmp_path):
    state, session_file = claude_home(tmp_path)
    found = _by_path(scan(state / "projects", "--json"), state)
    assert list(found) == [os.path.relpath(session_file, state)]
    assert all(r["error"] is None for r in found.values())


def test_a_copied_project_folder_reads_each_session_once_with_its_agents(tmp_path):
    session_file = write_session(tmp_path / "copied")
    result = scan(tmp_path / "copied", "--json")
    found = _by_path(result, tmp_path / "copied")
    assert list(found) == [session_file.name]
    assert found[session_file.name]["actions"] == LOOPS + 2 and found[session_file.name]["error"] is None
    # its folder's tool-results/ and workflows/ are no sessions; its subagents/ is read with it
    assert "Left out by name: 2 files and folders of Claude Code's state" in result.stderr


def test_scanning_codexs_folder_reads_its_rollouts_only(tmp_path):
    state = tmp_path / ".codex"
    own = {
        "auth.json": '{"OPENAI_API_KEY": "not-a-key"}',
        "history.jsonl": '{"session_id": "s", "ts": 1, "text": "fix it"}\n',
        "version.json": '{"latest_version": "0.171.0"}',
        "config.toml": 'model = "x"\n',
        "log/codex-tui.log": "started\n",
        "hooks.json": '{"hooks": {}}',
    }
    for relative, text in own.items():
        (state / relative).parent.mkdir(parents=True, exist_ok=True)
        (state / relative).write_text(text)
    rollout = (FIXTURES / "codex" / "looping.jsonl").read_bytes()
    day = state / "sessions" / "2026" / "12" / "06"
    day.mkdir(parents=True)
    (day / "rollout-2026-12-06T03-00-14-r1.jsonl").write_bytes(rollout)
    (state / "archived_sessions").mkdir()
    (state / "archived_sessions" / "rollout-2026-11-01T10-00-00-r0.jsonl").write_bytes(rollout)
    result = scan(state, "--json")
    found = _by_path(result, state)
    assert sorted(found) == [
        "archived_sessions/rollout-2026-11-01T10-00-00-r0.jsonl",
        "sessions/2026/12/06/rollout-2026-12-06T03-00-14-r1.jsonl",
    ]
    assert all(r["format"] == "codex" and r["error"] is None for r in found.values())
    assert "Left out by name: 6 files and folders of Codex's state" in result.stderr


# -- no transcript found: one line, exit 2, every command ------------------------------------


def _one_line(result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


COMMANDS = {
    "scan": ["scan", "--no-progress"],
    "calibrate": ["calibrate", "--no-progress"],
    "report": ["report", "--no-progress", "-o", "{out}"],
    "evaluate": ["evaluate", "--no-progress", "--outcomes", "{outcomes}"],
}


def _invoke(command: str, tmp_path: Path, *paths: Path):
    outcomes = tmp_path / "outcomes.tsv"
    outcomes.write_text("path\tresolved\nsession.jsonl\tyes\n")
    args = [a.format(out=tmp_path / "page.html", outcomes=outcomes) for a in COMMANDS[command]]
    return CliRunner().invoke(cli, [*args, *map(str, paths)])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_empty_folder_is_one_line_exit_2(tmp_path, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("# notes\n")
    assert _one_line(_invoke(command, tmp_path, empty)) == f"loopwatch {command}: no transcript found in {empty}"
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_missing_path_is_one_line_exit_2(tmp_path, command):
    missing = tmp_path / "nothere"
    line = _one_line(_invoke(command, tmp_path, missing))
    assert line == f"loopwatch {command}: no session could be read: {missing}: no such file or folder"


def test_a_state_folder_with_no_session_says_what_it_skipped(tmp_path):
    state = tmp_path / ".claude"
    (state / "projects").mkdir(parents=True)
    (state / "settings.json").write_text("{}")
    (state / ".credentials.json").write_text("{}")
    line = _one_line(scan(state))
    said = "2 files and folders of Claude Code's state left out by name"
    assert line == f"loopwatch scan: no transcript found in {state} ({said})"


def test_a_missing_path_beside_a_readable_one_is_reported_not_counted_as_scanned(tmp_path):
    good = tmp_path / "loop.jsonl"
    good.write_text(jsonl(looping_events()))
    result = scan(good, tmp_path / "nothere")
    assert result.exit_code == 2
    assert "Scanned 1 file: 1 session" in result.stdout
    assert "nothere: no such file or folder" in result.stderr
