"""Parallel hook calls under CPU load: are any calls lost, and how long do they take?

    PYTHONPATH=src python bench/hook_stress.py [--calls 32,128,512] [--load 2] [--trials 1]
                                              [--race 64] [--src DIR]

For each N in `--calls`, N real `python -m loopwatch hook` processes are started at
once, each with a PostToolUse of the same session (the worst case: every one of
them needs the same row), on a fresh state folder, while `--load` busy loops keep
every core busy. Reported per N: calls lost (N minus the calls the database
counted; target 0), calls that logged a failure, hangs (a call still running after
`--timeout` seconds is killed and counted), and the p50/p99/max latency of a call,
start to exit.

Then the recovery race: the state database is overwritten with garbage and `--race`
parallel calls arrive. Every call must be counted in the fresh database (nothing
it committed lost) and the broken file moved aside exactly once.

`--floor` also times the same N processes with `LOOPWATCH_MODE=off`, which start
Python, import loopwatch and return: what the machine's load costs before any state
is touched. `--src` runs the hook from another source tree (for a before/after comparison:
`git archive <commit> src | tar -x -C /tmp/before`).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def payload(i: int, session: str, cwd: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": f"{cwd}/t.jsonl",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"/p/src/mod_{i}.py"},
            "tool_response": {"type": "text", "file": {"filePath": f"/p/src/mod_{i}.py", "content": f"x = {i}\n"}},
            "tool_use_id": f"toolu_{i:05d}",
        }
    ).encode()


def burst(n: int, state: Path, src: str, timeout: float, off: bool = False) -> dict:
    """N calls at once; their latencies, exit codes and hangs. `off`: the same
    processes with LOOPWATCH_MODE=off (start-up and import only: the floor)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_", "XDG_"))}
    env.update(
        PYTHONPATH=src, LOOPWATCH_STATE_DIR=str(state), LOOPWATCH_PROFILE="attended", HOME=str(state.parent / "home")
    )
    if off:
        env["LOOPWATCH_MODE"] = "off"
    cwd = str(state.parent)
    latencies: list[float] = []
    codes: list[int] = []
    hangs = [0]
    gate = threading.Barrier(n)
    lock = threading.Lock()

    def one(i: int) -> None:
        data = payload(i, "stress", cwd)
        gate.wait()
        began = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "loopwatch", "hook"],
                input=data,
                env=env,
                capture_output=True,
                timeout=timeout,
                cwd=cwd,
                check=False,
            )
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = -1
            with lock:
                hangs[0] += 1
        with lock:
            latencies.append(time.perf_counter() - began)
            codes.append(code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"latencies": latencies, "codes": codes, "hangs": hangs[0]}


def counted(state: Path) -> int:
    try:
        db = sqlite3.connect(state / "state.db")
        try:
            row = db.execute("SELECT actions FROM sessions WHERE session = 'stress'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    return row[0] if row else 0


def failures(state: Path) -> list[str]:
    path = state / "hook.log"
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.endswith("allowed") or "denied" in line]


def reasons(lines: list[str]) -> str:
    """The distinct failure reasons, numbers masked, most common first."""
    import re
    from collections import Counter

    found = Counter(re.sub(r"[0-9.]+", "#", line.split(" ", 4)[-1])[:90] for line in lines)
    return "; ".join(f"{count}x {text}" for text, count in found.most_common(3))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default="32,128,512")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy loops (default: one per core)")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--race", type=int, default=64, help="parallel calls after the database is damaged (0: skip)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="a call still running after this is a hang (600 s: Claude Code's default hook timeout)",
    )
    parser.add_argument(
        "--floor", action="store_true", help="also time the same N processes with LOOPWATCH_MODE=off (start-up only)"
    )
    parser.add_argument("--src", default=str(ROOT / "src"))
    args = parser.parse_args()

    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    print(f"{os.cpu_count()} cores, {args.load} busy loops, hook from {args.src}")
    try:
        for n in [int(x) for x in args.calls.split(",") if x]:
            if args.floor:
                with tempfile.TemporaryDirectory() as tmp:
                    lat = burst(n, Path(tmp) / "state", args.src, args.timeout, off=True)["latencies"]
                    print(
                        f"N={n:4d} floor (LOOPWATCH_MODE=off, start-up only): latency p50 "
                        f"{statistics.median(lat):6.2f}s p99 {percentile(lat, 0.99):6.2f}s max {max(lat):6.2f}s"
                    )
            for trial in range(args.trials):
                with tempfile.TemporaryDirectory() as tmp:
                    state = Path(tmp) / "state"
                    began = time.perf_counter()
                    result = burst(n, state, args.src, args.timeout)
                    wall = time.perf_counter() - began
                    got = counted(state)
                    lat = result["latencies"]
                    bad = sum(code != 0 for code in result["codes"])
                    why = reasons(failures(state))
                    print(
                        f"N={n:4d} trial {trial + 1}: lost {n - got:3d}, logged failures {len(failures(state)):3d}, "
                        f"hangs {result['hangs']}, non-zero exits {bad}; latency p50 {statistics.median(lat):6.2f}s "
                        f"p99 {percentile(lat, 0.99):6.2f}s max {max(lat):6.2f}s; burst {wall:.1f}s"
                        + (f"\n    {why}" if why else "")
                    )
        if args.race:
            for trial in range(args.trials):
                with tempfile.TemporaryDirectory() as tmp:
                    state = Path(tmp) / "state"
                    burst(1, state, args.src, args.timeout)  # a database with one call in it
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{state / 'state.db'}{suffix}").unlink(missing_ok=True)
                    (state / "state.db").write_bytes(b"this is not an sqlite database\n" * 200)
                    result = burst(args.race, state, args.src, args.timeout)
                    got = counted(state)
                    aside = len(list(state.glob("state.db.broken-*")))
                    lat = result["latencies"]
                    print(
                        f"recovery race, {args.race} calls on a damaged database, trial {trial + 1}: "
                        f"lost {args.race - got}, moved aside {aside}x, hangs {result['hangs']}, "
                        f"logged failures {len(failures(state))}; p99 {percentile(lat, 0.99):.2f}s"
                    )
    finally:
        for proc in load:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
