"""The hook against what a machine or an agent can do to it: a wall clock set back, an
input nested past the parser's depth, settings that cannot be examined."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _clean(monkeypatch) -> None:
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "CLAUDE_CODE_ENTRYPOINT", "LOOPWATCH_SUPERVISED"):
        monkeypatch.delenv(name, raising=False)


def _payload(fields: dict, tool_input) -> bytes:
    """The payload's JSON text; a `tool_input` given as text (a nesting too deep for
    `json.dumps`) is put in as it is."""
    if isinstance(tool_input, str):
        return json.dumps({**fields, "tool_input": "\0"}).replace('"\\u0000"', tool_input).encode()
    return json.dumps({**fields, "tool_input": tool_input}).encode()


def _answers(store: Store, cwd: Path, tool_input, result: dict, calls: int, clock=None) -> list[str]:
    """What the hook answered to each of `calls` tries of one Bash call with `result`
    (PostToolUse or PostToolUseFailure), in process, state in SQLite between events:
    "deny", "stop", "nudge" or "allow" per try (the strongest of its two events).
    `clock(i)` sets the machine's clocks before try i."""
    base = {"session_id": "s1", "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd)}
    out = []
    for i in range(calls):
        if clock is not None:
            clock(i)
        call = {"tool_name": "Bash", "tool_use_id": f"toolu_{i}"}
        pre = handle(
            parse(_payload({**base, **call, "hook_event_name": "PreToolUse"}, tool_input), "claude-code"),
            {"profile": "unattended"},
            store,
        )
        spec = (pre.stdout or {}).get("hookSpecificOutput") or {}
        if spec.get("permissionDecision") == "deny":
            out.append("deny")
            continue
        post = handle(
            parse(_payload({**base, **call, **result}, tool_input), "claude-code"), {"profile": "unattended"}, store
        )
        answer = post.stdout or {}
        if answer.get("continue") is False:
            out.append("stop")
        elif (answer.get("hookSpecificOutput") or {}).get("additionalContext") or answer.get("decision") == "block":
            out.append("nudge")
        else:
            out.append("allow")
    return out


POLL = {"command": "gh run view 42 --json status", "description": "Check the CI run"}
PENDING = {
    "hook_event_name": "PostToolUse",
    "tool_response": {"stdout": '{"status":"in_progress"}', "stderr": "", "interrupted": False},
}


def _set_clocks(monkeypatch, wall, steady) -> None:
    monkeypatch.setattr(time, "time", lambda: wall[0])
    monkeypatch.setattr(time, "monotonic", lambda: steady[0])
    monkeypatch.setattr(time, "clock_gettime", lambda _clock: steady[0])


def test_a_poll_every_two_minutes_is_waiting_however_the_wall_clock_is_set(tmp_path, monkeypatch):
    """Six polls of a CI run, two minutes apart, the same answer each time: waiting, never
    a loop. The machine's wall clock is set back an hour after the second (NTP, a
    person, a VM resumed): the hook's time must not run backwards with it."""
    _clean(monkeypatch)
    wall, steady = [1_800_000_000.0], [5_000.0]
    _set_clocks(monkeypatch, wall, steady)

    def clock(i: int) -> None:
        steady[0] = 5_000.0 + 120.0 * i
        wall[0] = 1_800_000_000.0 + 120.0 * i - (3600.0 if i >= 2 else 0.0)

    store = Store(tmp_path / "state")
    try:
        assert _answers(store, tmp_path, POLL, PENDING, 6, clock) == ["allow"] * 6
    finally:
        store.close()


def test_the_same_poll_in_a_burst_is_still_a_loop(tmp_path, monkeypatch):
    """The control: the same six calls a second apart are circling (so the test above
    can fail)."""
    _clean(monkeypatch)
    wall, steady = [1_800_000_000.0], [5_000.0]
    _set_clocks(monkeypatch, wall, steady)

    def clock(i: int) -> None:
        steady[0] = 5_000.0 + i
        wall[0] = 1_800_000_000.0 + i

    store = Store(tmp_path / "state")
    try:
        answers = _answers(store, tmp_path, POLL, PENDING, 6, clock)
    finally:
        store.close()
    assert "allow" in answers[:2] and ("deny" in answers or "stop" in answers), answers


def test_after_a_reboot_the_wall_clock_is_taken_never_earlier_than_the_last_event(tmp_path):
    from loopwatch._core.monitor import Monitor
    from loopwatch._hook.session import SessionState

    state = SessionState(Monitor(), "claude-code", "attended", "test")
    assert state.time(1000.0, 50.0) == 1000.0
    assert state.time(400.0, 80.0) == 1030.0  # the wall clock set back: the steady one counts
    assert state.time(2000.0, 10.0) == 2000.0  # rebooted (steady clock restarted): the wall clock
    assert state.time(1500.0, 5.0) == 2000.0  # rebooted again, wall clock behind: never backwards
    assert state.time(1510.0, 15.0) == 2010.0  # and time goes on from there, not from the wall clock


def _deep(levels: int, leaf: str = "x") -> str:
    """The JSON text of a Bash input whose `options` nest `levels` levels deep."""
    return '{"command": "ls /nonexistent-dir-xyz", "options": ' + '{"a": [' * levels + f'"{leaf}"' + "]}" * levels + "}"


FAILED = {
    "hook_event_name": "PostToolUseFailure",
    "error": "Exit code 2\nls: cannot access '/nonexistent-dir-xyz': No such file or directory",
}


def test_an_input_nested_past_the_parsers_depth_is_still_counted(tmp_path, monkeypatch):
    """The agent shapes its input: nesting of 1,500 levels made the parser give up and
    the hook let every such call through uncounted. The same deep call, failing the same
    way, is a loop like any other."""
    _clean(monkeypatch)
    deep = _deep(1500)
    with pytest.raises(RecursionError):
        json.loads(deep)
    store = Store(tmp_path / "state")
    try:
        deep_answers = _answers(store, tmp_path, deep, FAILED, 6)
    finally:
        store.close()
    store = Store(tmp_path / "state2")
    try:
        flat_answers = _answers(store, tmp_path, {"command": "ls /nonexistent-dir-xyz"}, FAILED, 6)
    finally:
        store.close()
    assert deep_answers == flat_answers, (deep_answers, flat_answers)
    assert deep_answers[:2] == ["allow", "allow"] and deep_answers[3] in ("deny", "stop"), deep_answers


def test_two_deep_inputs_that_differ_past_the_cut_are_different_calls():
    fields = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    a, b = _payload(fields, _deep(1500, "x")), _payload(fields, _deep(1500, "y"))
    ca, cb = parse(a, "claude-code").calls[0], parse(b, "claude-code").calls[0]
    assert ca.input != cb.input
    assert parse(a, "claude-code").calls[0].input == ca.input


def _install(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", "install", "claude-code", *args],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", ["folder-is-a-file", "link-loop"])
def test_install_where_the_settings_cannot_be_examined_says_so_in_one_line(tmp_path, case):
    home = tmp_path / "home"
    home.mkdir()
    if case == "folder-is-a-file":
        (home / ".claude").write_text("not a folder")
    else:
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").symlink_to(home / ".claude" / "settings.json")
    done = _install(home)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "nothing was changed" in done.stderr
