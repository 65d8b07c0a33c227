"""`doctor`'s dry-run call of an installed hook command, shared by the Claude Code and
Codex checks: what it reports when the command cannot run, does not answer, or runs."""

from __future__ import annotations

import shlex
import sys

from loopwatch._cli import doctor
from loopwatch._cli.dry_run import dry_run

_PY = shlex.quote(sys.executable)


def test_a_command_that_cannot_start_is_a_failure_not_a_traceback(tmp_path):
    ran = dry_run("true", lambda folder: {}, {"PATH": "/usr/bin:/bin"}, tmp_path / "gone", 5)
    assert ran.done is None and ran.failure.startswith("did not run (") and not ran.wrote_state


def test_a_command_that_does_not_answer_is_a_failure(tmp_path):
    ran = dry_run(f"{_PY} -c 'import time; time.sleep(30)'", lambda folder: {}, {}, tmp_path, 1)
    assert ran.done is None and ran.failure == "did not answer within 1s"


def test_what_the_hook_left_in_its_throwaway_folder_is_reported(tmp_path):
    # A stand-in hook: writes a state file and log lines where LOOPWATCH_STATE_DIR says,
    # and echoes the payload it was given, which names a file in that same folder. The
    # line reported is the last that let the call through unchecked, not a warning after it.
    script = (
        "import os, sys; d = os.environ['LOOPWATCH_STATE_DIR']; "
        "open(os.path.join(d, 'state.db'), 'w').close(); "
        "open(os.path.join(d, 'hook.log'), 'w').write('first\\nTimeout: x; allowed\\nwarned: a project hook\\n'); "
        "sys.stdout.write(sys.stdin.read())"
    )
    ran = dry_run(f"{_PY} -c {shlex.quote(script)}", lambda folder: {"in": folder}, {}, tmp_path, 30)
    assert ran.done is not None and ran.done.returncode == 0 and ran.failure == ""
    assert ran.wrote_state and ran.log == "Timeout: x; allowed"
    assert "loopwatch-doctor-" in ran.done.stdout  # the payload was built for the throwaway folder


def test_the_claude_code_check_says_a_hook_that_cannot_start_in_one_line(tmp_path):
    # An OSError here (a missing working folder) must be one line, never a traceback.
    from loopwatch._hosts import host

    line = doctor._dry_run(host("claude-code"), "true", {"PATH": "/usr/bin:/bin"}, tmp_path / "gone")
    assert line.status == "problem" and line.text.startswith("the hook command did not run (")


def _fake_cli(tmp_path, body: str) -> dict[str, str]:
    folder = tmp_path / "bin"
    folder.mkdir(parents=True)
    (folder / "cline").write_text(f"#!/bin/sh\n{body}\n")
    (folder / "cline").chmod(0o755)
    return {"PATH": str(folder)}


def test_a_cli_slow_to_say_its_version_is_not_a_problem(tmp_path, monkeypatch):
    from loopwatch._hosts import host

    monkeypatch.setattr(doctor, "_VERSION_TIMEOUT", 0.5)
    line = doctor._version(host("cline"), _fake_cli(tmp_path, "exec /bin/sleep 30"))
    assert line.status == "info" and "did not answer within 0.5 s: version not known" in line.text


def test_a_cli_that_fails_to_say_its_version_is_a_problem(tmp_path):
    from loopwatch._hosts import host

    line = doctor._version(host("cline"), _fake_cli(tmp_path, "exit 3"))
    assert line.status == "problem" and "failed (exit 3)" in line.text
    said = doctor._version(host("cline"), _fake_cli(tmp_path / "ok", "echo 3.0.65"))
    assert said.status == "info" and said.text.startswith("Cline 3.0.65 (")
