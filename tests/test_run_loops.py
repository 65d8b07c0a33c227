"""`loopwatch run` ends agents that print themselves in circles, and only those."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from _run_helpers import agent, assert_nothing_left, loopwatch

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


def test_a_retry_line_forever_is_ended_with_86_by_the_defaults(tmp_path):
    ran = loopwatch(tmp_path, agent("retry_forever"))
    assert ran.status == 86
    record = ran.record
    assert record["ended_by"] == "loop"
    assert record["status"] == 86
    assert record["command"][-1].endswith("retry_forever.py")
    assert record["signal"] == "SIGTERM" and record["exit_code"] is None
    assert record["signals_sent"][0] == "SIGTERM"
    assert record["events_format"] == "lines"
    verdict = record["loop"]["verdict"]
    assert verdict["signal"] == "repeated_lines" and verdict["action"] == "stop"
    assert verdict["period"] == 1 and verdict["repeats"] >= 8  # the default threshold
    assert record["loop"]["calibration"]["lines_most"] >= 8
    assert record["loop"]["mode"] == "enforce" and record["loop"]["profile"] == "unattended"
    started = datetime.fromisoformat(record["started"])
    ended = datetime.fromisoformat(record["ended"])
    assert started.tzinfo is not None and 0 <= (ended - started).total_seconds() < 10
    assert 0 < record["duration"] < 10
    # it was stopped early: the agent printed little more than the 8 + 1 copies
    assert ran.stdout.count(b"Request failed") < 40
    assert any("stopping the run: the same output line repeated" in line for line in ran.ours)
    assert_nothing_left(ran)


def test_privacy_the_record_keeps_no_output_line(tmp_path):
    ran = loopwatch(tmp_path, agent("retry_forever"))
    text = (tmp_path / "record.json").read_text()
    assert "connection refused" not in text and "api.example.com" not in text
    assert ran.status == 86


def test_a_three_line_cycle_with_changing_counters_is_ended(tmp_path):
    ran = loopwatch(tmp_path, agent("cycle3"))
    assert ran.status == 86
    verdict = ran.record["loop"]["verdict"]
    assert verdict["signal"] == "repeated_lines" and verdict["period"] == 3
    assert ran.record["ended_by"] == "loop"
    assert_nothing_left(ran)


def test_a_healthy_run_with_progress_bars_and_pytest_dots_is_not_ended(tmp_path):
    ran = loopwatch(tmp_path, agent("progress_then_ok"))
    assert ran.status == 0, ran.stderr
    assert ran.record["ended_by"] == "exit" and ran.record["exit_code"] == 0
    assert ran.record["loop"]["verdict"] is None
    assert ran.record["loop"]["interventions"] == []
    assert ran.record["signals_sent"] == []
    assert ran.ours == []  # no warning either


def test_a_heartbeat_line_while_the_model_thinks_is_waiting_not_a_loop(tmp_path):
    """`Waiting for the model to respond...` every 0.8 s for 12 s: the run goes on to
    its answer (a line repeated over time used to end it at about 9 s)."""
    ran = loopwatch(tmp_path, agent("heartbeat"))
    assert ran.status == 0, ran.ours
    assert ran.record["ended_by"] == "exit" and ran.record["exit_code"] == 0
    assert b"The model answered" in ran.stdout
    assert ran.stdout.count(b"Waiting for the model to respond") == 15
    assert not any("stopping the run" in line for line in ran.ours)
    assert_nothing_left(ran)


def test_without_record_one_summary_line(tmp_path):
    ran = loopwatch(tmp_path, agent("progress_then_ok"), record=False)
    assert ran.status == 0
    assert len(ran.ours) == 1
    assert ran.ours[0].startswith("loopwatch: the command ended by itself after") and "exit 0" in ran.ours[0]


def test_summary_of_a_loop_names_the_status_and_why(tmp_path):
    ran = loopwatch(tmp_path, agent("cycle3"), record=False)
    assert ran.status == 86
    assert ran.ours[-1].startswith("loopwatch: ended the run after")
    assert "(status 86): the same 3-line output cycle repeated" in ran.ours[-1]


def test_warn_mode_never_ends_a_loop_and_throttles_its_warnings(tmp_path):
    ran = loopwatch(tmp_path, agent("retry_forever"), "--mode", "warn", "--max-runtime", "1.5")
    assert ran.status == 88  # the runtime limit ended it, not the loop
    assert ran.record["ended_by"] == "max_runtime"
    assert ran.record["loop"]["mode"] == "warn"
    assert ran.stdout.count(b"Request failed") > 50  # it kept running long past the threshold
    warnings = [line for line in ran.ours if line.startswith("loopwatch: warning:")]
    # one at half the threshold, one more when it became conclusive; never one per line
    assert 1 <= len(warnings) <= 3
    assert ran.record["loop"]["warnings"] == len(warnings)
    assert_nothing_left(ran)


def test_a_config_file_sets_thresholds(tmp_path):
    (tmp_path / "strict.toml").write_text("[signals.repeated_lines]\nrepeats = 3\n")
    ran = loopwatch(tmp_path, agent("retry_forever"), "--config", str(tmp_path / "strict.toml"))
    assert ran.status == 86
    assert ran.record["loop"]["verdict"]["repeats"] < 8


def test_a_bad_config_is_a_usage_error(tmp_path):
    (tmp_path / "bad.toml").write_text("[signals.repeated_lines]\nrepeat = 3\n")
    ran = loopwatch(tmp_path, agent("retry_forever"), "--config", str(tmp_path / "bad.toml"))
    assert ran.status == 2
    assert b"did you mean 'repeats'" in ran.stderr
    assert ran.pids == []  # the command was never started
