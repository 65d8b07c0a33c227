"""The saved state: complete enough to continue a session, and nothing but digests,
names, counts and times."""

from __future__ import annotations

import os
import pickle
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Attempt, Monitor, ToolCall, UserMessage
from loopwatch._hook.codec import StateError
from loopwatch._hook.payload import trim
from loopwatch._hook.settings import _headless_argv, detect_profile
from loopwatch._hook.state import SessionState, Store, dumps, loads

SECRET = "hunter2-SECRET-TOKEN-9f3a"


def fed_state(n: int = 6) -> SessionState:
    state = SessionState(Monitor(profile="attended"), "claude-code", "attended", "test")
    for i in range(n):
        state.monitor.check(Attempt("Bash", {"command": f"deploy --token {SECRET}"}, at=float(i)))
        state.monitor.observe(
            ToolCall(
                "Bash",
                {"command": f"deploy --token {SECRET}"},
                f"error: token {SECRET} rejected",
                error=True,
                at=float(i),
            )
        )
    return state


def test_a_saved_state_continues_where_it_stopped():
    state = fed_state(3)
    assert state.monitor.interventions  # the third copy brought a nudge
    restored = loads(dumps(state))
    verdict = restored.monitor.check(Attempt("Bash", {"command": f"deploy --token {SECRET}"}, at=10.0))
    assert verdict.action.value == "block"
    assert restored.monitor.actions == 3


def test_the_saved_state_keeps_no_input_result_or_message():
    blob = dumps(fed_state(6))
    assert SECRET.encode() not in blob and b"deploy" not in blob
    assert fed_state(6).monitor.interventions  # there was a nudge to keep, without its message


def test_a_pickle_is_refused_unread(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with pytest.raises(StateError):
        loads(pickle.dumps(Evil()))
    assert not marker.exists()


def test_new_sessions_prune_old_and_excess_ones(tmp_path):
    store = Store(tmp_path, keep_days=1.0, keep_sessions=3)
    make = lambda: SessionState(Monitor(profile="attended"), "codex", "attended", "test")
    feed = lambda state: []
    for i in range(5):
        store.update(f"s{i}", "", make, feed)
    store.db.execute("UPDATE sessions SET updated = ? WHERE session = 's4'", (time.time() - 2 * 86400,))
    store.update("s5", "", make, feed)
    kept = sorted(row["session"] for row in store.sessions(limit=100))
    store.close()
    assert kept == ["s2", "s3", "s5"]  # s4 idle too long; s0, s1 beyond the count


def test_a_user_message_resets_a_restored_monitor():
    state = loads(dumps(fed_state(3)))
    state.monitor.observe(UserMessage(at=20.0))
    assert (
        state.monitor.check(Attempt("Bash", {"command": f"deploy --token {SECRET}"}, at=21.0)).action.value == "allow"
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10000),
    lambda inner: st.lists(inner, max_size=300) | st.dictionaries(st.text(max_size=5), inner, max_size=300),
    max_leaves=300,
)


def shapes(value, depth=0):
    yield value, depth
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from shapes(child, depth + 1)


@settings(max_examples=30, deadline=None)
@given(json_values)
def test_trimmed_values_are_bounded(value):
    for item, depth in shapes(trim(value)):
        assert depth <= 16
        if isinstance(item, str):
            assert len(item) <= 2 * 4096 + 40
        elif isinstance(item, (dict, list)):
            assert len(item) <= 257


def test_a_huge_string_keeps_its_head_and_tail():
    body = "HEAD" + "x" * 100_000 + "TAIL"
    kept = trim({"originalFile": body})["originalFile"]
    assert kept.startswith("HEAD") and kept.endswith("TAIL") and len(kept) < 8300


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "-p", "fix the tests"], "claude -p"),
        (["/home/u/.local/bin/claude", "--print", "--output-format", "json"], "claude -p"),
        (["/home/u/.local/bin/claude", "--resume"], ""),
        (["codex", "exec", "--full-auto", "fix it"], "codex exec"),
        (["/usr/local/bin/codex", "-m", "gpt-5-codex", "exec", "fix it"], "codex exec"),
        (["codex", "fix the build"], ""),
        (["python", "-m", "pytest", "-p", "no:cacheprovider"], None),
    ],
)
def test_headless_runs_are_recognised_from_the_command_line(argv, expected):
    assert _headless_argv(argv) == expected


