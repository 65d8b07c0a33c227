"""Qwen Code's payloads and answers (`loopwatch._hosts.qwen_code`), on payloads the real
CLI sent (0.15.10, 0.23.4, 0.24.4: tests/fixtures/qwen-code-hooks, paths replaced by
a placeholder): what each event is to the guard, a failure read where the exit code is
only in text, a person's prompt told from the agent going on by itself, the answers
Qwen honours, and the session process a sub-agent's stop interrupts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopwatch._core.config import Config
from loopwatch._core.events import ToolCall
from loopwatch._core.messages import Blocked, Stopped, loopwatch_said
from loopwatch._core.session import Decision
from loopwatch._core.verdict import Action, Verdict
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
from loopwatch._hosts import host
from loopwatch._hosts.base import AFTER, BEFORE, FAILED, PROMPT, RESUME, SUBAGENT_END, TURN_END, Payload
from loopwatch._hosts.monitors import monitor_for
from loopwatch._hosts.qwen_code import exit_code, is_headless, session_process

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "qwen-code-hooks"
SRC = str(Path(__file__).resolve().parent.parent / "src")
QWEN = host("qwen-code")


def payload(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


# -- what each event is ------------------------------------------------------------------------

EVENTS = [
    # captured payload, the guard's event, the agent, (tool, call id, failed) per call
    ("0.24.4-PreToolUse", BEFORE, "", [("run_shell_command", "call_1_0", False)]),
    ("0.24.4-PostToolUse", AFTER, "", [("run_shell_command", "call_1_0", False)]),
    ("0.24.4-PostToolUseFailure", FAILED, "", [("run_shell_command", "call_2_1", True)]),
    ("0.23.4-PreToolUse", BEFORE, "", [("run_shell_command", "call_1_0", False)]),
    ("0.23.4-PostToolUse", AFTER, "", [("run_shell_command", "call_1_0", False)]),
    ("0.23.4-PostToolUseFailure", FAILED, "", [("run_shell_command", "call_1_0", True)]),
    # 0.15: a failed command is a plain PostToolUse, `Exit Code: 2` in its text; no tool_call_id
    ("0.15.10-PreToolUse", BEFORE, "", [("run_shell_command", "toolu_1796523889842_k90p4a3k6", False)]),
    ("0.15.10-PostToolUse", AFTER, "", [("run_shell_command", "toolu_1796523889842_k90p4a3k6", True)]),
    ("0.24.4-PostToolUse-edit", AFTER, "", [("edit", "call_12_11", False)]),
    ("0.24.4-PreToolUse-in-subagent", BEFORE, "general-purpose-call_1_0", [("run_shell_command", "call_2_0", False)]),
    ("0.24.4-SubagentStop", SUBAGENT_END, "general-purpose-call_1_0", []),
    ("0.24.4-Stop", TURN_END, "", []),
    ("0.24.4-UserPromptSubmit-first", PROMPT, "", []),
    ("0.24.4-UserPromptSubmit-interactive-second-prompt", PROMPT, "", []),
    ("0.24.4-UserPromptSubmit-continuation", RESUME, "", []),
    ("0.23.4-UserPromptSubmit-1", PROMPT, "", []),
    ("0.23.4-UserPromptSubmit-2", RESUME, "", []),
    ("0.15.10-UserPromptSubmit", PROMPT, "", []),
]


@pytest.mark.parametrize("name,event,agent,calls", EVENTS)
def test_each_captured_payload_is_read_as_the_guard_event_it_is(name, event, agent, calls):
    raw = payload(name)
    read = parse(json.dumps(raw).encode(), "qwen-code")
    assert (read.event, read.native, read.agent, read.session) == (
        event,
        raw["hook_event_name"],
        agent,
        raw["session_id"],
    )
    assert [(c.name, c.call_id, c.error) for c in read.calls] == calls


def test_events_the_guard_does_not_know_stay_the_hosts_own():
    read = QWEN.parse(payload("0.24.4-StopFailure-loop-detected"))
    assert read.event == read.native == "StopFailure" and read.calls == ()


def test_a_continuation_of_0_15_is_told_by_its_empty_prompt():
    raw = {**payload("0.15.10-UserPromptSubmit"), "prompt": ""}
    assert QWEN.parse(raw).event == RESUME


def test_a_call_is_known_by_the_models_id_on_both_sides():
    """`tool_use_id` is Qwen's own and differs between PreToolUse and PostToolBatch; the
    model's `tool_call_id` is the one both sides share."""
    before = QWEN.parse(payload("0.24.4-PreToolUse")).calls[0]
    after = QWEN.parse(payload("0.24.4-PostToolUse")).calls[0]
    batch = payload("0.24.4-PostToolBatch-denied")["tool_calls"][0]
    assert before.call_id == after.call_id == "call_1_0"
    assert batch["tool_call_id"] == batch["tool_use_id"] != payload("0.24.4-PreToolUse")["tool_use_id"]


