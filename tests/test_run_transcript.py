"""`loopwatch run` follows the transcript the agent writes, and judges it first.

The child is a stand-in named `claude` / `codex` that writes a real recorded session
file (../shared/clients) line by line where that CLI writes its own, under a
temporary HOME / CODEX_HOME, while its console says nothing useful.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from _run_helpers import AGENTS, assert_nothing_left, env_for, loopwatch

from loopwatch import ToolCall
from loopwatch._readers import read
from loopwatch._supervise.transcript import Follower, Tail, agent_of, claude_project_dir

pytestmark = pytest.mark.slow

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "clients"
CLAUDE = SHARED / "claude-code" / "streams"
CODEX = SHARED / "codex" / "rollouts"
needs_shared = pytest.mark.skipif(not CLAUDE.is_dir() or not CODEX.is_dir(), reason="../shared/clients is absent")


def stand_in(
    tmp_path: Path, name: str, format: str, recorded: Path, delay: float = 0.02, console: str = "quiet"
) -> list[str]:
    """An executable called `name` (as the real CLI is) running the writer agent."""
    return [named(tmp_path, name, "writes_transcript"), format, str(recorded), str(delay), console]


def named(tmp_path: Path, name: str, script: str) -> str:
    """An executable called `name` that runs the test agent `script`."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    exe = folder / name
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} {AGENTS / (script + ".py")} "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """HOME and CODEX_HOME of the run, under tmp_path (env_for copies os.environ)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return tmp_path


def stops_when_scanned(path: Path) -> bool:
    """What `scan` says of the recorded file: would loopwatch have stopped it?"""
    from loopwatch import Monitor

    session = next(read(str(path)))
    monitor = Monitor()
    for event in session.events:
        monitor.observe(event)
    return monitor.stop is not None


# -- live runs on real recordings ---------------------------------------------------------


@needs_shared
@pytest.mark.parametrize(
    "name, format, recorded",
    [
        ("claude", "claude-code", CLAUDE / "loop1.session.jsonl"),
        ("codex", "codex", CODEX / "a-plain-loop-rollout.jsonl"),
    ],
)
def test_a_loop_in_the_transcript_stops_the_run(home, name, format, recorded):
    assert stops_when_scanned(recorded)
    ran = loopwatch(home, stand_in(home, name, format, recorded))
    assert ran.status == 86, ran.stderr
    evidence = ran.record["evidence"]
    assert evidence["source"] == "transcript"
    assert evidence["transcript"]["format"] == format
    assert evidence["transcript"]["events"] > 0
    assert ran.record["loop"]["verdict"]["action"] == "stop" and ran.record["ended_by"] == "loop"
    assert ran.stdout == b""  # the console said nothing at all
    assert_nothing_left(ran)


@needs_shared
@pytest.mark.parametrize(
    "name, format, recorded",
    [
        ("claude", "claude-code", CLAUDE / "healthy1.session.jsonl"),
        ("codex", "codex", CODEX / "h-run-healthy-rollout.jsonl"),
    ],
)
def test_a_healthy_transcript_runs_untouched_though_the_console_repeats(home, name, format, recorded):
    assert not stops_when_scanned(recorded)
    ran = loopwatch(home, stand_in(home, name, format, recorded, console="same"))
    assert ran.status == 0, ran.stderr
    evidence = ran.record["evidence"]
    assert evidence["source"] == "transcript"
    assert evidence["transcript"]["lines"] == len(recorded.read_bytes().splitlines())
    calls = sum(1 for e in next(read(str(recorded))).events if isinstance(e, ToolCall))
    assert ran.record["loop"]["actions"] == calls  # every call of the file was judged
    assert "repeated_lines" in evidence["console"]["unheeded"]  # the console looked like a loop ...
    assert any("console only" in line for line in ran.ours)  # ... and the person was told


@needs_shared
def test_without_the_transcript_the_same_console_would_have_stopped_it(home):
    """The control for the test above: its console alone is a loop."""
    recorded = CLAUDE / "healthy1.session.jsonl"
    ran = loopwatch(home, stand_in(home, "claude", "claude-code", recorded, console="same"), "--transcript", "off")
    assert ran.status == 86
    assert ran.record["evidence"] == {"source": "console"}


@needs_shared
@pytest.mark.parametrize(
    "recorded",
    sorted(CLAUDE.glob("*.session.jsonl")) + sorted(CODEX.glob("*.jsonl"))
    if CLAUDE.is_dir() and CODEX.is_dir()
    else [],
    ids=lambda p: p.name,
)
def test_followed_live_it_ends_as_scan_says(home, recorded):
    """Followed live or scanned afterwards, one file gets one verdict."""
    format = "claude-code" if recorded.parent == CLAUDE else "codex"
    name = "claude" if format == "claude-code" else "codex"
    ran = loopwatch(home, stand_in(home, name, format, recorded, delay=0.01))
    assert ran.status == (86 if stops_when_scanned(recorded) else 0), ran.stderr
    assert ran.record["evidence"]["source"] == "transcript"


