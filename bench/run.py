"""Throughput of `loopwatch run`: piping output through the supervisor vs `cat`.

Writes a file of varied text lines (default 50 MB, ~80 bytes a line, never a loop),
then times, in this one run:
  cat          `cat FILE > /dev/null`                        (the baseline)
  pump         the supervisor's I/O alone: child group + selector pump, no monitor
  pump --pty   the same through a pseudo-terminal
  monitor      the core alone: Monitor.observe(Output(...)) over the same bytes, in-process
  run          `loopwatch run -- cat FILE > /dev/null`       (everything)
  run --pty    the same, the child on a pseudo-terminal
and prints MB/s, lines/s and each figure as a ratio to `cat`.

With `--against SRC` (another checkout's `src`, e.g. the last release exported with
`git archive`), `run` and `run --pty` are timed with that code too, in the same run,
and printed as a ratio to it (`run --pty` against that code's plain `run` when it has
no --pty): the throughput target is a ratio to a baseline measured alongside.

    PYTHONPATH=src python bench/run.py [--mb 50] [--repeat 3] [--against /tmp/base/src]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from loopwatch import Monitor, Output
from loopwatch._supervise.group import ChildGroup
from loopwatch._supervise.pty import Terminal
from loopwatch._supervise.pump import Pump

WORDS = (
    "build test parser module request token update import error value config cache "
    "server client stream thread worker queue retry commit branch merge status"
).split()


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


def timed(fn) -> tuple[float, float]:
    """Wall-clock and CPU seconds (ours and our children's, user + system) of one call.
    On a shared machine the CPU figure is the steadier: waiting for a core is not work."""

    def cpu() -> float:
        mine, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return mine.ru_utime + mine.ru_stime + kids.ru_utime + kids.ru_stime

    start, start_cpu = time.perf_counter(), cpu()
    fn()
    return time.perf_counter() - start, cpu() - start_cpu


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


def bench_pump_pty(path: Path) -> None:
    terminal = Terminal(stdin=os.open(os.devnull, os.O_RDONLY), stdout=-1, stderr=-1)
    child = ChildGroup(["cat", str(path)], terminal=terminal)
    terminal.started()
    null = os.open(os.devnull, os.O_WRONLY)
    pump = Pump({terminal.master: ("stdout", null)})
    while pump.open:
        pump.wait(0.5)
    child.process.wait()
    pump.close()
    terminal.close()
    os.close(terminal.stdin)
    os.close(null)


def bench_monitor(path: Path) -> None:
    monitor = Monitor()
    with open(path, "rb") as fh:
        at = 0.0
        while chunk := fh.read(64 * 1024):
            monitor.observe(Output(chunk, "stdout", at=at))
            at += 0.001


def bench_run(path: Path, src: Path = ROOT / "src", pty: bool = False) -> None:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("LOOPWATCH_MODE", None)
    options = ["--pty"] if pty else []
    with open(os.devnull, "wb") as null:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwatch", "run", *options, "--", "cat", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=null,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(f"loopwatch run failed ({proc.returncode}): {proc.stderr.decode()}")


def has_pty(src: Path) -> bool:
    return (src / "loopwatch" / "_supervise" / "pty.py").exists()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the output, in MB (default 50)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each `run` figure; the best is kept (default 1)")
    parser.add_argument(
        "--against", type=Path, metavar="SRC", help="another checkout's src to time `run` with, as the baseline"
    )
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "output.txt"
        lines = make_file(path, size)
        real = path.stat().st_size
        print(f"output: {real / 1e6:.1f} MB, {lines:,} lines")
        plans = [
            ("cat", partial(bench_cat, path), 3),
            ("pump", partial(bench_pump, path), 3),
            ("pump --pty", partial(bench_pump_pty, path), 3),
            ("monitor", partial(bench_monitor, path), 1),
        ]
        runs = [("run", partial(bench_run, path)), ("run --pty", partial(bench_run, path, pty=True))]
        if args.against is not None:
            against = args.against.resolve()
            runs += [
                ("base run", partial(bench_run, path, against)),
                ("base run --pty", partial(bench_run, path, against, has_pty(against))),
            ]
        plans += [(name, fn, args.repeat) for name, fn in runs]
        # the `run` figures interleaved, so a machine busy for a while weighs on all alike
        best: dict[str, list[float]] = {}

        def keep(name: str, figures: tuple[float, float]) -> None:
            old = best.get(name, [float("inf"), float("inf")])
            best[name] = [min(old[0], figures[0]), min(old[1], figures[1])]

        for name, fn, repeat in plans[:4]:
            for _ in range(repeat):
                keep(name, timed(fn))
        for _ in range(args.repeat):
            for name, fn, _repeat in plans[4:]:
                keep(name, timed(fn))
    base = best["cat"][0]
    print(f"{'':15s} {'seconds':>8s} {'MB/s':>9s} {'lines/s':>11s} {'x cat':>8s} {'CPU s':>8s} {'MB/CPU s':>9s}")
    for name, (seconds, cpu) in best.items():
        print(
            f"{name:15s} {seconds:8.3f} {real / 1e6 / seconds:9.1f} {lines / seconds:11,.0f} {seconds / base:8.1f}"
            f" {cpu:8.3f} {real / 1e6 / max(cpu, 1e-9):9.1f}"
        )
    if args.against is not None:
        for name in ("run", "run --pty"):
            versus = "run --pty" if name == "run --pty" and has_pty(args.against) else "run"
            wall, cpu = (best["base " + name][i] / best[name][i] for i in (0, 1))
            print(f"{name} throughput vs the baseline's {versus}: {wall:.2f}x wall clock, {cpu:.2f}x CPU")


if __name__ == "__main__":
    main()
