"""What one Claude Code tool call costs in loopwatch hook processes, next to `python -c pass`.

    PYTHONPATH=src python bench/hook_claude.py [--calls 40]

Claude Code starts one hook process per hooked event, and per tool call loopwatch is
hooked on three: PreToolUse, PostToolUse or PostToolUseFailure, and PostToolBatch
(the event whose `continue: false` ends a run; see `loopwatch._hosts.claude_code`).
This runs that sequence `--calls` times, each call a different failing or
succeeding Bash command in the shapes Claude Code 2.1.197 sends, through real
`python -m loopwatch hook claude-code` subprocesses, and `python -c pass` as many
times in between. Printed: per event, the median wall time and the median CPU time
(user + system of the child, which the machine's load disturbs less than wall time),
each as a ratio to `python -c pass` measured in the same run; and the three together,
per tool call.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def payloads(i: int, session: str, cwd: str) -> list[tuple[str, dict]]:
    command = f"ls /tmp/dir-{i}" if i % 2 else f"echo {i}"
    call_id = f"toolu_bench{i:05d}"
    base = {
        "session_id": session,
        "transcript_path": f"{cwd}/t.jsonl",
        "cwd": cwd,
        "permission_mode": "bypassPermissions",
    }
    tool = {"tool_name": "Bash", "tool_input": {"command": command, "description": "Run it"}, "tool_use_id": call_id}
    if i % 2:
        error = f"Exit code 2\nls: cannot access '/tmp/dir-{i}': No such file or directory"
        after = (
            "PostToolUseFailure",
            {**base, **tool, "hook_event_name": "PostToolUseFailure", "error": error, "is_interrupt": False},
        )
        batch_response = error
    else:
        response = {"stdout": str(i), "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}
        after = ("PostToolUse", {**base, **tool, "hook_event_name": "PostToolUse", "tool_response": response})
        batch_response = str(i)
    batch = {**base, "hook_event_name": "PostToolBatch", "tool_calls": [{**tool, "tool_response": batch_response}]}
    return [("PreToolUse", {**base, **tool, "hook_event_name": "PreToolUse"}), after, ("PostToolBatch", batch)]


def timed(argv: list[str], data: bytes, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(argv, input=data, capture_output=True, env=env, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "LOOPWATCH_STATE_DIR": folder,
            "LOOPWATCH_PROFILE": "attended",
            "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT / "src")),
        }
        hook = [sys.executable, "-m", "loopwatch", "hook", "claude-code"]
        floor: list[tuple[float, float]] = []
        events: dict[str, list[tuple[float, float]]] = {}
        per_call: list[tuple[float, float]] = []
        for i in range(args.calls):
            wall = cpu = 0.0
            for event, payload in payloads(i, "bench-session", folder):
                w, c = timed(hook, json.dumps(payload).encode(), env)
                events.setdefault("PostToolUse/Failure" if event.startswith("PostToolUse") else event, []).append(
                    (w, c)
                )
                wall, cpu = wall + w, cpu + c
                floor.append(timed([sys.executable, "-c", "pass"], b"", env))
            per_call.append((wall, cpu))
    base_wall = statistics.median(w for w, _ in floor)
    base_cpu = statistics.median(c for _, c in floor)
    print(
        f"python -c pass        wall {base_wall * 1000:7.1f} ms   cpu {base_cpu * 1000:6.1f} ms   (median of {len(floor)})"
    )
    for name, figures in events.items():
        wall = statistics.median(w for w, _ in figures)
        cpu = statistics.median(c for _, c in figures)
        print(
            f"{name:21} wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:6.1f} ms   "
            f"= {wall / base_wall:.2f}x / {cpu / base_cpu:.2f}x the floor"
        )
    wall = statistics.median(w for w, _ in per_call)
    cpu = statistics.median(c for _, c in per_call)
    print(
        f"one tool call (3)     wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:6.1f} ms   "
        f"= {wall / base_wall:.2f}x / {cpu / base_cpu:.2f}x one `python -c pass`"
    )


if __name__ == "__main__":
    main()
