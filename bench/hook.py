"""Wall time of one `loopwatch hook` call, next to the bare `python -c pass`.

    PYTHONPATH=src python bench/hook.py [--calls 50] [--warm 1000] [--installed] [--compare DIR]
    PYTHONPATH=src python bench/hook.py --hosts claude-code,gemini-cli [--calls 50] [--warm 1000]

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

`--compare DIR` also times the hook from another source tree DIR (its own warmed
state), interleaved with this one, for a before/after figure from the same run:
`git archive <commit> src | tar -x -C /tmp/before; ... --compare /tmp/before/src`.

`--hosts A,B,...` times what one tool call costs each host instead, interleaved in the same
run against states warmed alike, each hook through `sh -c` as the host runs it: Claude Code
runs the hook three times per call (PreToolUse, PostToolUse, PostToolBatch), Gemini CLI twice
(BeforeTool, AfterTool), GitHub Copilot CLI twice (preToolUse, postToolUse: its payloads name
no event, so the command does, and ends in `|| true`), Cline twice (PreToolUse, PostToolUse,
the command `loopwatch install cline` writes: `python -I`, the event named). Printed: the median of each event, the
sum per call, and each host's ratio to Claude Code's (target: at most 1x).

`--installed` measures what a user runs instead: this worktree is installed with
`pip install <worktree>` (a regular, non-editable install, with its dependencies)
into a temporary `python -m venv`, and the hook is that venv's `loopwatch hook`
console script, timed in turn with `python3 -c pass` (the system's python3) and
the venv's own `python -c pass`, all in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
COMMANDS = [
    "pytest -x tests/",
    "git status",
    "ls src",
    "rg TODO",
    "make build",
    "cat setup.cfg",
    "git diff",
    "npm test",
]


def payload(i: int, session: str, cwd: str) -> dict:
    command = COMMANDS[i % len(COMMANDS)] + f" # step {i // 3}"
    return {
        "session_id": session,
        "transcript_path": f"{cwd}/t.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run a command"},
        "tool_response": {"stdout": f"output of {command}\n" * 5, "stderr": "", "interrupted": False},
        "tool_use_id": f"toolu_{i:06d}",
    }


def copilot_payload(i: int, session: str, cwd: str, event: str) -> dict:
    """What Copilot hands a hook for call `i` (1.0.89 and 1.0.102: camelCase, no event
    name, the exit code only in the result's last line)."""
    command = COMMANDS[i % len(COMMANDS)] + f" # step {i // 3}"
    raw = {
        "sessionId": session,
        "timestamp": 1796523736146 + i,
        "cwd": cwd,
        "toolName": "bash",
        "toolArgs": {"command": command, "description": "Run a command"},
    }
    if event == "postToolUse":
        text = f"output of {command}\n" * 5 + f"<shellId: {i} completed with exit code 0>"
        raw["toolResult"] = {"resultType": "success", "textResultForLlm": text}
    return raw


def warm(state: Path, session: str, cwd: str, events: int) -> None:
    """Feed `events` earlier events through the hook's own code, in this process."""
    sys.path.insert(0, str(SRC))
    from loopwatch._hook.guard import handle
    from loopwatch._hook.payload import parse
    from loopwatch._hook.state import Store

    store = Store(state)
    try:
        for i in range(events):
            handle(parse(json.dumps(payload(i, session, cwd)).encode()), {}, store)
    finally:
        store.close()


def timed(argv: list[str], data: bytes, env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, input=data, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[:500]}")
    return elapsed


def import_costs(data: bytes, env: dict) -> list[tuple[int, str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loopwatch", "hook"],
        input=data,
        env=env,
        capture_output=True,
        check=False,
    )
    rows = []
    for line in proc.stderr.decode().splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return rows


def installed(args: argparse.Namespace) -> None:
    """The hook from a regular install in a fresh venv, against python3 -c pass."""
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        # A copy of the tree: pip builds in place, and the worktree stays untouched.
        tree = Path(tmp) / "tree"
        shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build"))
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(tree)],
            capture_output=True,
            text=True,
            check=False,
        )
        if pip.returncode != 0:
            raise SystemExit(f"pip install failed:\n{pip.stderr[-3000:]}")
        print(f"installed {tree.name} (non-editable) into a fresh venv in {time.perf_counter() - began:.0f}s")
        script = venv / "bin" / "loopwatch"
        state, cwd, session = Path(tmp) / "state", tmp, "bench-session"
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_", "XDG_", "PYTHON"))
        }
        env.update(LOOPWATCH_STATE_DIR=str(state), LOOPWATCH_PROFILE="attended", HOME=tmp)
        subprocess.run([str(python), "-c", WARM, str(state), session, cwd, str(args.warm)], env=env, check=True)
        system = shutil.which("python3") or sys.executable
        floor, venv_floor, hook = [], [], []
        for i in range(args.calls):
            data = json.dumps(payload(args.warm + i, session, cwd)).encode()
            floor.append(timed([system, "-c", "pass"], b"", env))
            venv_floor.append(timed([str(python), "-c", "pass"], b"", env))
            hook.append(timed([str(script), "hook"], data, env))
        base, ours = statistics.median(floor), statistics.median(hook)
        print(f"python3 -c pass (system {system})  median {base * 1000:7.1f} ms")
        print(f"venv python -c pass                median {statistics.median(venv_floor) * 1000:7.1f} ms")
        print(
            f"installed loopwatch hook           median {ours * 1000:7.1f} ms  "
            f"(min {min(hook) * 1000:.1f}, max {max(hook) * 1000:.1f})"
        )
        print(f"ratio to python3 -c pass           {ours / base:.2f}x  (target <= 2x)")
        print(f"ratio to the venv's python -c pass {ours / statistics.median(venv_floor):.2f}x")


