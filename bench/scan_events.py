"""`loopwatch scan --json` over one long events file, against the bare pass over it.

    PYTHONPATH=src python bench/scan_events.py                      # 100,000 events
    PYTHONPATH=src python bench/scan_events.py --events 50000 --repeats 3
    PYTHONPATH=src python bench/scan_events.py --against /path/to/other/src

The file is the mixed stream of `bench/core.py` (tool calls with inputs and results of
100 B to 8 KB, repeats, cycles, failing calls with moving counters, model text, some
streamed, output lines, turns, retries, corrections, pre-dispatch attempts), written
once as a loopwatch events file (JSON Lines) in a temporary folder. Then, alternately,
`--repeats` times:

(a) the bare pass, the least any detector must pay: read the file, parse each line with
    orjson, and take an 8-byte BLAKE2b digest of what the event carries: the canonical
    JSON of a call's input (`orjson`, sorted keys) and its result (its text as is, else
    canonical JSON), the text of model text, output and corrections;
(b) `python -m loopwatch scan --json FILE` in a child process, its output thrown away,
    with the `src` folder this script sits in (or `--against`, timed in the same
    rounds, so that two trees are compared back to back on the same machine load).

Times are CPU seconds (this process for (a), the finished child for (b)): on a shared
machine the wall clock also counts the time other processes held the core. The best
of the repeats counts. The scan's figure includes the child's start-up (interpreter,
imports; printed apart, from a scan of a one-line file), so the ratio is a bound from
above. Target: the scan at most 6x the bare pass (goal 3x).

`--frontier` measures instead, in this process and against the same bare pass, where the
scan's time goes and what reading less of each result could buy at best: the events
reader alone; the reader and a `Monitor` per session (what the scan does, without its
start-up and output); the same with every result cut to a head and tail of N characters
each (`--limits`, the cut `normalize` makes at 64 KiB); with no result read at all (a
bound no detector can reach: it sees no failure); with every `Step` made beforehand and
looked up (what the rest of the monitor costs, were building a step free); and with
every signal off.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import Pool  # bench/core.py: the same mixed stream

from loopwatch import Attempt, Correction, ModelText, Output, Retry, ToolCall, Turn

SRC = Path(__file__).resolve().parent.parent / "src"
_OPT = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def event_line(event: Any) -> dict[str, Any]:
    """One event as a line of the loopwatch events format (`_readers/events.py`)."""
    kind = type(event)
    if kind is ToolCall:
        return {
            "type": "tool",
            "name": event.name,
            "input": event.input,
            "result": event.result,
            "error": event.error,
            "changed": list(event.changed),
        }
    if kind is Attempt:
        return {"type": "attempt", "name": event.name, "input": event.input}
    if kind is ModelText:
        return {"type": "text", "text": event.text, "chunk": event.chunk}
    if kind is Output:
        data = event.data.decode() if isinstance(event.data, bytes) else event.data
        return {"type": "output", "data": data, "stream": event.stream}
    if kind is Retry:
        return {"type": "retry", "reason": event.reason}
    if kind is Turn:
        return {"type": "turn"}
    if kind is Correction:
        return {"type": "correction", "message": event.message}
    raise TypeError(kind)


def write_events(path: Path, events: int, pool: int, seed: int) -> None:
    stream = Pool(seed).build(min(pool, events))
    with open(path, "wb") as fh:
        for i in range(events):
            fh.write(orjson.dumps(event_line(stream[i % len(stream)])) + b"\n")


def bare(path: Path) -> int:
    """The bare pass over the file; returns the events read."""
    blake = hashlib.blake2b
    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            value = orjson.loads(line)
            n += 1
            kind = value["type"]
            if kind == "tool" or kind == "attempt":
                blake(orjson.dumps(value.get("input"), option=_OPT), digest_size=8).digest()
                if kind == "tool":
                    result = value.get("result")
                    data = result.encode() if isinstance(result, str) else orjson.dumps(result, option=_OPT)
                    blake(data, digest_size=8).digest()
            elif kind == "text":
                blake(value["text"].encode(), digest_size=8).digest()
            elif kind == "output":
                blake(value["data"].encode(), digest_size=8).digest()
            elif kind == "correction":
                blake(value["message"].encode(), digest_size=8).digest()
    return n


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def scan(src: Path, path: Path) -> tuple[float, bytes]:
    """CPU seconds of `python -m loopwatch scan --json path` run with `src` first on the path, and its output."""
    env = dict(os.environ, PYTHONPATH=str(src))
    before = cpu_children()
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--json", "--no-progress", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        check=False,
    )
    spent = cpu_children() - before
    # 1 means a session would have been stopped, but a child that crashed exits 1 too:
    # only a record on stdout says the scan ran.
    if done.returncode not in (0, 1) or not _has_record(done.stdout):
        sys.exit(f"scan failed ({done.returncode}, no record) with {src}")
    return spent, done.stdout


def _has_record(out: bytes) -> bool:
    try:
        return any(isinstance(orjson.loads(line), dict) for line in out.splitlines() if line.strip())
    except orjson.JSONDecodeError:
        return False


def frontier(path: Path, limits: list[int], repeats: int) -> None:
    """`--frontier`: the reader, the monitor, and the monitor reading less of each result."""
    import time

    from loopwatch import Monitor
    from loopwatch._core import fingerprint, monitor
    from loopwatch._core.signals import SIGNALS
    from loopwatch._readers import events as reader

    def cpu(fn: Any) -> float:
        start = time.process_time()
        fn()
        return time.process_time() - start

    def read_only() -> None:
        for session in reader.read(str(path)):
            for _ in session.events:
                pass

    def observed() -> None:
        for session in reader.read(str(path)):
            watcher = Monitor()
            for event in session.events:
                watcher.observe(event)

    kept_limit, kept_step = fingerprint._RESULT_LIMIT, monitor.make_step

    def unread(index: int, name: str, input_value: object, result: object, *rest: Any, **named: Any) -> Any:
        return kept_step(index, name, input_value, None, *rest, **named)

    # A `Step` that costs nothing: each call's step made once beforehand (by its place in
    # the file), then looked up. What the rest of the monitor costs, whatever a step costs.
    made: list[Any] = []

    def recorded(*args: Any, **named: Any) -> Any:
        made.append(kept_step(*args, **named))
        return made[-1]

    def looked_up(*args: Any, **named: Any) -> Any:
        return next(steps)

    def silent() -> None:
        off = {name: cls.Params.off() for name, cls in SIGNALS.items()}
        for session in reader.read(str(path)):
            watcher = Monitor(signals=off)
            for event in session.events:
                watcher.observe(event)

    monitor.make_step = recorded  # type: ignore[assignment]
    try:
        observed()
    finally:
        monitor.make_step = kept_step
    steps = iter(made)

    rows: dict[str, list[float]] = {}
    try:
        for _ in range(repeats):
            floor = cpu(lambda: bare(path))
            rows.setdefault("the events reader alone", []).append(cpu(read_only) / floor)
            rows.setdefault("reader + Monitor, as shipped (64 KiB head and tail)", []).append(cpu(observed) / floor)
            for limit in limits:
                fingerprint._RESULT_LIMIT = limit
                rows.setdefault(f"reader + Monitor, results cut to {limit} B head and tail", []).append(
                    cpu(observed) / floor
                )
            fingerprint._RESULT_LIMIT = kept_limit
            monitor.make_step = unread  # type: ignore[assignment]
            rows.setdefault("reader + Monitor, no result read at all (bound)", []).append(cpu(observed) / floor)
            steps = iter(made)
            monitor.make_step = looked_up  # type: ignore[assignment]
            rows.setdefault("reader + Monitor, every Step free (bound: made beforehand)", []).append(
                cpu(observed) / floor
            )
            monitor.make_step = kept_step
            rows.setdefault("reader + Monitor, every signal off (bound)", []).append(cpu(silent) / floor)
    finally:
        fingerprint._RESULT_LIMIT, monitor.make_step = kept_limit, kept_step
    print(f"x the bare pass, CPU, best of {repeats} (every round); load average {os.getloadavg()[0]:.1f}")
    for name, ratios in rows.items():
        print(f"  {min(ratios):5.1f}x  {name}  ({', '.join(f'{r:.1f}' for r in ratios)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events in the file (default 100,000)")
    parser.add_argument("--pool", type=int, default=20_000, help="distinct events cycled through (default 20,000)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of (a) and (b); the best counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--against", type=Path, action="append", default=[], help="another `src` folder to time in the same rounds"
    )
    parser.add_argument("--frontier", action="store_true", help="where the time goes, in process (see above)")
    parser.add_argument("--limits", default="2048,512", help="head and tail sizes for --frontier (characters)")
    args = parser.parse_args(argv)
    trees = [SRC, *(p.resolve() for p in args.against)]
    if args.frontier:
        with tempfile.TemporaryDirectory(prefix="loopwatch-bench-") as tmp:
            path = Path(tmp) / "long.jsonl"
            write_events(path, args.events, args.pool, args.seed)
            bare(path)
            frontier(path, [int(n) for n in args.limits.split(",") if n], args.repeats)
        return 0

    with tempfile.TemporaryDirectory(prefix="loopwatch-bench-") as tmp:
        path = Path(tmp) / "long.jsonl"
        write_events(path, args.events, args.pool, args.seed)
        tiny = Path(tmp) / "tiny.jsonl"
        tiny.write_bytes(b'{"type": "turn"}\n')
        size = path.stat().st_size
        bare(path)  # the page cache warm for every timing below

        bare_times: list[float] = []
        scan_times: dict[Path, list[float]] = {tree: [] for tree in trees}
        start_times: dict[Path, list[float]] = {tree: [] for tree in trees}
        outputs: dict[Path, bytes] = {}
        for _ in range(args.repeats):
            start = cpu_self()
            n = bare(path)
            bare_times.append(cpu_self() - start)
            for tree in trees:
                spent, out = scan(tree, path)
                scan_times[tree].append(spent)
                outputs[tree] = out
                start_times[tree].append(scan(tree, tiny)[0])

    load = os.getloadavg()[0]
    b = min(bare_times)
    print(f"file: {n:,} events, {size / 1e6:.1f} MB; {args.repeats} rounds, best counts; load average {load:.2f}")
    print(f"(a) bare pass (orjson parse + blake2b-8 of input and result): {b:7.3f} s cpu  {n / b:10,.0f} events/s")
    for tree in trees:
        s, s0 = min(scan_times[tree]), min(start_times[tree])
        ratio = s / b
        verdict = "met" if ratio <= 6 else "NOT met"
        print(f"(b) scan --json, {tree}:")
        print(
            f"    {s:7.3f} s cpu  {n / s:10,.0f} events/s   {ratio:5.2f}x bare (target <= 6x: {verdict}; goal 3x)"
            f"   [start-up alone {s0:.3f} s; without it {(s - s0) / b:5.2f}x]"
        )
        print(f"    every round: {', '.join(f'{t / bb:.2f}x' for t, bb in zip(scan_times[tree], bare_times))}")
    if len(trees) > 1:
        same = len({outputs[t] for t in trees}) == 1
        print(f"outputs of the trees: {'identical' if same else 'DIFFERENT'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
