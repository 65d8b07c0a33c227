"""Wall time of one `loopwatch hook` call, next to the bare `python -c pass`.

    PYTHONPATH=src python bench/hook.py [--calls 50] [--warm 1000]

The hook runs on every tool call, so its start-up is the product. This measures, on
this machine and in this run:

- `python -c pass`: the floor any Python hook pays (interpreter and site-packages);
- `python -c "import loopwatch"`: the core's import alone, for comparison;
- `python -m loopwatch hook` fed a PostToolUse payload (a real subprocess, stdin to
  exit), against a state database warmed with `--warm` earlier events of the same
  session (the monitor those events built is loaded, fed and saved each call).

The three are run in turn, `--calls` times each; the medians and their ratio are
printed (target: at most 2x). Then the import cost of the hook path, per loopwatch
module, from `python -X importtime` (cumulative microseconds, one run).
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

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
COMMANDS = ["pytest -x tests/", "git status", "ls src", "rg TODO", "make build", "cat setup.cfg", "git diff", "npm test"]


def payload(i: int, session: str, cwd: str) -> dict:
    command = COMMANDS[i % len(COMMANDS)] + f" # step {i // 3}"
    return {
        "session_id": session, "transcript_path": f"{cwd}/t.jsonl", "cwd": cwd, "permission_mode": "default",
        "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run a command"},
        "tool_response": {"stdout": f"output of {command}\n" * 5, "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_{i:06d}",
    }


def warm(state: Path, session: str, cwd: str, events: int) -> None:
    """Feed `events` earlier events through the hook's own code, in this process."""
    sys.path.insert(0, str(SRC))
    from loopwatch.hook.guard import handle
    from loopwatch.hook.payload import parse
    from loopwatch.hook.state import Store

    store = Store(state)
    try:
        for i in range(events):
            handle(parse(json.dumps(payload(i, session, cwd)).encode()), {}, store)
    finally:
        store.close()


def timed(argv: list[str], data: bytes, env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, input=data, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[:500]}")
    return elapsed


def import_costs(data: bytes, env: dict) -> list[tuple[int, str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "loopwatch", "hook"], input=data, env=env,
                          capture_output=True)
    rows = []
    for line in proc.stderr.decode().splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warm", type=int, default=1000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        state, cwd, session = Path(tmp) / "state", tmp, "bench-session"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_"))}
        env.update(PYTHONPATH=str(SRC), LOOPWATCH_STATE_DIR=str(state), LOOPWATCH_PROFILE="attended")
        began = time.perf_counter()
        warm(state, session, cwd, args.warm)
        print(f"warmed the state with {args.warm} events in {time.perf_counter() - began:.1f}s; "
              f"database {os.path.getsize(state / 'state.db') // 1024} KiB")

        floor, core, hook = [], [], []
        for i in range(args.calls):
            data = json.dumps(payload(args.warm + i, session, cwd)).encode()
            floor.append(timed([sys.executable, "-c", "pass"], b"", env))
            core.append(timed([sys.executable, "-c", "import loopwatch"], b"", env))
            hook.append(timed([sys.executable, "-m", "loopwatch", "hook"], data, env))

        base, ours = statistics.median(floor), statistics.median(hook)
        print(f"python -c pass      median {base * 1000:7.1f} ms  (min {min(floor) * 1000:.1f}, max {max(floor) * 1000:.1f})")
        print(f"import loopwatch    median {statistics.median(core) * 1000:7.1f} ms  (the core alone, no hook work)")
        print(f"loopwatch hook      median {ours * 1000:7.1f} ms  (min {min(hook) * 1000:.1f}, max {max(hook) * 1000:.1f})")
        print(f"ratio               {ours / base:.2f}x  (target <= 2x)")
        print(f"hook cost over the floor: {(ours - base) * 1000:.1f} ms")

        rows = import_costs(json.dumps(payload(10**6, session, cwd)).encode(), env)
        site = next((c for c, name in rows if name.strip() == "site"), 0)
        ours_rows = [(c, n) for c, n in rows if n.strip().startswith("loopwatch")]
        print(f"\nimport cost (python -X importtime, one run, cumulative): site {site / 1000:.1f} ms")
        for cost, name in sorted(ours_rows, reverse=True)[:12]:
            print(f"  {cost / 1000:6.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
