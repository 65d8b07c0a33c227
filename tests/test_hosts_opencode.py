"""opencode's shapes, on payloads its guard plugin sent in real runs (opencode 1.17.19 and
1.18.33, captured by tests/test_realclient_opencode.py into tests/fixtures/opencode/): what
the hook reads of them, what it answers, and the pieces of `loopwatch._hosts.opencode`
they rely on. Quick: no process is started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwatch._core.messages import Blocked, Stopped, loopwatch_said
from loopwatch._core.session import Decision
from loopwatch._core.verdict import Action, Verdict
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
from loopwatch._hosts import opencode
from loopwatch._hosts.base import AFTER, BEFORE, FAILED, PROMPT, SUBAGENT_END, TURN_END, Call

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
VERSIONS = ("1.17.19", "1.18.33")
HOST = opencode.HOST


def captured(version: str) -> list[tuple[str, dict]]:
    """(event, payload) in the order the plugin sent them: a failing `ls`, a read of a
    missing file, a write, an edit, a task whose sub-agent ran `echo child`."""
    lines = (FIXTURES / f"payloads-{version}.jsonl").read_text().splitlines()
    return [(d["event"], d["payload"]) for d in map(json.loads, lines)]


def read(event: str, payload: dict):
    return parse(json.dumps(payload).encode(), "opencode", event=event)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_captured_event_reads_as_the_guards(version):
    seen = [
        (read(e, p).event, read(e, p).agent != "", [c.name for c in read(e, p).calls]) for e, p in captured(version)
    ]
    assert seen == [
        (PROMPT, False, []),
        (BEFORE, False, ["bash"]),
        (AFTER, False, ["bash"]),
        (BEFORE, False, ["read"]),
        (FAILED, False, ["read"]),
        (BEFORE, False, ["write"]),
        (AFTER, False, ["write"]),
        (BEFORE, False, ["edit"]),
        (AFTER, False, ["edit"]),
        (BEFORE, False, ["task"]),
        (BEFORE, True, ["bash"]),  # the sub-agent's call: its own agent, the same session
        (AFTER, True, ["bash"]),
        (SUBAGENT_END, True, []),
        (AFTER, False, ["task"]),
        (TURN_END, False, []),
    ], seen


@pytest.mark.parametrize("version", VERSIONS)
def test_a_failing_command_is_a_failure_by_its_exit_code_alone(version):
    """opencode reports the failing `ls` as completed; only `metadata.exit` (2) says it failed."""
    payloads = captured(version)
    (ls,) = read(*payloads[2]).calls
    assert ls.error and ls.result.startswith("ls: cannot access")
    (missing,) = read(*payloads[4]).calls  # a read of a missing file throws: its error part
    assert missing.error and missing.result.startswith("File not found")
    for event, payload in payloads[6], payloads[8], payloads[11]:
        (call,) = read(event, payload).calls
        assert not call.error, (event, payload["tool_name"])


@pytest.mark.parametrize("version", VERSIONS)
def test_a_task_names_the_subagent_it_ran(version):
    payloads = captured(version)
    child = read(*payloads[10]).agent
    session = read(*payloads[0]).session
    assert child.startswith("ses_") and child != session
    assert all(read(e, p).session == session for e, p in payloads)  # one session, the top-level one
    (task,) = read(*payloads[13]).calls
    assert task.spawned == child


def test_a_failed_task_names_its_subagent_too():
    """1.18.33 fails the task whose sub-agent errored (1.17.19 completes it)."""
    call = HOST.parse(
        {
            "hook_event_name": "tool.error",
            "session_id": "ses_a",
            "tool_name": "task",
            "tool_use_id": "c1",
            "tool_input": {"prompt": "p"},
            "error": "Subagent failed (task_id: ses_child1): loopwatch stopped the run: x",
        }
    ).calls[0]
    assert call.spawned == "ses_child1" and call.error


def test_loopwatchs_own_refusal_is_no_call():
    """A refused call ends as an error part; should the plugin ever report one, it never ran."""
    text = Blocked("the same bash call returned the same result 3 times").for_model()
    payload = {"hook_event_name": "tool.error", "session_id": "s", "tool_name": "bash", "error": text}
    assert HOST.parse(payload).calls == ()
    assert HOST.parse({**payload, "error": "Error: " + text}).calls == ()
    assert len(HOST.parse({**payload, "error": "bash: not found"}).calls) == 1


def test_a_cut_outputs_file_name_is_no_difference():
    """opencode keeps a long output whole in a file named anew every call, and says so in the
    text the model reads: identical failures must stay identical."""
    one = "x\n...output truncated...\n\nFull output saved to: /h/.local/share/opencode/tool-output/tool_01JZ8K3QWERTY1"
    two = one.replace("tool_01JZ8K3QWERTY1", "tool_01JZ8K9ZXCVBN2")
    assert one != two and opencode.normalised_output(one) == opencode.normalised_output(two)
    newer = "... output truncated; full content saved to /h/tool-output/tool_01JZ8K3QWERTY1 ..."
    assert opencode.normalised_output(newer) == opencode.normalised_output(newer.replace("QWERTY1", "ASDFGH2"))
    assert opencode.normalised_output("saved to disk") == "saved to disk"


def _decision(action: Action, message: str = "m", reason: str = "the same bash call failed 3 times") -> Decision:
    return Decision(action, message, reason, Verdict(action, description=reason))


@pytest.mark.parametrize("version", VERSIONS)
def test_its_answers_are_the_plugins(version):
    payloads = captured(version)
    before, after = read(*payloads[1]), read(*payloads[2])
    refused = HOST.reply(before, _decision(Action.BLOCK, "loopwatch blocked this call: x"), None).stdout
    assert refused == {
        "refuse": "loopwatch blocked this call: x",
        "person": Blocked(_decision(Action.BLOCK).reason).for_person(),
    }
    stop = HOST.reply(before, _decision(Action.STOP, "loopwatch stopped the run: x"), None).stdout
    assert stop["refuse"] == "loopwatch stopped the run: x" and loopwatch_said(stop["stop"]) is Stopped
    nudge = HOST.reply(after, _decision(Action.NUDGE, "loopwatch: you appear to be going in circles"), None).stdout
    assert nudge == {"nudge": "loopwatch: you appear to be going in circles"}
    ended = HOST.reply(after, _decision(Action.STOP), None).stdout
    assert set(ended) == {"stop", "person"} and loopwatch_said(ended["stop"]) is Stopped
    # Once stopped, any later call's report keeps the stop (a parallel call of the same turn).
    assert "stop" in HOST.reply(after, _decision(Action.ALLOW), "it looped").stdout
    assert HOST.reply(after, _decision(Action.ALLOW), None).stdout is None


def _loop(tmp_path, monkeypatch, headless: str, version: str = "1.18.33"):
    """The captured failing `ls`, before and after, four times: what the hook answered."""
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "LOOPWATCH_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv(opencode.HEADLESS_ENV, headless)
    before, after = captured(version)[1][1], captured(version)[2][1]
    store = Store(tmp_path / "state")
    answers = []
    try:
        for i in range(4):
            ids = {"tool_use_id": f"call_{i}"}
            answer = handle(read("tool.execute.before", {**before, **ids}), {}, store)
            answers.append(answer.stdout)
            if answer.stdout and "refuse" in answer.stdout:
                break
            answers.append(handle(read("tool.execute.after", {**after, **ids}), {}, store).stdout)
        return answers, store.state(before["session_id"], "")
    finally:
        store.close()


def test_unattended_the_fourth_identical_failure_is_refused_and_the_run_stopped(tmp_path, monkeypatch):
    answers, state = _loop(tmp_path, monkeypatch, "1")
    assert answers[:3] == [None, None, None] and answers[4] is None
    assert list(answers[3]) == ["person"]  # the second identical failure: the person is warned, not the model
    assert list(answers[5]) == ["nudge"] and "going in circles" in answers[5]["nudge"]
    last = answers[6]
    assert set(last) == {"refuse", "stop", "person"}, last
    assert last["refuse"].startswith("loopwatch stopped the run") and "ls /nonexistent-dir-xyz" in last["refuse"]
    assert state is not None and state.profile == "unattended" and state.profile_reason == "opencode run"


def test_attended_it_is_refused_and_nothing_is_stopped(tmp_path, monkeypatch):
    answers, state = _loop(tmp_path, monkeypatch, "0")
    last = answers[-1]
    assert set(last) == {"refuse", "person"} and last["refuse"].startswith("loopwatch blocked this call")
    assert state is not None and state.profile == "attended" and state.stopped is None


@pytest.mark.parametrize(
    "argv,verdict",
    [
        (["/x/node_modules/.bin/opencode", "run", "--format", "json", "fix it"], "opencode run"),
        (["/x/opencode", "--print-logs", "run", "fix it"], "opencode run"),
        (["/x/opencode", "run", "-i", "fix it"], ""),
        (["/x/opencode", "run", "--interactive", "fix it"], ""),
        (["/x/opencode", "--prompt", "fix it"], ""),
        (["/x/opencode"], ""),
        (["/x/opencode", "serve"], ""),
        (["/x/opencode", "github", "run"], "opencode github run"),
        (["/usr/bin/claude", "-p", "x"], None),
        (["python3", "run.py"], None),
    ],
)
def test_headless_is_run_without_interactive(argv, verdict):
    assert HOST.headless(argv) == verdict


def test_the_profile_is_what_the_plugin_saw():
    assert HOST.detect_profile({opencode.HEADLESS_ENV: "1"}) == ("unattended", "opencode run")
    assert HOST.detect_profile({opencode.HEADLESS_ENV: "0"}) == ("attended", "interactive")
    assert HOST.detect_profile({}) is None


REFUSED = [
    ("write", {"filePath": "/repo/.opencode/plugin/evil.js", "content": "export const X = async () => ({})"}),
    ("write", {"filePath": "/repo/.opencode/plugins/x.ts", "content": ""}),
    ("edit", {"filePath": "/home/u/.config/opencode/plugin/loopwatch.js", "oldString": "a", "newString": "b"}),
    ("write", {"filePath": "/repo/opencode.json", "content": '{"plugin": ["./x.js"]}'}),
    ("edit", {"filePath": "/repo/.opencode/opencode.jsonc", "oldString": "{", "newString": "{"}),
    ("bash", {"command": "echo 'export const X = 1' > .opencode/plugin/x.js"}),
    ("bash", {"command": "rm ~/.config/opencode/plugin/loopwatch.js"}),
    ("bash", {"command": "cp /tmp/x.js .opencode/plugins/"}),
    ("apply_patch", {"patchText": "*** Begin Patch\n*** Add File: .opencode/plugin/e.js\n+x\n*** End Patch"}),
]
ALLOWED = [
    ("read", {"filePath": "/repo/.opencode/plugin/evil.js"}),
    ("bash", {"command": "cat opencode.json"}),
    ("bash", {"command": "ls .opencode/plugin"}),
    ("write", {"filePath": "/repo/src/plugin/x.js", "content": ""}),
    ("write", {"filePath": "/repo/docs/opencode-notes.md", "content": "see .opencode/plugin/ and opencode.json"}),
    ("bash", {"command": "grep -rn plugin src/ > /tmp/out.txt"}),
]


@pytest.mark.parametrize("tool,tool_input", REFUSED)
def test_a_write_where_opencode_loads_plugins_is_named(tool, tool_input):
    assert HOST.switches_off(Call(tool, tool_input), "/repo") is not None


@pytest.mark.parametrize("tool,tool_input", ALLOWED)
def test_reading_those_places_or_writing_elsewhere_is_not(tool, tool_input):
    assert HOST.switches_off(Call(tool, tool_input), "/repo") is None


@pytest.mark.parametrize(
    "command",
    [
        ["/usr/bin/python3", "-I", "-m", "loopwatch", "hook", "opencode"],
        [
            "/opt/my env/bin/python",
            "-I",
            "-c",
            "import sys; sys.path.insert(0, '/a\"b'); x",
            "loopwatch",
            "hook",
            "opencode",
        ],
        ["/p/*/ */python", "-c", "\n}) ; process.exit(1) // `${x}` \u2028 \u00e9", "loopwatch", "hook", "opencode"],
    ],
)
def test_the_command_is_written_as_data_and_read_back_whole(command):
    """A path holding quotes, a comment's end, a template string or a line break is JSON in
    the plugin, never code: read back, it is the very command."""
    text = opencode.plugin_text(command)
    assert opencode.plugin_command(text) == command
    (line,) = [line for line in text.splitlines() if line.startswith("const INSTALLED = ")]
    assert line.isascii() and json.loads(line.split(" = ", 1)[1].rsplit(" // ", 1)[0]) == command
    assert opencode.plugin_command(text.replace("// loopwatch's live guard", "// someone's guard", 1)) is None


def test_settings_are_the_plugin_file_or_the_managed_entry():
    command = "/usr/bin/python3 -I -m loopwatch hook opencode"
    plugin = HOST.install({}, command)
    assert list(plugin) == ["loopwatch.js"] and HOST.hooked(plugin) == {e: [command] for e in HOST.hooked_events}
    assert HOST.install(plugin, command) == plugin and HOST.uninstall(plugin) == {}
    with pytest.raises(ValueError, match="not loopwatch's"):
        HOST.install({"loopwatch.js": "export const Mine = async () => ({})\n"}, command)
    theirs = {"opencode.json": json.dumps({"plugin": ["file:///etc/opencode/mine.js"], "share": "disabled"})}
    managed = HOST.install(theirs, command)
    config = json.loads(managed["opencode.json"])
    assert config["share"] == "disabled" and config["plugin"][0] == "file:///etc/opencode/mine.js"
    url, options = config["plugin"][1]
    assert url.startswith("file://") and url.endswith("/opencode_plugin.js") and options["hook"][-1] == "opencode"
    assert HOST.hooked(managed) == {e: [command] for e in HOST.hooked_events}
    assert HOST.install(managed, command) == managed
    assert json.loads(HOST.uninstall(managed)["opencode.json"])["plugin"] == ["file:///etc/opencode/mine.js"]
    with pytest.raises(ValueError, match="comments"):
        HOST.install({"opencode.json": '{\n  // mine\n  "plugin": []\n}'}, command)


def test_switch_offs_name_pure_and_a_projects_plugins(tmp_path):
    assert HOST.switch_offs(tmp_path, {}) == []
    assert [o.path for o in HOST.switch_offs(tmp_path, {"OPENCODE_PURE": "TRUE"})] == ["OPENCODE_PURE (environment)"]
    assert HOST.switch_offs(tmp_path, {"OPENCODE_PURE": "0"}) == []
    (tmp_path / ".opencode" / "plugin").mkdir(parents=True)
    (tmp_path / ".opencode" / "plugin" / "rewrite.js").write_text("export const R = async () => ({})\n")
    (tmp_path / "opencode.json").write_text('{"plugin": ["some-npm-plugin"]}')
    found = HOST.switch_offs(tmp_path, {})
    assert [Path(o.path).name for o in found] == ["plugin", "opencode.json"]
    assert "rewrite.js" in found[0].what
    assert HOST.unguarded(["opencode", "run", "--pure", "x"], {}) and HOST.unguarded(
        ["opencode"], {"OPENCODE_PURE": "1"}
    )
    assert HOST.unguarded(["opencode", "run", "x"], {}) is None


def test_a_subagents_stop_stops_its_parent_when_the_task_is_reported_failed(tmp_path, monkeypatch):
    """1.18.33 fails the task whose sub-agent loopwatch stopped (`Subagent failed (task_id:
    ...)`): that report stops the parent too, as 1.17.19's completed task does."""
    for name in ("LOOPWATCH_PROFILE", "LOOPWATCH_MODE", "LOOPWATCH_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv(opencode.HEADLESS_ENV, "1")
    payloads = captured("1.18.33")
    before, after = payloads[10][1], payloads[11][1]  # the sub-agent's call
    child, session = before["agent_id"], before["session_id"]
    failing = {**after, "tool_response": {"output": "ls: no such file\n", "exit": 2, "title": "ls"}}
    store = Store(tmp_path / "state")
    try:
        for i in range(4):
            answer = handle(read("tool.execute.before", {**before, "tool_use_id": f"c{i}"}), {}, store)
            if answer.stdout and "stop" in answer.stdout:
                break
            handle(read("tool.execute.after", {**failing, "tool_use_id": f"c{i}"}), {}, store)
        assert store.state(session, child).stopped
        assert store.state(session, "") is None or store.state(session, "").stopped is None
        task = {
            "hook_event_name": "tool.error",
            "cwd": before["cwd"],
            "session_id": session,
            "agent_id": "",
            "tool_name": "task",
            "tool_use_id": "call_task",
            "tool_input": {"description": "List once", "prompt": "SCENARIO:child list it", "subagent_type": "general"},
            "error": f"Subagent failed (task_id: {child}): {Stopped('it looped').for_person()}",
        }
        answer = handle(read("tool.error", task), {}, store)
        assert answer.stdout and answer.stdout["stop"].startswith("loopwatch stopped the run")
        assert store.state(session, "").stopped.startswith("a sub-agent was stopped")
    finally:
        store.close()
