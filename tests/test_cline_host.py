"""The Cline host (`loopwatch._hosts.cline`) on what the real CLI sent and wrote.

The payloads, session files and `--json` output under tests/fixtures/cline/ were kept from
runs of the real Cline CLI (3.0.57 and 3.0.65) driven by the scripted model of these tests
(`python tests/real_cline_support.py fixtures tests/fixtures/cline`; paths replaced by
`/MACHINE`): nothing here is written from Cline's documentation.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from loopwatch._core.identity import IGNORED, identifying
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
from loopwatch._hosts import WRITERS
from loopwatch._hosts import cline as host
from loopwatch._hosts.base import AFTER, BEFORE, Call, SettingsError

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "cline"
CURRENT = "3.0.65"
VERSIONS = ("3.0.57", "3.0.65")


def payload(scenario: str, name: str) -> dict:
    return json.loads((FIXTURES / CURRENT / scenario / "payloads" / name).read_text())


def payloads(scenario: str) -> list[tuple[str, dict]]:
    """(file event, payload) of one run, in the order Cline sent them."""
    found = sorted((FIXTURES / CURRENT / scenario / "payloads").glob("*.json"), key=lambda p: _order(p.name))
    return [(p.name.split(".", 1)[0], json.loads(p.read_text())) for p in found]


def _order(name: str) -> tuple[str, int]:
    event, _, rest = name.partition(".")
    call = rest.rsplit(".", 2)[-2]
    return call, 0 if event == "PreToolUse" else 1


def raw(value: dict) -> bytes:
    return json.dumps(value).encode()


# -- parse ------------------------------------------------------------------------------------


def test_a_call_before_it_runs():
    got = parse(raw(payload("loop", "PreToolUse.run_commands.call_scripted_00001.json")), "cline", event="PreToolUse")
    assert (got.host, got.event, got.native, got.agent, got.parent) == ("cline", BEFORE, "PreToolUse", "", None)
    assert (
        got.session
        == payload("loop", "PreToolUse.run_commands.call_scripted_00001.json")["sessionContext"]["rootSessionId"]
    )
    assert got.cwd == "/MACHINE/work"
    (call,) = got.calls
    assert (call.name, call.input, call.call_id) == (
        "run_commands",
        {"commands": ["ls /nonexistent-dir-xyz"]},
        "call_scripted_00001",
    )


def test_a_failing_command_is_a_failed_call_though_cline_says_success():
    """`postToolUse.success` is true for a command that exited 2: only the item says so."""
    data = payload("loop", "PostToolUse.run_commands.call_scripted_00001.json")
    assert data["postToolUse"]["success"] is True
    assert data["tool_result"]["output"][0]["error"] == "Command exited with code 2"
    (call,) = parse(raw(data), "cline").calls
    assert call.error and not call.interrupted
    assert call.result == data["tool_result"]["output"]


def test_calls_that_succeeded_are_not_failures():
    """The healthy run: 8 echos, a test written, run (it fails), read, fixed, run again."""
    errors = [parse(raw(d), "cline").calls[0].error for e, d in payloads("healthy") if e == "PostToolUse"]
    assert errors == [False] * 9 + [True] + [False] * 3


def test_the_event_comes_from_the_payload_and_the_command_line_names_it_too():
    data = payload("loop", "PostToolUse.run_commands.call_scripted_00001.json")
    assert parse(raw(data), "cline").event == AFTER
    assert parse(raw(data), "cline", event="PreToolUse").event == AFTER  # the payload's word wins
    del data["hookName"]
    assert parse(raw(data), "cline", event="PostToolUse").event == AFTER


def test_a_sub_agent_is_an_agent_of_its_own_with_its_parent_named():
    subs = [d for e, d in payloads("subagent") if d.get("parent_agent_id")]
    assert subs
    for data in subs:
        got = parse(raw(data), "cline")
        assert got.agent == data["agent_id"] and got.parent == data["parent_agent_id"]
        assert got.session == data["sessionContext"]["rootSessionId"]  # the same session as its parent
    main = [d for e, d in payloads("subagent") if not d.get("parent_agent_id")]
    assert main and all(parse(raw(d), "cline").agent == "" for d in main)


def test_a_refused_call_is_reported_after_it_with_the_refusal_in_its_place():
    """Attended: loopwatch put a refusal in the call's place; Cline's PostToolUse then
    carries the refusal's input and its failure, under the call's own id."""
    after = [
        d for e, d in payloads("attended") if e == "PostToolUse" and host.loopwatch_refused(d["tool_result"]["input"])
    ]
    assert len(after) == 9
    for data in after:
        (call,) = parse(raw(data), "cline").calls
        assert call.error and call.call_id == data["tool_result"]["id"]
        assert "loopwatch blocked this call" in data["tool_result"]["output"][0]["result"]


def test_shell_aliases_are_one_input():
    assert host.call_input("run_commands", {"cmd": "ls"}) == {"commands": ["ls"]}
    assert host.call_input("run_commands", {"command": ["ls", "pwd"], "description": "x"}) == {
        "commands": ["ls", "pwd"],
        "description": "x",
    }
    assert host.call_input("run_commands", {"commands": "ls"}) == {"commands": ["ls"]}
    assert host.call_input("editor", {"cmd": "ls"}) == {"cmd": "ls"}


def test_a_reworded_description_is_not_identity():
    one = host.call_input("run_commands", {"commands": ["ls /x"], "description": "List it, try 1"})
    two = host.call_input("run_commands", {"commands": ["ls /x"], "description": "Look in the folder, try 2"})
    ignore = IGNORED["run_commands"]
    assert identifying(one, None, ignore) == identifying(two, None, ignore) == {"commands": ["ls /x"]}


def test_failure_rules():
    assert host.output_failed([{"query": "a", "result": "", "success": True}]) is False
    assert host.output_failed([{"success": True}, {"success": False}]) is True
    assert host.output_failed({"error": "✖ Invalid input"}) is True  # a tool-level error
    assert host.output_failed([{"success": True}], tool_error="[object Object]") is True
    assert host.output_failed([{"success": True}], success=False) is True
    aborted = [{"query": "ls", "result": "", "error": host.ABORTED, "success": False}]
    assert host.interrupted(aborted) and not host.interrupted([{"error": "Command exited with code 2"}])


def test_an_oversize_payload_is_identified_by_its_head():
    data = payload("subagent", next(n for n, d in _named("subagent") if d.get("parent_agent_id")))
    from loopwatch._hook.payload import _parse_oversize

    got = _parse_oversize(raw(data), "cline", "PreToolUse")
    assert got.oversize and got.session == data["sessionContext"]["rootSessionId"]
    assert got.agent == data["agent_id"] and got.parent == data["parent_agent_id"]


def _named(scenario: str) -> list[tuple[str, dict]]:
    folder = FIXTURES / CURRENT / scenario / "payloads"
    return [(p.name, json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]


# -- answers ----------------------------------------------------------------------------------


def _run(tmp_path, events, profile: str, config: dict | None = None, logs: list[str] | None = None):
    """Feed payloads to the guard as the hook does; the answers, in order (`logs` hears
    what the hook would write to hook.log)."""
    store = Store(str(tmp_path / "state"))
    answers = []
    os.environ["LOOPWATCH_PROFILE"] = profile
    log = logs.append if logs is not None else None
    try:
        for i, data in enumerate(events):
            answers.append(handle(parse(raw(data), "cline"), dict(config or {}), store, log=log, now=1000.0 + i))
    finally:
        del os.environ["LOOPWATCH_PROFILE"]
        store.close()
    return answers


def _loop(scenario: str = "loop", calls: int = 3) -> list[dict]:
    """The run's payloads of its first `calls` calls, then its next PreToolUse again and
    again under new call ids (what the model asked next)."""
    pre = [d for e, d in payloads(scenario) if e == "PreToolUse"]
    post = [d for e, d in payloads(scenario) if e == "PostToolUse"]
    events = [x for pair in zip(pre[:calls], post[:calls], strict=True) for x in pair]
    for i in range(3):
        again = json.loads(json.dumps(pre[calls]))
        again["tool_call"]["id"] = f"call_again_{i}"
        events.append(again)
    return events


def test_unattended_the_repeat_is_cancelled_before_it_runs(tmp_path):
    answers = _run(tmp_path, _loop(), "unattended")
    assert [a.stdout for a in answers[:4]] == [None, None, None, answers[3].stdout]
    assert "context" in answers[5].stdout and "going in circles" in answers[5].stdout["context"]  # the nudge
    stop = answers[6].stdout
    assert stop["cancel"] is True and stop["errorMessage"].startswith("loopwatch stopped the run")
    assert all(a.code == 0 and not a.stderr for a in answers)


def test_attended_the_repeat_is_put_aside_for_a_command_that_says_why(tmp_path):
    answers = _run(tmp_path, _loop(), "attended")
    refusals = [a.stdout for a in answers[6:]]
    for answer in refusals:
        assert "cancel" not in answer
        (command,) = answer["overrideInput"]["commands"]
        assert command.startswith(": loopwatch-refused call_again_")
        assert answer["context"].startswith("loopwatch blocked this call")
    # every refusal a different input: Cline's own check never counts them as one call
    assert len({a["overrideInput"]["commands"][0] for a in refusals}) == len(refusals) == 3


def test_a_refusal_another_hook_undid_is_counted_as_a_call_that_ran(tmp_path):
    """A later hook (a project's) put the refused call back: Cline's report of it carries
    the model's own input, not the refusal. The call ran: it is counted, and said."""
    pre = [d for e, d in payloads("attended") if e == "PreToolUse"]
    post = [d for e, d in payloads("attended") if e == "PostToolUse"]
    events = [x for pair in zip(pre[:4], post[:4], strict=True) for x in pair]
    undone = json.loads(json.dumps(post[3]))
    undone["tool_result"].update(input=pre[3]["tool_call"]["input"], output=post[0]["tool_result"]["output"])
    events[7] = undone
    logs: list[str] = []
    answers = _run(tmp_path, events, "attended", logs=logs)
    assert "overrideInput" in answers[6].stdout  # refused...
    assert "going in circles" in answers[7].stdout["context"]  # ...ran anyway, and counted: still circling
    store = Store(str(tmp_path / "state"))
    try:
        (row,) = store.sessions()
    finally:
        store.close()
    assert row["actions"] == 4 and row["blocks"] == 2  # the refusal, and the block worded "still circling"
    said = (
        "its refusal of a run_commands call was undone by another hook (the call ran as the model asked); "
        "a project's hooks or plugins run after loopwatch's: `loopwatch doctor` names them"
    )
    assert [line for line in logs if "undone" in line] == [said]


def test_the_refusal_runs_in_sh_and_says_the_reason_whatever_it_holds(tmp_path):
    hostile = 'it\'s $(touch pwned) `touch pwned2`; "quoted" \\ \n newline \x1b[31m'
    (command,) = host.refusal_input("run_commands", "call'; touch pwned3; '", hostile)["commands"]
    done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert "$(touch pwned)" in done.stderr and "\x1b" not in done.stderr
    assert not list(tmp_path.iterdir())  # nothing ran, nothing was written
    assert host.loopwatch_refused({"commands": [command]})


def test_refusals_of_other_tools_fail_without_writing(tmp_path):
    editor = host.refusal_input("editor", "c1", "why")
    reads = host.refusal_input("read_files", "c1", "why")
    assert editor["path"].startswith("/dev/null/") and reads["files"][0]["path"].startswith("/dev/null/")
    assert host.loopwatch_refused(editor) and host.loopwatch_refused(reads)
    assert host.refusal_input("ask_question", "c1", "why") is None


def test_after_a_call_a_nudge_is_context_and_a_stop_is_a_cancel(tmp_path):
    from loopwatch._core.session import Decision
    from loopwatch._core.verdict import Action, Verdict

    after = parse(raw(payload("loop", "PostToolUse.run_commands.call_scripted_00001.json")), "cline")
    nudge = Decision(Action.NUDGE, "loopwatch: look", "why", Verdict(Action.NUDGE, description="why"))
    assert host.HOST.reply(after, nudge, None).stdout == {"context": "loopwatch: look"}
    held = host.HOST.reply(after, Decision(), "the same error 4 times")
    assert held.stdout == {"cancel": True, "errorMessage": "loopwatch stopped the run: the same error 4 times"}
    assert host.HOST.reply(after, Decision(), None).stdout is None


def test_a_sub_agents_stop_ends_its_parent_at_the_report_of_the_spawning_call(tmp_path):
    events = _run_sub(tmp_path)
    assert events[-1].stdout["cancel"] is True  # the parent's PostToolUse of spawn_agent
    assert "a sub-agent was stopped" in events[-1].stdout["errorMessage"]


def _run_sub(tmp_path):
    named = payloads("subagent")
    sub_pre = [d for e, d in named if e == "PreToolUse" and d.get("parent_agent_id")]
    sub_post = [d for e, d in named if e == "PostToolUse" and d.get("parent_agent_id")]
    spawn_pre = next(d for e, d in named if e == "PreToolUse" and d["tool_call"]["name"] == "spawn_agent")
    spawn_post = next(d for e, d in named if e == "PostToolUse" and d["tool_result"]["name"] == "spawn_agent")
    events = [spawn_pre]
    events += [x for pair in zip(sub_pre[:3], sub_post[:3], strict=True) for x in pair]
    events += [sub_pre[3], spawn_post]
    answers = _run(tmp_path, events, "unattended")
    assert answers[-2].stdout["cancel"] is True  # the sub-agent's 4th call
    return answers


# -- where the hook is and what a project can do ---------------------------------------------------


def test_hook_file_names_as_cline_reads_them():
    assert host.hook_event_of("PreToolUse") == "PreToolUse"
    assert host.hook_event_of("pretooluse.SH") == "PreToolUse"
    assert host.hook_event_of("PostToolUse.py") == "PostToolUse"
    assert host.hook_event_of("PreToolUse.txt") is None
    assert host.hook_event_of("PreToolUse.loopwatch-1-ab.tmp") is None
    assert host.hook_event_of("TaskStart") == "TaskStart"


def test_install_writes_marked_files_and_leaves_others_alone():
    agent = host.HOST
    before = {"PostToolUse.sh": "#!/bin/sh\necho '{}'\n"}
    after = agent.install(before, "/py -I -m loopwatch hook cline")
    assert after["PostToolUse.sh"] == before["PostToolUse.sh"]
    assert after["PreToolUse"].startswith("#!/bin/sh\n")
    assert after["PreToolUse"].splitlines()[-1] == "exec /py -I -m loopwatch hook cline PreToolUse"
    assert agent.hooked(after) == {
        "PreToolUse": ["/py -I -m loopwatch hook cline PreToolUse"],
        "PostToolUse": ["/py -I -m loopwatch hook cline PostToolUse"],
    }
    assert agent.install(after, "/py -I -m loopwatch hook cline") == after  # twice: the same
    assert agent.uninstall(after) == before
    older = {**after, "TaskStart": agent.file_text("TaskStart", "/py -m loopwatch hook cline")}
    assert agent.install(older, "/py -I -m loopwatch hook cline") == after  # an event no longer hooked: removed
    assert agent.uninstall(older) == before
    with pytest.raises(SettingsError, match="PreToolUse is there and is not loopwatch's"):
        agent.install({"PreToolUse": "#!/bin/sh\nmy own\n"}, "/py -m loopwatch hook cline")


@pytest.mark.parametrize(
    ("tool", "value", "refused"),
    [
        ("run_commands", {"commands": ["mv ~/Documents/Cline/Hooks/PreToolUse /tmp/x"]}, "Documents/Cline/Hooks"),
        ("run_commands", {"commands": ["rm -rf /home/u/Documents/Cline"]}, "Documents/Cline"),
        (
            "run_commands",
            {"commands": ["mkdir -p .clinerules/hooks && cp /tmp/h .clinerules/hooks/PreToolUse"]},
            ".clinerules/hooks",
        ),
        ("run_commands", {"commands": ["echo '{}' > .cline/plugins/undo.js"]}, ".cline/plugins"),
        ("run_commands", {"commands": ["ls"], "command": ["chmod -x ~/.cline/hooks/PostToolUse"]}, None),
        ("editor", {"path": "/w/.clinerules/hooks/PreToolUse", "new_text": "#!/bin/sh"}, ".clinerules/hooks"),
        ("editor", {"path": "/home/u/Documents/Cline/Hooks/PreToolUse", "new_text": ""}, "Documents/Cline/Hooks"),
        ("run_commands", {"commands": ["cat .clinerules/hooks/PreToolUse", "ls ~/Documents/Cline/Hooks"]}, None),
        ("run_commands", {"commands": ["echo 'use tabs' > .clinerules"]}, None),
        ("run_commands", {"commands": ["rm -r ~/Documents/Cline/Rules/old"]}, None),
        ("run_commands", {"commands": ["cat .cline/hooks/x 2>&1"]}, None),
        ("editor", {"path": "/w/README.md", "new_text": "hooks live in .clinerules/hooks"}, None),
        ("read_files", {"files": [{"path": "/w/.clinerules/hooks/PreToolUse"}]}, None),
    ],
)
def test_the_agent_may_not_write_where_hooks_are(tool, value, refused):
    call = Call(tool, host.call_input(tool, value))
    assert host.HOST.switches_off(call, "/w") == refused


def test_the_order_cline_runs_hooks_in():
    """What the real CLI was seen to do: files sorted by full path, `localeCompare`."""
    runs = "/work/probe/cline/runs/3.0.65"
    seen = [
        f"{runs}/order-work/home/.cline/hooks/PreToolUse",
        f"{runs}/order-work/home/Documents/Cline/Hooks/PreToolUse",
        f"{runs}/order-work/work/.cline/hooks/PreToolUse",
        f"{runs}/order-work/work/.clinerules/hooks/PreToolUse",
    ]
    other = [f"{runs}/order-a-work/a-work/.clinerules/hooks/PreToolUse", f"{runs}/order-a-work/home/.cline/hooks/X"]
    for first, then in [*zip(seen, seen[1:]), tuple(other)]:
        assert host._sort_key(first) < host._sort_key(then), (first, then)


def test_doctor_names_a_project_hook_that_runs_after_loopwatchs_and_project_plugins(tmp_path):
    home, late, early = tmp_path / "b-home", tmp_path / "w-project", tmp_path / "a-project"
    for project in (late, early):
        (project / ".clinerules" / "hooks").mkdir(parents=True)
        (project / ".clinerules" / "hooks" / "PreToolUse.sh").write_text("#!/bin/sh\n")
        (project / ".clinerules" / "hooks" / "TaskStart").write_text("#!/bin/sh\n")
    (late / ".cline" / "plugins").mkdir(parents=True)
    (late / ".cline" / "plugins" / "undo.js").write_text("")
    env = {"HOME": str(home)}
    found = host.HOST.switch_offs(late, env)
    assert [Path(f.path).relative_to(late).as_posix() for f in found] == [
        ".clinerules/hooks/PreToolUse.sh",
        ".cline/plugins",
    ]
    assert "undo a refusal" in found[0].what
    assert host.HOST.switch_offs(early, env) == []  # it runs first: loopwatch's answer comes last
    (late / ".cline" / "hooks").mkdir()
    (late / ".cline" / "hooks" / "PostToolUse").write_text(host.HOST.file_text("PostToolUse", "loopwatch hook cline"))
    assert len(host.HOST.switch_offs(late, env)) == 2  # loopwatch's own, installed with --project: not one


def test_a_project_whose_clinerules_is_a_file_gets_its_hooks_in_dot_cline(tmp_path):
    assert host.HOST.settings_file("project", {}, tmp_path) == tmp_path / ".clinerules" / "hooks"
    (tmp_path / ".clinerules").write_text("use tabs\n")
    assert host.HOST.settings_file("project", {}, tmp_path) == tmp_path / ".cline" / "hooks"


# -- the environment a project sets ---------------------------------------------------------------


def test_a_project_dotenv_only_tightens(tmp_path, monkeypatch):
    """Cline loads a project's `.env` into its environment, and so into the hook's: what
    it sets is not the user's word. A value naming another variable (Cline's loader expands
    `${VAR}`) cannot be matched: it is taken as the file's too."""
    from loopwatch._trust import trusted_environ

    (tmp_path / ".env").write_text("LOOPWATCH_MODE=off\nLOOPWATCH_PROFILE=attended\nLOOPWATCH_STATE_DIR=${HOME}/x\n")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path / ".env") in host.HOST.env_files(str(tmp_path), {})
    env = {
        "LOOPWATCH_MODE": "off",
        "LOOPWATCH_PROFILE": "attended",
        "LOOPWATCH_STATE_DIR": f"{tmp_path}/x",
        "HOME": str(tmp_path),
    }
    notes: list[str] = []
    kept = trusted_environ(env, [str(tmp_path)], notes.append, host.HOST)
    assert not {"LOOPWATCH_MODE", "LOOPWATCH_PROFILE", "LOOPWATCH_STATE_DIR"} & set(env) and kept == {}
    assert len(notes) == 3 and all("not trusted" in n for n in notes)
    # a value the user set themselves, which the file does not match, is theirs
    env = {"LOOPWATCH_MODE": "warn", "HOME": str(tmp_path)}
    assert trusted_environ(env, [str(tmp_path)], None, host.HOST) == {} and env["LOOPWATCH_MODE"] == "warn"


