"""asciinema v2 recordings as a format, and the console path they share with `run`."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from _run_helpers import agent, loopwatch
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Monitor
from loopwatch._cli.paths import is_transcript_name
from loopwatch._core.console import Console
from loopwatch._core.events import Output, UserMessage
from loopwatch._readers import ReadError, detect, read

CASTS = (
    Path(os.environ.get("LOOPWATCH_CONSOLES") or Path(__file__).resolve().parents[1].parent / "shared" / "consoles")
    / "openhands-tb"
)
needs_casts = pytest.mark.skipif(not (CASTS / "MANIFEST.tsv").exists(), reason="needs ../shared/consoles")
HEADER = {"version": 2, "width": 80, "height": 24, "timestamp": 1752266531}


def write_cast(tmp_path: Path, events: list, name: str = "run.cast", header: dict | None = None) -> str:
    path = tmp_path / name
    lines = [json.dumps(header or HEADER)] + [e if isinstance(e, str) else json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def events_of(path: str) -> tuple:
    (session,) = list(read(path))
    return session, list(session.events)


def test_output_is_output_at_its_time_and_a_typed_line_is_user_input(tmp_path):
    path = write_cast(
        tmp_path,
        [
            [0.002, "o", "\u001b[?2004hroot@host:/app# "],
            [0.12, "i", "openhands --task 'fix it'"],
            [0.13, "i", "\r"],
            [1.5, "o", "Starting\r\n"],
            [2.0, "m", "a marker"],
        ],
    )
    session, events = events_of(path)
    assert session.format == "asciicast" and session.session == "run"
    assert session.meta == {"width": 80, "height": 24}
    assert events == [
        Output("\u001b[?2004hroot@host:/app# ", "stdout", 0.002, "line 2"),
        UserMessage(0.13, "line 4"),
        Output("Starting\r\n", "stdout", 1.5, "line 5"),
    ]


def test_keystrokes_count_as_input_only_once_a_line_is_finished():
    console = Console()
    assert console.typed("ls -l", 1.0) == []
    assert console.typed(" /tmp\r", 2.0) == [UserMessage(2.0)]
    assert console.typed(b"a\nb\n", 3.0) == [UserMessage(3.0)]  # one read, one new input
    assert console.typed("x" * 5000, 4.0) == []
    assert len(console._typed) <= 1024  # held keystrokes are bounded


def test_casts_are_detected_and_walked(tmp_path):
    path = write_cast(tmp_path, [[0.1, "o", "mini-swe-agent (step 1, $0.01):\r\n"]], name="agent.cast")
    with open(path, "rb") as fh:
        assert detect(path, fh.read()) == "asciicast"  # not the console-log reader
    assert is_transcript_name("agent.cast")


def test_bad_event_lines_are_skipped_and_counted(tmp_path):
    path = write_cast(tmp_path, ["not json", '[1.0, "o"]', '["x", "o", "t"]', '[NaN, "o", "t"]', [2.0, "o", "ok\n"]])
    session, events = events_of(path)
    assert events == [Output("ok\n", "stdout", 2.0, "line 6")]
    assert session.skipped == [
        "line 2: not JSON",
        "line 3: not an [seconds, kind, text] event",
        "line 4: not an [seconds, kind, text] event",
        "line 5: not JSON",
    ]


def test_version_1_and_headerless_files_are_refused_with_a_reason(tmp_path):
    v1 = tmp_path / "old.cast"
    v1.write_text(json.dumps({"version": 1, "stdout": [[0.1, "hi"]]}) + "\n")
    with pytest.raises(ReadError, match="version 1 is not supported"):
        list(read(str(v1), "asciicast"))
    bare = tmp_path / "bare.cast"
    bare.write_text('[0.1, "o", "hi"]\n')
    with pytest.raises(ReadError, match="first line is not a JSON object"):
        list(read(str(bare), "asciicast"))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40),
            st.tuples(st.floats(allow_nan=True), st.sampled_from(["o", "i", "r", 3]), st.text(max_size=20)).map(
                lambda t: json.dumps(list(t)).encode()
            ),
        ),
        max_size=12,
    )
)
def test_fuzz_the_reader_never_raises_anything_but_read_error(lines):
    data = json.dumps(HEADER).encode() + b"\n" + b"\n".join(lines)
    try:
        for session in read("fuzz.cast", "asciicast", io.BytesIO(data)):
            monitor = Monitor()
            for event in session.events:
                monitor.observe(event)
    except ReadError:
        pass


def _manifest() -> dict[str, str]:
    with open(CASTS / "MANIFEST.tsv", newline="") as fh:
        return {row["file"]: row["resolved"] for row in csv.DictReader(fh, delimiter="\t")}


@pytest.mark.slow
@needs_casts
def test_no_recorded_run_that_solved_its_task_is_stopped():
    """Issue 11's target on the real recordings: OpenHands' access log (one line per
    action, alike once numbers are masked) stopped 95 of the 110 solved runs."""
    stopped = []
    solved = 0
    for name, resolved in _manifest().items():
        if resolved != "yes":
            continue
        solved += 1
        monitor = Monitor()
        for session in read(str(CASTS / name)):
            for event in session.events:
                monitor.observe(event)
        if monitor.stop is not None:
            stopped.append(name)
    assert solved > 100
    assert stopped == []


@pytest.mark.slow
@needs_casts
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc (as the other run tests)")
def test_a_real_cast_played_through_run_passes_byte_for_byte_and_is_not_ended(tmp_path):
    """One of the solved runs `run` used to end (its access log), played live."""
    name = "crack-7z-hash.easy.1-of-1.openhands-sonnet.cast"
    assert _manifest()[name] == "yes"
    ran = loopwatch(tmp_path, agent("play_cast", str(CASTS / name)), timeout=120)
    assert ran.status == 0, ran.ours
    assert ran.record["ended_by"] == "exit"
    # its access log still earns a warning for the person; no nudge, no stop: a log of
    # progress (masked, no failure in it) is thin evidence even for suspicion
    loop = ran.record["loop"]
    assert loop["verdict"] is None and loop["interventions"] == [] and loop["warnings"] > 0
    finding = next(f for f in loop["findings"] if f["signal"] == "repeated_lines")
    assert "alike once numbers are masked" in finding["description"]
    with open(CASTS / name, encoding="utf-8") as fh:
        fh.readline()
        expected = "".join(e[2] for e in map(json.loads, fh) if e[1] == "o").encode("utf-8", "surrogatepass")
    assert ran.stdout == expected


# -- calibrate: a profile that lets an agent's masked repeats end its runs -------------


def _access_log_cast(tmp_path: Path, name: str, copies: int) -> str:
    events = [
        [i * 10.0, "o", f"19:30:{i:02d} - agent:INFO: POST /execute_action from 127.0.0.1:{46000 + i} 200 OK\r\n"]
        for i in range(copies)
    ]
    return write_cast(tmp_path, events, name=name)


def _cli(*args: str, cwd: Path):
    import subprocess
    import sys

    from _run_helpers import env_for

    return subprocess.run(
        [sys.executable, "-m", "loopwatch", *args], cwd=cwd, env=env_for(cwd), capture_output=True, check=False
    )


@pytest.mark.slow
def test_calibrate_writes_a_private_profile_from_the_solved_runs_only(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    _access_log_cast(runs, "a.cast", 10)
    _access_log_cast(runs, "b.cast", 12)
    _access_log_cast(runs, "failed.cast", 40)  # not resolved: not a measure of healthy
    (runs / "MANIFEST.tsv").write_text("file\tresolved\na.cast\tyes\nb.cast\tyes\nfailed.cast\tno\n")
    profile = tmp_path / "agent-profile.toml"  # not loopwatch.toml: scan would find it by itself
    done = _cli(
        "calibrate",
        str(runs),
        "--outcomes",
        str(runs / "MANIFEST.tsv"),
        "--write-profile",
        str(profile),
        "--no-progress",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert oct(profile.stat().st_mode & 0o777) == "0o600"
    from loopwatch import load_config

    params = load_config(profile, env={}).signals["repeated_lines"]
    assert params.masked_can_stop and params.repeats == 13  # one above the 12 of the solved runs
    # the default only warns on the failed run's 40 copies; the profile stops it
    assert _cli("scan", str(runs / "failed.cast"), cwd=tmp_path).returncode == 0
    assert _cli("scan", "--config", str(profile), str(runs / "failed.cast"), cwd=tmp_path).returncode == 1
    assert _cli("scan", "--config", str(profile), str(runs / "b.cast"), cwd=tmp_path).returncode == 0
    # never overwritten
    again = _cli("calibrate", str(runs), "--write-profile", str(profile), "--no-progress", cwd=tmp_path)
    assert again.returncode == 2 and b"exists" in again.stderr
