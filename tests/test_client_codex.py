"""The real Codex CLI (`@openai/codex`, pinned in codex_support), driven offline by our
scripted Responses API server, with loopwatch installed by `loopwatch install codex`
exactly as a user would. Each test has a fresh HOME and CODEX_HOME.

What these pin (README, "Codex"):
- after `loopwatch install codex` the hooks run: Codex itself lists loopwatch's
  entries as trusted, and nothing else the user had;
- in `codex exec` the hook nudges at the 3rd identical failing call and blocks the
  4th, but no hook answer ends `codex exec` (the model keeps being asked);
- `loopwatch run -- codex exec --json` ends it at the 4th call, with no model turn
  after the stop, with or without the hook installed;
- attended (the interactive TUI in a pseudo-terminal, and `codex exec` with
  LOOPWATCH_PROFILE=attended), every repeat after the nudge is blocked, never stopped;
- a healthy session runs untouched, through the hook and through `run`;
- a failing Codex command reads as a failure (the error-based signals see it).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from codex_support import CODEX_VERSION, CodexHome, ScriptedResponses, require_codex, say, shell, stream_items

pytestmark = pytest.mark.slow

LOOP = "ls /nonexistent-dir-xyz"
NUDGE = "going in circles"  # in every nudge the hook sends the model


@pytest.fixture(scope="session")
def codex_cli() -> str:
    """The pinned Codex CLI, installed from the npm registry on first use."""
    return require_codex()


@pytest.fixture
def user(tmp_path, codex_cli):
    """A function giving a fresh user for a script: (CodexHome, server)."""
    servers = []

    def make(script):
        server = ScriptedResponses(script).__enter__()
        servers.append(server)
        return CodexHome(tmp_path, server, codex_cli), server

    yield make
    for server in servers:
        server.__exit__(None, None, None)


def _hooks_list(home: CodexHome) -> list[dict]:
    """Codex's own view of the hooks (`codex app-server`, `hooks/list`)."""
    proc = subprocess.Popen(
        [home.codex, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=home.env(),
        cwd=home.work,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message in (
            {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "loopwatch-tests", "version": "1"}}},
            {"method": "initialized"},
            {"id": 2, "method": "hooks/list", "params": {"cwds": [str(home.work)]}},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            answer = json.loads(line)
            if answer.get("id") == 2:
                return [hook for entry in answer["result"]["data"] for hook in entry["hooks"]]
        raise AssertionError("codex app-server never answered hooks/list")
    finally:
        proc.kill()
        proc.wait()


def test_the_pinned_version_runs(user):
    home, _ = user([])
    done = subprocess.run([home.codex, "--version"], capture_output=True, text=True, env=home.env(), timeout=60)
    assert done.stdout.split()[-1] == CODEX_VERSION


def test_install_records_codex_trust_for_exactly_our_entries(user):
    home, _ = user([])
    other = {"type": "command", "command": "python3 ~/.codex/hooks/context.py"}
    (home.codex_home / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [other]}]}}))
    config = home.codex_home / "config.toml"
    before = config.read_text()

    done = home.install()

    hooks = _hooks_list(home)
    ours = [h for h in hooks if "loopwatch hook codex" in (h["command"] or "")]
    assert sorted(h["eventName"] for h in ours) == ["postToolUse", "preToolUse", "stop", "userPromptSubmit"]
    assert all(h["trustStatus"] == "trusted" for h in ours), ours
    theirs = [h for h in hooks if h["command"] == other["command"]]
    assert [h["trustStatus"] for h in theirs] == ["untrusted"]  # never trusted on the user's behalf
    # the user is told exactly what was trusted: every key and hash Codex reports
    for hook in ours:
        assert f"{hook['key']}  {hook['currentHash']}" in done.stdout
    assert "codex_hooks" not in done.stdout  # no such feature flag in Codex 0.171
    text = config.read_text()
    assert text.startswith(before)  # the user's settings and comments, byte for byte

    again = home.install()  # idempotent: nothing changes the second time
    assert config.read_text() == text and "already trusted" in again.stdout

    home.loopwatch("uninstall", "codex")
    assert config.read_text().rstrip("\n") == before.rstrip("\n")


def test_install_refuses_success_when_trust_cannot_be_recorded(user):
    home, _ = user([])
    config = home.codex_home / "config.toml"
    config.write_text(config.read_text() + '\n[hooks]\nstate = { "x" = { trusted_hash = "sha256:0" } }\n')
    before = config.read_text()
    done = home.loopwatch("install", "codex")
    assert done.returncode != 0
    assert "NOT active" in done.stderr and "trusted_hash" in done.stderr  # says what to write, and where
    assert config.read_text() == before  # nothing half-done
    assert all(h["trustStatus"] != "trusted" for h in _hooks_list(home))