def test_the_environment_cline_was_started_with_tells_the_users_variables_from_the_files(tmp_path):
    """Cline's own process keeps the environment it was started with (`/proc/PID/environ`):
    a variable the user exported is there, one Bun loaded from a `.env` afterwards is not."""
    fake = tmp_path / "cline"
    fake.symlink_to("/bin/sh")
    code = (
        "import sys, json; sys.path.insert(0, %r); from loopwatch._hosts.cline import HOST;"
        " e = HOST.started_environ(); print(json.dumps(e and {k: e.get(k) for k in ('LW_USER', 'HOME')}))"
        % str(HERE.parent / "src")
    )
    script = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}; true"
    env = {"LW_USER": "mine", "HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [str(fake), "-c", script, "--json", "x"], env=env, capture_output=True, text=True, check=False
    )
    assert json.loads(done.stdout) == {"LW_USER": "mine", "HOME": str(tmp_path)}
    other = subprocess.run(["/bin/sh", "-c", script], env=env, capture_output=True, text=True, check=False)
    assert json.loads(other.stdout) is None  # not Cline (or its hub): it cannot say


def test_the_hook_ignores_a_project_dotenv_that_turns_it_off(tmp_path):
    """The whole hook, as Cline runs it: a `.env` in the folder it was started in says
    LOOPWATCH_MODE=off, and the call is still checked (state written)."""
    (tmp_path / ".env").write_text("LOOPWATCH_MODE=off\n")
    data = payload("loop", "PostToolUse.run_commands.call_scripted_00001.json")
    state = tmp_path / "state"
    env = {**os.environ, "LOOPWATCH_MODE": "off", "LOOPWATCH_STATE_DIR": str(state), "HOME": str(tmp_path)}
    env["PYTHONPATH"] = str(HERE.parent / "src")
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "hook", "cline", "PostToolUse"],
        input=raw(data),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (state / "state.db").exists()
    assert "LOOPWATCH_MODE set by" in (state / "hook.log").read_text()