def test_the_sub_agent_an_agent_call_ran_is_named_as_its_payloads_name_it():
    for name in ("0.24.4-PostToolUse-agent-background", "0.24.4-PostToolUse-agent-foreground"):
        (call,) = QWEN.parse(payload(name)).calls
        assert call.spawned == "general-purpose-call_1_0" == payload("0.24.4-PreToolUse-in-subagent")["agent_id"]
    (shell,) = QWEN.parse(payload("0.24.4-PostToolUse")).calls
    assert shell.spawned is None


def test_exit_code_is_read_from_the_shell_texts_last_lines_only():
    failed = payload("0.24.4-PostToolUseFailure")["error"]
    assert exit_code(failed) == 2
    assert exit_code(payload("0.24.4-PostToolUse")["tool_response"]["llmContent"]) == 0
    assert exit_code(payload("0.15.10-PostToolUse")["tool_response"]["llmContent"]) == 2
    # the command's own output may print the words: the shell's own line, last, counts
    quoted = failed.replace("Output: ls:", "Output: Exit Code: 0\nls:")
    assert exit_code(quoted) == 2
    assert exit_code("Exit Code: 1 is what the docs say") is None


def test_a_file_that_quotes_an_exit_code_is_not_a_failed_call():
    raw = payload("0.24.4-PostToolUse-edit")
    raw["tool_name"] = "read_file"
    raw["tool_response"] = {"llmContent": "log:\nExit Code: 2\n", "returnDisplay": ""}
    assert QWEN.parse(raw).calls[0].error is False


def test_an_interrupted_call_is_not_the_agents_doing():
    raw = {**payload("0.24.4-PostToolUseFailure"), "is_interrupt": True}
    assert QWEN.parse(raw).calls[0].interrupted is True


def test_a_new_process_group_number_each_call_does_not_hide_a_repeat():
    """0.23.4 ends the shell's text with `Process Group PGID: N`, a new N every call: the
    core masks numbers in results, so the same failure three times is still a repeat."""
    text = payload("0.23.4-PostToolUseFailure")["error"]
    assert "Process Group PGID: " in text
    monitor = monitor_for("qwen-code", Config.make({}))
    verdicts = []
    for i, pgid in enumerate((4101, 4188, 4230)):
        result = text.rsplit("Process Group PGID: ", 1)[0] + f"Process Group PGID: {pgid}"
        call = ToolCall("run_shell_command", {"command": "ls /nonexistent-dir-xyz"}, result, error=True, at=float(i))
        verdicts.append(monitor.observe(call))
    assert verdicts[-1].action is Action.NUDGE, verdicts


# -- the answers -----------------------------------------------------------------------------------


def test_a_refusal_is_given_in_both_forms_and_never_with_continue():
    answer = QWEN.refuse("PreToolUse", "loopwatch blocked this call: x", stop=True, person="x")
    assert answer.stdout["decision"] == "deny" and answer.stdout["reason"] == "loopwatch blocked this call: x"
    spec = answer.stdout["hookSpecificOutput"]
    assert spec == {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "loopwatch blocked this call: x",
    }
    assert "continue" not in answer.stdout and answer.code == 0


