"""`scan --engine ray`: on a local Ray (2 CPUs), the same records as the local scan, file for file, nothing dropped.

Skipped when Ray is not installed (the `loopwatch[ray]` extra)."""

from __future__ import annotations

import collections
import importlib.abc
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("ray")

from loopwatch._analysis import ray_engine
from loopwatch._analysis.ray_engine import replay_files_ray
from loopwatch._analysis.replay import replay_file
from loopwatch._analysis.results import record_line
from loopwatch._encode import decode_json
from loopwatch._cli import cli
from loopwatch._core.config import Config

from _ray_local import family_of, is_loopback, listening, local_ray
from conftest import healthy_events, jsonl, looping_events

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"


@pytest.fixture(scope="module", autouse=True)
def ray_for_the_module():
    with local_ray(num_cpus=2):
        yield


def scan(*args):
    return CliRunner().invoke(cli, ["scan", "--no-progress", "--json", *map(str, args)])


def corpus_sample(folder: str, count: int) -> list[Path]:
    """The `count` smallest transcripts of a corpus folder (a sample, so the test stays short)."""
    root = SHARED / folder
    if not root.is_dir():
        return []
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".traj", ".json", ".jsonl", ".log", ".cast")]
    return sorted(files, key=lambda p: (p.stat().st_size, str(p)))[:count]


def test_ray_gives_the_local_records_file_for_file(tmp_path):
    (tmp_path / "loop.jsonl").write_text(jsonl(looping_events()))
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    targets = [tmp_path, HERE / "fixtures", *corpus_sample("corpus", 12), *corpus_sample("corpus-tb2", 12)]
    local = scan(*targets)
    ray = scan(*targets, "--engine", "ray", "--out", tmp_path / "ray.parquet")
    assert ray.exit_code == local.exit_code == 2, ray.output  # notes.jsonl is no transcript
    records = [json.loads(line) for line in ray.stdout.splitlines()]
    assert records == [json.loads(line) for line in local.stdout.splitlines()]
    assert len(records) > 20 and sum(r["verdict"] is not None for r in records) >= 3
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(tmp_path / "ray.parquet").column("path").to_pylist() == [r["path"] for r in records]


def test_a_file_ray_cannot_read_is_reported_as_the_local_scan_does_and_the_others_kept(tmp_path):
    good = tmp_path / "loop.jsonl"
    good.write_text(jsonl(looping_events()))
    items = [(str(good), "first"), (str(tmp_path / "gone.jsonl"), "gone"), (str(good), "again")]
    results = list(replay_files_ray(items, Config.make()))
    assert [[r.path for r in file] for file in results] == [["first"], ["gone"], ["again"]]
    assert results[0][0].verdict is not None and results[2][0].verdict == results[0][0].verdict
    assert records(results) == records([replay_file(path, Config.make(), label=label) for path, label in items])
    assert results[1][0].error == "cannot open: No such file or directory"


def test_token_totals_past_64_bits_come_back_exact(tmp_path):
    """Such a record is written by the standard library on the worker (orjson refuses
    it) and must be read back by it: orjson would read the total as a float."""
    paths = [tmp_path / "huge.jsonl", tmp_path / "plain.jsonl"]
    paths[0].write_text(jsonl([dict(e, tokens=2**70) for e in looping_events()]))
    paths[1].write_text(jsonl(looping_events()))
    items = [(str(p), p.name) for p in paths]
    results = list(replay_files_ray(items, Config.make()))
    assert records(results) == records([replay_file(path, Config.make(), label=label) for path, label in items])
    saved = results[0][0].saved["tokens"]
    assert saved == 2 * 2**70 and isinstance(saved, int)


