"""`loopwatch scan` under faults: FIFOs, symlink loops, a killed worker, huge numbers,
a closed or streamed stdin, byte-order marks and wrong-typed fields. Each runs the
real CLI in a subprocess with a timeout, so a hang fails instead of blocking."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import healthy_events, jsonl, looping_events

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BOM = b"\xef\xbb\xbf"


def env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), **extra)


def scan(*args, cwd=None, timeout=60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--no-progress", *map(str, args)],
        capture_output=True,
        env=kwargs.pop("env", env()),
        cwd=cwd,
        timeout=timeout,
        **kwargs,
    )


def records(ran) -> list[dict]:
    return [json.loads(line) for line in ran.stdout.splitlines()]


# -- hangs ---------------------------------------------------------------------------


def test_a_fifo_in_a_folder_or_named_is_skipped_with_a_message(tmp_path):
    (tmp_path / "ok.jsonl").write_text(jsonl(healthy_events()))
    os.mkfifo(tmp_path / "f.jsonl")
    # In a folder beside a transcript: a record of its own, the others read.
    ran = scan(tmp_path, "--json", timeout=30)
    assert ran.returncode == 2, ran.stderr
    by_path = {r["path"]: r for r in records(ran)}
    assert "not a regular file" in by_path[str(tmp_path / "f.jsonl")]["error"]
    assert by_path[str(tmp_path / "ok.jsonl")]["error"] is None
    assert b"Traceback" not in ran.stderr
    # Named alone: nothing could be read, which is one line saying why, and exit 2.
    ran = scan(tmp_path / "f.jsonl", "--json", timeout=30)
    assert ran.returncode == 2, ran.stderr
    assert not ran.stdout
    (line,) = ran.stderr.decode().strip().splitlines()
    assert "f.jsonl: not a regular file" in line


def test_the_reading_layer_never_opens_a_fifo_blocking(tmp_path):
    from loopwatch._readers import ReadError, read

    os.mkfifo(tmp_path / "f.jsonl")
    with pytest.raises(ReadError, match="not a regular file"):
        list(read(str(tmp_path / "f.jsonl")))


def test_a_glob_under_symlinks_to_an_ancestor_returns_each_file_once(tmp_path):
    inner = tmp_path / "g" / "a"
    inner.mkdir(parents=True)
    (inner / "x.jsonl").write_text(jsonl(healthy_events()))
    (tmp_path / "g" / "y.jsonl").write_text(jsonl(healthy_events()))
    os.symlink("..", inner / "up")
    os.symlink("../..", inner / "up2")
    os.symlink(".", tmp_path / "g" / "self")
    ran = scan("g/**/*.jsonl", "--json", cwd=tmp_path, timeout=30)
    assert ran.returncode == 0, ran.stderr
    assert sorted(os.path.basename(r["path"]) for r in records(ran)) == ["x.jsonl", "y.jsonl"]


def test_a_glob_still_follows_a_symlink_to_a_folder_elsewhere(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "z.jsonl").write_text(jsonl(healthy_events()))
    (tmp_path / "g").mkdir()
    os.symlink(elsewhere, tmp_path / "g" / "link")
    ran = scan("g/**/*.jsonl", "--json", cwd=tmp_path, timeout=30)
    assert [os.path.basename(r["path"]) for r in records(ran)] == ["z.jsonl"]


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_killed_worker_is_reported_and_the_scan_finishes_with_2(tmp_path):
    # Files big enough that the workers are busy when one is killed.
    body = jsonl(
        healthy_events()
        + [
            {"type": "tool", "name": "Bash", "input": {"command": f"cat f{i}"}, "result": "x" * 200}
            for i in range(3000)
        ]
    )
    for i in range(24):
        (tmp_path / f"s{i:02}.jsonl").write_text(body)
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwatch", "scan", "--no-progress", "--json", "--jobs", "4", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    deadline = time.monotonic() + 30
    workers: list[int] = []
    # The pool has at most as many workers as cores (`pool.workers`): kill the first one seen.
    while time.monotonic() < deadline and not workers and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.02)
    assert workers, "no worker process seen"
    os.kill(workers[0], signal.SIGKILL)  # as the OOM killer would
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the scan waited for ever on a dead worker") from None
    assert proc.returncode == 2, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["path"] for r in lines) == sorted(str(p) for p in tmp_path.glob("*.jsonl"))
    lost = [r for r in lines if r["error"] and "worker process died" in r["error"]]
    assert lost and len(lost) < len(lines)
    assert b"Traceback" not in err


# -- crashes and exit statuses ---------------------------------------------------------


def test_token_totals_past_64_bits_do_not_end_the_scan(tmp_path):
    huge = 2**70
    paths = []
    for i in range(4):
        events = looping_events() if i != 1 else [dict(e, tokens=huge) for e in looping_events()]
        path = tmp_path / f"s{i}.jsonl"
        path.write_text(jsonl(events))
        paths.append(path)
    ran = scan(*paths, "--json")
    assert ran.returncode == 1, ran.stderr  # loops found, nothing unreadable
    found = records(ran)
    assert [r["path"] for r in found] == [str(p) for p in paths]
    assert found[1]["saved"]["tokens"] == 2 * huge  # written exactly
    assert scan(*paths).returncode == 1  # the table too


def test_stdin_closed_is_one_line_and_2():
    ran = subprocess.run(
        f"{sys.executable} -m loopwatch scan - 0<&-", shell=True, capture_output=True, env=env(), timeout=30
    )
    assert ran.returncode == 2
    assert b"standard input is closed" in ran.stderr and b"Traceback" not in ran.stderr


def test_stdin_is_streamed_not_copied_to_a_temporary_file(monkeypatch):
    """No temporary file or folder is made (a SIGTERM left 2.4 GB of copied stdin)."""
    import tempfile

    from click.testing import CliRunner

    from loopwatch._cli import cli

    def refuse(*args, **kwargs):
        raise AssertionError("scan - made a temporary file")

    for name in ("mkdtemp", "mkstemp", "NamedTemporaryFile", "TemporaryFile", "TemporaryDirectory"):
        monkeypatch.setattr(tempfile, name, refuse)
    ran = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", "-"], input=jsonl(looping_events()))
    assert ran.exception is None or isinstance(ran.exception, SystemExit), repr(ran.exception)
    assert ran.exit_code == 1
    (record,) = [json.loads(line) for line in ran.stdout.splitlines()]
    assert record["path"] == "-" and record["verdict"]["action"] == "stop"


def test_stdin_with_many_files_and_jobs_keeps_the_order(tmp_path):
    paths = []
    for i in range(6):
        path = tmp_path / f"s{i}.jsonl"
        path.write_text(jsonl(healthy_events()))
        paths.append(str(path))
    args = paths[:3] + ["-"] + paths[3:]
    ran = scan(*args, "--json", "--jobs", "2", input=jsonl(looping_events()).encode())
    assert [r["path"] for r in records(ran)] == args
    assert ran.returncode == 1


# -- input that lost a session ---------------------------------------------------------


BOM_CASES = [
    FIXTURES / "chat" / "openai.json",
    FIXTURES / "claude-code" / "session.jsonl",
    FIXTURES / "codex" / "rollout.jsonl",
    FIXTURES / "openhands" / "trajectory.json",
    FIXTURES / "openhands" / "output.jsonl",
]
CORPUS = ROOT.parent / "shared" / "corpus"


def _corpus_samples() -> list[Path]:
    found = []
    for pattern in (
        "swe-agent-traj/**/*.traj",
        "mini-swe-agent-traj-json/**/*.traj.json",
        "atif/**/trajectory.json",
        "tb1-console-log/**/agent.log",
    ):
        found += sorted(CORPUS.glob(pattern))[:1]
    return found


@pytest.mark.parametrize("path", BOM_CASES + _corpus_samples(), ids=lambda p: p.name)
def test_a_byte_order_mark_changes_nothing(tmp_path, path):
    plain = scan(path, "--json")
    marked = tmp_path.joinpath(*path.parts[-3:])  # some formats name the session after its folders
    marked.parent.mkdir(parents=True)
    marked.write_bytes(BOM + path.read_bytes())
    for target in (marked, marked.parent):  # named, and found in a folder
        with_bom = scan(target, "--json")
        assert with_bom.returncode == plain.returncode, with_bom.stderr

        def key(r):
            return r["format"], r["session"], r["actions"], r["verdict"], r["error"]

        assert [key(r) for r in records(with_bom)] == [key(r) for r in records(plain)]


def test_a_byte_order_mark_on_the_core_events(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(BOM + jsonl(looping_events()).encode())
    (record,) = records(scan(tmp_path, "--json"))
    assert record["format"] == "events" and record["verdict"]["action"] == "stop"


def _mini_swe_agent(usage: dict) -> dict:
    messages = [{"role": "system", "content": "You are a helper."}, {"role": "user", "content": "fix it"}]
    for i in range(6):
        messages.append(
            {
                "role": "assistant",
                "content": "THOUGHT: again\n```bash\npytest -x\n```",
                "extra": {"response": {"created": 1700000000 + i, "usage": usage}},
            }
        )
        messages.append({"role": "user", "content": "<returncode>1</returncode>\n<output>E fail</output>"})
    return {
        "info": {"mini_version": "1.0", "model_stats": {"instance_cost": "lots"}},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }


def _atif(metrics: dict) -> dict:
    steps = [
        {
            "step_id": i + 1,
            "source": "agent",
            "message": "again",
            "metrics": metrics,
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash", "arguments": {"command": "pytest -x"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": "E fail"}]},
        }
        for i in range(6)
    ]
    return {
        "schema_version": "ATIF-v1.2",
        "session_id": "s",
        "agent": {"name": "a"},
        "steps": steps,
        "final_metrics": {"total_prompt_tokens": "5"},
    }


@pytest.mark.parametrize(
    "name,document",
    [
        ("run.traj.json", _mini_swe_agent({"prompt_tokens": "5", "completion_tokens": 3})),
        ("trajectory.json", _atif({"prompt_tokens": "5", "completion_tokens": 3})),
    ],
)
def test_one_wrong_typed_field_drops_that_field_not_the_session(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    (record,) = records(scan(path, "--json"))
    assert record["error"] is None, record["error"]
    assert record["actions"] == 6
    # and the commands that read labelled sessions do not crash on it either
    labels = tmp_path / "labels.tsv"
    labels.write_text(f"local_path\tlabel\tonset_step\tend_step\n{name}\tyes\t1\t6\n")
    for command in (["evaluate", "--labels", str(labels)], ["calibrate", str(path)]):
        ran = subprocess.run([sys.executable, "-m", "loopwatch", *command], capture_output=True, env=env(), timeout=60)
        assert ran.returncode in (0, 1), ran.stderr
        assert b"Traceback" not in ran.stderr