# -- attended or not -------------------------------------------------------------------------------


def test_the_session_manifest_says_whether_anyone_watches(tmp_path):
    sid = "1796528218606_czgeq"
    folder = tmp_path / ".cline" / "data" / "sessions" / sid
    folder.mkdir(parents=True)
    env = {"HOME": str(tmp_path)}
    got = parse(raw(payload("loop", "PreToolUse.run_commands.call_scripted_00001.json")), "cline")
    got.session = sid
    assert host.HOST.detect_profile(env, got) is None
    (folder / f"{sid}.json").write_text(json.dumps({"session_id": sid, "interactive": False, "status": "running"}))
    assert host.HOST.detect_profile(env, got) == ("unattended", "Cline session: not interactive")
    (folder / f"{sid}.json").write_text(json.dumps({"session_id": sid, "interactive": True}))
    assert host.HOST.detect_profile(env, got) == ("attended", "Cline session: interactive")
    moved = tmp_path / "elsewhere"
    (moved / sid).mkdir(parents=True)
    (moved / sid / f"{sid}.json").write_text(json.dumps({"interactive": False}))
    assert host.HOST.detect_profile({**env, "CLINE_SESSION_DATA_DIR": str(moved)}, got)[0] == "unattended"
    got.session = "../../etc"
    assert host.HOST.detect_profile(env, got) is None


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["/x/node_modules/.bin/cline", "--json", "do it"], "cline --json"),
        (["/x/cline/bin/.cline", "-c", "/w", "do it"], "cline PROMPT"),
        (["cline", "-m", "model", "-c", "/w"], ""),
        (["cline"], ""),
        (["cline", "--tui"], ""),
        (["cline", "--cline-hub-daemon", "--cwd", "/w"], None),
        (["python3", "x.py"], None),
    ],
)
def test_headless_command_lines(argv, said):
    assert host.HOST.headless(argv) == said


