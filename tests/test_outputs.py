"""Every file loopwatch writes goes through `loopwatch._safefile`: never a file the same
command reads (by path, and by device and inode), never through a link, private (0600)
even over an existing file, and complete or absent: an interrupt (Ctrl-C, SIGTERM), a
full disk or a file-size limit leaves no partial file behind, and ends in one line and
exit 2 (a disk that cannot take the file) or 128 + the signal, never 1, which means "a
session was stopped"."""

from __future__ import annotations

import ast
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwatch import _safefile as safefile
from loopwatch._cli import cli

from conftest import healthy_events, jsonl, looping_events

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_error(result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in result.stderr
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink()}


@pytest.fixture
def transcript(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(jsonl(looping_events()))
    return path


@pytest.fixture
def labels(tmp_path, transcript):
    (tmp_path / "healthy.jsonl").write_text(jsonl(healthy_events()))
    path = tmp_path / "labels.tsv"
    path.write_text(f"local_path\tlabel\tonset_step\tend_step\n{transcript.name}\tyes\t3\t6\nhealthy.jsonl\tno\t\t\n")
    return path


# -- an output that is also an input ------------------------------------------------------------


def _same_file_cases():
    pytest.importorskip("jinja2")
    return [
        ("scan", "{t}", "--out", "{t}"),
        ("scan", "--no-progress", "{t}", "--report", "{t}"),
        ("report", "--no-progress", "{t}", "-o", "{t}"),
        ("report", "--no-progress", "{t}", "--labels", "{l}", "-o", "{l}"),
        ("evaluate", "--no-progress", "--labels", "{l}", "--report", "{l}"),
        ("calibrate", "--no-progress", "--labels", "{l}", "--folds", "2", "--write", "{l}"),
        ("calibrate", "--no-progress", "{t}", "--config", "{c}", "--write-profile", "{c}"),
    ]


@pytest.mark.parametrize("args", _same_file_cases())
def test_an_output_that_is_also_an_input_is_refused_before_anything_is_touched(tmp_path, transcript, labels, args):
    config = tmp_path / "loopwatch.toml"
    config.write_text("[signals.repeat]\nthreshold = 3\n")
    before = snapshot(tmp_path)
    filled = [a.format(t=transcript, l=labels, c=config) for a in args]
    line = one_line_error(invoke(*filled))
    named = filled[-1]
    assert named in line and "reads" in line, line
    assert snapshot(tmp_path) == before  # nothing replaced, nothing left beside it


@pytest.mark.parametrize("option", ["--transcript", "--config"])
def test_run_never_records_over_a_file_it_reads(tmp_path, transcript, option):
    before = snapshot(tmp_path)
    done = invoke("run", "--record", transcript, option, transcript, "--", sys.executable, "-c", "pass")
    assert done.exit_code == 2 and "this command also reads that file" in done.stderr, done.output
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--out", "--report"])
def test_a_hard_link_to_an_input_is_the_input(tmp_path, transcript, option):
    pytest.importorskip("jinja2")
    other = tmp_path / ("alias.jsonl" if option == "--out" else "alias.html")
    os.link(transcript, other)
    before = snapshot(tmp_path)
    line = one_line_error(invoke("scan", "--no-progress", transcript, option, other))
    assert str(other) in line
    assert snapshot(tmp_path) == before


def test_two_outputs_of_one_command_may_not_be_one_file(tmp_path, transcript):
    pytest.importorskip("jinja2")
    out = tmp_path / "both.jsonl"
    line = one_line_error(invoke("scan", "--no-progress", transcript, "--out", out, "--report", out))
    assert str(out) in line
    assert not out.exists()


def test_an_output_found_by_walking_a_scanned_folder_is_left_out_not_refused(tmp_path, transcript):
    out = tmp_path / "results.jsonl"
    first = invoke("scan", "--json", "--no-progress", tmp_path, "--out", out)
    assert first.exit_code == 1, first.output
    again = invoke("scan", "--json", "--no-progress", tmp_path, "--out", out)
    assert again.exit_code == 1 and again.stdout == first.stdout


# -- links ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("scan", "{t}", "--out", "{o}.jsonl"),
        ("scan", "{t}", "--out", "{o}.parquet"),
        ("report", "{t}", "-o", "{o}.html"),
    ],
)
def test_a_link_planted_at_an_output_is_never_followed(tmp_path, transcript, args):
    if any(a.endswith(".parquet") for a in args):
        pytest.importorskip("pyarrow")
    if any(a.endswith(".html") for a in args):
        pytest.importorskip("jinja2")
    victim = tmp_path / "precious.txt"
    victim.write_text("precious\n")
    filled = [a.format(t=transcript, o=tmp_path / "out") for a in args]
    Path(filled[-1]).symlink_to(victim)
    line = one_line_error(invoke(*filled[:1], "--no-progress", *filled[1:]))
    assert "link" in line
    assert victim.read_text() == "precious\n" and Path(filled[-1]).is_symlink()


