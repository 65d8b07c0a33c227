"""The Gemini CLI reader, on files the real Gemini CLI wrote in this repository's real-client
runs (tests/fixtures/gemini-cli/: session files and `-o stream-json` output, paths replaced
by `/fixture`), and `scan` of a Gemini CLI state folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopwatch._core.events import Attempt, ModelText, ToolCall, Turn, UserMessage
from loopwatch._readers import detect, read

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gemini-cli"
SRC = str(Path(__file__).resolve().parent.parent / "src")


def events(path: Path) -> tuple[object, list]:
    (session,) = read(str(path))
    return session, list(session.events)


def calls(found: list) -> list[ToolCall]:
    return [e for e in found if isinstance(e, ToolCall)]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*")))
def test_every_fixture_is_detected_as_gemini_cli(name):
    path = FIXTURES / name
    assert detect(str(path), path.read_bytes()[: 64 * 1024]) == "gemini-cli"


def test_a_looping_session_file():
    """Three failing `ls` ran (Gemini CLI calls them successes; the exit code says
    otherwise), the fourth was loopwatch's stop: the Attempt it was."""
    session, found = events(FIXTURES / "loop.session.jsonl")
    ran = calls(found)
    assert len(ran) == 3 and all(c.error and c.name == "run_shell_command" for c in ran)
    assert len({c.result for c in ran}) == 1 and "Exit Code: 2" in ran[0].result
    assert [type(e).__name__ for e in found if isinstance(e, Attempt)] == ["Attempt"]
    assert sum(isinstance(e, UserMessage) for e in found) == 1  # the prompt, not the session context
    assert sum(isinstance(e, Turn) for e in found) == 4 and session.tokens and session.tokens > 0
    assert all(c.at is not None for c in ran)


def test_a_healthy_session_file():
    _, found = events(FIXTURES / "healthy.session.jsonl")
    ran = calls(found)
    assert len(ran) == 13
    assert [c.error for c in ran] == [False] * 9 + [True] + [False] * 3
    assert [c.changed for c in ran if c.changed] == [
        ("/fixture/work/test_calc.py",),
        ("/fixture/work/test_calc.py",),
    ]  # the write and the fix
    assert any(isinstance(e, ModelText) and e.text == "Writing a test." for e in found)


def test_a_subagent_and_its_parent_are_two_sessions():
    parent, found = events(FIXTURES / "subagent.session.jsonl")
    (spawn,) = calls(found)
    assert spawn.name == "invoke_agent" and spawn.error  # it ran; loopwatch stopped the run after it
    child, inner = events(FIXTURES / "subagent.child.jsonl")
    assert child.meta["kind"] == "subagent" and child.session != parent.session
    assert [c.name for c in calls(inner)] == ["run_shell_command"] * 3 + ["complete_task"]
    assert sum(isinstance(e, Attempt) for e in inner) == 9  # refused once stopped; complete_task let through


def test_stream_json():
    session, found = events(FIXTURES / "loop.stream-json.jsonl")
    assert len(calls(found)) == 3 and sum(isinstance(e, Attempt) for e in found) == 1
    assert session.tokens and session.tokens > 0
    _, healthy = events(FIXTURES / "healthy.stream-json.jsonl")
    assert len(calls(healthy)) == 13
    assert [c.name for c in calls(healthy)][8:12] == ["write_file", "run_shell_command", "read_file", "replace"]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_last_record_of_a_message_wins_and_a_rewind_drops(tmp_path):
    records = _records(FIXTURES / "healthy.session.jsonl")
    ids = [r["id"] for r in records if r.get("type") == "gemini"]
    path = tmp_path / "session.jsonl"
    # Rewound to the fifth model message: it and everything after are gone.
    path.write_text("".join(json.dumps(r) + "\n" for r in [*records, {"$rewindTo": ids[8]}]))
    _, found = events(path)
    assert len(calls(found)) == 4
    assert len(calls(events(FIXTURES / "healthy.session.jsonl")[1])) == 13  # each message once, though written twice


def test_the_whole_json_form(tmp_path):
    """The same conversation as one JSON object, messages under `messages` (what Gemini
    CLI wrote before its JSON Lines files), built from a real session's records."""
    records = _records(FIXTURES / "healthy.session.jsonl")
    head, messages = records[0], {}
    for record in records[1:]:
        if "id" in record:
            messages[record["id"]] = record
        elif isinstance(record.get("$set", {}).get("messages"), list):
            messages = {m["id"]: m for m in record["$set"]["messages"]}
    path = tmp_path / "session-2026-01-01T00-00-abcdef12.json"
    path.write_text(json.dumps({**head, "messages": list(messages.values())}, indent=2))
    assert detect(str(path), path.read_bytes()[:65536]) == "gemini-cli"
    _, found = events(path)
    assert len(calls(found)) == 13


def test_other_formats_are_not_taken_for_gemini_cli():
    claude = Path(__file__).resolve().parent / "fixtures" / "claude-code" / "stream.jsonl"
    codex = Path(__file__).resolve().parent / "fixtures" / "codex" / "exec.jsonl"
    for path in (claude, codex):
        assert detect(str(path), path.read_bytes()[:65536]) != "gemini-cli"


def test_a_gemini_cli_state_folder_scans_without_errors(tmp_path):
    """`~/.gemini` as it is after a few runs: its transcripts are read, its settings,
    trust records, logs, caches and extensions left out by name (never opened: they are
    made unreadable here) and counted."""
    gemini = tmp_path / ".gemini"
    chats = gemini / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(FIXTURES / "loop.session.jsonl", chats / "session-2026-12-06T03-39-1a2b3c4d.jsonl")
    (chats / "1a2b3c4d").mkdir()
    shutil.copy(FIXTURES / "subagent.child.jsonl", chats / "1a2b3c4d" / "5c0ca0e4.jsonl")
    side = {
        "settings.json": {"security": {"auth": {"selectedType": "gemini-api-key"}}},
        "settings.json.loopwatch.bak": {},
        "trustedFolders.json": {"/work": "TRUST_FOLDER"},
        "trusted_hooks.json": {"/work": [":loopwatch hook gemini-cli"]},
        "projects.json": {"projects": {"/work": "work"}},
        "state.json": {"tipsShown": 1},
        "google_accounts.json": {"active": None},
        "oauth_creds.json": {"access_token": "x"},
        "extensions/guard/gemini-extension.json": {"name": "guard", "version": "1.0.0"},
        "extensions/guard/hooks/hooks.json": {"hooks": {}},
        "tmp/work/logs.json": [{"sessionId": "s", "messageId": 0, "type": "user", "message": "hi"}],
        "tmp/work/checkpoints/a.json": {"history": [], "clientHistory": [], "commitHash": "abc"},
        "history/work/x.json": {},
    }
    for name, content in side.items():
        path = gemini / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))
        path.chmod(0)  # never opened
    (gemini / "installation_id").write_text("00000000-0000-0000-0000-000000000000")
    (gemini / "tmp" / "work" / ".project_root").write_text("/work")
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", str(gemini)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": SRC, "HOME": str(tmp_path), "COLUMNS": "200"},
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # a loop found; nothing unreadable (2)
    assert "Scanned 2 files: 2 sessions, 6 actions." in done.stdout, done.stdout
    # 11 entries of ~/.gemini (9 files, extensions/ and history/) and 3 of tmp/work/ (logs.json,
    # checkpoints/, .project_root).
    assert "Left out by name: 14 files and folders of Gemini CLI's state" in done.stdout, done.stdout
    assert "error" not in done.stderr.lower(), done.stderr
