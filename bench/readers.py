"""What the JSON Lines readers (Claude Code, Codex) cost over bare parsing.

Builds large synthetic sessions by repeating the test fixtures (ids renumbered so joins
stay one-to-one), then times, in the same run and single process:
- the floor: `orjson.loads` of every line, read line by line;
- the reader: `read()` and every event consumed;
- the reader fed to a default `Monitor`.
Prints MB/s for each and the ratio to the floor. The fixtures' lines are short (a few
hundred bytes), so per-line costs weigh more here than on real sessions, whose tool
results make lines of kilobytes. Usage:

    PYTHONPATH=src python bench/readers.py [--mb 40]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import orjson

from loopwatch import Monitor
from loopwatch._readers import read

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
CASES = {
    "claude-code session": ("claude-code", "session.jsonl"),
    "claude-code stream-json": ("claude-code", "stream.jsonl"),
    "codex rollout": ("codex", "rollout.jsonl"),
    "codex exec --json": ("codex", "exec.jsonl"),
}
_IDS = re.compile(rb'"(toolu_|call_|msg_|item_)([0-9A-Za-z]+)"')


def build(source: Path, target: Path, megabytes: float) -> None:
    """Repeat a fixture's body until the file reaches the size, renaming call and
    message ids per copy so every call still has exactly one result."""
    lines = source.read_bytes().splitlines(keepends=True)
    body = lines[1:]  # keep one session header
    with open(target, "wb") as out:
        out.write(lines[0])
        copy = 0
        while out.tell() < megabytes * 1024 * 1024:
            copy += 1
            tag = str(copy).encode()
            for line in body:
                out.write(_IDS.sub(lambda m, tag=tag: b'"' + m.group(1) + m.group(2) + b"x" + tag + b'"', line))


def floor(path: Path) -> None:
    loads = orjson.loads
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                loads(line)


def reader(path: Path) -> None:
    for session in read(str(path)):
        for _ in session:
            pass


def monitored(path: Path) -> None:
    for session in read(str(path)):
        monitor = Monitor()
        for event in session:
            monitor.observe(event)


def timed(fn, path: Path, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(path)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=40.0, help="size of each synthetic file, MB (default 40)")
    args = parser.parse_args()
    print(
        f"{'case':26} {'MB':>6} {'B/line':>7} {'parse MB/s':>11} {'read MB/s':>10} {'x parse':>8} {'+monitor MB/s':>14} {'x parse':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for label, (fmt, name) in CASES.items():
            path = Path(tmp) / f"{fmt}-{name}"
            build(FIXTURES / fmt / name, path, args.mb)
            size = path.stat().st_size / 1024 / 1024
            with open(path, "rb") as fh:
                per_line = path.stat().st_size / sum(1 for _ in fh)
            base, own, full = (timed(fn, path) for fn in (floor, reader, monitored))
            print(
                f"{label:26} {size:6.1f} {per_line:7.0f} {size / base:11.1f} {size / own:10.1f} {own / base:8.2f} {size / full:14.1f} {full / base:8.2f}"
            )


if __name__ == "__main__":
    main()
