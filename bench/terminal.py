"""Terminal semantics: the hand-written line cutter against a terminal emulator (pyte).

    PYTHONPATH=src python bench/terminal.py [--casts DIR] [--repeat N]

Feeds the `o` events of the casts in DIR, in name order up to --mb of output (default ../shared/consoles/openhands-tb,
`*.whole.cast` included: they hold the install phase's progress displays) to:
  lines      `loopwatch._core.lines.LineCutter.lines`, what the monitor runs on Output;
  pyte       `pyte.Screen` + `pyte.Stream` at the cast's size, the bare emulation only
             (no line extraction yet: the floor of any pyte-based cutter);
  pyte+hist  `pyte.HistoryScreen` (lines scrolled off the top kept), closer to what a
             cutter needs;
and prints seconds, MB/s and each as a ratio to `lines`, best of N runs.

    PYTHONPATH=src python bench/terminal.py --hostile [--repeat N]

instead feeds `lines` hostile escapes (huge cursor counts, thousands of digits or
parameters), each repeated to ~64 KiB, and the same
text with each escape's bytes as letters (the same lines, as plain text),
and prints, for each, the time (best of N) and the peak of memory allocated while it is
cut (tracemalloc), each per input byte and as a ratio to the plain text: bounded per
input byte means the same order as plain text.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from loopwatch._core.lines import LineCutter

SHARED = ROOT.parent / "shared"
if not SHARED.exists():
    SHARED = Path("/work/shared")


def load(folder: Path) -> list[tuple[int, int, list[str]]]:
    casts = []
    for path in sorted(folder.glob("*.cast")):
        with open(path, encoding="utf-8") as fh:
            header = json.loads(fh.readline())
            out = [e[2] for e in map(json.loads, fh) if e[1] == "o"]
        casts.append((int(header.get("width", 80)), int(header.get("height", 24)), out))
    return casts


def run_lines(casts) -> int:
    n = 0
    for _, height, out in casts:
        cutter = LineCutter(height)
        for text in out:
            n += len(cutter.lines(text))
    return n


def run_pyte(casts, history: bool) -> None:
    import pyte

    for width, height, out in casts:
        screen = pyte.HistoryScreen(width, height, history=1000) if history else pyte.Screen(width, height)
        stream = pyte.Stream(screen)
        for text in out:
            stream.feed(text)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


HOSTILE = {
    "ESC[<5,000 digits>C": "x\x1b[" + "9" * 5000 + "Cy\n",
    "ESC[2000000000C": "x\x1b[2000000000Cy\n",
    "ESC[2000000000A/B/H": "x\x1b[2000000000Ay\x1b[2000000000Bz\x1b[2000000000Hw\n",
    "ESC[<2,000 params>H": "x\x1b[" + ";".join(["99999"] * 2000) + "Hy\n",
}


def hostile(repeat: int) -> None:
    import tracemalloc

    def measure(text: str) -> tuple[float, int]:
        def cut() -> None:
            LineCutter().lines(text)

        seconds = best(cut, repeat)
        tracemalloc.start()
        cut()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return seconds, peak

    print(f"{'input':22s} {'bytes':>7s} {'us/KiB':>8s} {'x plain':>8s} {'peak B/byte':>12s} {'x plain':>8s}")
    for name, one in HOSTILE.items():
        text = one * max(1, 64 * 1024 // len(one))  # ~64 KiB of it: a figure per byte, not per call
        # the same lines with each escape's bytes as letters: what the bytes cost as text
        plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", lambda m: "a" * len(m.group()), text)
        (ts, ps), (tp, pp) = measure(text), measure(plain)
        size = len(text)
        print(f"{name:22s} {size:7d} {ts * 1e6 / (size / 1024):8.1f} {ts / tp:8.1f} {ps / size:12.2f} {ps / pp:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--casts", type=Path, default=SHARED / "consoles" / "openhands-tb")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mb", type=float, default=2.0, help="output to take, in MB (default 2: pyte is slow)")
    parser.add_argument("--hostile", action="store_true", help="hostile escapes against plain text (no pyte)")
    args = parser.parse_args()
    if args.hostile:
        hostile(args.repeat)
        return
    if not args.casts.exists():
        print("no recordings found; nothing to measure")
        return
    casts, taken = [], 0
    for cast in load(args.casts):  # the same casts for every contender
        if taken >= args.mb * 1e6:
            break
        casts.append(cast)
        taken += sum(len(t.encode()) for t in cast[2])
    size = sum(len(t.encode()) for _, _, out in casts for t in out)
    print(f"{len(casts)} casts, {size / 1e6:.1f} MB of output")
    rows = [
        ("lines", best(lambda: run_lines(casts), args.repeat)),
        ("pyte", best(lambda: run_pyte(casts, False), args.repeat)),
        ("pyte+hist", best(lambda: run_pyte(casts, True), args.repeat)),
    ]
    base = rows[0][1]
    print(f"{'':10s} {'seconds':>8s} {'MB/s':>8s} {'x lines':>8s}")
    for name, seconds in rows:
        print(f"{name:10s} {seconds:8.2f} {size / 1e6 / seconds:8.2f} {seconds / base:8.1f}")


if __name__ == "__main__":
    main()