def test_the_person_is_told_on_the_stderr_of_the_cline_process_running_the_hook(tmp_path):
    """In local mode the hook's parent is `cline --json ...`: a line written there is what
    the person running it reads. A process named otherwise is never written to."""
    fake = tmp_path / "cline"
    fake.symlink_to("/bin/sh")
    code = (
        "import sys; sys.path.insert(0, %r); from loopwatch._hosts.cline import HOST;"
        " print(HOST.say(None, 'loopwatch stopped the run: \\x1b[2J the reason'))" % str(HERE.parent / "src")
    )
    script = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}; true"
    done = subprocess.run([str(fake), "-c", script, "--json", "a prompt"], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "True"
    assert done.stderr == "loopwatch stopped the run:  [2J the reason\n"
    other = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, check=False)
    assert other.stdout.strip() == "False" and other.stderr == ""


# -- the session files and `--json` output ----------------------------------------------------------


def _read(path: Path):
    from loopwatch._core.events import Attempt, ToolCall
    from loopwatch._readers import read

    (session,) = list(read(str(path)))
    events = list(session.events)
    return session, [e for e in events if isinstance(e, ToolCall)], [e for e in events if isinstance(e, Attempt)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("scenario", "ran", "never_ran"),
    [("loop", 3, 1), ("attended", 3, 9), ("healthy", 13, 0)],
)
def test_session_files_and_json_output(version, scenario, ran, never_ran):
    folder = FIXTURES / version / scenario
    session, calls, attempts = _read(folder / "session.messages.json")
    assert session.format == "cline" and (len(calls), len(attempts)) == (ran, never_ran)
    if scenario != "healthy":
        assert all(c.error and c.input == {"commands": ["ls /nonexistent-dir-xyz"]} for c in calls)
        assert all(a.input == {"commands": ["ls /nonexistent-dir-xyz"]} for a in attempts)
    else:
        assert [c.error for c in calls].count(True) == 1  # the test failed once, then passed
        assert [c.changed for c in calls if c.name == "editor"] == [("/MACHINE/work/test_calc.py",)] * 2
    stream, calls, _ = _read(folder / "run.jsonl")
    assert stream.format == "cline" and len(calls) == ran  # refusals show only as themselves: left out
    assert stream.outcome == ("aborted" if scenario == "loop" else "completed")


