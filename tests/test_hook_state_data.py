"""The hook's state is plain data: it round-trips exactly, names no code, and a
foreign, older or crafted row costs at most that session's state."""

from __future__ import annotations

import json
import os
import pickle
import random
import sqlite3
import subprocess
import sys
from collections import deque

import pytest
from hook_support import SRC, Agent, bash, state_actions
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import (
    Attempt,
    Correction,
    ModelText,
    Monitor,
    Output,
    Retry,
    ToolCall,
    Turn,
    UserMessage,
)
from loopwatch._hook import codec
from loopwatch._hook.codec import StateError
from loopwatch._hook.state import SessionState, dumps, loads

pytestmark = pytest.mark.slow

# -- a vocabulary small enough that loops of every kind happen --------------------------------

COMMANDS = ["pytest -x", "ls src", "cat a.py", "make", "git status"]
RESULTS = [
    "ok",
    "E   AssertionError: assert 1 == 2",
    "bash: javac: command not found",
    "3 passed in 0.4s",
    "Downloading 40% 12 MB",
    "",
]
TEXTS = [
    "I apologize, let me try again. ",
    "Let me run the tests. ",
    "```\ncode\n```\n",
    "- item\n",
    "Sorry, my mistake.\n",
    "The build failed because of the import. ",
]
LINES = [b"Compiling module\n", b"error: linker failed\r\n", b"40% [=====>   ]\r", b"retrying request\n", b"partial"]


def event_strategy():
    at = st.floats(0, 5)
    return st.one_of(
        st.builds(
            lambda n, c, r, e, w, t: ("call", n, c, r, e, w, t),
            st.sampled_from(["Bash", "Edit", "Read"]),
            st.sampled_from(COMMANDS),
            st.sampled_from(RESULTS),
            st.booleans(),
            st.booleans(),
            at,
        ),
        st.builds(
            lambda n, c, t: ("attempt", n, c, t), st.sampled_from(["Bash", "Edit"]), st.sampled_from(COMMANDS), at
        ),
        st.builds(lambda x, c, t: ("text", x, c, t), st.sampled_from(TEXTS), st.booleans(), at),
        st.builds(lambda x, t: ("output", x, t), st.sampled_from(LINES), at),
        st.builds(lambda t: ("retry", t), at),
        st.builds(lambda t: ("turn", t), at),
        st.builds(lambda x, t: ("correction", x, t), st.sampled_from(["no, not that file", "stop editing a.py"]), at),
        st.builds(lambda t: ("user", t), at),
    )


def make_event(spec, clock):
    kind, *rest = spec
    at = clock + rest[-1]
    if kind == "call":
        name, command, result, error, wrote, _ = rest
        return ToolCall(name, {"command": command}, result, error=error, changed=("a.py",) if wrote else (), at=at)
    if kind == "attempt":
        return Attempt(rest[0], {"command": rest[1]}, at=at)
    if kind == "text":
        return ModelText(rest[0], chunk=rest[1], at=at)
    if kind == "output":
        return Output(rest[0], at=at)
    if kind == "retry":
        return Retry(at=at)
    if kind == "turn":
        return Turn(at=at)
    if kind == "correction":
        return Correction(rest[0], at=at)
    return UserMessage(at=at)


def fresh_state(profile: str = "unattended") -> SessionState:
    return SessionState(Monitor(profile=profile), "claude-code", profile, "test")


def verdicts(specs, state: SessionState, every: bool, clock: float = 0.0) -> list[tuple]:
    """Feed the events; with `every`, save and load the state between events."""
    out = []
    for spec in specs:
        clock += 1.0
        if every:
            state = loads(dumps(state))
        v = state.monitor.observe(make_event(spec, clock))
        out.append((v.action.value, v.signal, v.description, v.message))
    out.append(("record", json.dumps(state.monitor.record(), sort_keys=True, default=str)))
    return out


# -- round trips ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(event_strategy(), min_size=1, max_size=60), st.sampled_from(["unattended", "attended"]))
def test_a_state_saved_and_loaded_at_every_event_decides_like_one_kept_in_memory(specs, profile):
    assert verdicts(specs, fresh_state(profile), every=True) == verdicts(specs, fresh_state(profile), every=False)


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
from test_hook_state_data import verdicts
from loopwatch._hook.state import loads
jobs = json.load(sys.stdin)
out = [verdicts([tuple(s) for s in job["rest"]], loads(bytes.fromhex(job["state"])), every=True, clock=job["clock"])
       for job in jobs]
