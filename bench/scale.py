"""Benchmark of scanning many sessions: the local process pool and Ray, on 1 and 2 workers.

    PYTHONPATH=src python bench/scale.py                    # N = 1,000
    PYTHONPATH=src python bench/scale.py -n 1000,10000      # and the scaling from one N to the next
    PYTHONPATH=src python bench/scale.py -n 100000 --engines local

The N sessions are real corpus sessions (../shared/corpus and ../shared/corpus-tb2, or
`--corpus`; every file a scan finds there in a known format), drawn with replacement by a
seeded generator into a temporary listing the scan reads as it goes (the local pool replays
a file drawn twice twice; Ray replays a path given again within the items it reads ahead,
8,192 here, once: at N = 10,000, drawn from 5,792 files, it replays about 6,000 times; its
sessions/s count the sessions given back), so N can be 100,000 without copying gigabytes;
results are counted as they come, not kept, so the driver's memory is the engine's. Each
configuration runs in a fresh Python process (so one's workers and caches do not carry into
the next) and prints: wall time (Ray's start-up and a first task of one
session apart, as "init"), sessions/s, events/s, stopped sessions (the same for every
engine, or the run says so), the driver's CPU per session (on 1 local worker, the whole
scan), and the peak resident memory of a worker (local: the largest child's `ru_maxrss`,
which counts the driver's memory when the pool forked it, or the process's own on 1 worker,
which scans in process; Ray: the largest among the workers, asked at the end) and of the
driver; a process's own peak is its `VmHWM`, not its `ru_maxrss` (see `own_peak_kib`).

With several N, it then prints each configuration's sessions/s at every N against the
smallest (1.00 = flat throughput: time linear in N), and, when Ray ran, what 10 million
rollouts would take on a 64-core Ray cluster, from the largest N's Ray run on the most
workers: its seconds per session per worker (start-up excluded), times 10 million, over 64;
or, if longer, the time the driver needs to take 10 million results in: its CPU a session
beyond what it spends polling in any case (that rate is measured after the run, on the
engine's own loop over tasks that only sleep), the driver's one core being the limit. It
says which of the two bounds the estimate, and prints its assumptions with it (each core of
the cluster as fast as one here, scaling linear in cores, rollouts as long as these
sessions on average).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SUFFIXES = (".traj", ".json", ".jsonl", ".log", ".cast")


def corpus_files(folders: list[Path]) -> list[Path]:
    """The transcripts of the corpus folders: the files a scan finds there in a known format."""
    from loopwatch._cli.paths import expand
    from loopwatch._readers import HEAD_SIZE, detect

    found = []
    for folder in folders:
        for target in expand([str(folder)]):
            if not target.problem:
                with open(target.path, "rb") as fh:
                    if detect(target.path, fh.read(HEAD_SIZE)) is not None:
                        found.append(Path(target.path))
    return sorted(found)


def build(n: int, seed: int, folders: list[Path], into: Path) -> None:
    """The drawn sessions, one path a line (a path drawn twice is scanned twice)."""
    files = corpus_files(folders)
    if not files:
        sys.exit("no corpus sessions found (--corpus)")
    rng = random.Random(seed)
    with into.open("w") as out:  # line by line: this process's memory would otherwise grow with N
        for _ in range(n):
            out.write(f"{rng.choice(files)}\n")


def own_peak_kib() -> int:
    """This process's peak resident memory, its own: `ru_maxrss` also counts the memory
    of the process it was started from, as it was when it started (Linux carries the
    high-water mark across `exec`), so it would report this benchmark's parent."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def one(engine: str, workers: int, listing: str) -> dict:
    """Run in a fresh process: replay the sessions listed in `listing` with `engine` on `workers` workers."""
    from loopwatch._analysis.replay import replay_files
    from loopwatch._core.config import Config

    config = Config.make()
    init_seconds = 0.0
    counts = dict.fromkeys(("sessions", "events", "stopped", "errors"), 0)
    with open(listing) as listed:  # read as the scan goes (both engines take the files lazily), not held
        items = ((path, f"{i}:{path}") for i, path in enumerate(line.rstrip("\n") for line in listed))
        start, cpu_start, thread_start = time.perf_counter(), time.process_time(), time.thread_time()
        if engine == "local":
            files = replay_files(items, config, jobs=workers)
        else:
            import ray

            from loopwatch._analysis.ray_engine import replay_files_ray, start_local

            start_local(num_cpus=workers)  # on the loopback interface only, as the scan's own
            # A first task, counted with the start-up too: the driver's one-off costs (Ray's
            # serialisation imports, sending the function: about 0.1 s of CPU) are not a session's.
            with open(listing) as first:
                list(replay_files_ray([(first.readline().rstrip("\n"), "")], config))
            init_seconds = time.perf_counter() - start
            start, cpu_start, thread_start = time.perf_counter(), time.process_time(), time.thread_time()
            files = replay_files_ray(items, config)
        for file in files:  # counted as they come: the driver holds no results, as a scan writing --out
            for r in file:
                counts["sessions"] += 1
                counts["events"] += r.events
                counts["stopped"] += r.stopped
                counts["errors"] += r.error is not None
        seconds = time.perf_counter() - start
    # The driver's own CPU time over the run: on Ray, what taking the results in costs (one
    # process, whatever the cluster's size); on the local pool with 1 worker, the whole scan.
    driver_cpu, driver_thread_cpu = time.process_time() - cpu_start, time.thread_time() - thread_start
    at_rest = 0.0
    if engine == "local":  # one worker: the scan runs in this process
        worker_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if workers > 1 else own_peak_kib()
    else:
        peak = ray.remote(lambda: (os.getpid(), own_peak_kib()))
        worker_peak = max(rss for _, rss in ray.get([peak.remote() for _ in range(workers * 8)]))
        at_rest = driver_at_rest(workers)
        ray.shutdown()
    return {
        "engine": engine,
        "workers": workers,
        **counts,
        "seconds": round(seconds, 2),
        "init_seconds": round(init_seconds, 2),
        "worker_peak_mib": round(worker_peak / 1024, 1),
        "driver_peak_mib": round(own_peak_kib() / 1024, 1),
        "driver_cpu_seconds": round(driver_cpu, 2),
        "driver_thread_cpu_seconds": round(driver_thread_cpu, 2),
        "driver_at_rest": round(at_rest, 4),
    }