@pytest.mark.parametrize("native", ["PostToolUse", "PostToolUseFailure"])
@pytest.mark.parametrize("action", [Action.NUDGE, Action.BLOCK, Action.STOP])
def test_after_a_call_the_model_is_told_in_the_result_and_the_run_never_cut_there(native, action):
    """`continue: false` on PostToolUse replaces the result of a call that ran with the
    reason: never sent. What the model must read rides on the call's result."""
    read = QWEN.parse(payload(f"0.24.4-{native}"))
    decision = Decision(action, "loopwatch: told", "why", Verdict(action, description="why"))
    answer = QWEN.reply(read, decision, "why" if action is Action.STOP else None)
    assert answer.stdout == {"hookSpecificOutput": {"hookEventName": native, "additionalContext": "loopwatch: told"}}


def test_after_a_stop_a_call_that_still_ran_is_told_the_stop():
    read = QWEN.parse(payload("0.24.4-PostToolUse"))
    answer = QWEN.reply(read, Decision(), "the same call 3 times")
    text = answer.stdout["hookSpecificOutput"]["additionalContext"]
    assert loopwatch_said(text) is Stopped and "continue" not in answer.stdout


def test_a_continuation_of_a_stopped_run_is_blocked_and_one_of_a_running_run_is_not():
    read = QWEN.parse(payload("0.24.4-UserPromptSubmit-continuation"))
    assert QWEN.reply(read, Decision(), None).stdout is None
    said = QWEN.reply(read, Decision(), "the same call 3 times").stdout
    assert said["decision"] == "block" and said["continue"] is False
    assert said["reason"] == said["stopReason"] == "loopwatch stopped the run: the same call 3 times"


# -- the guard over a run of captured payloads ----------------------------------------------------


class Run:
    """One Qwen Code session as its hooks see it, built from captured payloads."""

    def __init__(self, store: Store, session: str = "qwen-s1", agent: str | None = None) -> None:
        self.store, self.session, self.agent, self.n = store, session, agent, 0

    def send(self, name: str, **changes) -> dict:
        raw = {**payload(name), "session_id": self.session, **changes}
        raw["prompt_id"] = f"{self.session}########0"
        if self.agent:
            raw["agent_id"] = self.agent
        return handle(parse(json.dumps(raw).encode(), "qwen-code"), {}, self.store, log=lambda line: None).stdout

    def call(self, failing: bool = True) -> tuple[dict | None, dict | None]:
        """One model request and its call: the continuation, PreToolUse, then the result."""
        self.n += 1
        ids = {"tool_call_id": f"call_{self.n}_{self.n - 1}", "tool_use_id": f"toolu_{self.n}"}
        resumed = self.send("0.24.4-UserPromptSubmit-continuation") if self.n > 1 and not self.agent else None
        before = self.send("0.24.4-PreToolUse", **ids, tool_input={"command": "ls /nonexistent-dir-xyz"})
        if resumed is not None and resumed.get("decision") == "block":
            return resumed, before
        if before is not None and before.get("decision") == "deny":
            return before, None
        name = "0.24.4-PostToolUseFailure" if failing else "0.24.4-PostToolUse"
        return before, self.send(name, **ids, tool_input={"command": "ls /nonexistent-dir-xyz"})


@pytest.fixture
def store(tmp_path, monkeypatch):
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "LOOPWATCH_SUPERVISED"):
        monkeypatch.delenv(name, raising=False)
    store = Store(tmp_path / "state")
    yield store
    store.close()


def test_unattended_the_repeat_is_refused_and_the_next_request_refused_too(store, monkeypatch):
    monkeypatch.setenv("LOOPWATCH_PROFILE", "unattended")
    run = Run(store)
    answers = [run.call() for _ in range(3)]
    assert all(before is None for before, _ in answers)
    assert "going in circles" in answers[2][1]["hookSpecificOutput"]["additionalContext"]
    refused, _ = run.call()
    assert refused["decision"] == "deny" and loopwatch_said(refused["reason"]) is Stopped
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny" and "continue" not in refused
    ended = run.send("0.24.4-UserPromptSubmit-continuation")
    assert ended["decision"] == "block" and ended["continue"] is False
    # the person writes: the stop is lifted, the next request goes ahead
    assert run.send("0.24.4-UserPromptSubmit-first") is None
    assert run.send("0.24.4-UserPromptSubmit-continuation") is None
    row = store.sessions(session="qwen-s1")[0]
    assert row["actions"] == 3 and row["stops"] == 1