def test_profile_precedence():
    env = {"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}
    assert detect_profile("claude-code", {}, env)[0] == "unattended"
    assert detect_profile("claude-code", {"profile": "attended"}, env) == ("attended", "configuration")
    assert (
        detect_profile("claude-code", {"profile": "attended"}, {**env, "LOOPWATCH_PROFILE": "unattended"})[0]
        == "unattended"
    )


def test_a_database_moved_aside_while_a_call_opens_it_loses_nothing(tmp_path, monkeypatch):
    # Another call's recovery renames the broken state.db between this call's opening
    # it and its next look at the path (a race seen once in 64 parallel calls under
    # load: the call failed open and its count was lost). The call must go on, and
    # commit to the database then at the path.
    import loopwatch._hook.state as state_module

    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    (folder / "state.db").write_bytes(b"this is not an sqlite database\n" * 10)
    real = state_module.private_file

    def opened_then_moved(path: str, append: bool = True) -> int:
        fd = real(path, append)
        if path.endswith("state.db") and os.path.exists(path):
            os.rename(path, path + ".broken-by-another-call")
        return fd

    monkeypatch.setattr(state_module, "private_file", opened_then_moved)
    store = Store(folder)
    monkeypatch.setattr(state_module, "private_file", real)
    try:
        store.update("s1", "main", lambda: fed_state(0), lambda st: [])
    finally:
        store.close()
    check = Store(folder, write=False)
    try:
        assert [row["session"] for row in check.sessions()] == ["s1"]
    finally:
        check.close()


def _decision_feed(state: SessionState) -> list:
    from loopwatch import Action, Verdict
    from loopwatch._core.finding import Finding
    from loopwatch._core.messages import SameResult

    finding = Finding(
        signal="repeat", severity=1.0, key=1, message=SameResult(tool="Bash", count=3, span=12.0), repeats=3
    )
    return [
        (
            "PostToolUse",
            Verdict(Action.NUDGE, signal="repeat", description=finding.description, finding=finding),
            "Bash",
        )
    ]


def test_a_decision_keeps_its_message_kind_and_arguments(tmp_path):
    store = Store(tmp_path / "state")
    try:
        store.update("s1", "main", lambda: fed_state(0), _decision_feed)
        (row,) = list(store.decisions("s1", "main"))
    finally:
        store.close()
    assert row["message"] == "SameResult" and row["args"] == {"tool": "Bash", "count": 3, "span": 12.0}
    assert row["action"] == "nudge" and row["signal"] == "repeat"


def test_a_version_2_decisions_table_gains_the_message_columns_and_keeps_its_rows(tmp_path):
    import sqlite3

    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    old = sqlite3.connect(folder / "state.db")
    old.execute(
        "CREATE TABLE decisions (session TEXT NOT NULL, agent TEXT NOT NULL, at REAL NOT NULL, "
        "event TEXT NOT NULL, action TEXT NOT NULL, signal TEXT, tool TEXT, description TEXT)"
    )
    old.execute(
        "INSERT INTO decisions VALUES ('s1', 'main', ?, 'PostToolUse', 'warn', 'echo', 'Bash', 'old')",
        (time.time() - 60,),
    )
    old.execute("PRAGMA user_version = 2")
    old.commit()
    old.close()
    look = Store(folder, write=False)
    try:
        assert [(r["description"], r["message"]) for r in look.decisions("s1", "main")] == [("old", None)]
    finally:
        look.close()
    store = Store(folder)
    try:
        store.update("s1", "main", lambda: fed_state(0), _decision_feed)
        rows = list(store.decisions("s1", "main"))
    finally:
        store.close()
    assert [(r["description"], r["message"]) for r in rows] == [("old", None), (rows[1]["description"], "SameResult")]
