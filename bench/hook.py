"""Wall time of one `loopwatch hook` call, next to the bare `python -c pass`.

    PYTHONPATH=src python bench/hook.py [--calls 50] [--warm 1000] [--installed] [--compare DIR] [--per-call]

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

`--per-call` times one tool call as each guarded host runs it, in the same run, each
hook through `sh -c` as the host runs it, each host against a state warmed with
`--warm` earlier calls of its own session: Claude Code runs three hook processes per
call (PreToolUse, PostToolUse, PostToolBatch), Qwen Code three (UserPromptSubmit before
every model request, PreToolUse, PostToolUse or PostToolUseFailure). Prints the medians
per call and each host's ratio to Claude Code's (target: at most 1x).

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


def claude_code_call(i: int, session: str, cwd: str) -> list[dict]:
    """The three payloads Claude Code sends for call `i`."""
    post = payload(i, session, cwd)
    pre = {k: v for k, v in post.items() if k != "tool_response"} | {"hook_event_name": "PreToolUse"}
    item = {k: post[k] for k in ("tool_name", "tool_input", "tool_use_id", "tool_response")}
    batch = {k: post[k] for k in ("session_id", "transcript_path", "cwd", "permission_mode")}
    return [pre, post, batch | {"hook_event_name": "PostToolBatch", "tool_calls": [item]}]


def qwen_code_call(i: int, session: str, cwd: str) -> list[dict]:
    """The three payloads Qwen Code (0.23.4, 0.24.4) sends for call `i`: the request's
    UserPromptSubmit (a continuation), PreToolUse, PostToolUse."""
    command = COMMANDS[i % len(COMMANDS)] + f" # step {i // 3}"
    base = {
        "session_id": session,
        "transcript_path": f"{cwd}/t.jsonl",
        "cwd": cwd,
        "timestamp": "2026-12-06T02:20:04.715Z",
        "permission_mode": "yolo",
        "prompt_id": f"{session}########0",
    }
    call = {
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "Run a command"},
        "tool_use_id": f"toolu_{i:06d}",
        "tool_call_id": f"call_{i}_{i}",
    }
    text = f"Command: {command}\nDirectory: (root)\nOutput: " + f"output of {command}\n" * 5
    response = {"llmContent": text + "Error: (none)\nExit Code: 0\nSignal: (none)\nProcess Group PGID: (none)"}
    return [
        base | {"hook_event_name": "UserPromptSubmit", "prompt": ""},
        base | call | {"hook_event_name": "PreToolUse"},
        base | call | {"hook_event_name": "PostToolUse", "tool_response": response, "duration_ms": 30},
    ]


#: Each host's one tool call, as `--per-call` times it.
HOST_CALLS = {"claude-code": claude_code_call, "qwen-code": qwen_code_call}


def per_call(args: argparse.Namespace) -> None:
    """One tool call's hooks on each host of `HOST_CALLS`, timed in turn (`--per-call`)."""
    import shlex

    python = shlex.quote(sys.executable)
    sys.path.insert(0, str(SRC))
    from loopwatch._hook.guard import handle
    from loopwatch._hook.payload import parse
    from loopwatch._hook.state import Store

    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_", "QWEN"))}
        env.update(PYTHONPATH=str(SRC), LOOPWATCH_PROFILE="attended")
        envs = {name: {**env, "LOOPWATCH_STATE_DIR": str(Path(tmp) / name)} for name in HOST_CALLS}
        for name, make in HOST_CALLS.items():
            store = Store(Path(tmp) / name)
            try:
                for i in range(args.warm):
                    for raw in make(i, f"bench-{name}", tmp):
                        handle(parse(json.dumps(raw).encode(), name), {}, store)
            finally:
                store.close()
        timings: dict[str, list[float]] = {name: [] for name in HOST_CALLS}
        floor = []
        for i in range(args.warm, args.warm + args.calls):
            floor.append(timed(["sh", "-c", f"{python} -c pass"], b"", env))
            for name, make in HOST_CALLS.items():
                argv = ["sh", "-c", f"{python} -m loopwatch hook {name}"]
                timings[name].append(
                    sum(timed(argv, json.dumps(raw).encode(), envs[name]) for raw in make(i, f"bench-{name}", tmp))
                )
        claude = statistics.median(timings["claude-code"])
        print(f"warmed each state with {args.warm} calls; {args.calls} calls timed, in turn")
        print(f"sh -c 'python -c pass'        median {statistics.median(floor) * 1000:7.1f} ms  (one process)")
        for name, found in timings.items():
            hooks = len(HOST_CALLS[name](0, "x", tmp))
            median = statistics.median(found)
            print(f"{name:<13} per call ({hooks} hooks) median {median * 1000:7.1f} ms  ratio {median / claude:.2f}x")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warm", type=int, default=1000)
    parser.add_argument("--installed", action="store_true", help="time a regular install in a temporary venv")
    parser.add_argument("--compare", metavar="DIR", help="also time the hook from this source tree")
    parser.add_argument("--per-call", action="store_true", help="one tool call's hooks on each host, in turn")
    args = parser.parse_args()
    if args.installed:
        installed(args)
        return
    if args.per_call:
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
