"""Raw agent consoles through loopwatch: stops and warnings on real recordings.

    PYTHONPATH=src python bench/consoles.py [--casts DIR] [--tb1 DIR] [--run] [--jobs N]

(a) casts: every `*.cast` of ../shared/consoles/openhands-tb (the agent's run, install
    excluded; `*.whole.cast` are left out, they are the same runs with the install), its
    `o` events fed to a default `Monitor` as `Output` at their recorded times (and `i`
    events as the cast reader makes them, when it exists), outcomes from the folder's
    MANIFEST.tsv (`file`, `resolved`). Prints, for resolved yes / no / unknown, how many
    runs were stopped, nudged and warned.
(b) tb1: every ../shared/corpus/tb1-console-log/*/*/agent.log played as raw console
    bytes (4 KiB reads, 0.1 s apart: the logs carry no times). The install phase is
    everything up to the first output line that reads exactly `INSTALL_SUCCESS` (the
    harness's `echo 'INSTALL_SUCCESS'` after its install script; the command line that
    types it has quotes around it, so it is not that line). Prints, by `resolved` in
    the corpus MANIFEST.tsv, the runs stopped, nudged and warned, and the stops during
    the install phase.
(c) with --run, the casts again through the real `loopwatch run`: a child replays the
    cast's `o` bytes to its stdout, sleeping a tenth of each recorded gap (at most
    0.05 s), and the run's exit status tells whether it was ended (86).

Nothing here keeps or prints an output line; stops are listed by file and signal.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from loopwatch import Action, Monitor, Output

SHARED = ROOT.parent / "shared"
if not SHARED.exists():
    SHARED = Path("/work/shared")
CHUNK = 4096

_PLAYER = r"""
import json, os, sys, time
out = sys.stdout.buffer
last = 0.0
with open(sys.argv[1], encoding="utf-8") as fh:
    fh.readline()
    for line in fh:
        try:
            t, kind, text = json.loads(line)
        except ValueError:
            continue
        if kind != "o":
            continue
        gap = min(max(t - last, 0.0) / 10, 0.05)
        last = t
        if gap > 0.001:
            time.sleep(gap)
        out.write(text.encode("utf-8", "surrogateescape"))
        out.flush()