@needs_shared
def test_an_agent_writing_its_transcript_is_not_idle(home):
    recorded = home / "first-lines.jsonl"  # the first lines of a real session, as they were
    recorded.write_bytes(b"".join((CLAUDE / "healthy1.session.jsonl").read_bytes().splitlines(True)[:8]))
    command = stand_in(home, "claude", "claude-code", recorded, delay=0.3)
    ran = loopwatch(home, command, "--idle", "1.5")
    assert ran.status == 0, ran.stderr
    assert ran.record["evidence"]["transcript"]["lines"] == 8
    # the control: watched on its (silent) console only, the same run is idle
    assert loopwatch(home, command, "--idle", "1.5", "--transcript", "off").status == 87


@needs_shared
def test_a_structured_stdout_stream_still_ends_the_run_while_a_transcript_is_awaited(home):
    """`claude -p --output-format stream-json` prints tool calls: those are evidence,
    not console lines, whether or not its session file is found."""
    recorded = CLAUDE / "loop1.stream.jsonl"
    ran = loopwatch(home, [named(home, "claude", "prints_recording"), str(recorded), "0.02"])
    assert ran.status == 86, ran.stderr
    assert ran.record["events_format"] == "claude-stream"
    assert ran.record["evidence"] == {"source": "stream"}


@needs_shared
def test_a_transcript_given_by_path_may_appear_later(home):
    recorded = CLAUDE / "loop2.session.jsonl"
    # a harness loopwatch does not know writes claude's session file: not followed ...
    plain = loopwatch(home, stand_in(home, "my-harness", "claude-code", recorded))
    assert plain.record["evidence"] == {"source": "console"} and plain.status == 0
    # ... unless named, before it exists
    command = [
        sys.executable,
        "-c",
        (
            "import sys, time; time.sleep(0.4)\n"
            f"lines = open({str(recorded)!r}, 'rb').read().splitlines(True)\n"
            "out = open(sys.argv[1], 'wb')\n"
            "for line in lines: out.write(line); out.flush(); time.sleep(0.02)\n"
            "time.sleep(1)"
        ),
        str(home / "later.jsonl"),
    ]
    ran = loopwatch(home, command, "--transcript", "later.jsonl")  # relative to the cwd
    assert ran.status == 86, ran.stderr
    assert ran.record["evidence"]["transcript"]["format"] == "claude-code"
    assert ran.record["evidence"]["transcript"]["file"] == "later.jsonl"


def test_a_file_that_is_no_transcript_is_said_and_the_console_judges(tmp_path):
    path = tmp_path / "notes.txt"
    writes = f"import time; open({str(path)!r}, 'w').write('hello\\nworld\\n'); time.sleep(0.8)"
    ran = loopwatch(tmp_path, [sys.executable, "-c", writes], "--transcript", str(path))
    assert ran.status == 0
    assert any("cannot follow the transcript" in line for line in ran.ours), ran.ours
    assert ran.record["evidence"]["source"] == "console"
    assert "problem" in ran.record["evidence"]["transcript"]


def test_transcript_option_rejects_a_folder(tmp_path):
    ran = loopwatch(tmp_path, ["true"], "--transcript", str(tmp_path), record=False)
    assert ran.status == 2
    assert b"Traceback" not in ran.stderr and b"is a folder" in ran.stderr


# -- the pieces -----------------------------------------------------------------------------


def test_claude_project_dir_as_the_real_cli_names_it():
    # from a real hook payload: cwd /tmp/cc-e2e/work, transcript under -tmp-cc-e2e-work
    assert claude_project_dir("/tmp/cc-e2e/work", {"HOME": "/h"}) == Path("/h/.claude/projects/-tmp-cc-e2e-work")
    assert claude_project_dir("/a/b_c.d", {"CLAUDE_CONFIG_DIR": "/cfg"}) == Path("/cfg/projects/-a-b-c-d")


def test_agent_of_the_command():
    assert agent_of(["claude", "-p", "x"]) == "claude-code"
    assert agent_of(["/usr/local/bin/codex", "exec", "x"]) == "codex"
    assert agent_of(["npx", "-y", "@openai/codex", "exec"]) == "codex"
    assert agent_of(["env", "FOO=1", "timeout", "600", "claude"]) == "claude-code"
    assert agent_of(["aider", "--message", "claude"]) is None
    assert agent_of(["my-harness", "codex"]) is None  # an argument, not the program


def test_tail_returns_what_was_appended_and_waits_for_a_file(tmp_path):
    path = tmp_path / "t.jsonl"
    tail = Tail(path)
    assert tail.read() == b""  # not there yet
    path.write_bytes(b'{"a": 1}\n{"b"')
    assert tail.read() == b'{"a": 1}\n{"b"'
    assert tail.read() == b""
    with open(path, "ab") as fh:
        fh.write(b": 2}\n")
    assert tail.read() == b": 2}\n"
    tail.close()


