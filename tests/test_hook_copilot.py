"""`loopwatch hook copilot EVENT` as Copilot runs it: a process per event, the payloads the
real CLI sent (tests/fixtures/copilot-hooks/), the answer on stdout and the exit status.

Copilot refuses a call whose preToolUse hook exits non-zero, so every way the hook can
fail must still exit 0 and allow (or, under `fail = "closed"`, refuse with a JSON answer),
the installed command included when its Python cannot even start. And the run is ended
only by SIGINT to the headless `copilot` process among the hook's ancestors: never to
another process, never to an interactive session (proven here with stand-in processes
named `copilot` and `node`; the real CLI's end is in test_realclient_copilot.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopwatch._hosts import host

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SRC = str(HERE.parent / "src")
HOOKS = HERE / "fixtures" / "copilot-hooks"


def payload(name: str) -> bytes:
    return (HOOKS / f"{name}.json").read_bytes()


class Hook:
    def __init__(self, tmp_path: Path, profile: str = "attended") -> None:
        self.state = tmp_path / "state"
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.home),
            "PYTHONPATH": SRC,
            "LOOPWATCH_STATE_DIR": str(self.state),
            "LOOPWATCH_PROFILE": profile,
        }

    def send(self, event: str, data: bytes, command: str | None = None) -> tuple[int, dict | None, str]:
        argv = command or f"{sys.executable} -m loopwatch hook copilot {event}"
        done = subprocess.run(argv, shell=True, input=data, capture_output=True, env=self.env, timeout=60, check=False)
        out = json.loads(done.stdout) if done.stdout.strip() else None
        return done.returncode, out, done.stderr.decode()

    def log(self) -> str:
        path = self.state / "hook.log"
        return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("release", ["89", "102"])
def test_three_identical_failures_are_nudged_and_the_fourth_refused(tmp_path, release):
    hook = Hook(tmp_path)
    pre, first = payload(f"{release}-preToolUse-bash"), payload(f"{release}-postToolUse-bash-exit2")
    again = payload(f"{release}-postToolUse-bash-exit2-again")
    answers = []
    for post in (first, again, again):
        assert hook.send("preToolUse", pre) == (0, None, "")
        answers.append(hook.send("postToolUse", post))
    assert answers[:2] == [(0, None, "")] * 2
    code, out, _ = answers[2]
    assert code == 0 and out is not None and out["additionalContext"].startswith("loopwatch: you appear")
    code, out, err = hook.send("preToolUse", pre)
    assert (code, err) == (0, "")
    assert out is not None and out["permissionDecision"] == "deny"
    assert out["permissionDecisionReason"].startswith("loopwatch blocked this call")


@pytest.mark.parametrize(
    "data",
    [b"", b"{not json", b"[1]", b'{"toolName": "bash"}', b'{"sessionId": 7, "toolName": "bash"}'],
)
def test_an_unreadable_payload_is_allowed_with_exit_status_0(tmp_path, data):
    hook = Hook(tmp_path)
    assert hook.send("preToolUse", data) == (0, None, "")
    assert "allowed" in hook.log()


def test_a_state_folder_that_cannot_be_used_is_allowed_with_exit_status_0(tmp_path):
    hook = Hook(tmp_path)
    hook.state.write_text("a file, not a folder")
    code, out, _ = hook.send("preToolUse", payload("102-preToolUse-bash"))
    assert (code, out) == (0, None)


def test_fail_closed_refuses_a_call_it_could_not_check_in_copilots_terms(tmp_path):
    hook = Hook(tmp_path)
    config = hook.home / ".config" / "loopwatch" / "loopwatch.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[hook]\nfail = "closed"\nbusy_timeout = 0.2\n')
    assert hook.send("postToolUse", payload("102-postToolUse-bash-exit2"))[0] == 0
    holder = sqlite3.connect(hook.state / "state.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code, out, _ = hook.send("preToolUse", payload("102-preToolUse-bash"))
        after = hook.send("postToolUse", payload("102-postToolUse-bash-exit2"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 0 and out is not None and out["permissionDecision"] == "deny"
    assert "fail closed" in out["permissionDecisionReason"]
    assert after[:2] == (0, None)  # only a call before it runs can be refused


def test_the_installed_command_allows_when_its_python_cannot_start(tmp_path):
    """A command that cannot even start (its Python removed, loopwatch uninstalled) exits
    0 through the `|| true` it is written with: Copilot would refuse every call otherwise."""
    hook = Hook(tmp_path)
    written = host("copilot").install({}, f"{tmp_path / 'gone' / 'python'} -m loopwatch hook copilot")
    (entry,) = written["hooks"]["preToolUse"]
    code, out, err = hook.send("preToolUse", payload("102-preToolUse-bash"), command=entry["bash"])
    assert (code, out) == (0, None) and "gone/python" in err
    without = entry["bash"].removesuffix(" || true")
    assert hook.send("preToolUse", payload("102-preToolUse-bash"), command=without)[0] != 0  # what it guards against


# -- ending a run -------------------------------------------------------------------------------

# A stand-in for the native `copilot`: this Python under the name `copilot`, which runs the
# hook's `end_run` in a child (as Copilot runs a hook) and reports whether a SIGINT came.
STAND_IN = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    child = (
        "import json, os\\n"
        "from loopwatch._hosts import host\\n"
        "from loopwatch._hosts.base import Payload\\n"
        "said = []\\n"
        "payload = Payload('copilot', 'PreToolUse', 's', '', None)\\n"
        "ended = host('copilot').end_run(payload, 'looping', said.append)\\n"
        "json.dump({'ended': ended, 'said': said}, open(os.environ['REPORT'], 'w'))\\n"
    )
    interrupted = False
    hook = subprocess.Popen([sys.argv[-1], "-c", child])
    try:
        hook.wait()
        time.sleep(5)
    except KeyboardInterrupt:
        interrupted = True
        hook.wait()
    with open(os.environ["REPORT"]) as fh:
        print(json.dumps({"child": json.load(fh), "interrupted": interrupted}))
    """
)


