"""`loopwatch run`: idle and runtime limits, Ctrl-C, and nothing left behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from _run_helpers import agent, alive, assert_nothing_left, loopwatch

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")]


def test_a_silent_agent_is_ended_with_87(tmp_path):
    start = time.monotonic()
    ran = loopwatch(tmp_path, agent("goes_silent"), "--idle", "0.5", "--grace", "0.5")
    assert ran.status == 87
    assert time.monotonic() - start < 10
    assert ran.record["ended_by"] == "idle"
    assert ran.record["limits"]["idle"] == 0.5
    assert 0.5 <= ran.record["duration"] < 5
    assert ran.record["signal"] == "SIGTERM"
    assert_nothing_left(ran)


def test_max_runtime_ends_the_run_with_88(tmp_path):
    ran = loopwatch(tmp_path, agent("goes_silent"), "--max-runtime", "0.5", "--grace", "0.5")
    assert ran.status == 88
    assert ran.record["ended_by"] == "max_runtime"
    assert_nothing_left(ran)


def test_a_grandchild_that_ignores_sigterm_dies_with_the_loop(tmp_path):
    ran = loopwatch(tmp_path, agent("spawns_grandchild"), "--grace", "0.5")
    assert ran.status == 86
    assert len(ran.pids) == 2
    assert ran.record["signals_sent"][:2] == ["SIGTERM", "SIGKILL"]  # the helper needed SIGKILL
    assert not alive(ran.pids[1])
    assert_nothing_left(ran)


def test_a_helper_left_behind_by_a_clean_exit_is_ended_too(tmp_path):
    ran = loopwatch(tmp_path, agent("spawns_grandchild", "exit"), "--grace", "0.5")
    assert ran.status == 0
    assert ran.record["ended_by"] == "exit" and ran.record["exit_code"] == 0
    assert ran.record["leftovers"] is True
    assert_nothing_left(ran)


def test_ctrl_c_is_forwarded_and_the_record_says_interrupted(tmp_path):
    ran = loopwatch(tmp_path, agent("traps_sigint"), interrupt_on=b"ready\n")
    assert b"interrupted, cleaning up" in ran.stdout  # the agent got the SIGINT itself
    assert ran.status == 130
    assert ran.record["ended_by"] == "interrupted"
    assert ran.record["exit_code"] == 130
    assert ran.record["signals_sent"] == ["SIGINT"]
    assert_nothing_left(ran)


def test_ctrl_c_ignored_by_the_agent_escalates_after_the_grace(tmp_path):
    ran = loopwatch(tmp_path, agent("traps_sigint", "ignore"), "--grace", "0.3", interrupt_on=b"ready\n")
    assert ran.record["ended_by"] == "interrupted"
    assert ran.record["signals_sent"] == ["SIGINT", "SIGTERM"]
    assert ran.record["signal"] == "SIGTERM"
    assert ran.status == 128 + 15
    assert_nothing_left(ran)


def test_a_second_ctrl_c_kills_at_once(tmp_path):
    start = time.monotonic()
    ran = loopwatch(tmp_path, agent("traps_sigint", "ignore"), "--grace", "20", interrupt_on=b"ready\n", interrupts=2)
    assert time.monotonic() - start < 10  # did not wait for the 20 s grace
    assert ran.record["signals_sent"] == ["SIGINT", "SIGKILL"]
    assert ran.status == 128 + 9
    assert_nothing_left(ran)
