"""What reading a Codex call's exit code from its rollout costs the hook.

    PYTHONPATH=src python bench/codex_hook.py [--calls 20] [--rollout-mb 20]

Codex's PostToolUse payload has no exit code, so the hook reads the end (at most
1 MiB) of the rollout the payload names (`hosts.codex.rollout_exit_code`). Measured
in this run, as medians of real subprocesses (stdin to exit), each `--calls` times:

- `python -c pass`: the floor any Python hook pays;
- the hook on a Codex PostToolUse whose rollout does not exist (no lookup possible);
- the hook on the same call whose rollout is `--rollout-mb` MB, the call's
  `item_completed` line last (as Codex writes it, just before PostToolUse runs).

Printed: the three medians, and the lookup's share (third minus second), also as a
ratio to `python -c pass`. Also the in-process cost of one lookup.
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


def rollout(path: Path, megabytes: int, call_id: str) -> None:
    filler = {
        "timestamp": "2026-12-01T06:12:36.476Z",
        "ordinal": 0,
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "old", "output": "x" * 4000},
    }
    line = json.dumps(filler, separators=(",", ":")) + "\n"
    with open(path, "w") as fh:
        for _ in range(megabytes * 1024 * 1024 // len(line)):
            fh.write(line)
        fh.write(
            json.dumps(
                {
                    "timestamp": "2026-12-01T06:12:37.000Z",
                    "ordinal": 1,
                    "type": "event_msg",
                    "payload": {
                        "type": "item_completed",
                        "item": {
                            "type": "CommandExecution",
                            "id": call_id,
                            "exit_code": 2,
                            "status": "failed",
                            "aggregated_output": "ls: cannot access",
                        },
                    },
                },
                separators=(",", ":"),
            )
            + "\n"
        )


def timed(argv: list[str], data: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, input=data, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--rollout-mb", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "rollout-2026-12-01T06-12-36-bench.jsonl")
        rollout(path, args.rollout_mb, "call_bench")
        env = {
            **os.environ,
            "PYTHONPATH": str(SRC),
            "LOOPWATCH_STATE_DIR": str(Path(tmp, "state")),
            "LOOPWATCH_PROFILE": "unattended",
        }
        hook = [sys.executable, "-m", "loopwatch", "hook", "codex"]

        def payload(i: int, transcript: str) -> bytes:
            return json.dumps(
                {
                    "session_id": f"bench-{transcript[-8:]}",
                    "turn_id": "t1",
                    "transcript_path": transcript,
                    "cwd": tmp,
                    "hook_event_name": "PostToolUse",
                    "model": "m",
                    "permission_mode": "bypassPermissions",
                    "tool_name": "Bash",
                    "tool_input": {"command": f"ls /nonexistent-{i}"},
                    "tool_response": "ls: cannot access\n",
                    "tool_use_id": "call_bench",
                }
            ).encode()

        floor, without, with_rollout = [], [], []
        for i in range(args.calls):  # interleaved, so drift hits all three alike
            floor.append(timed([sys.executable, "-c", "pass"], b"", env))
            without.append(timed(hook, payload(i, str(Path(tmp, "rollout-missing.jsonl"))), env))
            with_rollout.append(timed(hook, payload(i, str(path)), env))
        sys.path.insert(0, str(SRC))
        from loopwatch._hosts.codex import rollout_exit_code

        assert rollout_exit_code(str(path), "call_bench") == 2
        started = time.perf_counter()
        for _ in range(50):
            rollout_exit_code(str(path), "call_bench")
        lookup = (time.perf_counter() - started) / 50
    a, b, c = (statistics.median(x) * 1000 for x in (floor, without, with_rollout))
    print(f"python -c pass                         {a:7.1f} ms")
    print(f"hook, Codex PostToolUse, no rollout    {b:7.1f} ms  ({b / a:.2f}x python -c pass)")
    print(f"hook, same, {args.rollout_mb} MB rollout            {c:7.1f} ms  ({c / a:.2f}x python -c pass)")
    print(f"rollout lookup share                   {c - b:7.1f} ms  ({(c - b) / a:.2f}x python -c pass)")
    print(f"one lookup in process                  {lookup * 1000:7.2f} ms")


if __name__ == "__main__":
    main()