def _stand_in(tmp_path: Path, name: str, *args: str) -> dict:
    binary = tmp_path / name
    shutil.copy(os.path.realpath(sys.executable), binary)
    env = {**os.environ, "PYTHONHOME": sys.base_prefix, "PYTHONPATH": SRC, "REPORT": str(tmp_path / "report.json")}
    began = time.monotonic()
    done = subprocess.run(
        [str(binary), "-c", STAND_IN, *args, sys.executable],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict = json.loads(done.stdout)
    found["took"] = time.monotonic() - began
    return found


def test_a_headless_copilot_is_ended_by_sigint(tmp_path):
    found = _stand_in(tmp_path, "copilot", "-p", "do the task", "--allow-all-tools")
    assert found["interrupted"] and found["child"]["ended"]
    assert found["child"]["said"][0].startswith("sending SIGINT to copilot pid")
    assert found["took"] < 5


def test_an_interactive_copilot_is_never_signalled(tmp_path):
    found = _stand_in(tmp_path, "copilot", "--allow-all-tools")
    assert not found["interrupted"] and not found["child"]["ended"]
    assert "interactive session (no -p): never ended by loopwatch" in found["child"]["said"][0]


def test_the_npm_launcher_is_never_signalled(tmp_path):
    """`node .../.bin/copilot -p ...` is the launcher: signalled, it dies and leaves the
    session running. Only an executable named `copilot` is ended."""
    found = _stand_in(tmp_path, "node", "/x/node_modules/.bin/copilot", "-p", "do the task")
    assert not found["interrupted"] and not found["child"]["ended"]
    assert "no headless copilot process among the hook's ancestors" in found["child"]["said"][0]


def test_a_pid_that_is_now_another_process_is_not_signalled():
    """Between finding the session process and signalling it, its pid could be reused: the
    signal goes only to the process with the start time that was found."""
    from loopwatch._hosts import copilot

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        began = copilot._started(sleeper.pid)
        assert began is not None
        with pytest.raises(ProcessLookupError):
            copilot._signal(sleeper.pid, str(int(began) - 1), signal.SIGINT)  # found earlier: another process
        time.sleep(0.2)
        assert sleeper.poll() is None  # not signalled
        copilot._signal(sleeper.pid, began, signal.SIGINT)
        assert sleeper.wait(timeout=10) == -signal.SIGINT
    finally:
        sleeper.kill()
        sleeper.wait()
