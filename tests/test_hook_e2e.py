"""The hook end to end: recorded-style payload sequences through the real command."""

from __future__ import annotations

import json

import pytest

from loopwatch._hosts import HOSTS, host
from hook_support import SRC, Agent, bash, edit, edit_response, pytest_failure, state_actions

pytestmark = pytest.mark.slow


@pytest.fixture
def agent(tmp_path):
    (tmp_path / "project").mkdir()
    return Agent(tmp_path / "state", tmp_path / "project")


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_same_failure_five_times_gets_a_nudge_then_a_block(tmp_path, host):
    agent = Agent(tmp_path / "state", tmp_path, host=host)
    answers = [
        agent.run("Bash", bash("pytest -x tests/test_parser.py"), error=pytest_failure(40 + i)) for i in range(5)
    ]
    pre = [a[0] for a in answers]
    post = [a[1] for a in answers]
    # Calls 1-3 run; the third result brings the nudge, as context for the model.
    assert all(p.denied is None for p in pre[:3])
    assert all(r.context is None for r in post[:2])
    assert "pytest -x tests/test_parser.py" in post[2].context and "3 times" in post[2].context
    # The fourth and fifth tries are denied before they run, with the reason.
    assert "loopwatch blocked this call" in pre[3].denied and post[3] is None
    assert "loopwatch blocked this call" in pre[4].denied and post[4] is None
    if host == "codex":  # Codex: exit 2 with the reason on stderr
        assert pre[3].code == 2 and pre[3].out is None
    else:
        assert pre[3].code == 0 and not pre[3].stopped
    assert state_actions(agent.state, agent.session) == 3  # denied calls never ran


def test_rerunning_tests_after_different_edits_is_never_flagged(agent):
    for i in range(5):  # above every threshold (repeat 3, same_error 4, cycle 3 copies)
        failure = pytest_failure(40).replace("test_nested_arrays", f"test_case_{'abcde'[i]}")  # each edit moves it
        _, after = agent.run("Bash", bash("pytest -x tests/test_parser.py"), error=failure)
        assert after.context is None and after.out is None, after
        old, new = f"    depth = {i}", f"    depth = {i + 1}"
        before, after = agent.run(
            "Edit", edit("/p/src/parser.py", old, new), response=edit_response("/p/src/parser.py", old, new)
        )
        assert before.denied is None and after.out is None
    assert state_actions(agent.state, agent.session) == 10


def test_edits_that_leave_the_identical_failure_are_only_nudged_from_the_fifth(agent):
    """The same failure after every edit (`unchanged`): nothing is said for four rounds,
    then the model is told once that its edits do not change what the test says; nothing
    is refused."""
    for i in range(6):
        before, after = agent.run("Bash", bash("pytest -x tests/test_parser.py"), error=pytest_failure(40))
        assert before.denied is None
        if i == 4:
            assert after.context and "your edits are not changing what" in after.context, after
        else:
            assert after.context is None and after.out is None, after
        old, new = f"    depth = {i}", f"    depth = {i + 1}"
        before, _ = agent.run(
            "Edit", edit("/p/src/parser.py", old, new), response=edit_response("/p/src/parser.py", old, new)
        )
        assert before.denied is None
    assert state_actions(agent.state, agent.session) == 12


def test_a_new_user_prompt_starts_every_streak_again(agent):
    for i in range(3):
        agent.run("Bash", bash("make build"), error="make: *** [Makefile:12: all] Error 2")
    assert agent.pre("Bash", bash("make build")).denied  # the streak continues: blocked
    agent.prompt("I fixed the Makefile, try the build again")
    for i in range(2):
        before, after = agent.run("Bash", bash("make build"), error="make: *** [Makefile:12: all] Error 2")
        assert before.denied is None and after.context is None


def test_subagents_are_kept_apart(tmp_path):
    state = tmp_path / "state"
    main = Agent(state, tmp_path, session="sess-sub")
    helpers = [Agent(state, tmp_path, session="sess-sub", agent_id=f"agent-{k}") for k in range(2)]
    # Each agent runs the same failing command twice, interleaved: six copies in the
    # session, but no agent has three in a row.
    for _ in range(2):
        for who in (main, *helpers):
            before, after = who.run("Bash", bash("npm test"), error="Error: Cannot find module 'left-pad'")
            assert before.denied is None and after.context is None
    assert [state_actions(state, "sess-sub", a) for a in ("", "agent-0", "agent-1")] == [2, 2, 2]
    # A third copy in one sub-agent is that sub-agent's loop only.
    _, after = helpers[0].run("Bash", bash("npm test"), error="Error: Cannot find module 'left-pad'")
    assert after.context and "npm test" in after.context
    before, _ = main.run("Bash", bash("npm test"), error="Error: Cannot find module 'left-pad'")
    assert before.denied is None


