"""One guard session for `Guard` and the hook: the same decisions and the same words in
the same situation, kept across the hook's processes as plain data."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Guard
from loopwatch._core.events import Attempt, ModelText, ToolCall, Turn, UserMessage
from loopwatch._core.messages import (
    Blocked,
    Nudged,
    SameResult,
    StillCircling,
    Stopped,
    Unchecked,
    Warned,
    loopwatch_said,
)
from loopwatch._core.monitor import Monitor
from loopwatch._core.session import GuardSession
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import SessionState, Store, dumps, loads

CURL = {"command": "curl -sf localhost:8080/health"}
REFUSED = "curl: (7) Failed to connect to localhost port 8080"


# -- the words ----------------------------------------------------------------------------------


def test_every_sentence_comes_from_its_class():
    what = SameResult("Bash", 3)
    assert Nudged(what, "make").for_model() == (
        "loopwatch: you appear to be going in circles: you ran `make` 3 times and got the same result each "
        "time. Read the result, then change the command, the code or the approach before running it again."
    )
    assert Blocked(what, "make").for_model().startswith("loopwatch blocked this call: you ran `make` 3 times")
    assert (
        StillCircling(what)
        .for_model()
        .startswith("loopwatch: this call ran, but you are still going in circles: the same Bash call returned")
    )
    assert Stopped("the same call 3 times", held=True).for_model() == (
        "loopwatch stopped the run: the same call 3 times. Do not call more tools; say what went wrong and "
        "wait for the user."
    )
    assert Stopped(what).for_person() == "loopwatch stopped the run: " + what.text()
    assert Blocked("x").for_person() == "loopwatch blocked a call: x"
    assert Warned("x").for_person() == "loopwatch: x"
    assert Unchecked("LockTimeout").for_model().startswith("loopwatch could not check this call (LockTimeout)")


def test_a_reader_tells_loopwatchs_refusals_by_the_classes_heads():
    what = SameResult("Bash", 3)
    assert loopwatch_said(Stopped(what, "ls").for_model()) is Stopped
    assert loopwatch_said(Stopped("why", held=True).for_model()) is Stopped
    assert loopwatch_said(Stopped("why").for_person()) is Stopped
    assert loopwatch_said(Blocked(what, "ls").for_model()) is Blocked
    for other in (
        Nudged(what).for_model(),
        StillCircling(what).for_model(),
        Blocked("why").for_person(),
        "loopwatch stopped the running server",  # a tool's own words that begin alike
        "loopwatch stopped the run",  # no reason: not a sentence loopwatch writes
        "Exit code 2\nloopwatch stopped the run: x",
    ):
        assert loopwatch_said(other) is None, other


# -- one state machine, both front ends ------------------------------------------------------------


def _hook_answers(tmp_path, monkeypatch, host: str, profile: str, calls: int) -> list[str | None]:
    """What the hook hands the model at each PreToolUse of `calls` tries of one failing
    command (None: allowed), in process, with its state in SQLite between events."""
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "CLAUDE_CODE_ENTRYPOINT", "LOOPWATCH_SUPERVISED"):
        monkeypatch.delenv(name, raising=False)
    store = Store(tmp_path / host)
    base = {"session_id": "s1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path)}
    if host == "codex":
        base.update(turn_id="turn-1", model="gpt-5-codex", permission_mode="default")
    answers: list[str | None] = []
    for i in range(calls):
        call = {"tool_name": "Bash", "tool_input": CURL, "tool_use_id": f"toolu_{i}"}
        pre = handle(
            parse(json.dumps({**base, **call, "hook_event_name": "PreToolUse"}).encode(), host),
            {"profile": profile},
            store,
            now=10.0 * i,
        )
        if pre.code == 2:
            answers.append(pre.stderr.strip())
            continue
        spec = (pre.stdout or {}).get("hookSpecificOutput") or {}
        if spec.get("permissionDecision") == "deny":
            answers.append(spec["permissionDecisionReason"])
            continue
        answers.append(None)
        if host == "codex":
            post = {**call, "hook_event_name": "PostToolUse", "tool_response": f"Exit code: 7\nOutput:\n{REFUSED}"}
        else:
            post = {**call, "hook_event_name": "PostToolUseFailure", "error": f"Exit code 7\n{REFUSED}"}
        handle(parse(json.dumps({**base, **post}).encode(), host), {"profile": profile}, store, now=10.0 * i + 1)
    store.close()
    return answers


def _guard_answers(profile: str, calls: int, error_text: str) -> list[str | None]:
    guard = Guard(profile=profile, clock=None, env={})
    answers: list[str | None] = []
    for i in range(calls):
        before = guard.before_call("Bash", CURL, call_id=f"toolu_{i}", at=10.0 * i)
        answers.append(before.tool_result)
        if not before.blocks:
            guard.after_call("Bash", CURL, error_text, error=True, call_id=f"toolu_{i}", at=10.0 * i + 1)
    return answers


@pytest.mark.parametrize("host", ["claude-code", "codex"])
@pytest.mark.parametrize("profile", ["unattended", "attended"])
def test_the_hook_and_guard_refuse_the_same_calls_in_the_same_words(tmp_path, monkeypatch, host, profile):
    """A failing call tried six times: the same calls refused, with the same text for
    the model (the first stop included), whichever front end watches. The results are
    those the hook reads (Codex puts the exit code in the output)."""
    error_text = f"Exit code: 7\nOutput:\n{REFUSED}" if host == "codex" else f"Exit code 7\n{REFUSED}"
    hook = _hook_answers(tmp_path, monkeypatch, host, profile, 6)
    guard = _guard_answers(profile, 6, error_text)
    assert hook == guard
    assert hook[:3] == [None, None, None] and all(hook[3:])
    if profile == "unattended":
        assert loopwatch_said(hook[3]) is Stopped and hook[3].endswith(Stopped.held_tail)
        # later calls: refused with the reason alone (the first stop's text quotes the call)
        assert len(set(hook[4:])) == 1 and hook[4] != hook[3] and hook[4].endswith(Stopped.held_tail)
    else:
        assert all(loopwatch_said(a) is Blocked for a in hook[3:])


def test_a_host_that_reports_a_call_twice_counts_it_once_and_a_framework_counts_every_report():
    """Claude Code reports a call by PostToolUse and again by PostToolBatch, by one id;
    some models number calls afresh every turn ("call_0"), so a framework's guard must
    not take a repeated id for one call: the loop would go unseen."""
    calls = [ToolCall("Bash", CURL, REFUSED, error=True, call_id="call_0", at=float(i)) for i in range(6)]
    host = GuardSession(Monitor(profile="unattended"), count_once=True)
    assert [host.after_call(c).action.value for c in calls] == ["allow"] * 6
    assert host.monitor.actions == 1
    framework = Guard(profile="unattended", env={})._session  # what `Guard` keeps
    actions = [framework.after_call(c).action.value for c in calls]
    assert framework.monitor.actions == 6 and "nudge" in actions


def test_a_blocked_call_reported_afterwards_is_not_counted_and_the_user_lifts_a_stop():
    session = GuardSession(Monitor(profile="unattended"), count_once=True)
    for i in range(3):
        session.after_call(ToolCall("Bash", CURL, REFUSED, error=True, call_id=f"c{i}", at=float(i)))
    stop = session.before_call(Attempt("Bash", CURL, call_id="c3", at=3.0))
    assert stop.action.value == "stop" and not stop.refused and session.stopped == stop.reason
    # The host reports the refused call with the refusal as its result: not a call that ran.
    assert not session.after_call(ToolCall("Bash", CURL, stop.message, error=True, call_id="c3", at=3.5))
    assert session.monitor.actions == 3
    refusal = session.before_call(Attempt("Read", {"file_path": "a.py"}, call_id="c4", at=4.0))
    assert refusal.refused and refusal.message == Stopped(session.stopped, held=True).for_model()
    session.user(UserMessage(at=5.0))
    assert session.stopped is None
    assert not session.before_call(Attempt("Read", {"file_path": "a.py"}, call_id="c5", at=6.0))


# -- kept across processes ---------------------------------------------------------------------------

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["pre", "post", "post-again", "text", "turn", "user"]),
        st.sampled_from(["curl x", "ls", "make"]),
        st.sampled_from(["refused", "ok", ""]),
    ),
    min_size=1,
    max_size=40,
)


def _decisions(steps, every: bool, profile: str) -> list[tuple]:
    state = SessionState(Monitor(profile=profile), "claude-code", profile, "test")
    out = []
    for i, (kind, command, result) in enumerate(steps):
        if every:
            state = loads(dumps(state))
        at, call_id = float(i), f"id{i // 2}"  # a pre and a post share an id
        if kind == "pre":
            d = state.before_call(Attempt("Bash", {"command": command}, call_id=call_id, at=at))
        elif kind in ("post", "post-again"):
            call_id = f"id{max(i - 1, 0) // 2}" if kind == "post-again" else call_id
            d = state.after_call(
                ToolCall("Bash", {"command": command}, result, error=result == "refused", call_id=call_id, at=at)
            )
        elif kind == "text":
            d = state.observe(ModelText(f"I will run {command}.", at=at))
        elif kind == "turn":
            d = state.observe(Turn(at=at))
        else:
            d = state.user(UserMessage(at=at))
        out.append((d.action.value, d.message, d.reason, d.verdict.action.value, state.stopped, state.monitor.actions))
    return out


@settings(max_examples=60, deadline=None)
@given(STEPS, st.sampled_from(["unattended", "attended"]))
def test_a_guard_session_saved_and_loaded_at_every_event_decides_like_one_kept_in_memory(steps, profile):
    assert _decisions(steps, True, profile) == _decisions(steps, False, profile)


def test_the_saved_session_keeps_digests_and_ids_not_inputs_or_messages():
    state = SessionState(Monitor(profile="unattended"), "claude-code", "unattended", "test")
    secret = {"command": "curl -H 'Authorization: s3cr3t-9f2' x"}
    for i in range(3):
        state.after_call(ToolCall("Bash", secret, "s3cr3t-9f2 refused", error=True, call_id=f"c{i}", at=float(i)))
    stop = state.before_call(Attempt("Bash", secret, call_id="c3", at=3.0))
    assert "curl -H" in (stop.message or "")  # the model is told the call it repeats, then
    blob = dumps(state)
    assert b"s3cr3t" not in blob and b"curl" not in blob
    assert loads(blob).blocked[0][0] == "c3"
