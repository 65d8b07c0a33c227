"""What identifies a call (`core.identity`): the fields a tool is told what to do with,
not those written for the person or the runtime; the defaults, the user's override,
and the same rule for a live check, a completed call and a replay."""

from __future__ import annotations

import pytest

from loopwatch import Action, Attempt, Config, ConfigError, Monitor, ToolCall
from loopwatch._core.identity import HOSTS, IGNORED, identifying

from core_support import feed, only

LS = "ls /nonexistent-dir-xyz"
FAIL = "ls: cannot access '/nonexistent-dir-xyz': No such file or directory"


def _reworded(n: int, tool: str = "Bash", **fixed: object) -> list[ToolCall]:
    """The same failing command `n` times, its description worded anew each time."""
    words = ["List the directory", "Show what is in the folder", "Check the missing dir", "Look again", "Try once more"]
    return [
        ToolCall(tool, {"command": LS, "description": words[i % len(words)] + f" ({i})", **fixed}, FAIL, error=True)
        for i in range(n)
    ]


def _fixed(n: int) -> list[ToolCall]:
    return [ToolCall("Bash", {"command": LS, "description": "List the directory"}, FAIL, error=True) for _ in range(n)]


def test_a_reworded_description_is_the_same_call():
    reworded, fixed = only("repeat", {"threshold": 3}), only("repeat", {"threshold": 3})
    assert [v.action for v in feed(reworded, _reworded(3))] == [v.action for v in feed(fixed, _fixed(3))]
    assert reworded.check(Attempt("Bash", {"command": LS, "description": "Yet another wording"})).action is Action.STOP


def test_timeouts_and_background_flags_do_not_identify_a_claude_code_call():
    m = only("repeat", {"threshold": 3})
    calls = [
        ToolCall("Bash", {"command": LS, "timeout": 1000 * (i + 1), "run_in_background": i % 2 == 0}, FAIL, error=True)
        for i in range(3)
    ]
    assert feed(m, calls)[-1].action is Action.NUDGE


def test_codex_runtime_fields_do_not_identify_an_exec_command_call():
    m = only("repeat", {"threshold": 3})
    calls = [
        ToolCall(
            "exec_command", {"cmd": LS, "yield_time_ms": 1000 + i, "max_output_tokens": 2000 + i}, FAIL, error=True
        )
        for i in range(3)
    ]
    assert feed(m, calls)[-1].action is Action.NUDGE


def test_what_a_call_does_still_tells_calls_apart():
    # The command, a sandbox override, a working folder: each makes another call.
    for varied in (
        [{"command": f"ls /missing-{i}", "description": "List"} for i in range(3)],
        [{"command": LS, "dangerouslyDisableSandbox": i == 1} for i in range(3)],
    ):
        m = only("repeat", {"threshold": 3})
        feed(m, [ToolCall("Bash", value, FAIL, error=True) for value in varied])
        assert not m.interventions, varied
    m = only("repeat", {"threshold": 3})
    feed(m, [ToolCall("exec_command", {"cmd": LS, "workdir": f"/w{i}"}, FAIL, error=True) for i in range(3)])
    assert not m.interventions


def test_a_description_identifies_the_calls_of_a_tool_with_no_default():
    # `description` is not ignored everywhere: for an unknown tool it may be what it does.
    m = only("repeat", {"threshold": 3})
    feed(m, [ToolCall("create_issue", {"title": "Bug", "description": f"Body {i}"}, "created") for i in range(3)])
    assert not m.interventions


def test_the_user_can_make_a_field_count_again_or_drop_another():
    counted = only("repeat", {"threshold": 3}, tools={"Bash": {"identity": ["command", "description"]}})
    feed(counted, _reworded(3))
    assert not counted.interventions
    whole = only("repeat", {"threshold": 3}, tools={"Bash": {"ignore": []}})
    feed(whole, _reworded(3))
    assert not whole.interventions
    dropped = only("repeat", {"threshold": 3}, tools={"Read": {"ignore": ["limit"]}})
    feed(dropped, [ToolCall("Read", {"file_path": "/a.py", "limit": 10 + i}, "same text") for i in range(3)])
    assert dropped.interventions


def test_a_role_alone_keeps_the_default_identity():
    config = Config.make(tools={"Bash": {"role": "poller"}})
    assert config.rule("Bash").role == "poller"
    assert config.rule("Bash").ignore == IGNORED["Bash"]


def test_an_identity_naming_no_field_of_the_input_keeps_the_whole_input():
    # tb2's converted sessions give Bash a `cmd`: `identity = ["command"]` must not make
    # every such call one and the same.
    assert identifying({"cmd": "ls a"}, ("command",), frozenset()) == {"cmd": "ls a"}
    m = only("repeat", {"threshold": 3}, tools={"Bash": {"identity": ["command"]}})
    feed(m, [ToolCall("Bash", {"cmd": f"ls /missing-{i}"}, FAIL, error=True) for i in range(3)])
    assert not m.interventions