def test_a_continuation_is_no_new_start_for_the_streaks(store, monkeypatch):
    """Qwen sends UserPromptSubmit before every model request: were each one the person
    writing, no streak would ever pass one call."""
    monkeypatch.setenv("LOOPWATCH_PROFILE", "attended")
    run = Run(store)
    for _ in range(3):
        run.call()
    refused, _ = run.call()
    assert refused["decision"] == "deny" and loopwatch_said(refused["reason"]) is Blocked


def test_attended_repeats_are_refused_and_the_run_never_ended(store, monkeypatch):
    monkeypatch.setenv("LOOPWATCH_PROFILE", "attended")
    run = Run(store)
    answers = [run.call() for _ in range(8)]
    refusals = [before for before, after in answers if before is not None and after is None]
    assert len(refusals) == 5 and all(loopwatch_said(r["reason"]) is Blocked for r in refusals)
    assert run.send("0.24.4-UserPromptSubmit-continuation") is None
    assert store.state("qwen-s1", "").stopped is None and store.sessions(session="qwen-s1")[0]["stops"] == 0


def test_healthy_calls_are_left_alone(store, monkeypatch):
    monkeypatch.setenv("LOOPWATCH_PROFILE", "unattended")
    run = Run(store)
    for i in range(12):
        run.n += 1
        ids = {"tool_call_id": f"call_{run.n}", "tool_use_id": f"toolu_{run.n}"}
        assert run.send("0.24.4-UserPromptSubmit-continuation") is None
        assert run.send("0.24.4-PreToolUse", **ids, tool_input={"command": f"echo {i}"}) is None
        assert run.send("0.24.4-PostToolUse", **ids, tool_input={"command": f"echo {i}"}) is None


def test_a_sub_agents_loop_is_its_own(store, monkeypatch):
    monkeypatch.setenv("LOOPWATCH_PROFILE", "attended")
    main, sub = Run(store), Run(store, agent="general-purpose-call_1_0")
    main.call()
    main.call()
    sub.call()
    sub.call()
    assert main.call()[0] is None and sub.call()[0] is None  # two and two: no streak of three
    refused, _ = sub.call()
    assert refused["decision"] == "deny"


# -- headless or not ---------------------------------------------------------------------------------

HEADLESS = [
    (["--yolo", "-o", "stream-json", "SCENARIO:loop do it"], "qwen -o stream-json"),
    (["--yolo", "do the task"], "qwen with a prompt"),
    (["-p", "do it"], "qwen -p"),
    (["--prompt=do it", "--yolo"], "qwen -p"),
    (["--acp"], "qwen --acp"),
    (["--input-format", "stream-json"], "qwen --input-format stream-json"),
    (["-m", "qwen3-coder", "fix the bug"], "qwen with a prompt"),
    (["--", "-a prompt that starts with a dash"], "qwen with a prompt"),
    # interactive: `-i`, or nothing that says headless (stdin decides then: None)
    (["--yolo", "-i", "start with this"], ""),
    (["-o", "stream-json", "--prompt-interactive=x"], ""),
    (["--yolo"], None),
    (["-m", "qwen3-coder"], None),
    (["--allowed-tools", "read_file", "glob"], None),  # an array option takes the words after it
    (["-o", "text"], None),
]


@pytest.mark.parametrize("args,said", HEADLESS)
def test_headless_is_qwens_own_rule(args, said):
    assert is_headless(args) == said


