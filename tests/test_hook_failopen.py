"""A hook never wedges the agent: every failure allows (or, when configured, denies
a call it could not check), with one line in hook.log."""

from __future__ import annotations

import json
import sqlite3

import pytest

from hook_support import Agent, bash, state_actions, user_config

pytestmark = pytest.mark.slow


@pytest.fixture
def agent(tmp_path):
    return Agent(tmp_path / "state", tmp_path)


def log_lines(agent) -> list[str]:
    path = agent.state / "hook.log"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"{not json",
        b"[1, 2, 3]",
        json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash"}),  # no session_id
        json.dumps({"session_id": "s", "hook_event_name": "PreToolUse", "tool_input": {}}),  # no tool_name
        json.dumps({"session_id": 7, "hook_event_name": "PostToolUse"}),
        json.dumps({"session_id": "s", "hook_event_name": "PostToolBatch", "tool_calls": "nope"}),
    ],
)
def test_malformed_payload_is_allowed_and_logged(agent, payload):
    result = agent.send(payload)
    assert (result.code, result.out, result.err) == (0, None, "")
    lines = log_lines(agent)
    assert len(lines) == 1 and "PayloadError" in lines[0] and lines[0].endswith("allowed")


def test_unknown_event_is_allowed_and_logged(agent):
    result = agent.send({**agent.base("Notification"), "message": "Claude needs your permission"})
    assert (result.code, result.out) == (0, None)
    assert "unknown event" in log_lines(agent)[0]


def test_corrupt_database_is_moved_aside_and_the_call_still_counted(agent):
    agent.state.mkdir(parents=True)
    (agent.state / "state.db").write_bytes(b"this is not an sqlite database, it is a shopping list\n" * 100)
    result = agent.pre("Bash", bash("ls"))
    assert (result.code, result.out) == (0, None)
    assert any("moved aside" in line for line in log_lines(agent))
    assert len(list(agent.state.glob("state.db.broken-*"))) == 1
    # The call itself went to the fresh database, and the next ones too.
    agent.run("Bash", bash("ls"), response={"stdout": "a.py", "stderr": "", "interrupted": False})
    assert state_actions(agent.state, agent.session) == 1


def test_damaged_session_state_starts_afresh(agent):
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    db = sqlite3.connect(agent.state / "state.db")
    db.execute("UPDATE sessions SET state = ?", (b"\x80\x05garbage",))
    db.commit()
    db.close()
    _, after = agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    assert after.code == 0
    assert state_actions(agent.state, agent.session) == 1
    assert any("could not be loaded" in line for line in log_lines(agent))


def test_locked_database_fails_open(agent):
    user_config(agent, "[hook]\nbusy_timeout = 0.2\n")
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    holder = sqlite3.connect(agent.state / "state.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer that never lets go
    try:
        result = agent.pre("Bash", bash("ls"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (result.code, result.out) == (0, None)
    assert any("OperationalError" in line and "locked" in line for line in log_lines(agent))


def test_fail_closed_denies_a_call_it_could_not_check(agent):
    user_config(agent, '[hook]\nfail = "closed"\nbusy_timeout = 0.2\n')
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    holder = sqlite3.connect(agent.state / "state.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        pre = agent.pre("Bash", bash("ls"))
        post = agent.post("Bash", bash("ls"), {"stdout": "a.py"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert pre.denied and "fail closed" in pre.denied
    assert (post.code, post.out) == (0, None)  # only PreToolUse can be refused


def test_bad_configuration_fails_open(agent):
    user_config(agent, '[hook]\nfail = "sometimes"\n')
    result = agent.pre("Bash", bash("ls"))
    assert (result.code, result.out) == (0, None)
    assert "hook.fail" in log_lines(agent)[0]


def test_oversize_payload_is_identified_not_read(agent):
    huge = "x" * (9 * 1024 * 1024)
    result = agent.post("Bash", bash("cat big.log"), {"stdout": huge, "stderr": ""})
    assert (result.code, result.out) == (0, None)
    assert state_actions(agent.state, agent.session) == 1
    assert any("identified, not read" in line for line in log_lines(agent))


def test_databases_moved_aside_in_the_same_second_keep_each_its_own_name(tmp_path):
    # Issue 9: the name was `state.db.broken-<second>`, so a second recovery within the
    # same second renamed over the first broken file. The clock is pinned to one
    # second for every call here, the worst case.
    from hook_support import SRC

    pinned = tmp_path / "pinned"
    pinned.mkdir()
    (pinned / "sitecustomize.py").write_text("import time\n_now = 1_800_000_000.25\ntime.time = lambda: _now\n")
    agent = Agent(tmp_path / "state", tmp_path, env={"PYTHONPATH": f"{pinned}:{SRC}"})
    agent.state.mkdir(parents=True)
    for round_ in range(3):
        (agent.state / "state.db").write_bytes(f"broken database number {round_}\n".encode() * 100)
        for suffix in ("-wal", "-shm"):
            (agent.state / f"state.db{suffix}").unlink(missing_ok=True)
        assert agent.pre("Bash", bash("ls")).code == 0
    kept = sorted(
        path.read_bytes()[:25]
        for path in agent.state.glob("state.db.broken-*")
        if not path.name.endswith(("-wal", "-shm"))
    )
    assert kept == [f"broken database number {i}\n".encode()[:25] for i in range(3)]