# Warming for --compare runs with the other tree on PYTHONPATH.
WARM_OTHER = """
import json, sys
sys.path.insert(0, BENCH_DIR)
from hook import payload
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
state, session, cwd, events = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = Store(state)
for i in range(events):
    handle(parse(json.dumps(payload(i, session, cwd)).encode()), {}, store)
store.close()
""".replace("BENCH_DIR", repr(str(Path(__file__).resolve().parent)))

# Warming for --installed runs in the venv's python, so it uses the installed code.
WARM = """
import json, sys
sys.path.insert(0, BENCH_DIR)
from hook import payload
from loopwatch._hook.guard import handle
from loopwatch._hook.payload import parse
from loopwatch._hook.state import Store
state, session, cwd, events = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = Store(state)
for i in range(events):
    handle(parse(json.dumps(payload(i, session, cwd)).encode()), {}, store)
store.close()
import loopwatch
assert "site-packages" in loopwatch.__file__, loopwatch.__file__
""".replace("BENCH_DIR", repr(str(Path(__file__).resolve().parent)))


def call_events(host: str, i: int, session: str, cwd: str) -> list[tuple[str, dict]]:
    """The hook events one tool call makes on `host`: (the hook's arguments, payload)."""
    if host == "copilot":
        return [
            (f"copilot {event}", copilot_payload(i, session, cwd, event)) for event in ("preToolUse", "postToolUse")
        ]
    command = COMMANDS[i % len(COMMANDS)] + f" # step {i // 3}"
    output = f"output of {command}\n" * 5
    if host == "cline":  # the shapes Cline 3.0.65 sends (tests/fixtures/cline)
        ids = {
            "sessionContext": {"rootSessionId": session},
            "workspaceRoots": [cwd],
            "agent_id": "agent_bench",
            "parent_agent_id": None,
        }
        call = {"id": f"call_{i:06d}", "name": "run_commands", "input": {"commands": [command]}}
        items = [{"query": command, "result": output, "success": True}]
        return [
            ("cline PreToolUse", {**ids, "hookName": "tool_call", "tool_call": call}),
            (
                "cline PostToolUse",
                {
                    **ids,
                    "hookName": "tool_result",
                    "tool_result": {**call, "output": items, "durationMs": 5},
                    "postToolUse": {"toolName": "run_commands", "result": json.dumps(items), "success": True},
                },
            ),
        ]
    base = {"session_id": session, "transcript_path": f"{cwd}/t.jsonl", "cwd": cwd}
    if host == "gemini-cli":
        tool = {"tool_name": "run_shell_command", "tool_input": {"command": command, "description": "Run a command"}}
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        wrapped = f"<untrusted_context>\nOutput: {output}\nProcess Group PGID: {1000 + i}\n</untrusted_context>"
        return [
            ("gemini-cli", {**base, **tool, "hook_event_name": "BeforeTool", "timestamp": stamp}),
            (
                "gemini-cli",
                {
                    **base,
                    **tool,
                    "hook_event_name": "AfterTool",
                    "timestamp": stamp,
                    "tool_response": {"llmContent": wrapped, "returnDisplay": output},
                },
            ),
        ]
    tool = {"tool_name": "Bash", "tool_input": {"command": command, "description": "Run a command"}}
    tool["tool_use_id"] = f"toolu_{i:06d}"
    response = {"stdout": output, "stderr": "", "interrupted": False}
    base = {**base, "permission_mode": "default"}
    return [
        ("claude-code", {**base, **tool, "hook_event_name": "PreToolUse"}),
        ("claude-code", {**base, **tool, "hook_event_name": "PostToolUse", "tool_response": response}),
        (
            "claude-code",
            {**base, "hook_event_name": "PostToolBatch", "tool_calls": [{**tool, "tool_response": response}]},
        ),
    ]