def driver_at_rest(workers: int) -> float:
    """The Ray driver's CPU seconds per second while its tasks run and none finishes: Ray's
    client threads poll, a cost in time, not in sessions. Measured on the engine's own loop
    (`replay_files_ray`) over tasks that only sleep, one a worker, over 2 s in the middle
    of their 5 (their start left out)."""
    import threading

    from loopwatch._analysis import ray_engine
    from loopwatch._core.config import Config
    from loopwatch._encode import encode_json

    def sleep(cwd: str, paths: list[str], config: object, format: str | None) -> tuple[bytes, bool]:
        time.sleep(5)
        return encode_json([[] for _ in paths])

    marks: list[tuple[float, float]] = []

    def mark() -> None:
        for wait in (1.5, 2.0):
            time.sleep(wait)
            marks.append((time.perf_counter(), time.process_time()))

    real, ray_engine._replay_chunk = ray_engine._replay_chunk, sleep
    try:
        clock = threading.Thread(target=mark)
        clock.start()
        for _ in ray_engine.replay_files_ray(((f"idle-{i}", "") for i in range(workers)), Config.make()):
            pass
        clock.join()
    finally:
        ray_engine._replay_chunk = real
    (wall0, cpu0), (wall1, cpu1) = marks
    return (cpu1 - cpu0) / (wall1 - wall0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", default="1000", help="sessions, or several: 1000,10000 (default 1,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", action="append", type=Path, help="corpus folder (repeatable)")
    parser.add_argument("--engines", default="local,ray")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--one", nargs=3, metavar=("ENGINE", "WORKERS", "LISTING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.one[2])))
        return
    folders = args.corpus or [SHARED / "corpus", SHARED / "corpus-tb2"]
    sizes = [int(n) for n in args.n.split(",")]
    runs: list[dict] = []
    print(f"sessions drawn (seed {args.seed}) from {', '.join(map(str, folders))}")
    print(
        f"{'N':>7} {'engine':<7}{'workers':>8}{'sessions':>10}{'events':>11}{'stopped':>9}{'errors':>8}"
        f"{'seconds':>9}{'(init)':>8}{'sess/s':>9}{'events/s':>10}{'worker MiB':>12}{'driver MiB':>12}"
        f"{'driver CPU ms/session':>23}"
    )
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="loopwatch-scale-") as folder:
            tmp = os.path.join(folder, "sessions.txt")
            build(n, args.seed, folders, Path(tmp))
            same = set()
            for engine in args.engines.split(","):
                for workers in map(int, args.workers.split(",")):
                    out = subprocess.run(
                        [sys.executable, __file__, "--one", engine, str(workers), tmp],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    r = {"n": n, **json.loads(out.stdout.strip().splitlines()[-1])}
                    runs.append(r)
                    same.add((r["sessions"], r["stopped"], r["errors"]))
                    print(
                        f"{n:>7} {engine:<7}{workers:>8}{r['sessions']:>10}{r['events']:>11}{r['stopped']:>9}"
                        f"{r['errors']:>8}{r['seconds']:>9}{r['init_seconds']:>8}{r['sessions'] / r['seconds']:>9.1f}"
                        f"{r['events'] / r['seconds']:>10.0f}{r['worker_peak_mib']:>12}{r['driver_peak_mib']:>12}"
                        f"{1000 * r['driver_cpu_seconds'] / r['sessions']:>23.3f}",
                        flush=True,
                    )
            print(
                f"N = {n}: same sessions, stops and errors on every engine:", "yes" if len(same) == 1 else f"NO {same}"
            )
    if len(sizes) > 1:
        scaling(runs, sizes)
    estimate(runs)


def scaling(runs: list[dict], sizes: list[int]) -> None:
    """Each configuration's sessions/s at every N, against the smallest N's."""
    print(f"\nsessions/s against N = {sizes[0]:,} (1.00: time linear in N)")
    for engine, workers in dict.fromkeys((r["engine"], r["workers"]) for r in runs):
        rate = {r["n"]: r["sessions"] / r["seconds"] for r in runs if (r["engine"], r["workers"]) == (engine, workers)}
        if sizes[0] in rate:
            cells = "  ".join(f"N={n:,}: {rate[n]:.1f} ({rate[n] / rate[sizes[0]]:.2f})" for n in sizes if n in rate)
            print(f"  {engine} x{workers}: {cells}")


ROLLOUTS, CORES = 10_000_000, 64


def estimate(runs: list[dict]) -> None:
    """10 million rollouts on a 64-core Ray cluster, from this run's Ray figures (see the module's doc)."""
    ray_runs = [r for r in runs if r["engine"] == "ray"]
    if not ray_runs:
        return
    r = max(ray_runs, key=lambda r: (r["n"], r["workers"]))
    per_session = r["seconds"] * r["workers"] / r["sessions"]  # seconds of one worker
    workers_hours = ROLLOUTS * per_session / CORES / 3600
    # The driver takes every result in, one process whatever the cluster: it bounds the
    # cluster's rate however many cores replay. Part of its CPU is polling, a cost in time
    # (`driver_at_rest`); the rest is a cost in sessions, and the driver saturates when the
    # two fill its core: at (1 - at_rest) / per-session CPU sessions a second.
    at_rest = r["driver_at_rest"]
    driver_session = max(1e-9, (r["driver_cpu_seconds"] - at_rest * r["seconds"]) / r["sessions"])
    driver_rate = (1 - at_rest) / driver_session
    driver_hours = ROLLOUTS / driver_rate / 3600
    events = r["events"] / r["sessions"]
    print(
        f"\n{ROLLOUTS:,} rollouts on a {CORES}-core Ray cluster: about {max(workers_hours, driver_hours):.2f} h,"
        f" bound by the {'workers' if workers_hours >= driver_hours else 'driver'}"
        f" ({max(workers_hours, driver_hours) / min(workers_hours, driver_hours):.1f}x the other bound)."
        f" Workers: {per_session * 1000:.1f} ms a session on one worker (N = {r['n']:,} on {r['workers']} worker(s),"
        f" Ray's start-up of {r['init_seconds']} s apart), so {workers_hours:.2f} h over {CORES} cores"
        f" ({CORES / per_session:,.0f} sessions/s)."
        f" Driver: {1000 * r['driver_cpu_seconds'] / r['sessions']:.3f} ms of CPU a session over the run"
        f" ({1000 * r['driver_thread_cpu_seconds'] / r['sessions']:.3f} in the thread taking the results in),"
        f" of which {1000 * at_rest:.0f} ms a second is polling, at rest: {1000 * driver_session:.3f} ms a session"
        f" beyond it, so it takes in at most {driver_rate:,.0f} sessions/s: at least {driver_hours:.2f} h however"
        f" many cores. Assumed: each of the {CORES} cores as fast as one here, the work spread evenly (no"
        f" straggler, no gap between tasks), the driver's costs per session the same with {CORES} workers (the"
        f" engine's tasks as large: its window grows with the cluster), rollouts"
        f" of about {events:.0f} events like these sessions (the time grows with the events:"
        f" {r['events'] / r['seconds'] / r['workers']:.0f} events/s a worker)."
    )


if __name__ == "__main__":
    main()