def test_unattended_hook_nudges_then_blocks_but_cannot_end_codex_exec(user):
    home, server = user([shell(LOOP)] * 12)
    home.install()
    done = home.exec("list the missing dir")

    ran = stream_items(done.stdout)
    assert len(ran) == 3  # the 4th identical call and every later one were blocked
    assert all(item["exit_code"] == 2 for item in ran)
    assert NUDGE not in server.texts(3) and NUDGE in server.texts(4)  # nudged after the 3rd
    outputs = [server.tool_outputs(n)[-1] for n in range(5, len(server.requests) + 1)]
    assert outputs and all(
        o.startswith("Command blocked by PreToolUse hook: loopwatch stopped the run") for o in outputs
    )
    # What no Codex hook can do: end `codex exec`. The model was asked again after
    # every blocked call, until the script ran out (README: use `loopwatch run`).
    assert len(server.requests) == 13 and done.returncode == 0


def test_reworded_runtime_fields_are_the_same_call_live_and_replayed(user):
    """The model words `yield_time_ms` and `max_output_tokens` anew at every call of the
    same failing command. The hook is told `Bash {command}` only, so it blocks from
    the 4th call as ever; the rollout Codex wrote keeps every field, and its replay
    must read the same loop: nudged at the 3rd call, stopped at the 4th."""
    script = [
        {
            "call": "exec_command",
            "arguments": {"cmd": LOOP, "yield_time_ms": 1000 + 250 * i, "max_output_tokens": 4000 + i},
        }
        for i in range(12)
    ]
    home, server = user(script)
    home.install()
    done = home.exec("list the missing dir")
    assert len(stream_items(done.stdout)) == 3  # the 4th call and every later one were blocked
    assert NUDGE not in server.texts(3) and NUDGE in server.texts(4)
    (rollout,) = home.rollouts()
    asked = [json.loads(line)["payload"] for line in rollout.read_text().splitlines() if '"function_call"' in line]
    assert len({(a["arguments"]) for a in asked if a.get("type") == "function_call"}) == 12  # all worded anew
    scanned = json.loads(home.loopwatch("scan", "--json", str(rollout)).stdout)
    # The replay reads the hook's refusals as calls that never ran: nudged at the 3rd, the
    # 4th refused, as the hook did.
    said = [(i["action"], i["signal"], i["at_action"]) for i in scanned["interventions"]]
    assert said == [("nudge", "repeat", 3), ("stop", "repeat", 4)], said
    assert scanned["actions"] == 3


def _run(home: CodexHome, prompt: str, record) -> subprocess.CompletedProcess:
    return home.run(prompt, "-o", str(record))


@pytest.mark.parametrize("hooked", [True, False], ids=["with-hook", "run-only"])
def test_run_ends_codex_exec_at_the_fourth_identical_failing_call(user, tmp_path, hooked):
    home, server = user([shell(LOOP)] * 12)
    if hooked:
        home.install()
    record = tmp_path / "record.json"
    done = _run(home, "list the missing dir", record)

    assert done.returncode == 86, done.stderr[-2000:]
    assert len(stream_items(done.stdout)) == 4
    # No model turn after the stop: no fifth call ran. Codex posts the 4th call's output
    # to the model while `run` reads the same output from the stream, so that one request
    # may be in flight when the process group is ended; how often depends on scheduling,
    # so the count allows it, and what it carries is checked instead.
    assert len(server.requests) in (4, 5)
    assert all(len(server.tool_outputs(n)) <= 4 for n in range(1, len(server.requests) + 1))
    verdict = json.loads(record.read_text())["loop"]["verdict"]
    assert verdict["action"] == "stop" and verdict["at_action"] == 4
    if hooked:  # the hook's nudge reached the model before the stop
        assert NUDGE in server.texts(4)


def test_attended_blocks_every_repeat_after_the_nudge(user):
    home, server = user([shell(LOOP)] * 8)
    home.install()
    done = home.exec("list the missing dir", LOOPWATCH_PROFILE="attended")

    assert len(stream_items(done.stdout)) == 3
    assert NUDGE in server.texts(4)
    blocked = [server.tool_outputs(n)[-1] for n in range(5, len(server.requests) + 1)]
    assert len(blocked) == 5 and all(o.startswith("Command blocked by PreToolUse hook:") for o in blocked)
    assert not any("stopped the run" in o for o in blocked)  # attended: blocked, never stopped
    assert _status(home)["profile"] == "attended"


