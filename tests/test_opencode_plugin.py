"""loopwatch's opencode plugin (`src/loopwatch/_hosts/opencode_plugin.js`), driven outside
opencode by node (tests/opencode_plugin_driver.mjs) the way opencode calls it (the calls and
their arguments are those the real CLI made, tests/fixtures/opencode/): what it sends the
hook, and what it does with the answers. First against a scripted stand-in for the hook
(what it reads and when), then against the real hook (a loop refused, then the run held).

Skipped where node is missing (opencode itself runs the plugin under its own Bun)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopwatch._hosts import opencode

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH"),
]

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "opencode_plugin_driver.mjs"
SRC = str(HERE.parent / "src")

# The stand-in for `loopwatch hook opencode EVENT`: logs its argv, payload and environment,
# and answers from a list (one answer per call, `{}` once the list is spent).
STAND_IN = r"""
import json, os, sys
folder = os.environ["STAND_IN"]
payload = json.load(sys.stdin)
with open(os.path.join(folder, "calls.jsonl"), "a") as fh:
    env = {k: v for k, v in os.environ.items() if k.startswith(("LOOPWATCH", "PROJECT"))}
    fh.write(json.dumps({"argv": sys.argv[1:], "payload": payload, "env": env}) + "\n")
answers = json.load(open(os.path.join(folder, "answers.json")))
n = sum(1 for _ in open(os.path.join(folder, "calls.jsonl"))) - 1
answer = answers[n] if n < len(answers) else {}
if answer == "crash":
    sys.exit(3)
