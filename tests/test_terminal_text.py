"""Text from data never reaches the terminal raw: escape sequences (OSC 52 to the
clipboard, a screen clear, a window title, a colour that hides the verdict), C0 and C1
controls and bidirectional overrides in tool names, file names, session ids and labels
are shown as visible escapes by every command (`scan`, `status`, `calibrate`,
`evaluate`, `report`, `doctor`, `run`), and rich markup in data is text, not markup."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import jsonl
from hook_support import Agent

SRC = Path(__file__).resolve().parent.parent / "src"

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the clipboard
CLEAR = "\x1b[2J\x1b[H"  # clear the screen
TITLE = "\x1b]0;pwned\x1b\\"  # retitle the window
HIDE = "\x1b[8m"  # conceal what follows
C1 = "\x9b2J"  # a CSI as one C1 control
BIDI = "\u202e"  # right-to-left override
MARKUP = "[bold red]markup[/bold red]"
OPENS = "[bold red]"  # markup a file name can hold (no slash)
HOSTILE = CLIPBOARD + CLEAR + TITLE + HIDE + C1 + BIDI + MARKUP
# What must never be written raw: ESC, BEL, the C1 controls, the bidirectional controls.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def run(*args, env=None, cwd=None, stdin=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", *map(str, args)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1", **(env or {})},
        cwd=cwd,
        input=stdin,
        timeout=timeout,
        check=False,
    )


def assert_visible(done: subprocess.CompletedProcess, *shown: str) -> str:
    """Nothing raw on stdout or stderr, no traceback; each of `shown` in the output."""
    text = done.stdout.decode("utf-8", "surrogateescape") + done.stderr.decode("utf-8", "surrogateescape")
    assert "Traceback" not in text, text
    raw = sorted(set(RAW.findall(text)))
    assert raw == [], f"raw control characters {raw!r} in:\n{text}"
    for piece in shown:
        assert piece in text, (piece, text)
    return text


def hostile_session(folder: Path, name: str = "run.jsonl", times: int = 6) -> Path:
    call = {"type": "tool", "name": "Bash" + HOSTILE, "input": {"command": "pytest -x"}, "error": True, "result": "E"}
    path = folder / name
    path.write_text(jsonl([{"type": "user", "session": "s" + HOSTILE}] + [call] * times))
    return path


@pytest.fixture
def runs(tmp_path):
    folder = tmp_path / ("runs" + CLEAR)
    folder.mkdir()
    hostile_session(folder, "a" + TITLE + ".jsonl")
    hostile_session(folder, "b" + OPENS + ".jsonl")
    (folder / ("c" + CLIPBOARD + ".jsonl")).write_text("not a transcript\n")  # listed as unreadable
    return folder


@pytest.mark.parametrize("columns", ["80", "200"])
def test_scan_shows_names_as_text(runs, columns):
    done = run("scan", "--no-progress", runs, env={"COLUMNS": columns})
    assert done.returncode == 2
    assert_visible(done, "\\x1b]52;c;", "\\x1b[2J", "b[bold", "Bash")


def test_scan_skipped_lines_and_errors_are_text(tmp_path):
    path = tmp_path / ("bad" + CLEAR + ".jsonl")
    path.write_text(jsonl([{"type": "user"}, {"type": "tool" + CLIPBOARD}, {"type": "tool", "name": "x", "input": {}}]))
    done = run("scan", "--no-progress", path)
    assert_visible(done, "\\x1b[2J")


def test_scan_json_escapes_what_json_does_not(runs):
    done = run("scan", "--no-progress", "--json", runs)
    text = assert_visible(done)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(r["session"] for r in records if r["session"]) == ["s" + HOSTILE] * 2  # the same data
    assert "\\u202e" in text


def test_calibrate_shows_names_as_text(runs):
    done = run("calibrate", "--no-progress", runs.name, cwd=runs.parent)  # short names: not cut in the table
    assert_visible(done, "\\x1b[2J", "b[bold")


def test_evaluate_shows_paths_as_text(runs):
    (runs / "outcomes.tsv").write_text("session\tresolved\nnone\tno\n")
    (runs / ("d" + OPENS + ".jsonl")).write_text("not a transcript either\n")
    done = run("evaluate", "--no-progress", runs, "--outcomes", runs / "outcomes.tsv")
    assert done.returncode == 2  # the files that are no transcript
    assert_visible(done, "\\x1b]52;c;", "d[bold")  # (the line may wrap after it)


def test_report_summary_is_text(runs, tmp_path):
    pytest.importorskip("jinja2")
    done = run("report", "--no-progress", runs, "-o", tmp_path / ("page" + TITLE + ".html"))
    assert_visible(done, "\\x1b]0;pwned")


def test_status_shows_tool_names_and_session_ids_as_text(tmp_path):
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    agent = Agent(state, work, session="s" + HOSTILE)
    for _ in range(4):
        agent.run("Bash" + HOSTILE, {"command": "pytest -x"}, error="E   ImportError")
    env = {"LOOPWATCH_STATE_DIR": str(state), "HOME": str(state / "home")}
    for args in ((), ("s",)):  # the latest sessions; one session, in full
        assert_visible(run("status", *args, env=env), "\\x1b]52;c;")


def test_doctor_shows_a_projects_hook_command_as_text(tmp_path):
    project = tmp_path / "repo"
    (project / ".claude").mkdir(parents=True)
    command = "loopwatch hook claude-code" + HOSTILE
    hooks = {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    home = tmp_path / "home"
    home.mkdir()
    done = run("doctor", "claude-code", cwd=project, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert_visible(done)


@pytest.mark.slow
def test_run_says_a_tool_name_as_text(tmp_path):
    agent = tmp_path / "agent.py"
    agent.write_text(
        textwrap.dedent(
            f"""
            import json, sys, time
            name = {json.dumps("Bash" + HOSTILE)}
            def emit(o):
                sys.stdout.write(json.dumps(o) + "\\n"); sys.stdout.flush()
            emit({{"type": "system", "subtype": "init", "session_id": "s", "cwd": "/r", "model": "m", "tools": []}})
            for n in range(1, 40):
                use = {{"type": "tool_use", "id": f"t{{n}}", "name": name, "input": {{"command": "pytest -x"}}}}
                emit({{"type": "assistant", "session_id": "s", "parent_tool_use_id": None,
                       "message": {{"id": f"m{{n}}", "role": "assistant", "content": [use]}}}})
                result = {{"type": "tool_result", "tool_use_id": f"t{{n}}", "is_error": True, "content": "E   boom"}}
                emit({{"type": "user", "session_id": "s", "parent_tool_use_id": None,
                       "message": {{"role": "user", "content": [result]}}}})
                time.sleep(0.01)
            """
        )
    )
    done = run("run", "--mode", "enforce", "--", sys.executable, agent, timeout=120)
    text = done.stderr.decode("utf-8", "surrogateescape")
    ours = "\n".join(line for line in text.splitlines() if line.startswith("loopwatch: "))
    assert "Bash" in ours, text
    assert RAW.findall(ours) == [], ours


def test_a_character_cut_between_two_writes_is_still_made_visible():
    import io

    from loopwatch._cli.terminal import _VisibleBytes

    raw = io.BytesIO()
    stream = _VisibleBytes(raw)
    data = ("é" + CLEAR + BIDI + " ok\n").encode()
    for i in range(len(data)):  # a byte at a time: every character cut
        stream.write(data[i : i + 1])
    stream.flush()
    assert raw.getvalue().decode() == "é\\x1b[2J\\x1b[H\\u202e ok\n"
