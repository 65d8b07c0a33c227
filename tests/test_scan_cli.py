"""`loopwatch scan` through click's CliRunner: output, exit statuses, bad input."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from loopwatch._cli import cli

from conftest import healthy_events, jsonl, looping_events

JSON_KEYS = {
    "path",
    "format",
    "session",
    "actions",
    "verdict",
    "interventions",
    "findings",
    "calibration",
    "saved",
    "skipped",
    "error",
}


def scan(*args, input=None):
    return CliRunner().invoke(cli, ["scan", "--no-progress", *map(str, args)], input=input)


def records(result):
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def loop_file(tmp_path):
    path = tmp_path / "loop.jsonl"
    path.write_text(jsonl(looping_events()))
    return path


@pytest.fixture
def healthy_file(tmp_path):
    path = tmp_path / "healthy.jsonl"
    path.write_text(jsonl(healthy_events()))
    return path


# -- the bundled examples: the README's first command --------------------------------


def test_the_runaway_example_is_stopped_with_a_clear_summary(examples):
    result = scan(examples / "runaway.jsonl")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "runaway.jsonl" in out
    assert "Loops found: 1 session would have been stopped." in out
    assert "Stopping it would have saved" in out
    (record,) = records(scan(examples / "runaway.jsonl", "--json"))
    verdict = record["verdict"]
    # the loop is the restart cycle that begins after the first look at the log
    assert verdict["signal"] in ("cycle", "repeat", "stagnation", "same_error", "echo")
    assert verdict["started_action"] >= 5
    assert verdict["at_action"] <= 21, "stopped within the first four rounds of the 4-step cycle"
    assert record["saved"]["actions"] == record["actions"] - verdict["at_action"] >= 25
    assert record["saved"]["tokens"] > 0 and record["saved"]["cost"] > 0
    assert record["saved"]["estimated"] is False


def test_the_healthy_example_is_not_stopped(examples):
    result = scan(examples / "healthy.jsonl")
    assert result.exit_code == 0, result.output
    assert "No loop found." in result.stdout
    (record,) = records(scan(examples / "healthy.jsonl", "--json"))
    assert record["verdict"] is None and record["saved"] is None
    assert [i for i in record["interventions"] if i["action"] in ("block", "stop")] == []


# -- output shape ---------------------------------------------------------------------


def test_json_gives_one_object_per_session_with_the_documented_keys(loop_file, healthy_file):
    result = scan(loop_file, healthy_file, "--json")
    assert result.exit_code == 1
    loop, healthy = records(result)
    for record in (loop, healthy):
        assert JSON_KEYS <= set(record)
        assert record["format"] == "events" and record["error"] is None
        assert isinstance(record["calibration"], dict) and record["calibration"]
    assert loop["path"] == str(loop_file) and loop["session"] == "loop"
    assert set(loop["verdict"]) >= {"signal", "action", "at_action", "source_ref", "description"}
    assert loop["verdict"]["action"] == "stop"
    assert loop["verdict"]["source_ref"] == f"line {loop['verdict']['at_action'] + 1}"  # line 1 is the user event
    assert [i["action"] for i in loop["interventions"]][-1] == "stop"
    assert loop["interventions"][0]["action"] == "nudge"
    assert loop["saved"] == {
        "actions": 6 - loop["verdict"]["at_action"],
        "tokens": 1000 * (6 - loop["verdict"]["at_action"]),
        "cost": pytest.approx(0.01 * (6 - loop["verdict"]["at_action"])),
        "estimated": False,
    }
    assert healthy["verdict"] is None and healthy["actions"] == 8


def test_the_table_lists_only_looping_sessions_then_totals(loop_file, healthy_file, monkeypatch):
    # Paths are shown relative to the working folder: a long temporary folder would fold
    # the name across lines of the table.
    monkeypatch.chdir(loop_file.parent)
    result = scan(loop_file, healthy_file)
    out = result.stdout
    assert "loop.jsonl" in out and "healthy.jsonl" not in out
    assert "Scanned 2 files: 2 sessions, 14 actions." in out
    assert "repeat" in out


def test_no_json_progress_bar_or_color_codes_when_piped(loop_file):
    result = scan(loop_file, "--json")
    assert "\x1b[" not in result.stdout
    assert all(line.startswith("{") for line in result.stdout.splitlines())


# -- exit statuses and options --------------------------------------------------------


def test_exit_status_is_0_without_a_stop(healthy_file):
    assert scan(healthy_file).exit_code == 0


def test_mode_off_and_warn_never_stop_but_keep_calibration(loop_file):
    for mode in ("off", "warn"):
        result = scan(loop_file, "--json", "--mode", mode)
        assert result.exit_code == 0
        (record,) = records(result)
        assert record["verdict"] is None and record["interventions"] == []
        assert record["calibration"]["repeat_most"] == 6


def test_the_attended_profile_nudges_and_blocks_but_does_not_stop(loop_file):
    result = scan(loop_file, "--json", "--profile", "attended")
    assert result.exit_code == 0
    (record,) = records(result)
    assert record["verdict"] is None
    assert {i["action"] for i in record["interventions"]} == {"nudge", "block"}
    table = scan(loop_file, "--profile", "attended")
    assert "blocked; not stopped" in table.stdout


def test_config_file_thresholds_apply(loop_file, tmp_path):
    config = tmp_path / "loopwatch.toml"
    config.write_text(
        "[signals.repeat]\nthreshold = 0\n[signals.echo]\nturns = 0\n"
        "[signals.same_error]\nthreshold = 0\n[signals.stagnation]\nreplays = 0\n"
    )
    (record,) = records(scan(loop_file, "--json", "--config", config))
    assert all(f["signal"] != "repeat" for f in record["findings"])


def test_a_bad_config_is_a_usage_error_naming_the_key(loop_file, tmp_path):
    config = tmp_path / "loopwatch.toml"
    config.write_text("[signals.repeat]\ntreshold = 3\n")
    result = scan(loop_file, "--config", config)
    assert result.exit_code == 2
    assert "threshold" in result.stderr


def test_format_forces_the_reader(tmp_path):
    path = tmp_path / "events.txt"
    path.write_text(jsonl(looping_events()))
    assert scan(path, "--json", "--format", "events").exit_code == 1


def test_no_file_is_a_usage_error():
    result = scan()
    assert result.exit_code == 2 and "Missing argument" in result.stderr


def test_stdin(examples):
    data = (examples / "runaway.jsonl").read_bytes()
    result = scan("-", "--json", input=data)
    assert result.exit_code == 1
    (record,) = records(result)
    assert record["path"] == "-" and record["verdict"]["source_ref"].startswith("line ")


# -- bad input: never a crash, never the rest lost -----------------------------------


def test_every_kind_of_bad_input_is_reported_and_the_rest_still_scanned(tmp_path, loop_file):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 20)
    truncated = tmp_path / "run.traj"
    truncated.write_text('{"environment": "swe_main", "trajectory": [{"action": "ls", "observation": "a.p')
    prose = tmp_path / "notes.txt.json"
    prose.write_text("Dear diary,\nthe agent looped again.\n")
    dangling = tmp_path / "gone.jsonl"
    os.symlink(tmp_path / "nowhere.jsonl", dangling)
    missing = tmp_path / "missing.jsonl"
    no_match = tmp_path / "*.nothing"

    paths = [empty, binary, truncated, prose, dangling, missing, no_match, loop_file]
    result = scan(*paths, "--json")
    assert result.exit_code == 2
    by_path = {r["path"]: r for r in records(result)}
    assert set(by_path) == {str(p) for p in paths}
    expected = {
        empty: "empty file",
        binary: "binary data",
        truncated: "",  # the message depends on the reader; it must exist
        prose: "unknown format",
        dangling: "No such file",
        missing: "no such file or folder",
        no_match: "no file matches",
    }
    for path, words in expected.items():
        error = by_path[str(path)]["error"]
        assert error and words in error, (path, error)
        assert JSON_KEYS <= set(by_path[str(path)])
    assert by_path[str(loop_file)]["error"] is None
    assert by_path[str(loop_file)]["verdict"]["action"] == "stop"
    assert "could not be read" in result.stderr


def test_an_unreadable_file_is_an_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = tmp_path / "secret.jsonl"
    path.write_text(jsonl(healthy_events()))
    path.chmod(0)
    (record,) = records(scan(path, "--json"))
    assert "Permission denied" in record["error"]


def test_broken_lines_are_skipped_counted_and_reported_with_line_numbers(tmp_path):
    lines = healthy_events()
    lines.insert(3, '{"type": "tool", "name": "Ba')
    lines.insert(6, '{"type": "teleport"}')
    path = tmp_path / "broken.jsonl"
    path.write_text(jsonl(lines))
    result = scan(path, "--json")
    assert result.exit_code == 0  # a skipped line is not an unreadable file
    (record,) = records(result)
    assert record["error"] is None and record["actions"] == 8
    assert [s.split(":")[0] for s in record["skipped"]] == ["line 4", "line 7"]
    table = scan(path)
    assert "skipped 2 unreadable lines" in table.stderr and "line 4: not JSON" in table.stderr


def test_a_file_of_nothing_but_broken_lines_is_an_error(tmp_path):
    path = tmp_path / "junk.jsonl"
    path.write_text('{"type": "tool"\nnope\n')
    (record,) = records(scan(path, "--json", "--format", "events"))
    assert "no readable events" in record["error"]


# -- folders and globs ----------------------------------------------------------------


def test_a_folder_is_walked_and_side_files_left_out(tmp_path, loop_file):
    trial = tmp_path / "runs" / "task-1"
    trial.mkdir(parents=True)
    (trial / "session.jsonl").write_text(jsonl(looping_events()))
    (trial / "results.json").write_text('{"is_resolved": false}')
    (trial / "notes.md").write_text("# notes")
    (tmp_path / "runs" / "other.json").write_text('{"some": "config"}')
    result = scan(tmp_path / "runs", "--json")
    by_path = {r["path"]: r for r in records(result)}
    # side files are left out by name; a .json in no known format is reported, not lost
    assert sorted(by_path) == [str(tmp_path / "runs" / "other.json"), str(trial / "session.jsonl")]
    assert "unknown format" in by_path[str(tmp_path / "runs" / "other.json")]["error"]
    assert by_path[str(trial / "session.jsonl")]["verdict"]["action"] == "stop"
    assert result.exit_code == 2
    assert "other.json" in result.stderr


def test_a_quoted_glob_is_expanded(tmp_path):
    for name in ("a.jsonl", "b.jsonl", "c.txt"):
        (tmp_path / name).write_text(jsonl(healthy_events()))
    result = scan(str(tmp_path / "*.jsonl"), "--json")
    assert sorted(os.path.basename(r["path"]) for r in records(result)) == ["a.jsonl", "b.jsonl"]
    assert result.exit_code == 0


def test_a_file_named_twice_is_scanned_once(loop_file):
    assert len(records(scan(loop_file, loop_file, "--json"))) == 1