print(answer if isinstance(answer, str) else json.dumps(answer))
"""


class Plugin:
    """The plugin, installed with a hook command, in a folder of its own."""

    def __init__(self, tmp_path: Path, command: list[str]) -> None:
        self.folder = tmp_path
        self.path = tmp_path / "loopwatch.js"
        self.path.write_text(opencode.plugin_text(command))

    def drive(self, steps: list[dict], headless: bool = True, env: dict | None = None, **script) -> dict:
        argv = ["node", str(DRIVER), *(["run"] if headless else []), str(self.path)]
        done = subprocess.run(
            argv,
            input=json.dumps({"steps": steps, "directory": str(self.folder), **script}),
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **(env or {})},
            cwd=self.folder,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        out["stderr"] = done.stderr
        return out


@pytest.fixture
def stand_in(tmp_path):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    plugin = Plugin(tmp_path, [sys.executable, str(script), "loopwatch", "hook", "opencode"])

    def run(steps, answers=(), **kwargs):
        (tmp_path / "answers.json").write_text(json.dumps(list(answers)))
        env = {"STAND_IN": str(tmp_path), **kwargs.pop("env", {})}
        out = plugin.drive(steps, env=env, **kwargs)
        log = tmp_path / "calls.jsonl"
        out["calls"] = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        log.unlink(missing_ok=True)
        return out

    return run


def fixture_steps(version: str = "1.18.33") -> dict[str, dict]:
    """The hooks' arguments as opencode gave them in a real run (the payloads the plugin
    built from them are in tests/fixtures/opencode/)."""
    lines = [json.loads(line) for line in (HERE / "fixtures" / "opencode" / f"payloads-{version}.jsonl").open()]
    ls_before = next(d["payload"] for d in lines if d["event"] == "tool.execute.before")
    ls_after = next(d["payload"] for d in lines if d["event"] == "tool.execute.after")
    session = ls_before["session_id"]
    return {
        "session": session,
        "before": {
            "hook": "tool.execute.before",
            "input": {"tool": "bash", "sessionID": session, "callID": ls_before["tool_use_id"]},
            "output": {"args": ls_before["tool_input"]},
        },
        "after": {
            "hook": "tool.execute.after",
            "input": {
                "tool": "bash",
                "sessionID": session,
                "callID": ls_after["tool_use_id"],
                "args": ls_after["tool_input"],
            },
            "output": {
                "title": ls_after["tool_response"]["title"],
                "output": ls_after["tool_response"]["output"],
                "metadata": {"output": ls_after["tool_response"]["output"], "exit": 2, "truncated": False},
            },
        },
    }


def _with_call(step: dict, call_id: str, session: str | None = None) -> dict:
    step = json.loads(json.dumps(step))
    step["input"]["callID"] = call_id
    if session:
        step["input"]["sessionID"] = session
    return step


def _error_part(session: str, call_id: str, error: str, **state) -> dict:
    part = {
        "type": "tool",
        "tool": "read",
        "callID": call_id,
        "sessionID": session,
        "state": {"status": "error", "input": {"filePath": "/x/missing.txt"}, "error": error, **state},
    }
    return {"event": {"type": "message.part.updated", "properties": {"sessionID": session, "part": part}}}


def test_a_call_is_sent_before_and_after_with_what_the_model_asked_and_the_exit_code(stand_in):
    f = fixture_steps()
    out = stand_in([f["before"], f["after"]])
    (before, after) = out["calls"]
    assert before["argv"][-4:] == ["loopwatch", "hook", "opencode", "tool.execute.before"]
    assert before["payload"]["tool_input"] == f["before"]["output"]["args"]
    assert before["payload"]["session_id"] == f["session"] and before["payload"]["agent_id"] == ""
    assert after["argv"][-1] == "tool.execute.after"
    assert after["payload"]["tool_response"]["exit"] == 2  # the failure opencode reports only here
    assert out["results"] == [
        {"threw": None, "output": f["before"]["output"]},
        {"threw": None, "output": f["after"]["output"]},
    ]


def test_a_refusal_is_thrown_with_the_hooks_text_and_never_reported_as_a_failure(stand_in):
    f = fixture_steps()
    out = stand_in(
        [f["before"], _error_part(f["session"], f["before"]["input"]["callID"], "loopwatch blocked this call: x")],
        answers=[{"refuse": "loopwatch blocked this call: x", "person": "loopwatch blocked a call: x"}],
    )
    assert out["results"][0]["threw"] == "loopwatch blocked this call: x"
    assert len(out["calls"]) == 1  # the error part of the refused call was not sent as tool.error
    assert "loopwatch blocked a call: x" in out["stderr"]  # headless: the person is told on stderr


def test_a_nudge_is_appended_to_what_the_model_reads(stand_in):
    f = fixture_steps()
    out = stand_in([f["before"], f["after"]], answers=[{}, {"nudge": "loopwatch: you appear to be going in circles"}])
    text = out["results"][1]["output"]["output"]
    assert text == f["after"]["output"]["output"] + "\n\nloopwatch: you appear to be going in circles"


def test_a_failure_by_throwing_is_reported_and_its_nudge_rides_on_the_next_result(stand_in):
    f = fixture_steps()
    steps = [
        _error_part(f["session"], "call_read", "File not found: /x/missing.txt"),
        _error_part(f["session"], "call_read", "File not found: /x/missing.txt"),  # the part again: once
        _error_part(f["session"], "call_abort", "Tool execution aborted", metadata={"interrupted": True}),
        f["before"],
        f["after"],
    ]
    out = stand_in(steps, answers=[{"nudge": "N1"}, {}, {}])
    assert [c["argv"][-1] for c in out["calls"]] == ["tool.error", "tool.execute.before", "tool.execute.after"]
    assert out["calls"][0]["payload"]["error"] == "File not found: /x/missing.txt"
    assert out["results"][4]["output"]["output"].endswith("\n\nN1")


def test_a_stop_in_a_subagent_holds_every_later_request_until_the_person_writes(stand_in):
    f = fixture_steps()
    child = "ses_child"
    created = {"event": {"type": "session.created", "properties": {"info": {"id": child, "parentID": f["session"]}}}}
    params = {"hook": "chat.params", "input": {"sessionID": child, "agent": "general"}, "output": {}}
    root_params = {"hook": "chat.params", "input": {"sessionID": f["session"], "agent": "build"}, "output": {}}
    prompt = {"hook": "chat.message", "input": {"sessionID": f["session"]}, "output": {}}
    steps = [created, root_params, _with_call(f["before"], "c1", child), params, root_params, prompt, root_params]
    stop = "loopwatch stopped the run: the same bash call returned the same result 3 times"
    out = stand_in(steps, answers=[{"refuse": stop, "stop": stop, "person": stop}, {}])
    threw = [r["threw"] for r in out["results"]]
    assert threw == [None, None, stop, stop, stop, None, None], threw
    sent = out["calls"][0]["payload"]
    assert (sent["session_id"], sent["agent_id"]) == (f["session"], child)  # the child, under its session
    assert out["stderr"].count(stop) == 1  # told once
    assert [c["argv"][-1] for c in out["calls"]] == ["tool.execute.before", "chat.message"]


def test_a_subagents_parent_is_asked_of_opencode_when_its_start_was_not_seen(stand_in):
    f = fixture_steps()
    out = stand_in([_with_call(f["before"], "c1", "ses_orphan")], parents={"ses_orphan": f["session"]})
    assert "ses_orphan" in out["asked"]
    assert (out["calls"][0]["payload"]["session_id"], out["calls"][0]["payload"]["agent_id"]) == (
        f["session"],
        "ses_orphan",
    )


def test_the_hook_sees_the_environment_opencode_started_with(stand_in):
    """A project's plugin loads after this one and can set process.env: the hook never sees it."""
    f = fixture_steps()
    out = stand_in([{"setenv": {"LOOPWATCH_MODE": "off", "PROJECT_SET": "1"}}, f["before"]])
    env = out["calls"][0]["env"]
    assert "LOOPWATCH_MODE" not in env and "PROJECT_SET" not in env
    assert env["LOOPWATCH_OPENCODE_HEADLESS"] == "1"


