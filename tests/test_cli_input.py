"""Bad input never ends in success, and what the commands print reads right: one-line
errors with exit 2, "did you mean", JSON when asked, options in the wrong place
flagged, tables readable at 80 columns, names told apart, counts in words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwatch._cli import cli

from conftest import healthy_events, jsonl, looping_events

ROOT = Path(__file__).resolve().parent.parent


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [*map(str, args)], env=env)


def one_line_error(result, exit_code=2):
    """Exit 2, nothing on stdout, one line on stderr, no traceback."""
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return lines[0]


# -- a mistyped command -----------------------------------------------------------------


@pytest.mark.parametrize(("typed", "meant"), [("scna", "scan"), ("calibrat", "calibrate"), ("stauts", "status")])
def test_a_mistyped_command_gets_did_you_mean(typed, meant):
    result = invoke(typed)
    assert result.exit_code == 2
    assert f"no such command {typed!r}; did you mean {meant!r}?" in result.stderr


def test_a_command_like_no_other_gets_no_suggestion():
    result = invoke("frobnicate")
    assert result.exit_code == 2
    assert "no such command 'frobnicate'" in result.stderr and "did you mean" not in result.stderr


# -- calibrate on what it cannot calibrate ---------------------------------------------------


def test_calibrate_on_a_missing_path_exits_2_with_one_line(tmp_path):
    line = one_line_error(invoke("calibrate", "--no-progress", tmp_path / "nowhere"))
    assert line == f"loopwatch calibrate: no session could be read: {tmp_path / 'nowhere'}: no such file or folder"


def test_calibrate_on_a_folder_with_no_transcript_exits_2_with_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.md").write_text("# notes\n")  # not a transcript by its name: left out of a folder walk
    line = one_line_error(invoke("calibrate", "--no-progress", empty))
    assert line == f"loopwatch calibrate: no transcript found in {empty}"


@pytest.mark.parametrize("name", ["notes.md", "notes.txt"])
def test_calibrate_on_a_text_file_of_no_format_exits_2_with_one_line(tmp_path, name):
    plain = tmp_path / name
    plain.write_text("Remember to water the plants.\n")
    line = one_line_error(invoke("calibrate", "--no-progress", plain))
    assert line.startswith(f"loopwatch calibrate: no session could be read: {plain}: unknown format")


def test_calibrate_shows_what_it_read_and_still_exits_2_for_what_it_could_not(tmp_path):
    good = tmp_path / "loop.jsonl"
    good.write_text(jsonl(looping_events()))
    plain = tmp_path / "notes.md"
    plain.write_text("Remember to water the plants.\n")
    result = invoke("calibrate", "--no-progress", "--json", good, plain)
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert [row["path"] for row in report["sessions"]] == [str(good)]
    assert report["unreadable"] == [f"{plain}: unknown format (use --format to name it)"]
    assert result.stderr.splitlines() == [
        f"loopwatch calibrate: cannot read {plain}: unknown format (use --format to name it)"
    ]


def test_calibrate_format_reads_a_file_its_name_does_not_tell(tmp_path):
    plain = tmp_path / "capture.md"
    plain.write_text("Request failed, retrying\n" * 3)
    result = invoke("calibrate", "--no-progress", "--json", "--format", "tb-console", plain)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sessions"][0]["calibration"]["lines_most"] == 3


def test_calibrate_rows_are_named_so_they_can_be_told_apart(tmp_path, monkeypatch):
    """The same task run by two models: one file name, one session id, two rows."""
    for model in ("model-a", "model-b"):
        (tmp_path / model).mkdir()
        (tmp_path / model / "task-17.jsonl").write_text(jsonl(looping_events()))
    monkeypatch.chdir(tmp_path)
    result = invoke("calibrate", "--no-progress", "model-a", "model-b")
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "task-17" in line]
    assert len(rows) == 2
    assert "model-a/task-17.jsonl" in rows[0] and "model-b/task-17.jsonl" in rows[1]
    assert "None" not in result.stdout


@pytest.mark.parametrize("size", ["99999999999999999999", "9223372036854775807", "1000001"])
def test_calibrate_windows_past_what_a_setting_may_hold_is_the_options_error(tmp_path, size):
    session = tmp_path / "task.jsonl"
    session.write_text(jsonl(looping_events()))
    result = invoke("calibrate", "--no-progress", "--windows", f"12,{size}", session)
    assert result.exit_code == 2 and result.stdout == "", (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "reader" not in result.stderr and "cannot read" not in result.stderr
    error = result.stderr.splitlines()[-1]
    assert error.startswith("Error: --windows: ") and f"{size} is out of range" in error, error


# -- status --json with nothing to show ------------------------------------------------------


def test_status_json_with_no_state_prints_no_record_and_no_prose(tmp_path):
    result = invoke("status", "--json", env={"LOOPWATCH_STATE_DIR": str(tmp_path / "state")})
    assert result.exit_code == 0
    assert result.stdout == ""  # JSON lines: no session, no line; a parser reads zero records
    assert "no hooked sessions yet" in result.stderr


def test_status_without_json_says_so_on_stdout(tmp_path):
    result = invoke("status", env={"LOOPWATCH_STATE_DIR": str(tmp_path / "state")})
    assert result.exit_code == 0 and "no hooked sessions yet" in result.stdout


# -- run: loopwatch's options after the command ----------------------------------------------


def _run(*argv):
    env = {k: v for k, v in os.environ.items() if k != "LOOPWATCH_MODE"}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", "run", *argv], capture_output=True, text=True, env=env, timeout=60
    )


def test_run_flags_its_own_options_after_the_command():
    echo = [sys.executable, "-c", "import sys; print(sys.argv[1:])"]
    ran = _run("--", *echo, "--max-runtime", "5", "--idle=3")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "['--max-runtime', '5', '--idle=3']"  # still the command's: passed on unchanged
    flagged = [line for line in ran.stderr.splitlines() if "after the command" in line]
    assert len(flagged) == 1
    assert flagged[0].startswith("loopwatch: --max-runtime, --idle after the command go to ")
    assert "put them before the command" in flagged[0]


def test_run_does_not_flag_options_agents_commonly_have_or_its_own_before_the_command():
    echo = [sys.executable, "-c", "import sys; print(sys.argv[1:])"]
    ran = _run("--max-runtime", "30", "--", *echo, "--config", "agent.toml", "--mode", "fast")
    assert ran.returncode == 0, ran.stderr
    assert not [line for line in ran.stderr.splitlines() if "after the command" in line]


# -- what scan prints ------------------------------------------------------------------------------


def test_the_scan_report_is_readable_at_80_columns(tmp_path, monkeypatch):
    deep = tmp_path / "runs" / "2026-12-01" / "claude-sonnet-4-5" / "a-rather-long-task-name-for-the-test"
    deep.mkdir(parents=True)
    (deep / "session.jsonl").write_text(jsonl(looping_events()))
    monkeypatch.chdir(tmp_path)
    result = invoke("scan", "--no-progress", "runs", env={"COLUMNS": "80"})
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80, lines
    text = " ".join(lines)
    # every cell of the table is there, in words
    assert "runs/2026-12-01/claude-sonnet-4-5/a-rather-long-task-name-for-the-test/session" in "".join(lines)
    assert "repeat: the same Bash call returned the same result" in text
    assert "loop began at action 1" in text and "stopped after action" in text
    assert "wasted after the stop:" in text
    assert "Scanned 1 file: 1 session, 6 actions." in text


def test_the_scan_table_stays_a_table_when_wide(tmp_path, monkeypatch):
    (tmp_path / "loop.jsonl").write_text(jsonl(looping_events()))
    monkeypatch.chdir(tmp_path)
    result = invoke("scan", "--no-progress", "loop.jsonl", env={"COLUMNS": "160"})
    lines = result.stdout.splitlines()
    assert "what loopwatch saw" in lines[1] and max(map(len, lines)) <= 160


def test_counts_are_in_words_singular_and_plural(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(jsonl([{"type": "tool", "name": "Bash", "input": {"command": "ls"}, "result": "a"}]))
    healthy = tmp_path / "healthy.jsonl"
    healthy.write_text(jsonl(healthy_events()))
    result = invoke("scan", "--no-progress", one)
    assert "Scanned 1 file: 1 session, 1 action." in result.stdout
    result = invoke("scan", "--no-progress", one, healthy)
    assert "Scanned 2 files: 2 sessions, 9 actions." in result.stdout
    assert "None" not in result.stdout + result.stderr
