"""What one opencode tool call costs in loopwatch hook processes, next to one Claude Code call.

    PYTHONPATH=src python bench/hook_opencode.py [--calls 40] [--no-plugin]

opencode runs no hook commands: loopwatch's plugin starts one hook process per event it
reports, and per tool call that is two (`tool.execute.before`, `tool.execute.after`), as
`python -I ... -m loopwatch hook opencode EVENT` (the command `loopwatch install opencode`
writes). Claude Code starts three per call (PreToolUse, PostToolUse or
PostToolUseFailure, PostToolBatch: `bench/hook_claude.py`). This runs both sequences in
turn, `--calls` times each, with the same commands (a failing `ls` every other call, else
an `echo`) in each host's shapes, through real subprocesses, and `python -c pass` between
them. Printed: per event and per tool call, the median wall and CPU time (user + system of
the children), and the ratio of an opencode call to a Claude Code call.

Then (unless `--no-plugin`, and where node is on PATH) the plugin itself: node drives
`_hosts/opencode_plugin.js` (tests/opencode_plugin_driver.mjs) through the same calls with
the real hook, timed whole, per call: the hook processes plus the plugin's own work
(building the payload, `spawnSync`, reading the answer).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from hook_claude import payloads as claude_payloads
from hook_claude import timed

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
DRIVER = ROOT / "tests" / "opencode_plugin_driver.mjs"


def hook_command() -> list[str]:
    """The hook as `loopwatch install opencode` writes it for a source tree: `python -I`,
    this tree named by its folder (`-I` reads no PYTHONPATH)."""
    code = f"import sys; sys.path.insert(0, {str(SRC)!r}); from loopwatch.__main__ import main; sys.exit(main(sys.argv[2:]))"
    return [sys.executable, "-I", "-c", code, "loopwatch", "hook", "opencode"]


def opencode_payloads(i: int, session: str, cwd: str) -> list[tuple[str, dict]]:
    """The two events of one call, as the plugin builds them (tests/fixtures/opencode/)."""
    failing = bool(i % 2)
    command = f"ls /tmp/dir-{i}" if failing else f"echo {i}"
    output = f"ls: cannot access '/tmp/dir-{i}': No such file or directory\n" if failing else f"{i}\n"
    base = {"cwd": cwd, "session_id": session, "agent_id": ""}
    tool = {"tool_name": "bash", "tool_use_id": f"call_bench{i:05d}", "tool_input": {"command": command}}
    response = {"output": output, "exit": 2 if failing else 0, "title": command}
    return [
        ("tool.execute.before", {"hook_event_name": "tool.execute.before", **base, **tool}),
        ("tool.execute.after", {"hook_event_name": "tool.execute.after", **base, **tool, "tool_response": response}),
    ]


def plugin_per_call(calls: int, folder: str, env: dict[str, str]) -> float | None:
    """Seconds per call of the plugin driven by node with the real hook, or None without node."""
    if shutil.which("node") is None:
        return None
    sys.path.insert(0, str(SRC))
    from loopwatch._hosts.opencode import plugin_text

    plugin = Path(folder) / "loopwatch.js"
    plugin.write_text(plugin_text(hook_command()))
    steps = []
    for i in range(calls):
        before, after = opencode_payloads(i, "ses_benchplugin", folder)
        args = before[1]["tool_input"]
        call = {"tool": "bash", "sessionID": "ses_benchplugin", "callID": before[1]["tool_use_id"]}
        response = after[1]["tool_response"]
        steps.append({"hook": "tool.execute.before", "input": call, "output": {"args": args}})
        steps.append(
            {
                "hook": "tool.execute.after",
                "input": {**call, "args": args},
                "output": {
                    "title": response["title"],
                    "output": response["output"],
                    "metadata": {"exit": response["exit"]},
                },
            }
        )
    script = json.dumps({"steps": steps, "directory": folder}).encode()
    empty = json.dumps({"steps": [], "directory": folder}).encode()
    argv = ["node", str(DRIVER), str(plugin)]
    bare = min(timed(argv, empty, env)[0] for _ in range(3))  # node, the driver and the plugin's load
    whole = timed(argv, script, env)[0]
    return (whole - bare) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--no-plugin", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "LOOPWATCH_STATE_DIR": folder,
            "LOOPWATCH_PROFILE": "attended",
            "PYTHONPATH": os.environ.get("PYTHONPATH", str(SRC)),
        }
        claude = [sys.executable, "-m", "loopwatch", "hook", "claude-code"]
        opencode = hook_command()
        floor: list[tuple[float, float]] = []
        events: dict[str, list[tuple[float, float]]] = {}
        per_call: dict[str, list[tuple[float, float]]] = {"claude-code": [], "opencode": []}
        for i in range(args.calls):
            for host in ("claude-code", "opencode"):
                wall = cpu = 0.0
                if host == "claude-code":
                    sequence = [(claude, e, p) for e, p in claude_payloads(i, "bench-claude", folder)]
                else:
                    sequence = [(opencode + [e], e, p) for e, p in opencode_payloads(i, "ses_bench", folder)]
                for argv, event, payload in sequence:
                    w, c = timed(argv, json.dumps(payload).encode(), env)
                    name = "PostToolUse/Failure" if event.startswith("PostToolUse") else event
                    events.setdefault(f"{host} {name}", []).append((w, c))
                    wall, cpu = wall + w, cpu + c
                    floor.append(timed([sys.executable, "-c", "pass"], b"", env))
                per_call[host].append((wall, cpu))
        plugin = None if args.no_plugin else plugin_per_call(args.calls, folder, env)
    base_wall = statistics.median(w for w, _ in floor)
    base_cpu = statistics.median(c for _, c in floor)
    print(f"{'python -c pass':40} wall {base_wall * 1000:7.1f} ms   cpu {base_cpu * 1000:6.1f} ms")
    for name, figures in events.items():
        wall = statistics.median(w for w, _ in figures)
        cpu = statistics.median(c for _, c in figures)
        print(f"{name:40} wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:6.1f} ms")
    medians = {
        host: (statistics.median(w for w, _ in f), statistics.median(c for _, c in f)) for host, f in per_call.items()
    }
    for host, (wall, cpu) in medians.items():
        count = 3 if host == "claude-code" else 2
        print(
            f"{'one ' + host + ' call (' + str(count) + ' hooks)':40} wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:6.1f} ms"
        )
    (cw, cc), (ow, oc) = medians["claude-code"], medians["opencode"]
    print(f"opencode / Claude Code, per tool call: wall {ow / cw:.2f}x   cpu {oc / cc:.2f}x")
    if plugin is not None:
        print(
            f"{'the plugin under node, per call':40} wall {plugin * 1000:7.1f} ms   = {plugin / cw:.2f}x a Claude Code call"
        )


if __name__ == "__main__":
    main()