def test_a_sub_agents_session_file_is_a_session_of_its_own():
    folder = FIXTURES / CURRENT / "subagent"
    parent, calls, _ = _read(folder / "session.messages.json")
    child, child_calls, child_attempts = _read(folder / "agent.messages.json")
    assert [c.name for c in calls] == []  # the parent's spawn_agent call: its result was dropped by the stop
    assert child.session.startswith(parent.session) and len(child_calls) == 3 and len(child_attempts) == 1


def test_cline_files_are_told_from_other_formats():
    from loopwatch._readers import detect

    for path in FIXTURES.rglob("*.json*"):
        if path.parent.name == "payloads":
            continue
        assert detect(str(path), path.read_bytes()[:65536]) == "cline", path


def test_editor_is_a_writer_in_clines_runs():
    from loopwatch._core.config import Config
    from loopwatch._hosts import HOST_WRITERS
    from loopwatch._hosts.monitors import config_for

    assert HOST_WRITERS["cline"] == {"editor": "path"} and "editor" not in WRITERS
    assert config_for("cline", Config.make()).rule("editor").role == "writer"


def test_scan_of_clines_state_folder_reads_its_sessions_and_leaves_the_rest_out(tmp_path):
    """`~/.cline` as Cline leaves it (settings, databases, caches, logs, locks, session
    manifests beside the messages): only the messages are read, the rest left out by
    name and counted, and nothing is an error."""
    from click.testing import CliRunner

    from loopwatch._cli import cli

    state = tmp_path / ".cline"
    data = state / "data"
    files = {
        "cache/feature-flags.json": '{"flags": {}}',
        "cache/user_input_history.jsonl": '{"text": "a prompt the person typed"}\n',
        "db/sessions.db": "SQLite format 3\x00",
        "db/teams.db-wal": "\x00\x01",
        "logs/cline.log": '{"level": 30, "msg": "Agent loop caught error"}\n',
        "locks/hub/production.json.lock/owner.json": '{"pid": 1}',
        "settings/providers.json": '{"version": 1, "providers": {}}',
        "settings/cli-notices.json": "{}",
    }
    for name, text in files.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(text)
    for scenario in ("loop", "healthy"):
        messages = json.loads((FIXTURES / CURRENT / scenario / "session.messages.json").read_text())
        sid = messages["sessionId"]
        folder = data / "sessions" / sid
        folder.mkdir(parents=True)
        (folder / f"{sid}.messages.json").write_text(json.dumps(messages))
        (folder / f"{sid}.json").write_text(json.dumps({"session_id": sid, "status": "completed", "prompt": "x"}))
    sub = FIXTURES / CURRENT / "subagent" / "agent.messages.json"
    (data / "sessions" / sid / "agent_1_x.messages.json").write_text(sub.read_text())
    (state / "hooks").mkdir()
    (state / "hooks" / "PreToolUse").write_text("#!/bin/sh\n")
    done = CliRunner().invoke(cli, ["scan", "--json", str(state)])
    assert done.exit_code == 1, done.output  # a loop found: the loop session
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert sorted((r["format"], r["actions"]) for r in rows) == [("cline", 3), ("cline", 3), ("cline", 13)]
    assert not any(r.get("error") for r in rows)
    # left out by name: five folders of data/ (cache, db, locks, logs, settings) and two manifests
    assert "Left out by name: 7 files and folders of Cline's state" in done.stderr, done.stderr