def test_the_session_process_argv_of_each_release_is_recognised():
    node = ["/usr/bin/node", "--expose-gc", "/x/node_modules/@qwen-code/qwen-code/cli.js"]
    assert QWEN.headless([*node, "--yolo", "-o", "stream-json", "p"]) == "qwen -o stream-json"
    assert QWEN.headless([*node, "--yolo"]) == ""
    assert QWEN.headless(["/usr/bin/node", "/x/node_modules/.bin/qwen", "-p", "x"]) == "qwen -p"  # 0.15
    assert QWEN.headless(["/usr/bin/python3", "run.py", "-p", "x"]) is None


# -- the session process: what a sub-agent's stop interrupts ----------------------------------------

FAKE_SESSION = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    out = sys.argv[-1]
    def interrupted(signum, frame):  # as node does: the session ends, its hook runs on
        open(out + ".sigint", "w").write(str(os.getpid()))
        os._exit(130)
    signal.signal(signal.SIGINT, interrupted)
    child = os.environ.get("FAKE_CHILD")
    if child:  # a launcher: start the session below it
        env = dict(os.environ, FAKE_CHILD="", QWEN_CODE_NO_RELAUNCH=os.environ.get("CHILD_MARK", "true"))
        sys.exit(subprocess.call([sys.executable, *sys.argv[0:1], *sys.argv[1:]], env=env))
    code = os.environ["HOOK_CODE"]
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=os.environ["SRC"]))
    open(out, "w").write(str(done.returncode))
    time.sleep(float(os.environ.get("LINGER", "0")))
    """
)

FIND = textwrap.dedent(
    """
    import json, os
    from loopwatch._hosts.qwen_code import session_process
    found = session_process()
    open(os.environ["OUT"], "w").write(json.dumps([os.getppid(), found and found[0]]))
    """
)


def _fake_qwen(tmp_path: Path) -> Path:
    """A stand-in for Qwen's node entry: a Python script at `@qwen-code/qwen-code/cli.js`."""
    entry = tmp_path / "node_modules" / "@qwen-code" / "qwen-code" / "cli.js"
    entry.parent.mkdir(parents=True)
    entry.write_text(FAKE_SESSION)
    return entry


@pytest.mark.slow
@pytest.mark.parametrize("mark,found", [("true", True), ("", False)])
def test_the_session_is_the_process_qwen_marks_never_the_launcher_above_it(tmp_path, mark, found):
    entry = _fake_qwen(tmp_path)
    out = tmp_path / "found.json"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QWEN")},
        "SRC": SRC,
        "HOOK_CODE": FIND,
        "OUT": str(out),
        "FAKE_CHILD": "1",
        "CHILD_MARK": mark,
    }
    subprocess.run([sys.executable, str(entry), "-o", "stream-json", "p", str(tmp_path / "done")], env=env, timeout=60)
    parent, session = json.loads(out.read_text())
    assert session == (parent if found else None)