def test_inputs_that_are_not_tables_are_kept_whole():
    assert identifying("*** Begin Patch\n", None, frozenset({"description"})) == "*** Begin Patch\n"
    assert identifying(["ls"], ("command",), frozenset()) == ["ls"]


def test_the_check_before_a_call_and_the_completed_call_agree():
    # One identity for `check()` (before the call runs) and the completed call: a
    # reworded call is refused once its streak is nudged, in the attended profile too.
    m = only("repeat", {"threshold": 3}, profile="attended")
    feed(m, _reworded(3))
    verdict = m.check(Attempt("Bash", {"command": LS, "description": "Never said before", "timeout": 5}))
    assert verdict.action is Action.BLOCK


def test_every_default_names_a_field_a_host_writes_for_the_person_or_the_runtime():
    # No default ignores what a tool is told to do, under any host's name for it.
    doing = {"command", "cmd", "commands", "path", "file_path", "content", "old_string", "new_string", "pattern"}
    doing |= {"prompt", "code", "chars", "session_id", "workdir", "plan", "query", "url", "input", "patch"}
    for host, tools in HOSTS.items():
        for tool, fields in tools.items():
            assert fields and not set(fields) & doing, (host, tool, fields)
    assert IGNORED["shell"] >= {"justification", "timeout_ms", "max_output_length"}  # Codex's and the API's


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"identity": "command"}, r"^tools\.Bash\.identity: expected a list of input field names, got 'command'$"),
        ({"identity": []}, r"^tools\.Bash\.identity: expected at least one input field name"),
        ({"identity": ["command", ""]}, r"^tools\.Bash\.identity: expected a list of input field names"),
        ({"identity": ["command", "command"]}, r"^tools\.Bash\.identity: 'command' is listed twice$"),
        ({"ignore": "description"}, r"^tools\.Bash\.ignore: expected a list of input field names"),
        ({"ignore": [3]}, r"^tools\.Bash\.ignore: expected a list of input field names"),
        ({"identity": ["command"], "ignore": ["timeout"]}, r"^tools\.Bash: set identity .* or ignore .*, not both$"),
        ({"identiy": ["command"]}, r"did you mean 'identity'"),
    ],
)
def test_bad_identity_rules_are_refused_in_one_line(rule, message):
    with pytest.raises(ConfigError, match=message) as caught:
        Config.make(tools={"Bash": rule})
    assert "\n" not in str(caught.value)


def test_a_bad_identity_in_loopwatch_toml_exits_2_with_one_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "loopwatch.toml").write_text('[tools.Bash]\nidentity = "command"\n')
    (tmp_path / "s.jsonl").write_text('{"type": "tool", "name": "Bash", "input": {"command": "ls"}, "result": ""}\n')
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "s.jsonl"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "tools.Bash.identity" in line]
    assert len(said) == 1 and said[0].endswith(
        "tools.Bash.identity: expected a list of input field names, got 'command'"
    )
    assert "Traceback" not in done.stderr


def test_monitor_keyword_tools_reach_the_same_rule():
    m = Monitor(Config.make(tools={"Bash": {"role": "writer"}}))
    assert m.config.rule("Bash") == Config.make().rule("Bash")._replace(role="writer")


# -- the hook and `loopwatch status` ---------------------------------------------------


def _status(agent, *args: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "status", *args],
        env=agent.env(),
        cwd=agent.cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _failing_bash(agent, description: str) -> None:
    value = {"command": LS, "description": description}
    agent.pre("Bash", value)
    agent.send(
        {
            **agent.base("PostToolUseFailure"),
            "tool_name": "Bash",
            "tool_input": value,
            "error": "Exit code 2\n" + FAIL,
            "tool_use_id": agent._id(),
        }
    )


def test_status_shows_what_identifies_a_call_and_the_hook_follows_it(tmp_path):
    import json

    from hook_support import Agent, user_config

    agent = Agent(tmp_path / "state", tmp_path)
    for i in range(3):
        _failing_bash(agent, f"List it, take {i}")
    assert agent.pre("Bash", {"command": LS, "description": "Once more, in new words"}).denied
    (row,) = [json.loads(line) for line in _status(agent, "--json").splitlines()]
    assert row["identity"]["Bash"] == {"ignored": ["description", "run_in_background", "timeout"]}
    assert row["identity"]["Agent"] == {"ignored": ["description", "run_in_background"]}
    assert "Bash not by description, run_in_background, timeout;" in " ".join(_status(agent, agent.session).split())

    # The user's own rule: the description counts again; status says so.
    other = Agent(tmp_path / "state2", tmp_path, session="sess-0002")
    user_config(other, '[tools.Bash]\nidentity = ["command", "description"]\n')
    for i in range(3):
        _failing_bash(other, f"List it, take {i}")
    assert not other.pre("Bash", {"command": LS, "description": "Once more, in new words"}).denied
    (row,) = [json.loads(line) for line in _status(other, "--json").splitlines()]
    assert row["identity"]["Bash"] == {"only": ["command", "description"]}
    assert "Bash by command, description only" in " ".join(_status(other, other.session).split())
