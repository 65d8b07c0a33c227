"""What one Cline tool call costs in loopwatch hook processes, next to one Claude Code call.

    PYTHONPATH=src python bench/hook_cline.py [--calls 40]

Cline runs loopwatch's hook files on two events per tool call, PreToolUse and PostToolUse,
each a `/bin/sh` wrapper (as `loopwatch install cline` writes it) that execs `python -I`;
Claude Code runs `python -m loopwatch hook claude-code` on three (PreToolUse, PostToolUse or
PostToolUseFailure, PostToolBatch: `bench/hook_claude.py`). This runs both sequences in
turn, `--calls` times each, every call a different failing or succeeding command (Cline's
payloads are those the real Cline 3.0.65 sent, kept in tests/fixtures/cline, with the
command and call id changed), each host with its own state folder. Printed: per tool call,
the median wall and CPU time (user + system of the children) of each host, and their ratio
(the target: Cline's at most Claude Code's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from hook_claude import payloads as claude_payloads
from hook_claude import timed

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "cline" / "3.0.65" / "loop" / "payloads"


def cline_payloads(i: int, session: str, cwd: str) -> list[tuple[str, dict]]:
    """Cline's PreToolUse and PostToolUse of call `i` (a failing `ls` or a succeeding `echo`)."""
    pre = json.loads((FIXTURES / "PreToolUse.run_commands.call_scripted_00001.json").read_text())
    post = json.loads((FIXTURES / "PostToolUse.run_commands.call_scripted_00001.json").read_text())
    command = f"ls /tmp/dir-{i}" if i % 2 else f"echo {i}"
    output = (
        [{"query": command, "result": f"[Command exited with code 2]\n\n[stderr]\nls: cannot access '/tmp/dir-{i}'\n",
          "error": "Command exited with code 2", "success": False}]
        if i % 2
        else [{"query": command, "result": f"{i}\n", "success": True}]
    )  # fmt: skip
    for payload in (pre, post):
        payload["sessionContext"]["rootSessionId"] = session
        payload["workspaceRoots"] = [cwd]
    pre["tool_call"].update(id=f"call_bench{i:05d}", input={"commands": [command]})
    post["tool_result"].update(id=f"call_bench{i:05d}", input={"commands": [command]}, output=output)
    return [("PreToolUse", pre), ("PostToolUse", post)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from loopwatch._cli.install import default_command
    from loopwatch._hosts import host

    cline = host("cline")
    with tempfile.TemporaryDirectory() as folder:
        hooks = Path(folder, "hooks")
        hooks.mkdir()
        command = default_command("cline")
        for event in cline.hooked_events:
            (hooks / event).write_text(cline.file_text(event, command))  # type: ignore[attr-defined]
        base = {**os.environ, "LOOPWATCH_PROFILE": "attended", "PYTHONPATH": str(ROOT / "src"), "HOME": folder}
        claude_env = {**base, "LOOPWATCH_STATE_DIR": str(Path(folder, "claude"))}
        cline_env = {**base, "LOOPWATCH_STATE_DIR": str(Path(folder, "cline"))}
        claude_hook = [sys.executable, "-m", "loopwatch", "hook", "claude-code"]
        per_call: dict[str, list[tuple[float, float]]] = {"Claude Code (3 hooks)": [], "Cline (2 hooks)": []}
        for i in range(args.calls):
            wall = cpu = 0.0
            for _, payload in claude_payloads(i, "bench-claude", folder):
                w, c = timed(claude_hook, json.dumps(payload).encode(), claude_env)
                wall, cpu = wall + w, cpu + c
            per_call["Claude Code (3 hooks)"].append((wall, cpu))
            wall = cpu = 0.0
            for event, payload in cline_payloads(i, "bench-cline", folder):
                w, c = timed(["sh", str(hooks / event)], json.dumps(payload).encode(), cline_env)
                wall, cpu = wall + w, cpu + c
            per_call["Cline (2 hooks)"].append((wall, cpu))
        print(f"hook command: {command}")
        medians = {}
        for name, figures in per_call.items():
            medians[name] = (statistics.median(w for w, _ in figures), statistics.median(c for _, c in figures))
            print(
                f"{name:22} per tool call: wall {medians[name][0] * 1000:7.1f} ms   cpu {medians[name][1] * 1000:6.1f} ms"
            )
        (cw, cc), (lw, lc) = medians["Claude Code (3 hooks)"], medians["Cline (2 hooks)"]
        print(f"Cline / Claude Code: wall {lw / cw:.2f}x   cpu {lc / cc:.2f}x   (target <= 1)")


if __name__ == "__main__":
    main()