END = textwrap.dedent(
    """
    import json, os
    from loopwatch._hosts import host
    from loopwatch._hosts.base import Payload
    said = []
    agent = os.environ["AGENT"]
    ended = host("qwen-code").end_run(Payload("qwen-code", os.environ["EVENT"], "s", agent, None), "a loop", said.append)
    with open(os.environ["OUT"] + ".part", "w") as fh:
        fh.write(json.dumps([ended, said]))
    os.replace(os.environ["OUT"] + ".part", os.environ["OUT"])  # whole, or not there yet
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,agent,event,signalled",
    [
        (["-o", "stream-json", "loop"], "general-purpose-call_1_0", "PreToolUse", True),  # a sub-agent, headless
        (["--yolo", "-i", "loop"], "general-purpose-call_1_0", "PreToolUse", False),  # interactive: never
        (["-o", "stream-json", "loop"], "", "PreToolUse", False),  # the main agent: its next request ends it
        (["-o", "stream-json", "loop"], "", "Resume", False),  # ... told on stderr, no signal
    ],
)
def test_a_sub_agents_stop_interrupts_only_a_headless_session(tmp_path, args, agent, event, signalled):
    entry = _fake_qwen(tmp_path)
    out, done = tmp_path / "end.txt", tmp_path / "done"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("QWEN")},
        "SRC": SRC,
        "HOOK_CODE": END,
        "OUT": str(out),
        "AGENT": agent,
        "EVENT": event,
        "QWEN_CODE_NO_RELAUNCH": "true",
        "LINGER": "60" if signalled else "0",  # only the signal ends it sooner
    }
    proc = subprocess.run(
        [sys.executable, str(entry), *args, str(done)],
        env=env,
        timeout=120,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300  # the hook may still be writing when its interrupted parent has gone
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    ended, said = json.loads(out.read_text())
    assert (tmp_path / "done.sigint").exists() is signalled
    assert ended is (signalled or event == "Resume")
    if signalled:
        assert proc.returncode == 130
        assert "SIGINT" in said[0] and "loopwatch stopped the run: a loop" in proc.stderr
    elif event == "Resume":
        assert "loopwatch stopped the run: a loop (no further model request)" in proc.stderr
    else:
        assert "loopwatch" not in proc.stderr
    if "-i" in args:
        assert "interactive" in said[0]


def test_nothing_is_signalled_outside_a_qwen_session():
    said: list[str] = []
    assert QWEN.end_run(Payload("qwen-code", BEFORE, "s", "general-purpose-call_1_0", None), "x", said.append) is False
    assert session_process() is None and "no Qwen Code session" in said[0]


# -- what a project's `.env` and settings "env" may do ------------------------------------------


def _hook(tmp_path: Path, payload_name: str, env: dict[str, str], **changes) -> subprocess.CompletedProcess[bytes]:
    raw = {**payload(payload_name), "cwd": str(tmp_path), **changes}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "QWEN", "XDG_"))}
    full = {**clean, "PYTHONPATH": SRC, "HOME": str(tmp_path / "home"), **env}
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", "hook", "qwen-code"],
        input=json.dumps(raw).encode(),
        env=full,
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )


PROVENANCE = "QWEN_CODE_PRIVATE_RELAUNCH_ENV_PROVENANCE"


@pytest.mark.slow
@pytest.mark.parametrize("source", ["dotEnv", "settingsEnv"])
def test_a_project_env_cannot_switch_the_guard_off(tmp_path, source):
    """Qwen Code puts what a project's `.env` or settings `env` set into its hooks'
    environment, and names those variables in its provenance: they may only tighten."""
    state = tmp_path / "state"
    env = {
        "LOOPWATCH_STATE_DIR": str(state),
        "LOOPWATCH_MODE": "off",
        PROVENANCE: json.dumps({"dotEnv": [], "settingsEnv": [], source: ["LOOPWATCH_MODE"]}),
    }
    done = _hook(tmp_path, "0.24.4-PostToolUse", env)
    assert done.returncode == 0 and (state / "state.db").exists()
    assert "LOOPWATCH_MODE set by a" in (state / "hook.log").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", [".qwen/.env", ".env", ".qwen/settings.json"])
def test_before_qwen_names_them_a_value_the_project_set_is_taken_as_the_projects(tmp_path, name):
    """0.23 puts a project's `.env` and settings `env` in its hooks' environment and says
    nothing of it: a value the project's file sets is the project's, and may only tighten."""
    state = tmp_path / "state"
    path = tmp_path / name
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"env": {"LOOPWATCH_MODE": "off"}}' if name.endswith(".json") else "LOOPWATCH_MODE=off\n")
    done = _hook(tmp_path, "0.23.4-PostToolUse", {"LOOPWATCH_STATE_DIR": str(state), "LOOPWATCH_MODE": "off"})
    assert done.returncode == 0 and (state / "state.db").exists()
    assert f"LOOPWATCH_MODE set by {path}: not trusted" in (state / "hook.log").read_text()


@pytest.mark.slow
def test_a_value_the_project_did_not_set_is_the_users(tmp_path):
    state = tmp_path / "state"
    (tmp_path / ".env").write_text("LOOPWATCH_MODE=enforce\n")
    _hook(tmp_path, "0.23.4-PostToolUse", {"LOOPWATCH_STATE_DIR": str(state), "LOOPWATCH_MODE": "off"})
    assert not state.exists()


@pytest.mark.slow
def test_the_users_own_environment_still_switches_it_off(tmp_path):
    state = tmp_path / "state"
    env = {
        "LOOPWATCH_STATE_DIR": str(state),
        "LOOPWATCH_MODE": "off",
        PROVENANCE: json.dumps({"dotEnv": ["OTHER"], "settingsEnv": []}),
    }
    assert _hook(tmp_path, "0.24.4-PostToolUse", env).returncode == 0
    assert not state.exists()


@pytest.mark.slow
def test_a_project_env_may_make_the_run_unattended_never_attended(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text('profile = "unattended"\n')
    for profile in ("attended", "unattended"):
        state = tmp_path / f"state-{profile}"
        env = {
            "LOOPWATCH_STATE_DIR": str(state),
            "LOOPWATCH_PROFILE": profile,
            "LOOPWATCH_CONFIG": str(mine),
            PROVENANCE: json.dumps({"dotEnv": [], "settingsEnv": ["LOOPWATCH_PROFILE"]}),
        }
        _hook(tmp_path, "0.24.4-PostToolUse", env)
        store = Store(state)
        try:
            assert store.state(payload("0.24.4-PostToolUse")["session_id"], "").profile == "unattended"
        finally:
            store.close()


def test_qwens_editing_tools_are_writers_in_its_runs_only():
    from loopwatch._hosts.monitors import config_for

    qwen, anywhere = config_for("qwen-code", Config.make({})), Config.make({})
    assert [qwen.rule(t).role for t in ("edit", "notebook_edit", "write_file")] == ["writer"] * 3
    assert anywhere.rule("edit").role == "" and config_for("swe-agent", anywhere).rule("edit").role == ""


def test_a_reworded_description_or_timeout_is_the_same_call():
    """What Qwen's shell tool is told to describe "for the user", and how long to wait,
    say nothing of what runs: the same failing command reworded is a repeat."""
    monitor = monitor_for("qwen-code", Config.make({}))
    text = payload("0.24.4-PostToolUseFailure")["error"]
    verdicts = [
        monitor.observe(
            ToolCall(
                "run_shell_command",
                {"command": "ls /nonexistent-dir-xyz", "description": f"List it, try {i}", "timeout": 30000 + i},
                text,
                error=True,
                at=float(i),
            )
        )
        for i in range(3)
    ]
    assert verdicts[-1].action is Action.NUDGE, verdicts


@pytest.mark.slow
def test_a_continuation_is_answered_from_the_count_of_stops_alone(tmp_path):
    """Qwen asks before every model request: a session never stopped is answered from its
    count of stops, nothing else read or written; a stopped one gets the block."""
    from loopwatch._hook import _never_stopped

    state = tmp_path / "state"
    env = {"LOOPWATCH_STATE_DIR": str(state), "LOOPWATCH_PROFILE": "unattended"}
    session = payload("0.24.4-UserPromptSubmit-continuation")["session_id"]
    assert _never_stopped(str(state), session, "") is False  # no state yet: the whole guard decides
    assert _hook(tmp_path, "0.24.4-UserPromptSubmit-first", env).stdout == b""
    assert _never_stopped(str(state), session, "") is True
    before = (state / "state.db").stat().st_mtime_ns
    done = _hook(tmp_path, "0.24.4-UserPromptSubmit-continuation", env)
    assert done.returncode == 0 and done.stdout == b"" and (state / "state.db").stat().st_mtime_ns == before
    for n in range(1, 5):
        ids = {"tool_call_id": f"call_{n}", "tool_use_id": f"toolu_{n}"}
        _hook(tmp_path, "0.24.4-PreToolUse", env, **ids, tool_input={"command": "ls /nonexistent-dir-xyz"})
        _hook(tmp_path, "0.24.4-PostToolUseFailure", env, **ids, tool_input={"command": "ls /nonexistent-dir-xyz"})
    assert _never_stopped(str(state), session, "") is False
    said = json.loads(_hook(tmp_path, "0.24.4-UserPromptSubmit-continuation", env).stdout)
    assert said["decision"] == "block" and said["continue"] is False
