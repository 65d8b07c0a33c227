"""What the working folder's fingerprint (`loopwatch._hook.tree`) costs, and what it adds
to a hook call.

    PYTHONPATH=src python bench/tree.py [--runs 15] [--calls 20] [--compare DIR] [FOLDER ...]

Printed, in this run and on this machine:

- per folder (this checkout, `/work/main` when present, a synthetic folder of 2,000 and
  one of 9,500 files, one of 12,000 past the bound, and any FOLDER given): the entries walked (what
  `os.walk` counts, skips aside), whether a digest came back or None (past a bound), and
  the minimum and median milliseconds of `fingerprint` over `--runs` calls, the walk's
  bounds (`MAX_ENTRIES`, `MAX_SECONDS`) in force;
- the hook: the median wall time of one `python -m loopwatch hook claude-code` PostToolUse
  (a subprocess, stdin to exit, as the host runs it) whose payload's `cwd` is this
  checkout, then the 9,500-file folder, then the 12,000-file one (past the entry bound:
  walked once, then remembered for `LARGE_SECONDS`), `--calls` times each; with `--compare DIR`
  (another source tree, e.g. the commit before: `git archive <commit> src | tar -x -C
  /tmp/before`), the same from DIR, interleaved in the same run, and the ratio.

A benchmark prints figures; it asserts nothing (no timed unit test: the machine's load
is not the code's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopwatch._hook import tree

ROOT = Path(__file__).resolve().parent.parent


def synthetic(where: Path, files: int) -> Path:
    """A source-like folder: `files` small files, 50 to a folder, three levels deep."""
    folder = where / f"synthetic-{files}"
    for i in range(files):
        path = folder / f"d{i // 2500}" / f"e{i // 50}" / f"f{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x = 1\n")
        os.utime(path, ns=(10**18, 10**18))
    return folder


def entries(folder: Path) -> int:
    count = 0
    for top, dirs, files in os.walk(folder):
        at_git = Path(top).name == ".git"
        dirs[:] = [d for d in dirs if d not in tree.SKIPPED and not (at_git and d in tree.GIT_SKIPPED)]
        count += len(dirs) + len(files)
    return count


def walk(folder: Path, runs: int) -> tuple[str, float, float]:
    times, found = [], None
    for _ in range(runs):
        began = time.perf_counter()
        found = tree.fingerprint(str(folder))
        times.append((time.perf_counter() - began) * 1000)
    return ("digest" if found else "None"), min(times), statistics.median(times)


def hook_call(src: str, cwd: Path, state: Path, i: int) -> float:
    payload = {
        "session_id": "bench-tree",
        "transcript_path": str(cwd / "t.jsonl"),
        "cwd": str(cwd),
        "hook_event_name": "PostToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": f"echo {i}", "description": "Print"},
        "tool_response": {"stdout": str(i), "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_{i:06d}",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_"))}
    env.update(PYTHONPATH=src, LOOPWATCH_STATE_DIR=str(state), LOOPWATCH_PROFILE="attended")
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "loopwatch", "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        env=env,
        cwd=cwd,
        capture_output=True,
        check=True,
    )
    return (time.perf_counter() - began) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--compare", help="another source tree, timed in the same run")
    args = parser.parse_args()
    print(f"bounds: MAX_ENTRIES={tree.MAX_ENTRIES}, MAX_SECONDS={tree.MAX_SECONDS}; load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        small, large, over = synthetic(where, 2_000), synthetic(where, 9_500), synthetic(where, 12_000)
        time.sleep(0.1)  # past the racy window of the last file written
        folders = [ROOT, *([Path("/work/main")] if Path("/work/main").is_dir() else []), small, large, over]
        print(f"{'folder':<40} {'entries':>8} {'answer':>7} {'min ms':>8} {'median ms':>10}")
        for folder in [*folders, *args.folders]:
            answer, low, mid = walk(folder, args.runs)
            print(f"{str(folder)[-40:]:<40} {entries(folder):>8} {answer:>7} {low:>8.2f} {mid:>10.2f}")
        sources = {"this tree": str(ROOT / "src")}
        if args.compare:
            sources["compare"] = args.compare
        for cwd in (ROOT, large, over):
            times: dict[str, list[float]] = {name: [] for name in sources}
            for i in range(args.calls):
                for name, src in sources.items():
                    state = where / f"state-{name.replace(' ', '-')}-{cwd.name}"
                    times[name].append(hook_call(src, cwd, state, i))
            line = ", ".join(f"{name} {statistics.median(t):.1f} ms" for name, t in times.items())
            if args.compare:
                line += f"; ratio {statistics.median(times['this tree']) / statistics.median(times['compare']):.2f}"
            print(f"hook PostToolUse, cwd {str(cwd)[-30:]} ({entries(cwd)} entries), median of {args.calls}: {line}")


if __name__ == "__main__":
    main()