# -- private ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("report", "{t}", "-o", "{o}.html"),
        ("report", "{t}", "--excerpts", "-o", "{o}.html"),
        ("scan", "{t}", "--report", "{o}.html"),
        ("scan", "{t}", "--out", "{o}.jsonl"),
        ("scan", "{t}", "--out", "{o}.parquet"),
    ],
)
def test_an_output_over_a_file_others_may_read_is_private(tmp_path, transcript, args):
    pytest.importorskip("jinja2")
    if any(a.endswith(".parquet") for a in args):
        pytest.importorskip("pyarrow")
    filled = [a.format(t=transcript, o=tmp_path / "out") for a in args]
    target = Path(filled[-1])
    target.write_text("an older page\n")
    os.chmod(target, 0o644)
    done = invoke(filled[0], "--no-progress", *filled[1:])
    assert done.exit_code in (0, 1), done.output
    assert target.read_text(errors="replace") != "an older page\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_the_calibration_written_is_private_over_an_older_one(tmp_path, transcript, labels):
    target = tmp_path / "calibration.toml"
    target.write_text("# older\n")
    os.chmod(target, 0o644)
    done = invoke("calibrate", "--no-progress", "--labels", labels, "--folds", "2", "--write", target)
    assert done.exit_code in (0, 2), done.output
    assert "# older" not in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


# -- complete or absent ---------------------------------------------------------------------


def _many(folder: Path, count: int) -> list[Path]:
    folder.mkdir()
    paths = []
    for i in range(count):
        path = folder / f"s{i:05d}.jsonl"
        path.write_text(jsonl(looping_events() if i % 3 == 0 else healthy_events()))
        paths.append(path)
    return paths


def _scan_until_blocked(tmp_path: Path, suffix: str, sig: int) -> tuple[subprocess.CompletedProcess, Path]:
    """`scan --out` over 1,100 files and then standard input, which never ends: the scan is
    stopped by `sig` part way, after a row group (1,024 rows) is on disk."""
    inputs = _many(tmp_path / "runs", 1100)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / f"results{suffix}"
    argv = [sys.executable, "-m", "loopwatch", "scan", "--no-progress", "--jobs", "1", "--out", str(out)]
    child = subprocess.Popen(
        [*argv, *map(str, inputs), "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert child.stdin is not None
    child.stdin.write(jsonl([{"type": "user"}]).encode())  # standard input begins, and never ends
    child.stdin.flush()
    deadline = time.monotonic() + 300  # a bound for a broken build, not a timing
    while time.monotonic() < deadline and child.poll() is None:
        if sum(p.stat().st_size for p in out_dir.iterdir()) > 4096:  # rows on disk, under some name
            break
        time.sleep(0.05)
    assert child.poll() is None, child.communicate()
    child.send_signal(sig)
    stdout, stderr = child.communicate(timeout=300)
    child.stdin.close()
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr), out


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_scan_leaves_no_results_file(tmp_path, suffix, sig):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    done, out = _scan_until_blocked(tmp_path, suffix, sig)
    assert done.returncode == 128 + sig, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == []  # no file, and no temporary one


def _limited(size: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".html"])
def test_a_file_size_limit_is_one_line_and_exit_2_and_no_file(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    if suffix == ".html":
        pytest.importorskip("jinja2")
    inputs = _many(tmp_path / "runs", 60)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / f"results{suffix}"
    option = "--report" if suffix == ".html" else "--out"
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--no-progress", option, str(out), *map(str, inputs)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        preexec_fn=_limited(4096),
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if str(out) in line]
    assert len(lines) == 1 and "too large" in lines[0], done.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == []


def test_a_failed_write_leaves_the_older_file_as_it_was(tmp_path):
    target = tmp_path / "results.jsonl"
    target.write_text("older\n")
    with pytest.raises(RuntimeError), safefile.Output(target) as output:
        output.stream.write(b"half of a new file")
        raise RuntimeError("the disk went away")
    assert target.read_text() == "older\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


# -- the one writer -------------------------------------------------------------------------------

#: Files that write without `_safefile`, each with its reason: the hook's own state folder
#: (0700, its database and its log appended to by concurrent hooks; never a file a user names).
_OWN_WRITERS = {
    "loopwatch/_safefile.py": "the writer itself",
    "loopwatch/_hook/state.py": "the hook's state database, in its private folder",
    "loopwatch/_hook/__init__.py": "hook.log, appended to by concurrent hooks in the private state folder",
}

_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}


def _writes_a_file(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in ("write_text", "write_bytes"):
        return True
    if name == "ParquetWriter":  # given a path, it opens the file itself; given a stream, it writes to ours
        return not (node.args and "stream" in ast.unparse(node.args[0]))
    if name in ("open", "fdopen") and len(node.args) > 1:
        mode = node.args[1]
        return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax+"))
    if (
        name == "open"
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "os"
    ):
        flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
        return bool(flags & _WRITE_FLAGS) and not any(
            isinstance(a, ast.Attribute) and a.attr == "devnull" for a in node.args
        )
    return False


def test_every_file_is_written_by_the_one_writer():
    found = []
    for path in sorted((SRC / "loopwatch").rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative in _OWN_WRITERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _writes_a_file(node):
                found.append(f"{relative}:{node.lineno}")
    assert found == [], "write these through loopwatch._safefile: " + ", ".join(found)


def test_no_file_is_put_in_place_once_the_process_was_told_to_end(tmp_path, monkeypatch):
    # Python drops an exception raised inside a destructor: a Ctrl-C that lands there
    # lets the writing go on, and the signal's mark must still keep the file out.
    monkeypatch.setattr(safefile, "_ending", [])
    target = tmp_path / "results.jsonl"
    output = safefile.Output(target)
    output.stream.write(b"{}\n")
    safefile.ending(signal.SIGTERM)
    with pytest.raises(safefile.Interrupted) as raised:
        output.commit()
    assert raised.value.signum == signal.SIGTERM
    assert sorted(p.name for p in tmp_path.iterdir()) == []