print(json.dumps(out))
"""


def test_a_state_carried_to_another_process_decides_like_one_kept_in_memory():
    """Half a session in this process, the rest in another one with another hash
    seed (set and dict orders differ there), saving and loading at every event."""
    rng = random.Random(9)
    jobs, expected = [], []
    for _ in range(40):
        specs = _sample(rng)
        cut = rng.randrange(1, len(specs))
        state = fresh_state(rng.choice(["unattended", "attended"]))
        profile = state.profile
        verdicts(specs[:cut], state, every=False)
        jobs.append({"state": dumps(state).hex(), "rest": specs[cut:], "clock": float(cut)})
        whole = verdicts(specs, fresh_state(profile), every=False)
        expected.append(whole[cut:])
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    here = os.path.dirname(__file__)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, SRC, here],
        input=json.dumps(jobs).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    got = json.loads(proc.stdout)
    assert [[list(v) for v in job] for job in expected] == got
    assert len(got) == 40


def _sample(rng: random.Random) -> list[tuple]:
    out: list[tuple] = []
    for _ in range(rng.randrange(2, 80)):
        kind = rng.choice(["call"] * 5 + ["attempt"] * 2 + ["text", "output", "retry", "turn", "correction", "user"])
        at = rng.random() * 5
        if kind == "call":
            out.append(
                (
                    "call",
                    rng.choice(["Bash", "Edit", "Read"]),
                    rng.choice(COMMANDS[:3]),
                    rng.choice(RESULTS),
                    rng.random() < 0.5,
                    rng.random() < 0.1,
                    at,
                )
            )
        elif kind == "attempt":
            out.append(("attempt", "Bash", rng.choice(COMMANDS[:3]), at))
        elif kind == "text":
            out.append(("text", rng.choice(TEXTS), rng.random() < 0.5, at))
        elif kind == "output":
            out.append(("output", rng.choice(LINES).decode(), at))
        elif kind == "correction":
            out.append(("correction", "no, not that file", at))
        else:
            out.append((kind, at))
    return out


def test_every_class_a_busy_monitor_holds_is_registered():
    """Feeds every kind of event to every signal; a class missing from the registry
    makes `dumps` fail here, with its name."""
    state = fresh_state()
    rng = random.Random(1)
    kinds: set[type] = set()

    def walk(value, seen):
        if id(value) in seen:
            return
        seen.add(id(value))
        kinds.add(type(value))
        if isinstance(value, dict):
            for k, v in value.items():
                walk(k, seen)
                walk(v, seen)
        elif isinstance(value, (list, tuple, set, frozenset, deque)):
            for v in value:
                walk(v, seen)
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            walk(vars(value), seen)

    clock = 0.0
    for i in range(400):
        clock += 1.0
        state.monitor.observe(make_event(_sample(rng)[0], clock))
        dumps(state)
        if i % 10 == 0:
            walk(state, set())
    for _ in range(5):  # and a loop it acts on, so verdicts are held too
        clock += 1.0
        state.monitor.observe(make_event(("call", "Bash", "pytest -x", "E   boom", True, False, 0.0), clock))
        dumps(state)
    walk(state, set())
    names = {k.__name__ for k in kinds}
    assert {"Monitor", "Policy", "Step", "Finding", "Verdict", "Action", "TailCycles"} <= names  # it was busy


def test_an_unregistered_class_is_refused_not_pickled():
    class Stranger:
        pass

    state = fresh_state()
    state.monitor._signals[0].extra = Stranger()
    with pytest.raises(StateError, match="Stranger"):
        dumps(state)


def test_the_saved_state_is_json_with_no_input_result_or_message():
    state = fresh_state("attended")
    for i in range(6):
        state.monitor.check(Attempt("Bash", {"command": "deploy --token hunter2"}, at=float(i)))
        state.monitor.observe(
            ToolCall("Bash", {"command": "deploy --token hunter2"}, "token hunter2 rejected", error=True, at=float(i))
        )
    blob = dumps(state)
    envelope = json.loads(blob)
    assert envelope["loopwatch_state"] == codec.FORMAT and envelope["layout"] == codec.layout()
    assert b"hunter2" not in blob and b"deploy" not in blob and b"rejected" not in blob
    assert blob.isascii()


# -- crafted rows -----------------------------------------------------------------------------


def envelope(body) -> bytes:
    return json.dumps({"loopwatch_state": codec.FORMAT, "layout": codec.layout(), "state": body}).encode()


class _Reduce:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def crafted_rows(marker: str) -> list[bytes]:
    shell = f"touch {marker}"
    rows = [
        pickle.dumps(_Reduce(os.system, (shell,))),
        # The old exploit: a loopwatch module name, and a dotted name pickle follows.
        b"\x80\x04\x8c\x10loopwatch.config\x8c\tos.system\x93\x8c" + bytes([len(shell)]) + shell.encode() + b"\x85R.",
        b"cos\nsystem\n(S'" + shell.encode() + b"'\ntR.",
    ]
    for tag in (
        "config:os.system",
        "loopwatch._core.config:os.system",
        "os:system",
        "posix:system",
        "builtins:eval",
        "config:os.getcwd",
        "hook.state:os.system",
        "monitor:Monitor.__init__",
        "subprocess:Popen",
        "config:Config._make",
        "signals:SIGNALS",
        "hook.codec:_Registry",
    ):
        rows.append(envelope(["o", tag, "x", shell]))
        rows.append(envelope(["n", tag, shell]))
        rows.append(envelope(["e", tag, shell]))
    monitor_tag = codec._tag(Monitor)
    state_tag = codec._tag(SessionState)
    rows += [
        envelope(["o", state_tag, "__class__", ["o", monitor_tag], "monitor", ["o", monitor_tag]]),
        envelope(["o", state_tag, "__reduce__", shell, "__dict__", ["d"], "monitor", ["r", 99]]),
        envelope(["o", state_tag, "monitor", ["o", monitor_tag, "config", shell, "_signals", ["l", shell]]]),
        envelope(["o", state_tag, "monitor", ["o", monitor_tag], "host", "claude-code"]),  # loads, then fails when fed
        envelope(["o", state_tag] + ["l"] * 3),
        envelope(["q", -1]),
        envelope(["s", ["l"]]),
        envelope(["b", "zz"]),
        envelope(["f", "__import__('os').system('x')"]),
        envelope(None)[: -len(b"null}")]
        + b'["l", ' * 100000
        + b'"x"'
        + b"]" * 100000
        + b"}",  # too deep for any parser
        json.dumps({"loopwatch_state": codec.FORMAT, "layout": "0" * 16, "state": None}).encode(),  # another version
        json.dumps({"loopwatch_state": codec.FORMAT + 1, "layout": codec.layout(), "state": None}).encode(),  # newer
        b'{"loopwatch_state": 1, "layout": ' + b"1" * 100000 + b"}",
        b"",
        b"\xff\xfe not utf-8",
        b"null",
    ]
    return rows


def test_no_crafted_row_runs_anything_when_loaded(tmp_path):
    """Loading runs no code: no command, no import, no compile, no pickle."""
    marker = tmp_path / "pwned"
    events: list[str] = []
    watching = [False]

    def audit(name, args):
        if watching[0] and name.split(".")[0] in (
            "os",
            "subprocess",
            "exec",
            "compile",
            "import",
            "pickle",
            "builtins",
            "ctypes",
            "sys",
        ):
            events.append(name)

    sys.addaudithook(audit)
    for row in crafted_rows(str(marker)):
        watching[0] = True
        try:
            loads(row)
        except StateError:
            pass
        finally:
            watching[0] = False
    assert not marker.exists()
    assert events == []


def test_a_crafted_row_in_the_database_runs_nothing_and_costs_only_that_session(tmp_path):
    marker = tmp_path / "pwned"
    agent = Agent(tmp_path / "state", tmp_path, session="victim")
    rows = crafted_rows(str(marker))
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    for row in rows:
        db = sqlite3.connect(agent.state / "state.db")
        db.execute("UPDATE sessions SET state = ?, actions = 99", (row,))
        db.commit()
        db.close()
        before, after = agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
        assert (before.code, after.code) == (0, 0)
        assert state_actions(agent.state, "victim") == 1  # started afresh, this call counted
    assert not marker.exists()
    log = (agent.state / "hook.log").read_text().splitlines()
    assert sum("starting afresh" in line for line in log) == len(rows)
    assert not any("allowed" in line for line in log)  # every call was checked


def test_an_older_version_database_starts_its_sessions_afresh(tmp_path):
    """A schema-1 database (pickled states) from the version before this one."""
    agent = Agent(tmp_path / "state", tmp_path, session="old")
    agent.state.mkdir(parents=True)
    db = sqlite3.connect(agent.state / "state.db")
    db.executescript("""
        CREATE TABLE sessions (session TEXT NOT NULL, agent TEXT NOT NULL, host TEXT NOT NULL, profile TEXT NOT NULL,
            created REAL NOT NULL, updated REAL NOT NULL, actions INTEGER NOT NULL, nudges INTEGER NOT NULL,
            blocks INTEGER NOT NULL, stops INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (session, agent))
            WITHOUT ROWID;
        CREATE TABLE decisions (session TEXT NOT NULL, agent TEXT NOT NULL, at REAL NOT NULL, event TEXT NOT NULL,
            action TEXT NOT NULL, signal TEXT, tool TEXT, description TEXT);
        PRAGMA user_version = 1;
    """)
    old_pickle = (
        b"\x80\x05\x95\x1c\x00\x00\x00\x00\x00\x00\x00\x8c\x14loopwatch.hook.state\x94\x8c\x0cSessionState\x94\x93\x94."
    )
    db.execute("INSERT INTO sessions VALUES ('old', '', 'claude-code', 'attended', 1, 1, 7, 0, 0, 0, ?)", (old_pickle,))
    db.commit()
    db.close()
    for i in range(4):  # the same failing call: the guard works on the upgraded session
        before, _ = agent.run("Bash", bash("make"), error="make: *** No rule to make target")
    assert before.denied  # blocked at the 4th
    assert state_actions(agent.state, "old") == 3
    log = (agent.state / "hook.log").read_text()
    assert "starting afresh" in log


def test_a_state_that_loads_but_breaks_is_reset_not_allowed_for_ever(tmp_path):
    """The 'AttributeError; allowed' bug: a state from another version that loads
    must not switch the guard off for the rest of the session."""
    agent = Agent(tmp_path / "state", tmp_path, session="broken")
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    db = sqlite3.connect(agent.state / "state.db")
    blob = db.execute("SELECT state FROM sessions").fetchone()[0]
    data = json.loads(blob)
    monitor = data["state"][data["state"].index("monitor") + 1]
    del monitor[monitor.index("events") : monitor.index("events") + 2]  # an attribute this version needs
    db.execute("UPDATE sessions SET state = ?", (json.dumps(data).encode(),))
    db.commit()
    db.close()
    for _ in range(4):
        before, _ = agent.run("Bash", bash("make"), error="make: *** No rule to make target")
    assert before.denied
    log = (agent.state / "hook.log").read_text().splitlines()
    assert len(log) == 1 and "AttributeError" in log[0] and "starting afresh" in log[0]


def test_a_row_from_another_layout_is_not_loaded(tmp_path):
    """A real state whose envelope names another layout (a changed signal, another
    version) starts afresh, though its body would load."""
    agent = Agent(tmp_path / "state", tmp_path, session="other-layout")
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    agent.run("Bash", bash("ls -l"), response={"stdout": "a.py"})
    db = sqlite3.connect(agent.state / "state.db")
    data = json.loads(db.execute("SELECT state FROM sessions").fetchone()[0])
    assert loads(json.dumps(data).encode()).monitor.actions == 2  # the body itself is sound
    data["layout"] = "f" * 16
    db.execute("UPDATE sessions SET state = ?", (json.dumps(data).encode(),))
    db.commit()
    db.close()
    agent.run("Bash", bash("ls"), response={"stdout": "a.py"})
    assert state_actions(agent.state, "other-layout") == 1
    assert "could not be loaded (StateError)" in (agent.state / "hook.log").read_text()


def test_the_layout_changes_when_a_signal_changes_its_state(monkeypatch):
    before = codec.layout()
    from loopwatch._core.signals.repeat import Repeat

    monkeypatch.setattr(codec, "_REGISTRY", None)

    def on_step(self, step):
        self._count_renamed = 1  # the same signal, keeping its state under another name

    monkeypatch.setattr(Repeat, "on_step", on_step)
    assert codec.layout() != before
