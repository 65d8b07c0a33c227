"""How fast `loopwatch scan` reads a corpus, against the bare cost of parsing it.

    PYTHONPATH=src python bench/scan.py [CORPUS] [--repeat N] [--jobs N]

CORPUS defaults to ../shared/corpus next to the repository (or /work/shared/corpus);
without one the benchmark says so and exits 0. It takes the files `scan` would take
from that folder and times, best of N runs:

(a) bare parsing, the floor for any scanner: read each file and parse it with orjson
    (whole-JSON files at once, JSON Lines line by line; a console log, which is not
    JSON, is only decoded); for reference, the readers alone (detect and read every
    event, no monitor);
(b) the scan in one process: detect the format, read, replay through a monitor,
    serialize each result as `scan --json` does;
(c) the same scan across processes (default: one per core).

Targets: (b) at most 2x (a); (c) at least 1.6x faster than (b) on 2 cores.
Other work on the machine skews (c) most: the load average is printed with the figures,
and so is the CPU the parallel scan spends (workers included) against one process,
which bounds the speed-up on idle cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import orjson

from loopwatch._cli.paths import expand
from loopwatch._core.config import Config
from loopwatch._readers import ReadError, read
from loopwatch._analysis.pool import default_jobs
from loopwatch._analysis.replay import replay_files


def find_corpus(given: str | None) -> Path | None:
    candidates = (
        [Path(given)]
        if given
        else [Path(__file__).resolve().parents[1].parent / "shared" / "corpus", Path("/work/shared/corpus")]
    )
    return next((c for c in candidates if c.is_dir()), None)


def bare(paths: list[str]) -> None:
    for path in paths:
        with open(path, "rb") as fh:
            data = fh.read()
        if path.endswith((".jsonl", ".ndjson")):
            for line in data.splitlines():
                if line.strip():
                    try:
                        orjson.loads(line)
                    except orjson.JSONDecodeError:
                        pass
        elif path.endswith((".json", ".traj")):
            try:
                orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
        else:
            data.decode("utf-8", "replace")


def read_only(paths: list[str]) -> None:
    """Detect and read every session's events, without a monitor: the readers' share."""
    for path in paths:
        try:
            for session in read(path):
                for _ in session.events:
                    pass
        except ReadError:
            pass


def scan(items: list[tuple[str, str]], config: Config, jobs: int) -> int:
    sessions = 0
    for results in replay_files(items, config, jobs=jobs):
        for result in results:
            orjson.dumps(result.as_json())
            sessions += 1
    return sessions


def best(runs: int, work) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds (this process) over `runs` runs. CPU time
    is what a busy machine distorts least; the parallel scan can only be judged by
    wall-clock time on an otherwise idle machine."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), _cpu()
        work()
        walls.append(time.perf_counter() - wall)
        cpus.append(_cpu() - cpu)
    return min(walls), min(cpus)


def _cpu() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def machine_ceiling(jobs: int) -> float:
    """The speed-up this machine gives a pure-CPU loop on `jobs` processes right now:
    the most any parallel scan could show here (shared machines often give far less
    than the core count)."""
    import multiprocessing

    work = [2_000_000] * (4 * jobs)
    start = time.perf_counter()
    for n in work:
        _spin(n)
    one = time.perf_counter() - start
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with context.Pool(jobs) as pool:
        start = time.perf_counter()
        pool.map(_spin, work)
        many = time.perf_counter() - start
    return one / many


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=default_jobs())
    args = parser.parse_args()
    corpus = find_corpus(args.corpus)
    if corpus is None:
        print("no corpus found (give its folder as an argument); nothing measured")
        return 0
    targets = [t for t in expand([str(corpus)]) if t.problem is None]
    paths = [t.path for t in targets]
    items = [(t.path, t.label) for t in targets]
    size = sum(os.path.getsize(p) for p in paths) / 1e6
    config = Config.make()
    load_before = os.getloadavg()[0]

    bare(paths)  # warm the page cache: every timing below reads from memory
    t_bare = best(args.repeat, lambda: bare(paths))
    t_read = best(args.repeat, lambda: read_only(paths))
    sessions = scan(items, config, 1)
    t_single = best(args.repeat, lambda: scan(items, config, 1))
    t_parallel = best(args.repeat, lambda: scan(items, config, args.jobs))
    ceiling = machine_ceiling(args.jobs)
    load_after = os.getloadavg()[0]

    n = len(paths)
    print(
        f"corpus: {corpus} ({n} files, {size:.1f} MB, {sessions} sessions); "
        f"{default_jobs()} cores; load average {load_before:.2f} before, {load_after:.2f} after"
    )
    print(f"{'':30}{'wall s':>8}{'cpu s':>8}{'files/s':>9}{'MB/s':>8}")
    rows = (
        ("(a) bare orjson parsing", t_bare),
        ("    readers only, no monitor", t_read),
        ("(b) scan, 1 process", t_single),
        (f"(c) scan, {args.jobs} processes", t_parallel),
    )
    for name, (wall, cpu) in rows:
        print(f"{name:30}{wall:8.3f}{cpu:8.3f}{n / wall:9.0f}{size / wall:8.1f}")
    print(
        f"scan cost / bare parsing, 1 process: {t_single[0] / t_bare[0]:.1f}x wall, "
        f"{t_single[1] / t_bare[1]:.1f}x cpu (target <= 2x); readers alone: {t_read[1] / t_bare[1]:.1f}x cpu"
    )
    print(
        f"parallel speed-up: {t_single[0] / t_parallel[0]:.2f}x wall on {args.jobs} processes (target >= 1.6x on 2 cores); "
        f"the parallel scan spends {t_parallel[1] / t_single[1]:.2f}x the CPU of one process "
        f"(so at most {args.jobs * t_single[1] / t_parallel[1]:.2f}x on {args.jobs} idle cores)"
    )
    print(
        f"this machine's ceiling now: a pure-CPU loop speeds up {ceiling:.2f}x on {args.jobs} processes; "
        f"the scan reaches {t_single[0] / t_parallel[0] / ceiling:.0%} of it"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
