"""opencode's sessions, as its real releases wrote them (tests/fixtures/opencode/, written by
tests/test_realclient_opencode.py with LOOPWATCH_KEEP_FIXTURES, paths replaced by
`/fixture`): the database, `opencode export` JSON, `opencode run --format json` lines. And a
database opencode is writing, read without taking a lock from it, and a copy of one."""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import threading

import pytest
from click.testing import CliRunner
from readers_support import calls, events_of, fixture, head

from loopwatch._cli import cli
from loopwatch._core.events import Attempt
from loopwatch._readers import FORMATS, HEAD_SIZE, detect, read

LOOP_DB = fixture("opencode", "1.17.19-loop.opencode.db")
SUBAGENT_DB = fixture("opencode", "1.18.33-subagent.opencode.db")
HEALTHY_DB = fixture("opencode", "1.18.33-healthy.opencode.db")
LOOP_STREAM = fixture("opencode", "1.17.19-loop.run-format-json.jsonl")
HEALTHY_STREAM = fixture("opencode", "1.18.33-healthy.run-format-json.jsonl")
LOOP_EXPORT = fixture("opencode", "1.18.33-loop.export.json")
SESSIONS = [LOOP_DB, SUBAGENT_DB, HEALTHY_DB, LOOP_STREAM, HEALTHY_STREAM, LOOP_EXPORT]


@pytest.mark.parametrize("path", SESSIONS)
def test_each_is_opencodes_by_its_shape(path):
    assert detect(path, head(path)) == "opencode"


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "opencode"])
@pytest.mark.parametrize("path", SESSIONS)
def test_no_other_reader_claims_them(fmt, path):
    from loopwatch._readers import reader

    assert not reader(fmt).sniff(path, head(path))


def test_payloads_of_the_plugin_are_no_session():
    path = fixture("opencode", "payloads-1.18.33.jsonl")
    assert detect(path, head(path)) != "opencode"


@pytest.mark.parametrize("path", [LOOP_DB, LOOP_STREAM, LOOP_EXPORT])
def test_a_loop_is_three_failed_calls_and_the_refused_one_never_ran(path):
    session, events = events_of(path)
    ran = calls(events)
    assert [(c.name, c.input["command"], c.error) for c in ran] == [("bash", "ls /nonexistent-dir-xyz", True)] * 3
    # The third result as the call gave it: the nudge the plugin appended is not the result.
    assert len({c.result for c in ran}) == 1 and "loopwatch" not in ran[2].result
    assert session.session.startswith("ses_") and all(c.call_id for c in ran)
    assert [e.name for e in events if isinstance(e, Attempt)] == ["bash"]  # refused: an error part, loopwatch's text


def test_the_stream_says_the_refusal_as_it_ended():
    lines = [json.loads(line) for line in open(LOOP_STREAM)]
    errors = [line for line in lines if line["type"] == "error"]
    assert len(errors) == 1 and errors[0]["error"]["data"]["message"].startswith("loopwatch stopped the run")


def test_a_subagents_calls_are_its_own_agent_in_its_parents_session():
    session, events = events_of(SUBAGENT_DB)
    ran = calls(events)
    task = [c for c in ran if c.name == "task"]
    child = [c for c in ran if c.agent]
    assert len(child) == 3 and len({c.agent for c in child}) == 1 and child[0].agent != session.session
    assert all(c.agent is None for c in task) and len(task) == 1
    # The task ended after its sub-agent's calls: it comes after them.
    assert ran.index(task[0]) > ran.index(child[-1])
    assert [e.name for e in events if isinstance(e, Attempt)] == ["bash"] and next(
        e for e in events if isinstance(e, Attempt)
    ).agent == child[0].agent


def test_a_healthy_session_reads_whole():
    session, events = events_of(HEALTHY_DB)
    ran = calls(events)
    assert len(ran) == 13 and session.tokens and session.tokens > 0
    assert [c.name for c in ran[8:]] == ["write", "bash", "read", "edit", "bash"]
    assert [c.error for c in ran] == [False] * 9 + [True, False, False, False]  # the failing test: exit 1
    assert ran[8].changed == ("/fixture/work/test_calc.py",) and ran[11].changed == ran[8].changed
    assert ran[12].result == "ok\n"
    _, stream_events = events_of(HEALTHY_STREAM)
    assert [(c.name, c.error) for c in calls(stream_events)] == [(c.name, c.error) for c in ran]


