"""Peak memory of `loopwatch scan` as its input grows: events per session, files per
scan, and one huge line.

    PYTHONPATH=src python bench/scan_memory.py [--events 300000,1200000] [--files 10,10000]
                                               [--line-mb 50,200] [--jobs 1] [--per-folder N] [--src DIR]

Each case writes its input to a temporary folder, runs the real CLI
(`python -m loopwatch scan --json --no-progress`) in a child process and reads the
child's peak resident set (`ru_maxrss`, waited on alone so no other child counts). The
first case of each series is the baseline; the figure to read is the ratio against it
(target: about 1x, memory that does not grow with the input). Nothing is timed: a
shared machine skews times, not peaks.

- events: one events file of N healthy, distinct tool calls (no stop, so every action
  is counted to the end); 300k events is ~45 MB on disk;
- files: N small event files (a looping session each) in one folder, or in folders of
  `--per-folder` files each (runs/<task>/<file>); a walk holds the names of the folder
  it is in (it sorts them), so one folder of 10,000 holds 10,000 names at once;
- line: one events file whose single `tool` event has a result of M MB, for each M in
  `--line-mb` (the figures: the peak against the first size, and against the file's
  size; a reader that holds the line peaks at about 4x the file);
- cast: one asciicast whose single `o` event is M MB, for each M in `--cast-mb` (a
  reader that holds the line peaks at about 3x it: 620 MB for 200 MB);
- workers: `scan --jobs J` of N small files, for each J in `--many-jobs` (N =
  `--many-jobs-files`): the most worker processes seen at once (a count, from /proc).

`--src DIR` scans with the loopwatch of another source tree, for a before/after
comparison in one run (`git archive <commit> src | tar -x -C /tmp/before`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]


SRC = str(ROOT / "src")


def peak_of(argv: list[str]) -> tuple[int, int]:
    """(peak RSS in KiB, exit status) of one child run."""
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def scan(target: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "loopwatch", "scan", "--json", "--no-progress", "--jobs", str(jobs), str(target)]


def write_events(path: Path, count: int) -> None:
    with open(path, "wb") as fh:
        fh.write(b'{"type": "user"}\n')
        for i in range(count):
            fh.write(
                orjson.dumps(
                    {
                        "type": "tool",
                        "name": "Bash",
                        "input": {"command": f"cat src/module_{i}.py"},
                        "result": f"def f_{i}(): return {i}",
                        "tokens": 120,
                    }
                )
                + b"\n"
            )


def write_files(folder: Path, count: int, per_folder: int | None = None) -> None:
    call = {"type": "tool", "name": "Bash", "input": {"command": "pytest -x"}, "error": True, "result": "E fail"}
    body = b'{"type": "user"}\n' + (orjson.dumps(call) + b"\n") * 6
    for i in range(count):
        sub = folder / f"t{i // per_folder:04}" if per_folder else folder
        sub.mkdir(exist_ok=True)
        (sub / f"s{i:05}.jsonl").write_bytes(body)


def write_line(path: Path, megabytes: int) -> None:
    chunk = "progress 10% done, file_0001.o compiled; " * 1024  # ~40 KiB, ASCII
    with open(path, "wb") as fh:
        fh.write(b'{"type": "tool", "name": "Bash", "input": {"command": "make"}, "result": "')
        written = 0
        while written < megabytes * 1024 * 1024:
            fh.write(chunk.encode())
            written += len(chunk)
        fh.write(b'"}\n')


def write_cast(path: Path, megabytes: int) -> None:
    chunk = "Compiling file_0001.o ... ok\\r\\n" * 1024  # escaped CR LF, as a cast holds them
    with open(path, "wb") as fh:
        fh.write(b'{"version": 2, "width": 80, "height": 24}\n[0.5, "o", "')
        written = 0
        while written < megabytes * 1024 * 1024:
            fh.write(chunk.encode())
            written += len(chunk)
        fh.write(b'"]\n')


def most_workers(argv: list[str]) -> tuple[int, int]:
    """(the most child processes seen at once, exit status) of one run."""
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    most = 0
    while proc.poll() is None:
        children = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2 :].split()[1]) == proc.pid:
                children += 1
        most = max(most, children)
    return most, proc.returncode


def main() -> int:
    global SRC
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", default="300000,1200000")
    parser.add_argument("--files", default="10,10000")
    parser.add_argument("--line-mb", default="50,200")
    parser.add_argument("--cast-mb", default="")
    parser.add_argument("--many-jobs", default="", help="--jobs values for the workers series, e.g. 2,1000")
    parser.add_argument("--many-jobs-files", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--per-folder", type=int, default=None, help="files per folder (default: all in one)")
    parser.add_argument("--src", default=SRC, help="the loopwatch source tree to scan with")
    args = parser.parse_args()
    SRC = args.src
    with tempfile.TemporaryDirectory(prefix="lw-mem-") as tmp:
        folder = Path(tmp)
        print(
            f"loopwatch from {SRC}; jobs={args.jobs}; files per folder: {args.per_folder or 'all'}; peak RSS of the scanning process (ru_maxrss of the child; workers not included)"
        )
        base = None
        for count in [int(x) for x in args.events.split(",") if x]:
            path = folder / f"events-{count}.jsonl"
            write_events(path, count)
            peak, status = peak_of(scan(path, args.jobs))
            base = base or peak
            print(
                f"events {count:>9,}: {path.stat().st_size / 2**20:7.1f} MiB on disk, peak {peak / 1024:7.1f} MiB "
                f"({peak / base:.2f}x the first), exit {status}"
            )
            path.unlink()
        base = None
        for count in [int(x) for x in args.files.split(",") if x]:
            sub = folder / f"files-{count}"
            sub.mkdir()
            write_files(sub, count, args.per_folder)
            peak, status = peak_of(scan(sub, args.jobs))
            base = base or peak
            print(f"files  {count:>9,}: peak {peak / 1024:7.1f} MiB ({peak / base:.2f}x the first), exit {status}")
        base = None
        for megabytes in [int(x) for x in args.line_mb.split(",") if x]:
            path = folder / "line.jsonl"
            write_line(path, megabytes)
            size = path.stat().st_size
            peak, status = peak_of(scan(path, 1))
            base = base or peak
            print(
                f"one line of {size / 2**20:4.0f} MiB: peak {peak / 1024:6.1f} MiB ({peak / base:.2f}x the first, "
                f"{peak * 1024 / size:.2f}x the file), exit {status}"
            )
            path.unlink()
        base = None
        for megabytes in [int(x) for x in args.cast_mb.split(",") if x]:
            path = folder / "line.cast"
            write_cast(path, megabytes)
            size = path.stat().st_size
            peak, status = peak_of(scan(path, 1))
            base = base or peak
            print(
                f"one cast line of {size / 2**20:4.0f} MiB: peak {peak / 1024:6.1f} MiB ({peak / base:.2f}x the first, "
                f"{peak * 1024 / size:.2f}x the file), exit {status}"
            )
            path.unlink()
        if args.many_jobs:
            sub = folder / "few"
            sub.mkdir()
            write_files(sub, args.many_jobs_files)
            for jobs in [int(x) for x in args.many_jobs.split(",") if x]:
                most, status = most_workers(scan(sub, jobs))
                print(
                    f"--jobs {jobs:>5} for {args.many_jobs_files} files on {os.cpu_count()} cores: "
                    f"at most {most} worker processes at once, exit {status}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