"""


def cast_events(path: Path) -> list:
    """The cast as monitor events: through the cast reader when there is one (the
    shared path), else each `o` event as an `Output` at its time."""
    try:
        from loopwatch._readers import FORMATS, read

        if "asciicast" in FORMATS:
            return [e for session in read(str(path), "asciicast") for e in session.events]
    except ImportError:
        pass
    events = []
    with open(path, encoding="utf-8") as fh:
        fh.readline()
        for line in fh:
            t, kind, text = json.loads(line)
            if kind == "o":
                events.append(Output(text, "stdout", at=float(t)))
    return events


def judge(events) -> dict:
    monitor = Monitor()
    first_nudge = None
    for k, event in enumerate(events):
        verdict = monitor.observe(event)
        if verdict.action is Action.NUDGE and first_nudge is None:
            first_nudge = k
    stop = monitor.stop
    return {
        "stopped": stop is not None,
        "stop_signal": stop.signal if stop else None,
        "stop_at": stop.at if stop else None,
        "stop_description": stop.description if stop else None,
        "nudged": first_nudge is not None,
        "warnings": monitor.warnings,
        "last_at": monitor.last_at,
    }


def judge_cast(path: str) -> dict:
    return judge(cast_events(Path(path)))


def judge_tb1(path: str) -> dict:
    data = Path(path).read_bytes()
    install_end = install_end_offset(data)
    monitor = Monitor()
    stop_offset = None
    nudged = False
    for k, start in enumerate(range(0, len(data), CHUNK)):
        verdict = monitor.observe(Output(data[start : start + CHUNK], "stdout", at=k * 0.1))
        nudged = nudged or verdict.action is Action.NUDGE
        if verdict.action is Action.STOP and stop_offset is None:
            stop_offset = start + CHUNK
    return {
        "stopped": stop_offset is not None,
        "nudged": nudged,
        "warnings": monitor.warnings,
        "in_install": stop_offset is not None and install_end is not None and stop_offset <= install_end + CHUNK,
        "install_found": install_end is not None,
        "stop_signal": monitor.stop.signal if monitor.stop else None,
        "description": monitor.stop.description if monitor.stop else None,
    }


def install_end_offset(data: bytes) -> int | None:
    """Byte offset of the end of the first line that is exactly INSTALL_SUCCESS once
    escapes and CRs are dropped."""
    import re

    escape = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_=>])")
    offset = 0
    for line in data.split(b"\n"):
        offset += len(line) + 1
        if escape.sub(b"", line).replace(b"\r", b"").strip() == b"INSTALL_SUCCESS":
            return offset
    return None


def run_cast(path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LOOPWATCH_MODE"}
    env["PYTHONPATH"] = str(ROOT / "src")
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record.json"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "loopwatch",
                "run",
                "--record",
                str(record),
                "--",
                sys.executable,
                "-c",
                _PLAYER,
                path,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tmp,
            timeout=600,
            check=False,
        )
        loop = json.loads(record.read_text())["loop"] if record.exists() else {}
    verdict = (loop or {}).get("verdict") or {}
    return {
        "stopped": proc.returncode == 86,
        "status": proc.returncode,
        "stop_signal": verdict.get("signal"),
        "nudged": any(v.get("action") == "nudge" for v in (loop or {}).get("interventions", [])),
        "warnings": (loop or {}).get("warnings", 0),
    }


def manifest(folder: Path) -> dict[str, str]:
    with open(folder / "MANIFEST.tsv", newline="") as fh:
        return {row["file"]: row["resolved"] for row in csv.DictReader(fh, delimiter="\t")}


def tb1_outcomes(tb1: Path, names: list[str]) -> dict[str, str]:
    """Each log's `resolved`, from the corpus MANIFEST.tsv beside its folder ("unknown"
    where it is not listed)."""
    listed: dict[str, str] = {}
    path = tb1.parent / "MANIFEST.tsv"
    if path.exists():
        with open(path, newline="") as fh:
            listed = {row["local_path"]: row["resolved"] for row in csv.DictReader(fh, delimiter="\t")}
    return {name: listed.get(name, "unknown") for name in names}


def summarize(title: str, outcomes: dict[str, str], results: dict[str, dict]) -> None:
    print(title)
    print(f"  {'resolved':9s} {'runs':>5s} {'stopped':>8s} {'nudged':>7s} {'warned':>7s}")
    for label in ("yes", "no", "unknown"):
        rows = [results[f] for f, r in outcomes.items() if r == label and f in results]
        if not rows:
            continue
        print(
            f"  {label:9s} {len(rows):5d} {sum(r['stopped'] for r in rows):8d} "
            f"{sum(r.get('nudged', False) for r in rows):7d} {sum(r['warnings'] > 0 for r in rows):7d}"
        )
    for name in sorted(results):
        r = results[name]
        if r["stopped"] and outcomes.get(name) == "yes":
            print(f"    stopped, resolved: {name} ({r.get('stop_signal')})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--casts", type=Path, default=SHARED / "consoles" / "openhands-tb")
    parser.add_argument("--tb1", type=Path, default=SHARED / "corpus" / "tb1-console-log")
    parser.add_argument("--run", action="store_true", help="also play every cast through `loopwatch run`")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if not args.casts.exists() and not args.tb1.exists():
        print("no recordings found; nothing to measure")
        return
    with ProcessPoolExecutor(args.jobs) as pool:
        if args.casts.exists():
            outcomes = {f: r for f, r in manifest(args.casts).items() if not f.endswith(".whole.cast")}
            names = sorted(outcomes)
            paths = [str(args.casts / n) for n in names]
            results = dict(zip(names, pool.map(judge_cast, paths, chunksize=4)))
            summarize(f"(a) casts, monitor on the recorded output ({len(names)} runs)", outcomes, results)
            if args.run:
                ran = dict(zip(names, pool.map(run_cast, paths)))
                summarize(f"(c) casts played through `loopwatch run` ({len(names)} runs)", outcomes, ran)
        if args.tb1.exists():
            logs = sorted(str(p) for p in args.tb1.glob("*/*/agent.log"))
            tb1 = list(pool.map(judge_tb1, logs, chunksize=2))
            names = [os.path.relpath(p, args.tb1.parent) for p in logs]
            summarize(
                f"(b) tb1 console logs ({len(logs)}), raw bytes", tb1_outcomes(args.tb1, names), dict(zip(names, tb1))
            )
            print(
                f"  stopped {sum(r['stopped'] for r in tb1)}, "
                f"during the install phase {sum(r['in_install'] for r in tb1)}, "
                f"install end found in {sum(r['install_found'] for r in tb1)}"
            )


if __name__ == "__main__":
    main()