@needs_shared
@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_follower_gives_the_readers_events_however_the_file_is_cut(tmp_path, piece):
    recorded = CODEX / "h-run-healthy-rollout.jsonl"
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {"CODEX_HOME": str(tmp_path / "ch")}
    follower = Follower("auto", ["codex", "exec"], cwd=str(cwd), env=env)
    follower.start()
    data = recorded.read_bytes()
    first, rest = data.split(b"\n", 1)
    meta = json.loads(first)
    meta["payload"]["cwd"] = str(cwd)
    data = json.dumps(meta).encode() + b"\n" + rest
    from datetime import datetime

    day = datetime.now()
    folder = Path(env["CODEX_HOME"], "sessions", day.strftime("%Y"), day.strftime("%m"), day.strftime("%d"))
    folder.mkdir(parents=True)
    events = []
    with open(folder / "rollout-mine.jsonl", "wb") as out:
        for i in range(0, len(data), piece):
            out.write(data[i : i + piece])
            out.flush()
            if i == 0:  # another session's rollout, begun later, elsewhere: never taken
                (folder / "rollout-other.jsonl").write_bytes(first + b"\n" + rest)
            events += follower.poll(float(i))
    events += follower.finish()
    assert follower.path is not None and follower.path.name == "rollout-mine.jsonl"
    wanted = [e for e in next(read(str(recorded))).events]
    assert [(type(e).__name__, getattr(e, "name", None), e.source_ref) for e in events] == [
        (type(e).__name__, getattr(e, "name", None), e.source_ref) for e in wanted
    ]
    assert follower.record() == {
        "format": "codex",
        "file": "rollout-mine.jsonl",
        "lines": len(data.splitlines()),
        "events": len(wanted),
    }


def test_follower_takes_only_a_file_begun_after_the_start_or_grown(tmp_path):
    env = {"HOME": str(tmp_path)}
    folder = claude_project_dir(str(tmp_path), env)
    folder.mkdir(parents=True)
    old = folder / "old.jsonl"
    old.write_bytes(b'{"type": "summary", "leafUuid": "x"}\n')
    follower = Follower("auto", ["claude"], cwd=str(tmp_path), env=env)
    follower.start()
    assert follower.poll(0.0) == [] and follower.path is None  # the old one is left alone
    with open(old, "ab") as fh:
        fh.write(b'{"type": "summary", "leafUuid": "y"}\n')
    follower.poll(1.0)
    assert follower.path == old and follower._tail.offset > 0  # resumed: read from where it was
    assert follower.lines == 1


@needs_shared
def test_a_given_file_is_followed_from_where_it_was_when_the_run_began(tmp_path):
    lines = (CLAUDE / "loop1.session.jsonl").read_bytes().splitlines(True)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(lines[:40]))  # an earlier run's, loop included
    follower = Follower(str(path), ["my-harness"], cwd=str(tmp_path), env={})
    follower.start()
    with open(path, "ab") as fh:
        fh.writelines(lines[40:])
    events = follower.poll(0.0) + follower.finish()
    assert follower.format == "claude-code"
    assert follower.lines == len(lines) - 40 and follower.events == len(events)
    # only what was added, referred to by its line in the whole file, as scan does
    scanned = [(type(e).__name__, e.source_ref) for e in next(read(str(CLAUDE / "loop1.session.jsonl"))).events]
    got = [(type(e).__name__, e.source_ref) for e in events]
    assert got and set(got) <= set(scanned)
    assert all(int(ref.split()[1]) > 40 for _, ref in got if ref)


def test_nothing_is_followed_for_an_unknown_agent_or_when_off(tmp_path):
    assert not Follower("auto", ["aider"], cwd=str(tmp_path), env={}).wanted
    assert not Follower("off", ["claude"], cwd=str(tmp_path), env={}).wanted
    assert Follower("auto", ["claude"], cwd=str(tmp_path), env={}).wanted


def test_env_for_keeps_home(home):
    assert env_for(home)["HOME"] == os.environ["HOME"]


@needs_shared
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=60_000), max_size=30), noise=st.binary(max_size=40))
def test_any_cutting_and_a_broken_line_give_the_readers_events(tmp_path, cuts, noise):
    """However the writes fall, and with a line that is no JSON among them, the
    follower gives what the reader gives for the same bytes."""
    lines = (CLAUDE / "loop2.session.jsonl").read_bytes().splitlines(True)
    data = b"".join(lines[:5]) + noise.replace(b"\n", b"") + b"\n" + b"".join(lines[5:])
    folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = folder / "t.jsonl"
    path.write_bytes(data)
    wanted = [
        (type(e).__name__, e.source_ref, getattr(e, "name", None)) for e in next(read(str(path), "claude-code")).events
    ]
    path.write_bytes(b"")
    follower = Follower(str(path), ["my-harness"], cwd=str(folder), env={})
    follower.start()
    events = []
    with open(path, "ab") as out:
        start = 0
        for cut in sorted({c % len(data) for c in cuts}) + [len(data)]:
            out.write(data[start:cut])
            out.flush()
            start = max(start, cut)
            events += follower.poll(0.0)
    events += follower.finish()
    assert [(type(e).__name__, e.source_ref, getattr(e, "name", None)) for e in events] == wanted
