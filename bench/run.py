"""Throughput of `loopwatch run`: piping output through the supervisor vs `cat`.

Writes a file of varied text lines (default 50 MB, ~80 bytes a line, never a loop),
then times, in this one run:
  cat          `cat FILE > /dev/null`                        (the baseline)
  pump         the supervisor's I/O alone: child group + selector pump, no monitor
  monitor      the core alone: Monitor.observe(Output(...)) over the same bytes, in-process
  run          `loopwatch run -- cat FILE > /dev/null`       (everything)
and prints MB/s, lines/s and each figure as a ratio to `cat`.

With `--against SRC` (another checkout's `src`, e.g. of main), `run` is also timed with
that code, alternating with this one (best of `--repeat` each), so a change is judged
against its baseline under the same load on a shared machine.

    PYTHONPATH=src python bench/run.py [--mb 50] [--against ../main/src --repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from loopwatch import Monitor, Output  # noqa: E402
from loopwatch.supervise.group import ChildGroup  # noqa: E402
from loopwatch.supervise.pump import Pump  # noqa: E402

WORDS = ("build test parser module request token update import error value config cache "
         "server client stream thread worker queue retry commit branch merge status").split()


def make_file(path: Path, size: int) -> int:
    rng = random.Random(5)
    lines = 0
    with open(path, "w") as fh:
        written = 0
        while written < size:
            line = " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(rng.randrange(6, 14))) + "\n"
            fh.write(line)
            written += len(line)
            lines += 1
    return lines


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_cat(path: Path) -> None:
    with open(os.devnull, "wb") as null:
        subprocess.run(["cat", str(path)], stdout=null, check=True)


def bench_pump(path: Path) -> None:
    child = ChildGroup(["cat", str(path)])
    null = os.open(os.devnull, os.O_WRONLY)
    pump = Pump({child.stdout: ("stdout", null), child.stderr: ("stderr", null)})
    while pump.open:
        pump.wait(0.5)
    child.process.wait()
    pump.close()
    child.close()
    os.close(null)


def bench_monitor(path: Path) -> None:
    monitor = Monitor()
    with open(path, "rb") as fh:
        at = 0.0
        while chunk := fh.read(64 * 1024):
            monitor.observe(Output(chunk, "stdout", at=at))
            at += 0.001


def bench_run(path: Path, src: Path = ROOT / "src") -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("LOOPWATCH_MODE", None)
    with open(os.devnull, "wb") as null:
        proc = subprocess.run([sys.executable, "-m", "loopwatch", "run", "--", "cat", str(path)],
                              stdout=null, stderr=subprocess.PIPE, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"loopwatch run failed ({proc.returncode}): {proc.stderr.decode()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the output, in MB (default 50)")
    parser.add_argument("--against", type=Path, help="another source tree to time `run` with, alternating")
    parser.add_argument("--repeat", type=int, default=1, help="runs of `run` with each tree (best is kept)")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "output.txt"
        lines = make_file(path, size)
        real = path.stat().st_size
        print(f"output: {real / 1e6:.1f} MB, {lines:,} lines")
        rows = [(name, min(timed(lambda: fn(path)) for _ in range(repeat)))
                for name, fn, repeat in (("cat", bench_cat, 3), ("pump", bench_pump, 3),
                                         ("monitor", bench_monitor, 1))]
        ours, theirs = [], []
        for _ in range(args.repeat):
            ours.append(timed(lambda: bench_run(path)))
            if args.against is not None:
                theirs.append(timed(lambda: bench_run(path, args.against)))
        rows.append(("run", min(ours)))
        if theirs:
            rows.append(("run@base", min(theirs)))
    base = rows[0][1]
    print(f"{'':8s} {'seconds':>8s} {'MB/s':>9s} {'lines/s':>11s} {'x cat':>8s}")
    for name, seconds in rows:
        print(f"{name:8s} {seconds:8.3f} {real / 1e6 / seconds:9.1f} {lines / seconds:11,.0f} {seconds / base:8.1f}")
    if args.against is not None:
        print(f"run / run@base: {rows[-2][1] / rows[-1][1]:.2f} (throughput {rows[-1][1] / rows[-2][1]:.0%} of the baseline's)")


if __name__ == "__main__":
    main()