def test_a_database_read_from_standard_input_is_read_in_memory():
    with open(SUBAGENT_DB, "rb") as fh:
        data = fh.read()
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=HEAD_SIZE)  # as a Ray worker hands it over
    (session,) = list(read("-", stream=stream))
    assert len(calls(list(session))) == 4
    result = CliRunner().invoke(cli, ["scan", "--json", "--no-progress", "-"], input=data)
    record = json.loads(result.stdout.splitlines()[0])
    assert record["format"] == "opencode" and record["actions"] == 4, result.stdout


def _live(folder) -> tuple[str, sqlite3.Connection]:
    """A database opencode's way (WAL), its writer's connection left open (the -wal and
    -shm files beside it, as while opencode runs)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "opencode.db")
    shutil.copy(LOOP_DB, path)
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # what it writes stays in the log
    writer.execute("UPDATE part SET time_updated = time_updated + 1")
    return path, writer


def test_a_database_being_written_is_read_and_never_holds_up_the_writer(tmp_path):
    path, writer = _live(tmp_path)
    try:
        assert os.path.exists(path + "-wal") and os.path.exists(path + "-shm")
        writer.execute("BEGIN IMMEDIATE")  # opencode in the middle of writing a part
        writer.execute("UPDATE part SET time_updated = time_updated + 1")
        sessions = read(path)
        session = next(sessions)  # read while the write is open; the reader is still open
        done = threading.Event()

        def write() -> None:
            writer.execute("COMMIT")
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("UPDATE part SET time_updated = time_updated + 1")
            writer.execute("COMMIT")
            done.set()

        thread = threading.Thread(target=write)
        thread.start()
        thread.join(10)
        assert done.is_set()  # the writer committed, twice, with the reader open
        assert len(calls(list(session))) == 3 and list(sessions) == []
        assert sorted(os.listdir(tmp_path)) == ["opencode.db", "opencode.db-shm", "opencode.db-wal"]
    finally:
        writer.close()


def test_a_copy_of_a_database_in_use_reads_and_nothing_is_made_beside_it(tmp_path):
    path, writer = _live(tmp_path / "live")
    try:
        copy = tmp_path / "copy" / "opencode.db"
        copy.parent.mkdir()
        shutil.copy(path, copy)  # the file alone: its write-ahead log is not copied
        sessions = read(str(copy))
        session = next(sessions)  # the database is open now
        assert sorted(os.listdir(copy.parent)) == ["opencode.db"]
        assert len(calls(list(session))) == 3 and list(sessions) == []
        assert sorted(os.listdir(copy.parent)) == ["opencode.db"]
    finally:
        writer.close()


def test_a_database_of_another_program_is_not_opencodes(tmp_path):
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE session (id TEXT, data TEXT)")
    con.commit()
    con.close()
    assert detect(str(other), head(str(other))) is None
    result = CliRunner().invoke(cli, ["scan", "--json", "--no-progress", str(other)])
    assert "unknown format" in result.stdout


def test_opencodes_folders_scan_without_errors(tmp_path):
    """Its data, state, config and cache folders: the database is read; settings,
    credentials, logs, the prompt history, snapshots and caches are left out by name."""
    data = tmp_path / ".local" / "share" / "opencode"
    state = tmp_path / ".local" / "state" / "opencode"
    config = tmp_path / ".config" / "opencode"
    cache = tmp_path / ".cache" / "opencode"
    files = {
        data / "opencode.db": None,
        data / "auth.json": '{"scripted": {"type": "api", "key": "not-a-key"}}',
        data / "log" / "2026-12-06T040000.log": "INFO service=default\n",
        data / "tool-output" / "tool_01JZ8K3QWERTY1": "x" * 100,
        data / "storage" / "session" / "global" / "ses_1.json": '{"id": "ses_1"}',
        data / "snapshot" / "abc" / "def" / "HEAD": "ref: refs/heads/main\n",
        state / "prompt-history.jsonl": '{"input": "fix the test", "parts": []}\n',
        state / "model.json": '{"recent": []}',
        state / "kv.json": "{}",
        config / "opencode.json": '{"model": "scripted/m"}',
        config / "plugin" / "loopwatch.js": "// loopwatch's live guard for opencode.\n",
        config / "package.json": "{}",
        cache / "models.json": "{}",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            shutil.copy(HEALTHY_DB, path)
        else:
            path.write_text(text)
    folders = [str(data), str(state), str(config), str(cache)]
    result = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", *folders])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(os.path.basename(r["path"]), r["actions"], r["error"]) for r in rows] == [("opencode.db", 13, None)]
    said = CliRunner().invoke(cli, ["scan", "--no-progress", *folders])
    # data: auth.json, log/, tool-output/, storage/, snapshot/; state: its 3 files; config:
    # opencode.json, plugin/, package.json; cache: models.json.
    assert "Left out by name: 12 files and folders of opencode's state" in said.stdout, said.stdout