def test_attended_interactive_codex_blocks_every_repeat_after_the_nudge(user):
    """The real interactive TUI, in a pseudo-terminal: a person is there, so no stop."""
    home, server = user([shell(LOOP)] * 8)
    home.install()
    home.tui("list the missing dir")

    outputs = [server.tool_outputs(n)[-1] for n in range(2, len(server.requests) + 1)]
    assert len(outputs) == 8
    assert all(o.startswith("Chunk ID:") for o in outputs[:3])  # the first 3 ran
    assert all(o.startswith("Command blocked by PreToolUse hook: loopwatch blocked this call") for o in outputs[3:])
    assert NUDGE in server.texts(4)
    seen = _status(home)
    assert (seen["profile"], seen["profile_reason"]) == ("attended", "interactive")
    assert (seen["nudges"], seen["blocks"], seen["stops"]) == (1, 5, 0)


HEALTHY = [
    shell("echo 1"),
    shell("pwd"),
    shell("uname -s"),
    shell("date +%Y"),
    shell("printf 'def test_add():\\n    assert 1 + 1 == 3\\n' > test_add.py"),
    shell('python3 -c "import test_add; test_add.test_add()"'),  # fails: AssertionError
    shell("cat test_add.py"),
    shell("sed -i 's/== 3/== 2/' test_add.py"),
    shell('python3 -c "import test_add; test_add.test_add()" && echo passed'),
    say("The test passes now."),
]


def test_healthy_session_runs_untouched_through_the_hook(user):
    home, server = user(HEALTHY)
    home.install()
    done = home.exec("make the test pass")

    ran = stream_items(done.stdout)
    assert len(ran) == 9 and ran[5]["exit_code"] == 1 and "passed" in ran[8]["aggregated_output"]
    assert len(server.requests) == 10 and done.returncode == 0
    assert not any("loopwatch" in server.texts(n) for n in range(1, 11))  # not a word to the model
    seen = _status(home)  # the hook did watch every call, and stayed quiet
    assert (seen["actions"], seen["nudges"], seen["blocks"], seen["stops"]) == (9, 0, 0, 0)
    assert seen["profile"] == "unattended" and seen["profile_reason"] == "codex exec"


def _status(home: CodexHome) -> dict:
    done = home.loopwatch("status", "--json")
    sessions = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(sessions) == 1, done.stdout + done.stderr
    return sessions[0]


def test_healthy_session_runs_untouched_under_run(user, tmp_path):
    home, server = user(HEALTHY)
    home.install()
    record = tmp_path / "record.json"
    done = _run(home, "make the test pass", record)

    assert done.returncode == 0, done.stderr[-2000:]
    assert len(stream_items(done.stdout)) == 9 and len(server.requests) == 10
    data = json.loads(record.read_text())
    assert data["ended_by"] == "exit" and data["loop"]["interventions_total"] == 0


def test_a_failing_codex_command_reads_as_a_failure_in_the_hook(user):
    """Different commands, the same error: only error-based signals can see this, and
    only if the hook knows the calls failed (Codex's PostToolUse has no exit code)."""
    home, server = user([shell(f"cat /nonexistent-dir-xyz/file-{i}.txt") for i in range(1, 9)])
    home.install()
    home.exec("read the files")
    findings = {f["signal"] for f in _status(home)["findings"]}
    assert "same_error" in findings, "Codex's failing calls read as successes"
    assert any("the same Bash error came back" in server.texts(n) for n in range(1, len(server.requests) + 1))


def _doctor(home: CodexHome) -> list[tuple[bool, str]]:
    from loopwatch._cli.doctor_codex import check_codex

    return check_codex(home.env(), codex=home.codex, cwd=str(home.work))


def test_doctor_says_what_is_wrong_and_when_all_is_well(user):
    home, _ = user([])
    lines = _doctor(home)
    assert lines[0] == (True, lines[0][1]) and CODEX_VERSION in lines[0][1]
    assert lines[-1][0] is False and "not installed" in lines[-1][1] and "loopwatch install codex" in lines[-1][1]

    home.install()
    lines = _doctor(home)
    assert all(ok for ok, _ in lines), lines
    assert any("Codex lists all 4 loopwatch hooks as trusted" in line for _, line in lines)
    assert any(line.startswith("codex: runnable") for _, line in lines)
    assert not (home.state / "hook.log").exists()  # the dry run used a throwaway state folder

    hooks = home.codex_home / "hooks.json"  # a change to an entry: Codex no longer trusts it
    hooks.write_text(hooks.read_text().replace('"timeout": 30', '"timeout": 31', 1))
    lines = _doctor(home)
    trusted = [line for ok, line in lines if "trusted" in line]
    assert trusted and "NOT trusted (PreToolUse: modified)" in trusted[0], lines


def test_doctor_finds_a_hook_that_cannot_run(user):
    home, _ = user([])
    done = home.loopwatch("install", "codex", "--command", "/nonexistent/python -m loopwatch hook codex")
    assert done.returncode == 0
    lines = _doctor(home)
    assert lines[-1][0] is False and "failed on a dry run" in lines[-1][1]
