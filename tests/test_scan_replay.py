"""The replay module behind `scan`, the path expansion, the parallel scan, and a real
subprocess run of the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopwatch._cli.paths import expand, is_transcript_name
from loopwatch._core.config import Config
from loopwatch._readers import Session
from loopwatch._analysis.replay import replay, replay_file, replay_files
from loopwatch._core.events import ToolCall, Turn

from conftest import ROOT, healthy_events, jsonl, looping_events

CORPUS = Path(os.environ.get("LOOPWATCH_CORPUS", ROOT.parent / "shared" / "corpus"))
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus")


def run(*args, input=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", *map(str, args)],
        input=input,
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


# -- replay ---------------------------------------------------------------------------


def test_refs_map_every_counted_action_to_its_source(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl([{"type": "user"}, {"type": "text", "text": "hm"}] + looping_events()[1:]))
    (result,) = replay_file(str(path), Config.make(), keep_refs=True)
    assert result.refs == [f"line {n}" for n in range(3, 9)]
    verdict = result.verdict
    assert result.refs[verdict["at_action"] - 1] == verdict["source_ref"]
    assert verdict["started_ref"] == result.refs[verdict["started_action"] - 1]


def test_exempt_tools_are_not_counted_in_refs(tmp_path):
    config = Config.make(tools={"TodoWrite": {"role": "exempt"}})
    events = [ToolCall("TodoWrite", {"n": 1}, source_ref="a"), ToolCall("Bash", {"c": 1}, source_ref="b")]
    result = replay(Session("events", "s", events), config, keep_refs=True)
    assert result.actions == 1 and result.refs == ["b"]


def test_saved_tokens_are_summed_after_the_stop_or_prorated_from_totals():
    loop = [ToolCall("Bash", {"c": "make"}, "Error 2", error=True, tokens=100, cost=0.1) for _ in range(10)]
    exact = replay(Session("events", "s", list(loop)), Config.make())
    after = 10 - exact.verdict["at_action"]
    assert exact.saved == {
        "actions": after,
        "tokens": 100 * after,
        "cost": pytest.approx(0.1 * after),
        "estimated": False,
    }

    bare = [ToolCall("Bash", {"c": "make"}, "Error 2", error=True) for _ in range(10)]
    prorated = replay(Session("swe-agent", "s", bare, tokens=10_000, cost=2.0), Config.make())
    after = 10 - prorated.verdict["at_action"]  # swe-agent has its own calibration (repeat 4)
    assert after == 5
    assert prorated.saved == {
        "actions": after,
        "tokens": 1000 * after,
        "cost": pytest.approx(0.2 * after),
        "estimated": True,
    }

    nothing = replay(Session("x", "s", list(bare)), Config.make())
    after = 10 - nothing.verdict["at_action"]
    assert nothing.saved == {"actions": after, "tokens": None, "cost": None, "estimated": False}


def test_turn_figures_after_the_stop_count_as_saved():
    events = []
    for _ in range(6):
        events += [Turn(tokens=50), ToolCall("Bash", {"c": "ls"}, "same")]
    result = replay(Session("events", "s", events), Config.make())
    assert result.saved["tokens"] == 50 * (6 - result.verdict["at_action"])


def test_interventions_end_at_the_first_stop_and_the_rest_are_counted():
    loop = [ToolCall("Bash", {"c": "make"}, "Error 2", error=True) for _ in range(12)]
    result = replay(Session("events", "s", loop), Config.make())
    assert result.interventions[-1]["action"] == "stop"
    assert [i["action"] for i in result.interventions].count("stop") == 1
    assert result.interventions_after_stop > 0
    assert result.actions == 12  # replayed to the end all the same


def test_a_reader_failing_half_way_keeps_what_was_replayed():
    def events():
        yield ToolCall("Bash", {"c": 1}, source_ref="line 1")
        raise RuntimeError("boom")

    result = replay(Session("events", "s", events()), Config.make())
    assert result.actions == 1
    assert "RuntimeError: boom" in result.error
    assert result.error.startswith("reader failed at event 2: ")


class _Boom(Exception):
    pass


def test_a_replay_that_fails_past_the_reader_does_not_blame_the_reader(tmp_path, monkeypatch):
    from loopwatch._core.monitor import Monitor

    def fail(self, *args):
        raise _Boom("the monitor failed")

    path = tmp_path / "task.jsonl"
    path.write_text(jsonl(looping_events()))
    with monkeypatch.context() as patch:
        patch.setattr(Monitor, "observe", fail)
        (result,) = replay_file(str(path), Config.make())
    assert result.error == "replay failed at event 1: _Boom: the monitor failed", result.error
    monkeypatch.setattr(Monitor, "calibration", fail)  # once every event is read: still not the reader's
    (result,) = replay_file(str(path), Config.make())
    assert result.error == "replay failed: _Boom: the monitor failed", result.error


# -- paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, siblings, kept",
    [
        ("session.jsonl", [], True),
        ("x.traj", [], True),
        ("x.traj.json", [], True),
        ("trajectory.json", [], True),
        ("agent.log", [], True),
        ("build.log", [], False),
        ("results.json", [], False),
        ("result.json", [], False),
        ("steps.json", ["agent.log"], False),
        ("steps.json", [], True),
        ("README.md", [], False),
    ],
)
def test_which_names_a_folder_walk_keeps(name, siblings, kept):
    assert is_transcript_name(name, siblings) is kept


def test_expand_keeps_order_walks_sorted_and_skips_hidden_folders(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "node_modules").mkdir()
    for rel in ("b/2.jsonl", "b/1.jsonl", ".git/x.jsonl", "node_modules/y.json", "z.jsonl"):
        (tmp_path / rel).write_text("{}")
    targets = list(expand([str(tmp_path / "z.jsonl"), str(tmp_path)]))
    assert [os.path.relpath(t.path, tmp_path) for t in targets] == ["z.jsonl", "b/1.jsonl", "b/2.jsonl"]
    assert [t.walked for t in targets] == [False, True, True]


def test_expand_recursive_globs_and_problems(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "run.traj").write_text("{}")
    targets = list(expand([str(tmp_path / "**" / "*.traj"), str(tmp_path / "nope"), "-"]))
    assert [(os.path.basename(t.path), t.problem) for t in targets] == [
        ("run.traj", None),
        ("nope", "no such file or folder"),
        ("-", None),
    ]


# -- parallel = single process --------------------------------------------------------


def test_parallel_and_single_process_results_are_identical(tmp_path, examples):
    paths = []
    for i in range(10):
        path = tmp_path / f"s{i}.jsonl"
        path.write_text(jsonl(looping_events(3 + i) if i % 2 else healthy_events()))
        paths.append(path)
    paths += [examples / "runaway.jsonl", examples / "healthy.jsonl", tmp_path / "missing.jsonl"]
    (tmp_path / "empty.jsonl").write_text("")
    paths.append(tmp_path / "empty.jsonl")
    items = [(str(p), str(p)) for p in paths]
    config = Config.make()
    single = [[r.as_json() for r in results] for results in replay_files(items, config, jobs=1)]
    parallel = [[r.as_json() for r in results] for results in replay_files(items, config, jobs=3)]
    assert parallel == single
    assert [results[0]["path"] for results in single] == [str(p) for p in paths]  # input order kept
    assert sum(1 for results in single if results[0]["verdict"]) == 6


def test_a_parallel_replay_reads_its_files_as_it_goes_and_holds_a_window(tmp_path, monkeypatch):
    # Issue 9: a scan of 10,000 files must not hold 10,000 paths. The files are taken in
    # order as the replay goes, never more than the window ahead of the last one given
    # back, and the results are the single-process ones, in order, sizes mixed.
    from loopwatch._analysis import pool

    monkeypatch.setattr(pool, "_WINDOW", 5)
    paths = []
    for i in range(23):
        path = tmp_path / f"s{i:02}.jsonl"
        path.write_text(jsonl(looping_events(3 + i % 7) if i % 3 else healthy_events() * (1 + i % 5)))
        paths.append(path)
    items = [(str(p), str(p)) for p in paths]
    pulled = 0

    def given():
        nonlocal pulled
        for item in items:
            pulled += 1
            yield item

    config = Config.make()
    parallel = []
    for results in replay_files(given(), config, jobs=2):
        assert pulled - len(parallel) <= 5, f"{pulled} files taken, {len(parallel)} given back"
        parallel.append([r.as_json() for r in results])
    single = [[r.as_json() for r in results] for results in replay_files(items, config, jobs=1)]
    assert parallel == single and len(single) == 23


def test_results_do_not_depend_on_the_hash_seed():
    # Masked arguments were picked from a set: another process, another result.
    code = (
        "from loopwatch._core.fingerprint import arguments_of;"
        "print(arguments_of({'command': ' '.join(f'tok{i:02d}' for i in range(40))}))"
    )
    outputs = set()
    for seed in ("1", "2", "3", "4"):
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONHASHSEED=seed)
        outputs.add(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        )
    assert len(outputs) == 1


# -- the command, as a user runs it ---------------------------------------------------


def test_the_readme_command_finds_the_loop(examples):
    done = run("scan", "examples/runaway.jsonl")
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode()
    assert "runaway.jsonl" in out and "Loops found: 1 session" in out


def test_piped_json_from_many_files_in_parallel(tmp_path, examples):
    for i in range(6):
        (tmp_path / f"h{i}.jsonl").write_text(jsonl(healthy_events()))
    done = run("scan", tmp_path, "--json", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 6 and all(json.loads(line)["verdict"] is None for line in lines)
    assert done.stderr == b""  # no progress bar when not on a terminal


def test_stdin_through_a_pipe(examples):
    done = run("scan", "-", "--json", input=(examples / "healthy.jsonl").read_bytes())
    assert done.returncode == 0
    assert json.loads(done.stdout)["path"] == "-"


# -- the real corpus (skipped when absent) --------------------------------------------


@pytest.mark.skipif(not (CORPUS / "tb1-console-log").is_dir(), reason="corpus not available")
def test_terminal_bench_side_files_are_not_scanned():
    folder = CORPUS / "tb1-console-log"
    targets = list(expand([str(folder)]))
    names = {os.path.basename(t.path) for t in targets}
    assert names == {"agent.log"}
    assert len(targets) == sum(1 for _ in folder.rglob("agent.log"))


@pytest.mark.skipif(not (CORPUS / "swe-agent-traj").is_dir(), reason="corpus not available")
def test_a_few_real_trajectories_scan_without_errors():
    files = (
        sorted((CORPUS / "swe-agent-traj").rglob("*.traj"))[:5]
        + sorted((CORPUS / "mini-swe-agent-traj-json").rglob("*.traj.json"))[:3]
    )
    items = [(str(p), str(p)) for p in files]
    results = [r for rs in replay_files(items, Config.make(), jobs=1) for r in rs]
    assert len(results) == len(files)
    assert all(r.error is None and r.actions > 0 and r.format for r in results), [(r.path, r.error) for r in results]
    kept = [replay_file(p, Config.make(), keep_refs=True)[0] for p, _ in items]
    assert all(len(r.refs) == r.actions for r in kept)
    # without keep_refs the started refs are the same, from the bounded window
    assert [r.verdict for r in results] == [r.verdict for r in kept]


# -- a regression the healthy example caught ------------------------------------------


def test_a_poll_whose_progress_moves_is_waiting_but_a_stuck_one_is_a_loop():
    def poll(percents):
        return [
            ToolCall("Bash", {"command": "tail -n 1 build.log"}, f"Downloading: {p}% ({p * 12 // 10} MB of 120 MB)")
            for p in percents
        ]

    moving = replay(Session("events", "s", poll(range(10, 100, 10))), Config.make())
    assert moving.verdict is None and moving.interventions == []
    stuck = replay(Session("events", "s", poll([40] * 9)), Config.make())
    assert stuck.verdict is not None


def test_a_long_session_keeps_no_ref_per_action_and_still_names_where_the_loop_began():
    """10,000 distinct calls, then a loop: the started ref comes from the bounded window."""
    events = [
        ToolCall("Bash", {"command": f"cat f{i}"}, result=f"r{i}", source_ref=f"line {i + 1}") for i in range(10_000)
    ]
    events += [
        ToolCall("Bash", {"command": "pytest"}, result="E fail", error=True, source_ref=f"line {10_001 + i}")
        for i in range(6)
    ]
    result = replay(Session("events", "s", events), Config.make())
    assert result.refs == []  # not kept unless asked for
    verdict = result.verdict
    assert verdict["started_action"] == 10_001 and verdict["started_ref"] == "line 10001"
    full = replay(Session("events", "s", events), Config.make(), keep_refs=True)
    assert len(full.refs) == full.actions and full.verdict == verdict


def test_expand_streams_and_finds_each_file_once_without_keeping_every_key(tmp_path):
    """Duplicates through symlinks (before and after their target in the walk's order),
    hard links and overlapping arguments are still read once, and the first path in
    order still names the file; `expand` is an iterator, not a list."""
    sub = tmp_path / "d" / "m"
    sub.mkdir(parents=True)
    for name in ("b.jsonl", "x.jsonl"):
        (sub / name).write_text("{}")
    os.symlink(sub / "b.jsonl", sub / "a.jsonl")  # sorts before its target
    os.symlink(sub / "b.jsonl", sub / "c.jsonl")  # and after it
    os.link(sub / "x.jsonl", tmp_path / "d" / "hard.jsonl")
    (tmp_path / "d" / "z.jsonl").write_text("{}")
    d = str(tmp_path / "d")
    targets = expand([d, str(sub), d, str(sub / "x.jsonl"), str(tmp_path / "d" / "z.jsonl")])
    assert not isinstance(targets, list | tuple) and iter(targets) is targets
    assert [os.path.relpath(t.path, tmp_path) for t in targets] == ["d/hard.jsonl", "d/z.jsonl", "d/m/a.jsonl"]
    later = list(expand([str(sub / "x.jsonl"), str(sub / "b.jsonl"), d]))
    assert [os.path.relpath(t.path, tmp_path) for t in later] == ["d/m/x.jsonl", "d/m/b.jsonl", "d/z.jsonl"]


def test_jobs_are_capped_at_the_files_and_the_cores(tmp_path, monkeypatch):
    """`scan --jobs 1000` on 5 files forked 1,000 workers (issue 24); a count of
    processes, not a time."""
    from concurrent.futures import ProcessPoolExecutor

    from loopwatch import Config
    from loopwatch._analysis import pool, replay
    from conftest import jsonl, looping_events

    asked: list[int] = []

    class Counting(ProcessPoolExecutor):
        def __init__(self, max_workers=None, *args, **kwargs):
            asked.append(max_workers)
            super().__init__(max_workers, *args, **kwargs)

    monkeypatch.setattr(pool, "ProcessPoolExecutor", Counting)
    files = []
    for i in range(5):
        path = tmp_path / f"run{i}.jsonl"
        path.write_text(jsonl(looping_events()))
        files.append((str(path), str(path)))
    results = list(replay.replay_files(files, Config.make(profile="unattended"), jobs=1000))
    assert len(results) == 5 and all(r[0].error is None for r in results)
    assert asked and max(asked) <= min(5, pool.default_jobs())
    assert pool.workers(1000, 5) == min(5, pool.default_jobs())
    assert pool.workers(1000, 0) == 1 and pool.workers(None, 3) == min(3, pool.default_jobs())