def test_the_driver_imports_nothing_again_for_each_file(tmp_path):
    """No import is attempted file after file on the driver (a failing one costs a
    fraction of a millisecond each: more than the driver's whole work a file)."""
    looked_up: collections.Counter[str] = collections.Counter()

    class Count(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            looked_up[name] += 1

    items = []
    for i in range(40):
        (tmp_path / f"s{i}.jsonl").write_text(jsonl(healthy_events()))
        items.append((str(tmp_path / f"s{i}.jsonl"), f"s{i}"))
    sys.meta_path.insert(0, Count())
    try:
        results = list(replay_files_ray(items, Config.make()))
    finally:
        del sys.meta_path[0]
    assert [r.path for file in results for r in file] == [label for _, label in items]
    assert [name for name, times in looked_up.items() if times >= 10] == []


def test_the_local_ray_listens_on_the_loopback_interface_only():
    """Nothing of a local scan is reachable from the network: every socket the Ray started
    here listens on (its GCS, raylet, agents, workers, and this driver) is on loopback."""
    import ray

    @ray.remote
    def worker_pid() -> int:
        return os.getpid()

    family = family_of(os.getpid())
    assert set(ray.get([worker_pid.remote() for _ in range(4)])) <= set(family)  # the workers are counted
    sockets = listening(family)
    gcs_port = int(ray.get_runtime_context().gcs_address.rsplit(":", 1)[1])
    assert gcs_port in [port for _, _, port, _ in sockets], sockets  # the check sees Ray's own sockets
    assert [s for s in sockets if not is_loopback(s[1])] == []


def test_address_without_ray_engine_is_a_usage_error(tmp_path):
    result = scan(tmp_path, "--address", "auto")
    assert result.exit_code == 2 and "--address" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(not (SHARED / "corpus" / "labels.tsv").is_file(), reason="shared corpus absent")
def test_evaluate_on_ray_gives_the_local_figures(tmp_path):
    lines = (SHARED / "corpus" / "labels.tsv").read_text().splitlines(keepends=True)
    labels = tmp_path / "labels.tsv"
    labels.write_text("".join(lines[:1] + lines[1::25]))  # a spread of the labelled sessions
    args = ["evaluate", "--no-progress", "--json", "--labels", labels, "--corpus", SHARED / "corpus"]
    local = CliRunner().invoke(cli, list(map(str, args)))
    ray = CliRunner().invoke(cli, list(map(str, args + ["--engine", "ray"])))
    assert ray.exit_code == local.exit_code == 0, ray.output
    figures = json.loads(ray.stdout)
    assert figures == json.loads(local.stdout)
    assert figures["labelled"] == len(lines[1::25]) and figures["detectors"]["all"]["stop"]


def failing_on(name: str, attempts: Path, *, times: int | None, kill: bool):
    """`_replay_chunk` as a worker runs it, except that a chunk holding the file `name`
    fails its first `times` attempts (all of them with None): it raises, or its worker
    process dies. Each attempt leaves a file in `attempts` (the workers are other
    processes). Defined here, so Ray ships it by value to the workers."""
    real = ray_engine._replay_chunk

    def replay(cwd, paths, config, format):
        if any(Path(path).name == name for path in paths):
            tried = len(os.listdir(attempts))
            os.close(tempfile.mkstemp(dir=attempts)[0])
            if times is None or tried < times:
                if kill:
                    os._exit(1)
                raise RuntimeError(f"failing on purpose on {name}")
        return real(cwd, paths, config, format)

    return replay


def three_sessions(folder: Path) -> list[tuple[str, str]]:
    for name, events in (("a.jsonl", looping_events()), ("b.jsonl", looping_events(8)), ("c.jsonl", healthy_events())):
        (folder / name).write_text(jsonl(events))
    return [(str(folder / name), name) for name in ("a.jsonl", "b.jsonl", "c.jsonl")]


def records(results) -> list[bytes]:
    return [record_line(r) for file in results for r in file]


@pytest.mark.parametrize("kill", [False, True], ids=["raises", "worker-dies"])
def test_a_task_that_fails_once_has_its_files_retried(tmp_path, monkeypatch, kill):
    items = three_sessions(tmp_path)
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    monkeypatch.setattr(ray_engine, "_replay_chunk", failing_on("b.jsonl", attempts, times=1, kill=kill))
    results = list(replay_files_ray(items, Config.make()))
    assert len(os.listdir(attempts)) >= 2  # it failed, then ran again
    local = [replay_file(path, Config.make(), label=label) for path, label in items]
    assert records(results) == records(local)
    assert [r.error for file in results for r in file] == [None, None, None]
    assert results[1][0].verdict is not None


@pytest.mark.parametrize("kill", [False, True], ids=["raises", "worker-dies"])
def test_a_file_that_keeps_failing_is_reported_as_an_error_never_dropped(tmp_path, monkeypatch, kill):
    items = three_sessions(tmp_path)
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    monkeypatch.setattr(ray_engine, "_replay_chunk", failing_on("b.jsonl", attempts, times=None, kill=kill))
    results = list(replay_files_ray(items, Config.make()))
    assert [[r.path for r in file] for file in results] == [["a.jsonl"], ["b.jsonl"], ["c.jsonl"]]
    local = [replay_file(path, Config.make(), label=label) for path, label in items]
    assert records([results[0], results[2]]) == records([local[0], local[2]])
    error = results[1][0].error
    assert error.startswith("lost on Ray: ") and len(os.listdir(attempts)) >= 2, error
    assert ("WorkerCrashedError: " if kill else "RuntimeError: failing on purpose on b.jsonl") in error
    assert "\x1b" not in error and "\n" not in error  # one line, without Ray's terminal colours


def test_a_file_given_several_times_is_replayed_once_and_reported_each_time(tmp_path, monkeypatch):
    a, b, _ = three_sessions(tmp_path)
    items = [a, b, (a[0], "a again"), (a[0], "a once more")]
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    monkeypatch.setattr(ray_engine, "_replay_chunk", failing_on("a.jsonl", attempts, times=0, kill=False))
    results = list(replay_files_ray(items, Config.make()))
    assert len(os.listdir(attempts)) == 1  # one task held it, and nothing was tried again
    assert records(results) == records([replay_file(path, Config.make(), label=label) for path, label in items])
    assert [r.path for file in results for r in file] == ["a.jsonl", "b.jsonl", "a again", "a once more"]


def test_the_files_go_to_the_workers_by_the_chunk_and_come_back_so(tmp_path, monkeypatch):
    """The driver's work grows with the tasks, not the files: 1,000 files go out in a few
    dozen tasks of many files each (a task a file, or a handful, costs the driver about a
    millisecond a file, the cluster's limit), and each task's results come back in one piece."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    real = ray_engine._replay_chunk

    def counted(cwd, paths, config, format):
        handle, _ = tempfile.mkstemp(dir=tasks)  # the workers are other processes, at once
        os.write(handle, str(len(paths)).encode())
        os.close(handle)
        return real(cwd, paths, config, format)

    monkeypatch.setattr(ray_engine, "_replay_chunk", counted)
    decoded = []
    monkeypatch.setattr(ray_engine, "decode_json", lambda *args: decoded.append(1) or decode_json(*args))
    folder = tmp_path / "sessions"
    folder.mkdir()
    items = []
    for i in range(1000):
        path = folder / f"s{i}.jsonl"
        path.write_text(jsonl(looping_events() if i % 100 == 0 else healthy_events()))
        items.append((str(path), f"s{i}"))
    results = list(replay_files_ray(items, Config.make()))
    assert [[r.path for r in file] for file in results] == [[label] for _, label in items]
    assert sum(file[0].stopped for file in results) == 10 and not any(file[0].error for file in results)
    sizes = [int(task.read_text()) for task in tasks.iterdir()]
    assert sum(sizes) == 1000  # each file once, none lost
    assert len(sizes) <= 1000 // 32, sorted(sizes)
    assert len(decoded) == len(sizes)  # one decoding a task, not one a file


def test_on_a_large_cluster_the_tasks_stay_as_full(tmp_path, monkeypatch):
    """With a 64-CPU cluster's 128 tasks out, the tasks still carry full chunks, not a
    window's worth shared thin among them: the driver's work a session is the same on a
    large cluster as here (what `bench/scale.py`'s estimate assumes). The files are not
    read: each task only counts its paths. The last 64 x 128 files go in thinner chunks
    (so that the workers end together), a few hundred tasks a scan whatever its size."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()

    def counted(cwd, paths, config, format):
        from loopwatch._encode import encode_json

        handle, _ = tempfile.mkstemp(dir=tasks)
        os.write(handle, str(len(paths)).encode())
        os.close(handle)
        return encode_json([[{"format": "counted"}] for _ in paths])

    monkeypatch.setattr(ray_engine, "_replay_chunk", counted)
    monkeypatch.setattr(ray_engine, "_cpus", lambda ray: 64)  # 128 tasks out, queued on these 2 CPUs
    count = 100_000
    results = list(replay_files_ray(((f"/nowhere/s{i}.jsonl", f"s{i}") for i in range(count)), Config.make()))
    assert [file[0].path for file in results] == [f"s{i}" for i in range(count)]
    assert {file[0].format for file in results} == {"counted"}
    sizes = [int(task.read_text()) for task in tasks.iterdir()]
    assert sum(sizes) == count
    full = sum(size for size in sizes if size == ray_engine._CHUNK)
    assert full >= 0.8 * count, (full, len(sizes))  # thinner only for the last files, a CPU's share each
    assert len(sizes) <= count // 64, len(sizes)
