"""Every file a user or a payload names is opened by `loopwatch._files`: a FIFO, a device
or a folder is refused at once with a one-line reason, never waited on.

Each check runs with a rescuer: a thread that, after a while, opens the FIFO for writing
and closes it if a reader still has it open, so a reader that blocks in `open()` is let go
(with an empty file) instead of hanging the suite. A check fails by what the reader
returned, or because it had to be rescued (a reader that refuses the FIFO never holds it
open), not by the time it took.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from _run_helpers import loopwatch
from click.testing import CliRunner

from loopwatch._cli import cli
from loopwatch._files import NOT_REGULAR, NotRegularFile, open_file, read_file

RESCUE_AFTER = 5.0  # seconds; only a reader that blocks ever waits for it


class Rescuer:
    """Unblocks a reader still holding `path` open `RESCUE_AFTER` seconds on; `rescued`
    says whether there was one."""

    def __init__(self, path: Path) -> None:
        self.path, self.rescued = path, False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._rescue, daemon=True)
        self._thread.start()

    def _rescue(self) -> None:
        if not self._done.wait(RESCUE_AFTER):
            self.rescued = _has_reader(self.path)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


@pytest.fixture
def fifo(tmp_path):
    """A FIFO; no reader may be left waiting on it."""
    path = tmp_path / "pipe.tsv"
    os.mkfifo(path)
    rescuer = Rescuer(path)
    yield path
    rescuer.stop()
    assert not rescuer.rescued, "a reader blocked opening the FIFO"


def _has_reader(path: Path) -> bool:
    """Open `path` for writing and close it: this lets a blocked reader go (it reads an
    empty file). False when nobody has it open for reading."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # ENXIO: no reader
        return False
    return True


def test_the_one_opener_refuses_a_fifo_a_folder_and_a_device(fifo, tmp_path):
    for path in (fifo, tmp_path, "/dev/null"):
        with pytest.raises(NotRegularFile) as caught:
            read_file(str(path))
        assert caught.value.strerror == NOT_REGULAR
    (tmp_path / "ok.txt").write_bytes(b"a\nb\n")
    with open_file(str(tmp_path / "ok.txt")) as fh:
        assert fh.read() == b"a\nb\n"


def test_labels_and_outcomes_readers_refuse_a_fifo(fifo):
    from loopwatch._analysis.evaluation import load_labels
    from loopwatch._analysis.outcomes import OutcomeError, load_groups, load_outcomes

    with pytest.raises(ValueError, match="not a regular file"):
        load_labels(str(fifo))
    with pytest.raises(OutcomeError, match="not a regular file"):
        load_outcomes([str(fifo)])
    with pytest.raises(OutcomeError, match="not a regular file"):
        load_groups([str(fifo)], "agent")


def test_a_fifo_found_as_results_json_is_passed_over(tmp_path):
    from loopwatch._analysis.outcomes import load_outcomes

    good = tmp_path / "a"
    good.mkdir()
    (good / "results.json").write_text('{"resolved_ids": ["x"], "unresolved_ids": ["y"]}')
    bad = tmp_path / "b"
    bad.mkdir()
    os.mkfifo(bad / "results.json")
    rescuer = Rescuer(bad / "results.json")
    try:
        outcomes = load_outcomes([str(tmp_path)])
    finally:
        rescuer.stop()
    assert not rescuer.rescued, "a reader blocked opening the FIFO"
    assert outcomes.sources == [str(good / "results.json")]


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate", "--labels", "{fifo}", "--corpus", "{folder}"],
        ["evaluate", "{folder}", "--outcomes", "{fifo}"],
        ["calibrate", "{folder}", "--outcomes", "{fifo}"],
    ],
)
def test_evaluate_and_calibrate_refuse_a_fifo_in_one_line(fifo, tmp_path, args):
    argv = [a.format(fifo=fifo, folder=tmp_path) for a in args]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "not a regular file" in result.output
    assert "Traceback" not in result.output


def test_the_hosts_never_open_a_fifo_named_by_a_payload(tmp_path):
    """A Codex hook payload's `transcript_path`; a Claude Code session file looked up
    by id."""
    from loopwatch._hosts import claude_code, codex

    rollout = tmp_path / "rollout-2025-01-01T00-00-00-0199b0c1-0000-7000-8000-000000000001.jsonl"
    session = tmp_path / "projects" / "-work" / "0199b0c1-0000-7000-8000-000000000002.jsonl"
    session.parent.mkdir(parents=True)
    for path in (rollout, session):
        os.mkfifo(path)
    rescuers = [Rescuer(rollout), Rescuer(session)]
    try:
        assert codex.rollout_exit_code(str(rollout), "call_1") is None
        assert claude_code.transcript_stop_reason(session.stem, {"CLAUDE_CONFIG_DIR": str(tmp_path)}) is None
    finally:
        for rescuer in rescuers:
            rescuer.stop()
    assert not any(r.rescued for r in rescuers), "a reader blocked opening the FIFO"


def test_run_refuses_a_fifo_named_as_the_transcript(fifo, tmp_path):
    ran = loopwatch(tmp_path, [sys.executable, "-c", "pass"], "--transcript", str(fifo), record=False)
    assert ran.status == 2, ran.stderr
    assert b"not a regular file" in ran.stderr and b"Traceback" not in ran.stderr


def test_a_transcript_that_turns_out_a_fifo_is_said_and_never_waited_on(tmp_path):
    """Named before it exists, then made a FIFO by the agent: `run` says it cannot follow
    it and the run ends with the command (an open() of it would block for ever)."""
    path = tmp_path / "later.jsonl"
    makes = f"import os, time; os.mkfifo({str(path)!r}); time.sleep(0.8)"
    ran = loopwatch(tmp_path, [sys.executable, "-c", makes], "--transcript", str(path), timeout=60)
    assert ran.status == 0, ran.stderr
    assert ran.record["evidence"]["transcript"]["problem"].endswith(NOT_REGULAR)