def test_unattended_claude_p_ends_the_run(tmp_path):
    agent = Agent(tmp_path / "state", tmp_path, env={"LOOPWATCH_PROFILE": "", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"})
    for i in range(3):
        agent.run(
            "Bash", bash("curl -sf localhost:8080/health"), error="curl: (7) Failed to connect to localhost port 8080"
        )
    before = agent.pre("Bash", bash("curl -sf localhost:8080/health"))
    assert before.denied and before.stopped and "loopwatch stopped the run" in before.out["stopReason"]
    # Any later call of that run is refused too, until the user writes again.
    later = agent.pre("Read", {"file_path": "/p/server.log"})
    assert later.denied and later.stopped
    agent.prompt("the server is up now")
    assert agent.pre("Read", {"file_path": "/p/server.log"}).denied is None


def test_unattended_claude_p_ends_a_run_repeating_the_same_success_at_the_fifth_call(tmp_path):
    agent = Agent(tmp_path / "state", tmp_path, env={"LOOPWATCH_PROFILE": "", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"})
    shown = {"stdout": "BEGIN:VCALENDAR\nEND:VCALENDAR", "stderr": "", "interrupted": False, "isImage": False}
    answers = [agent.run("Bash", bash("cat /app/meeting.ics"), response=shown) for _ in range(4)]
    assert answers[2][1].context and "cat /app/meeting.ics" in answers[2][1].context  # nudged at the 3rd
    assert not any(before.denied or after.stopped for before, after in answers)  # the 4th ran
    before = agent.pre("Bash", bash("cat /app/meeting.ics"))
    assert before.denied and before.stopped and "loopwatch stopped the run" in before.out["stopReason"]


def test_codex_stop_lands_at_the_next_post_tool_use(tmp_path):
    agent = Agent(tmp_path / "state", tmp_path, host="codex", env={"LOOPWATCH_PROFILE": "unattended"})
    for i in range(3):
        agent.run("Bash", bash("cargo build"), error="error[E0432]: unresolved import `serde`")
    before = agent.pre("Bash", bash("cargo build"))
    assert before.code == 2 and "loopwatch stopped the run" in before.err  # Codex rejects continue:false here
    after = agent.post("Bash", bash("ls"), "Exit code: 0\nOutput:\nCargo.toml src")
    assert after.stopped and "loopwatch stopped the run" in after.out["stopReason"]


def test_mode_off_does_nothing(agent):
    agent.extra_env["LOOPWATCH_MODE"] = "off"
    for i in range(5):
        before, after = agent.run("Bash", bash("pytest"), error=pytest_failure(1))
        assert before.out is None and after.out is None and before.code == 0
    assert not (agent.state / "state.db").exists()


def test_hook_path_imports_neither_click_nor_rich(agent):
    import subprocess
    import sys

    payload = {
        **agent.base("PostToolUse"),
        "tool_name": "Bash",
        "tool_input": bash("ls"),
        "tool_response": {"stdout": "a"},
        "tool_use_id": "t1",
    }
    import json

    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loopwatch", "hook"],
        input=json.dumps(payload).encode(),
        env=agent.env(),
        capture_output=True,
        cwd=agent.cwd,
    )
    modules = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.decode().splitlines() if "|" in line}
    assert proc.returncode == 0 and "loopwatch" in modules
    assert not modules & {"click", "rich"}, modules & {"click", "rich"}


#: What the hook must not import on its way to an answer: it runs on every tool call.
HEAVY = {"click", "rich", "orjson", "pathlib", "urllib", "tomllib", "hashlib", "subprocess", "tempfile", "shutil"}


@pytest.mark.parametrize("name", list(HOSTS))
def test_each_hosts_hook_path_imports_nothing_heavy(agent, name):
    """Without site (which imports what the machine's .pth files want), the hook's own
    imports for each host's after-call payload: nothing heavy it does not use."""
    import subprocess
    import sys

    agent_cli = host(name)
    payload = agent_cli.probe_payload(str(agent.cwd), str(agent.cwd))
    event = [agent_cli.probe_event] if agent_cli.probe_event else []
    proc = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-m", "loopwatch", "hook", name, *event],
        input=json.dumps(payload).encode(),
        env={**agent.env(), "PYTHONPATH": SRC},
        capture_output=True,
        cwd=agent.cwd,
    )
    modules = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.decode().splitlines() if "|" in line}
    assert proc.returncode == 0 and "loopwatch" in modules, proc.stderr.decode()[-500:]
    assert (agent.state / "state.db").exists()  # it did look at the call
    assert not modules & HEAVY, modules & HEAVY