def per_call(args: argparse.Namespace) -> None:
    """`--hosts`: the cost of one tool call on each host (see the module docstring)."""
    hosts = args.hosts.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_", "CI"))}
        env.update(PYTHONPATH=str(SRC), LOOPWATCH_PROFILE="attended")
        envs = {host: {**env, "LOOPWATCH_STATE_DIR": str(Path(tmp) / host)} for host in hosts}
        sys.path.insert(0, str(SRC))
        from loopwatch._hook.guard import handle
        from loopwatch._hook.payload import parse
        from loopwatch._hook.state import Store

        for host in hosts:
            store = Store(Path(tmp) / host)
            try:
                for i in range(args.warm):
                    for hook, data in call_events(host, i, "bench-session", tmp):
                        name, _, event = hook.partition(" ")
                        handle(parse(json.dumps(data).encode(), name, event=event or None), {}, store)
            finally:
                store.close()
        python = shlex.quote(sys.executable)
        times: dict[str, dict[str, list[float]]] = {host: {} for host in hosts}
        commands = {host: f"{python} -m loopwatch hook" for host in hosts}
        if "cline" in hosts:  # as `install cline` writes it (python -I, this checkout named when needed)
            from loopwatch._cli.install import default_command

            commands["cline"] = default_command("cline").removesuffix(" cline")
        for i in range(args.calls):
            for host in hosts:
                for hook, data in call_events(host, args.warm + i, "bench-session", tmp):
                    tail = " || true" if host == "copilot" else ""  # as `install copilot` writes it
                    took = timed(["sh", "-c", f"{commands[host]} {hook}{tail}"], json.dumps(data).encode(), envs[host])
                    event = hook.partition(" ")[2] or data["hook_event_name"]
                    times[host].setdefault(event, []).append(took)
        totals = {}
        for host in hosts:
            medians = {event: statistics.median(t) for event, t in times[host].items()}
            totals[host] = sum(medians.values())
            shown = ", ".join(f"{event} {m * 1000:.1f} ms" for event, m in medians.items())
            print(f"{host:12} per call {totals[host] * 1000:7.1f} ms  ({shown})")
        base = totals.get("claude-code")
        if base:
            for host in hosts:
                print(f"{host:12} per call / claude-code: {totals[host] / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warm", type=int, default=1000)
    parser.add_argument("--installed", action="store_true", help="time a regular install in a temporary venv")
    parser.add_argument("--compare", metavar="DIR", help="also time the hook from this source tree")
    parser.add_argument(
        "--hosts", metavar="A,B", help="time one tool call on each host (claude-code,copilot,gemini-cli,cline)"
    )
    args = parser.parse_args()
    if args.installed:
        installed(args)
        return
    if args.hosts:
        per_call(args)
        return

    with tempfile.TemporaryDirectory() as tmp:
        state, cwd, session = Path(tmp) / "state", tmp, "bench-session"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_"))}
        env.update(PYTHONPATH=str(SRC), LOOPWATCH_STATE_DIR=str(state), LOOPWATCH_PROFILE="attended")
        began = time.perf_counter()
        warm(state, session, cwd, args.warm)
        print(
            f"warmed the state with {args.warm} events in {time.perf_counter() - began:.1f}s; "
            f"database {os.path.getsize(state / 'state.db') // 1024} KiB"
        )

        other_env = None
        other: list[float] = []
        if args.compare:
            other_state = Path(tmp) / "other-state"
            other_env = {**env, "PYTHONPATH": args.compare, "LOOPWATCH_STATE_DIR": str(other_state)}
            subprocess.run(
                [sys.executable, "-c", WARM_OTHER, str(other_state), session, cwd, str(args.warm)],
                env=other_env,
                check=True,
            )
        floor, core, hook = [], [], []
        for i in range(args.calls):
            data = json.dumps(payload(args.warm + i, session, cwd)).encode()
            floor.append(timed([sys.executable, "-c", "pass"], b"", env))
            core.append(timed([sys.executable, "-c", "import loopwatch"], b"", env))
            hook.append(timed([sys.executable, "-m", "loopwatch", "hook"], data, env))
            if other_env is not None:
                other.append(timed([sys.executable, "-m", "loopwatch", "hook"], data, other_env))

        base, ours = statistics.median(floor), statistics.median(hook)
        print(
            f"python -c pass      median {base * 1000:7.1f} ms  (min {min(floor) * 1000:.1f}, max {max(floor) * 1000:.1f})"
        )
        print(f"import loopwatch    median {statistics.median(core) * 1000:7.1f} ms  (the core alone, no hook work)")
        print(
            f"loopwatch hook      median {ours * 1000:7.1f} ms  (min {min(hook) * 1000:.1f}, max {max(hook) * 1000:.1f})"
        )
        print(f"ratio               {ours / base:.2f}x  (target <= 2x)")
        print(f"hook cost over the floor: {(ours - base) * 1000:.1f} ms")
        if other:
            theirs = statistics.median(other)
            print(
                f"hook from {args.compare}: median {theirs * 1000:7.1f} ms  (ratio {theirs / base:.2f}x); "
                f"this tree minus that one: {(ours - theirs) * 1000:+.1f} ms"
            )

        rows = import_costs(json.dumps(payload(10**6, session, cwd)).encode(), env)
        site = next((c for c, name in rows if name.strip() == "site"), 0)
        ours_rows = [(c, n) for c, n in rows if n.strip().startswith("loopwatch")]
        print(f"\nimport cost (python -X importtime, one run, cumulative): site {site / 1000:.1f} ms")
        for cost, name in sorted(ours_rows, reverse=True)[:12]:
            print(f"  {cost / 1000:6.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