def test_the_hook_sees_the_environment_opencode_started_with_even_when_loaded_last(stand_in):
    """Installed in the managed config, the plugin loads after a project's, which may have set
    process.env already: the hook still gets the environment the process started with (Linux:
    /proc/self/environ, which nothing in the process rewrites)."""
    f = fixture_steps()
    out = stand_in([f["before"]], preenv={"LOOPWATCH_MODE": "off", "PROJECT_SET": "1"})
    env = out["calls"][0]["env"]
    assert "LOOPWATCH_MODE" not in env and "PROJECT_SET" not in env


def test_attended_the_person_is_told_by_a_toast_and_the_hook_is_told_so(stand_in):
    f = fixture_steps()
    out = stand_in([f["before"]], answers=[{"refuse": "R", "person": "loopwatch blocked a call: x"}], headless=False)
    assert out["calls"][0]["env"]["LOOPWATCH_OPENCODE_HEADLESS"] == "0"
    assert out["toasts"] == ["loopwatch blocked a call: x"] and "loopwatch" not in out["stderr"]


def test_a_rewrite_after_the_check_is_told_and_the_models_call_is_counted(stand_in):
    f = fixture_steps()
    after = json.loads(json.dumps(f["after"]))
    after["input"]["args"] = {"command": "echo rewritten-by-project"}
    out = stand_in([f["before"], after])
    assert out["calls"][1]["payload"]["tool_input"] == f["before"]["output"]["args"]
    assert "another plugin changed a bash call after loopwatch checked it" in out["stderr"]


def test_a_projects_plugins_are_told_at_start(stand_in):
    origins = [
        {"spec": "file:///home/u/.config/opencode/plugin/loopwatch.js", "scope": "global"},
        {"spec": "file:///repo/.opencode/plugin/rewrite.js", "scope": "local"},
    ]
    out = stand_in([{"config": {"plugin_origins": origins}}])
    assert "file:///repo/.opencode/plugin/rewrite.js" in out["stderr"] and "loopwatch.js" not in out["stderr"]


@pytest.mark.parametrize("answer", ["crash", "not json", '{"refuse": 5}'])
def test_a_hook_that_fails_lets_the_call_through(stand_in, answer):
    f = fixture_steps()
    out = stand_in([f["before"]], answers=[answer])
    assert out["results"][0]["threw"] is None


def test_no_python_lets_the_call_through(tmp_path):
    plugin = Plugin(tmp_path, [str(tmp_path / "no-such-python"), "-I", "-m", "loopwatch", "hook", "opencode"])
    f = fixture_steps()
    out = plugin.drive([f["before"], f["after"]])
    assert [r["threw"] for r in out["results"]] == [None, None]


def test_loopwatchs_own_copy_takes_its_command_from_the_managed_configs_options(tmp_path):
    """The managed opencode.json names the package's own copy with `{"hook": argv}`."""
    copy = tmp_path / "copy.js"
    copy.write_text(opencode.plugin_text(None))
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    (tmp_path / "answers.json").write_text(json.dumps([{"refuse": "R"}]))
    plugin = Plugin(tmp_path, ["unused"])
    plugin.path = copy
    f = fixture_steps()
    hook = [sys.executable, str(script), "loopwatch", "hook", "opencode"]
    out = plugin.drive([f["before"]], env={"STAND_IN": str(tmp_path)}, options={"hook": hook})
    assert out["results"][0]["threw"] == "R"
    assert plugin.drive([f["before"]], env={"STAND_IN": str(tmp_path)})["hooks"] == []  # no command: no guard


@pytest.mark.parametrize("headless", [True, False])
def test_with_the_real_hook_a_loop_is_refused_and_unattended_the_run_is_held(tmp_path, headless):
    """The plugin and `python -I ... loopwatch hook opencode`, as `install` writes them: the
    captured failing call four times. The fourth is refused; unattended, the next model
    request is refused too (the run ends); attended, it is not."""
    code = f"import sys; sys.path.insert(0, {SRC!r}); from loopwatch.__main__ import main; sys.exit(main(sys.argv[2:]))"
    plugin = Plugin(tmp_path, [sys.executable, "-I", "-c", code, "loopwatch", "hook", "opencode"])
    f = fixture_steps()
    steps = []
    for i in range(4):
        steps += [_with_call(f["before"], f"c{i}"), _with_call(f["after"], f"c{i}")]
    steps.append({"hook": "chat.params", "input": {"sessionID": f["session"], "agent": "build"}, "output": {}})
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_STATE_HOME": str(tmp_path / "s")}
    env.update({"LOOPWATCH_PROFILE": "", "LOOPWATCH_MODE": "", "LOOPWATCH_STATE_DIR": ""})
    out = plugin.drive(steps, headless=headless, env=env)
    threw = [r["threw"] for r in out["results"]]
    assert threw[:6] == [None] * 6
    assert "going in circles" in out["results"][5]["output"]["output"]  # the third result, nudged
    refused = threw[6]
    if headless:
        assert refused.startswith("loopwatch stopped the run") and threw[8].startswith("loopwatch stopped the run")
    else:
        assert refused.startswith("loopwatch blocked this call") and threw[8] is None
    assert (tmp_path / "s" / "loopwatch" / "state.db").exists()
