"""Wall time of one `loopwatch hook` call, next to the bare `python -c pass`.

    PYTHONPATH=src python bench/hook.py [--calls 50] [--warm 1000] [--load N] [--installed] [--compare DIR]
    PYTHONPATH=src python bench/hook.py --hosts claude-code,gemini-cli,qwen-code [--calls 50] [--warm 1000]

The hook runs on every tool call, so its path from process start to answer is the
product. This measures, on this machine and in this run:

- `python -c pass`: the floor any Python hook pays (interpreter and site-packages);
- `python -S -c pass`: the interpreter alone, without `site`;
- `python -c "import loopwatch"`: the core's import alone, for comparison;
- the hook as `loopwatch install` writes it into the user's settings (`python -P -S -c
  ... loopwatch hook claude-code`), fed a PostToolUse payload (a real subprocess, stdin
  to exit), against a state database warmed with `--warm` earlier events of the same
  session (the monitor those events built is loaded, fed and saved each call);
- `python -m loopwatch hook claude-code`: the command `install` wrote before, same payload.

The commands run in turn, `--calls` times each, first on the machine as it is
("quiet": nothing added), then again with `--load` busy processes of our own beside them
(default: one per core; `--load 0` skips it). Printed for each phase: the median wall
time and CPU time of each command and the hook's ratios to `python -c pass` (targets:
at most 1.3x quiet, 2x under load). Then the import cost of the hook path, per loopwatch
module, from `python -X importtime` (cumulative microseconds, one run).

Bytecode: the tree is compiled first (`compileall`, into its `__pycache__`, as `pip
install` does for an installed copy) and the children run without
`PYTHONDONTWRITEBYTECODE`; a hook compiling its modules from source on every call is
not what a user runs.

`--compare DIR` also times the hook from another source tree DIR (its own warmed
state, run as `python -m loopwatch hook`), interleaved with this one, for a before/after
figure from the same run: `git archive <commit> src | tar -x -C /tmp/before; ...
--compare /tmp/before/src`.

`--hosts A,B,...` times what one tool call costs each host instead, interleaved in the same
run against states warmed alike, each hook through `sh -c` as the host runs it: Claude Code
runs the hook three times per call (PreToolUse, PostToolUse, PostToolBatch), Gemini CLI twice
(BeforeTool, AfterTool), GitHub Copilot CLI twice (preToolUse, postToolUse: its payloads name
no event, so the command does, and ends in `|| true`), Qwen Code three times (UserPromptSubmit
before every model request, PreToolUse, PostToolUse)., Cline twice (PreToolUse, PostToolUse,
the command `loopwatch install cline` writes: `python -I`, the event named). Printed: the median of each event, the
sum per call, and each host's ratio to Claude Code's (target: at most 1x).

`--installed` measures what a user runs instead: this worktree is installed with
`pip install <worktree>` (a regular, non-editable install, with its dependencies)
into a temporary `python -m venv`, and the hook is that venv's `loopwatch hook`
console script and the command `loopwatch install` writes there, timed in turn with
`python3 -c pass` (the system's python3) and the venv's own `python -c pass`, all in
the same run.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
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
    return timed_cpu(argv, data, env)[0]


def timed_cpu(argv: list[str], data: bytes, env: dict) -> tuple[float, float]:
    """Wall seconds of one run of `argv`, and the CPU seconds the child spent."""
    before = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, input=data, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[:500]}")
    return elapsed, _children_cpu() - before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def logged(state: Path) -> None:
    """Stop when the hook logged anything: a call that failed (a state thrown away, an
    import missing) takes a shorter path, and its time is not the hook's."""
    log = state / "hook.log"
    if log.exists() and log.read_text().strip():
        raise SystemExit(f"the hook logged problems, so these timings do not count:\n{log.read_text()[-2000:]}")


def busy(n: int) -> list[subprocess.Popen[bytes]]:
    """`n` processes that keep a core busy each, until killed: load of our own."""
    return [subprocess.Popen([sys.executable, "-S", "-c", "while True: pass"]) for _ in range(n)]


def installed_command(python: str, env: dict, host: str = "claude-code") -> list[str]:
    """The hook command `loopwatch install HOST` writes into the user's settings, as argv,
    computed by `python` (whichever loopwatch it imports)."""
    code = f"from loopwatch._cli.install import default_command; print(default_command({host!r}))"
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, check=True)
    return shlex.split(done.stdout.strip())


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
        command = installed_command(str(python), env)
        floor, venv_floor, hook, written = [], [], [], []
        for i in range(args.calls):
            data = json.dumps(payload(args.warm + i, session, cwd)).encode()
            floor.append(timed([system, "-c", "pass"], b"", env))
            venv_floor.append(timed([str(python), "-c", "pass"], b"", env))
            hook.append(timed([str(script), "hook"], data, env))
            written.append(timed(command, data, env))
        base, ours = statistics.median(floor), statistics.median(hook)
        print(f"python3 -c pass (system {system})  median {base * 1000:7.1f} ms")
        print(f"venv python -c pass                median {statistics.median(venv_floor) * 1000:7.1f} ms")
        print(
            f"installed loopwatch hook           median {ours * 1000:7.1f} ms  "
            f"(min {min(hook) * 1000:.1f}, max {max(hook) * 1000:.1f})"
        )
        print(f"ratio to python3 -c pass           {ours / base:.2f}x  (target <= 2x)")
        print(f"ratio to the venv's python -c pass {ours / statistics.median(venv_floor):.2f}x")
        mine = statistics.median(written)
        print(
            f"the command install writes           median {mine * 1000:7.1f} ms  ({mine / base:.2f}x python3 -c pass, "
            f"{mine / statistics.median(venv_floor):.2f}x the venv's)"
        )


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
    if host == "qwen-code":  # 0.23.4, 0.24.4: the request's UserPromptSubmit first (a continuation)
        base = {**base, "timestamp": "2026-12-06T02:20:04.715Z", "permission_mode": "yolo"}
        base["prompt_id"] = f"{session}########0"
        tool = {"tool_name": "run_shell_command", "tool_input": {"command": command, "description": "Run a command"}}
        tool |= {"tool_use_id": f"toolu_{i:06d}", "tool_call_id": f"call_{i}_{i}"}
        text = f"Command: {command}\nDirectory: (root)\nOutput: {output}Error: (none)\nExit Code: 0\n"
        response = {"llmContent": text + "Signal: (none)\nProcess Group PGID: (none)", "returnDisplay": output}
        return [
            ("qwen-code", {**base, "hook_event_name": "UserPromptSubmit", "prompt": ""}),
            ("qwen-code", {**base, **tool, "hook_event_name": "PreToolUse"}),
            ("qwen-code", {**base, **tool, "hook_event_name": "PostToolUse", "tool_response": response}),
        ]
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
        from loopwatch._cli.install import default_command

        times: dict[str, dict[str, list[float]]] = {host: {} for host in hosts}
        # Each host's command as `install HOST` writes it (its flags, the folders it names).
        commands = {host: default_command(host).removesuffix(f" {host}") for host in hosts}
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
    parser.add_argument(
        "--load", type=int, default=os.cpu_count() or 2, help="busy processes of ours for the loaded phase (0: none)"
    )
    parser.add_argument("--installed", action="store_true", help="time a regular install in a temporary venv")
    parser.add_argument("--compare", metavar="DIR", help="also time the hook from this source tree")
    parser.add_argument(
        "--hosts",
        metavar="A,B",
        help="time one tool call on each host (claude-code,copilot,gemini-cli,qwen-code,cline)",
    )
    args = parser.parse_args()
    if args.installed:
        installed(args)
        return
    if args.hosts:
        per_call(args)
        return

    startup(args)


def startup(args: argparse.Namespace) -> None:
    """The default mode: the hook's start-up against the floor, quiet and under load."""
    compileall.compile_dir(str(SRC), quiet=1)
    if args.compare:
        compileall.compile_dir(args.compare, quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        state, cwd, session = Path(tmp) / "state", tmp, "bench-session"
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LOOPWATCH_", "CLAUDE_CODE_")) and k != "PYTHONDONTWRITEBYTECODE"
        }
        env.update(PYTHONPATH=str(SRC), LOOPWATCH_STATE_DIR=str(state), LOOPWATCH_PROFILE="attended")
        began = time.perf_counter()
        warm(state, session, cwd, args.warm)
        print(
            f"warmed the state with {args.warm} events in {time.perf_counter() - began:.1f}s; "
            f"database {os.path.getsize(state / 'state.db') // 1024} KiB"
        )
        hook_argv = installed_command(sys.executable, env)
        print(f"installed command: {shlex.join(hook_argv)[:160]}...")
        commands: dict[str, tuple[list[str], dict, bool]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], env, False),
            "python -S -c pass": ([sys.executable, "-S", "-c", "pass"], env, False),
            "import loopwatch": ([sys.executable, "-c", "import loopwatch"], env, False),
            "hook (installed)": (hook_argv, env, True),
            "hook (-m loopwatch)": ([sys.executable, "-m", "loopwatch", "hook", "claude-code"], env, True),
        }
        if args.compare:
            other_state = Path(tmp) / "other-state"
            other_env = {**env, "PYTHONPATH": args.compare, "LOOPWATCH_STATE_DIR": str(other_state)}
            subprocess.run(
                [sys.executable, "-c", WARM_OTHER, str(other_state), session, cwd, str(args.warm)],
                env=other_env,
                check=True,
            )
            commands[f"hook from {args.compare}"] = (
                [sys.executable, "-m", "loopwatch", "hook", "claude-code"],
                other_env,
                True,
            )
        step = args.warm
        for phase, load in (("quiet", 0), ("under load", args.load)):
            if phase == "under load" and load <= 0:
                break
            loaders = busy(load)
            try:
                times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
                for _ in range(args.calls):
                    data = json.dumps(payload(step, session, cwd)).encode()
                    step += 1
                    for name, (argv, child_env, fed) in commands.items():
                        times[name].append(timed_cpu(argv, data if fed else b"", child_env))
            finally:
                for proc in loaders:
                    proc.kill()
                    proc.wait()
            load_avg = os.getloadavg()[0]
            print(f"\n{phase}: {load} busy processes of ours, load average {load_avg:.1f}, {args.calls} calls each")
            wall = {name: statistics.median(w for w, _ in t) for name, t in times.items()}
            cpu = {name: statistics.median(c for _, c in t) for name, t in times.items()}
            for name, t in times.items():
                walls = [w for w, _ in t]
                print(
                    f"  {name:24} wall median {wall[name] * 1000:7.1f} ms (min {min(walls) * 1000:6.1f})"
                    f"   cpu median {cpu[name] * 1000:6.1f} ms"
                )
            target = 1.3 if phase == "quiet" else 2.0
            base, bare = "python -c pass", "python -S -c pass"
            for name in ("hook (installed)", "hook (-m loopwatch)"):
                ratio = wall[name] / wall[base]
                print(
                    f"  {name} / {base}: {ratio:.2f}x wall ({'met' if ratio <= target else 'NOT met'}: "
                    f"target <= {target}x), {cpu[name] / cpu[base]:.2f}x cpu; "
                    f"/ {bare}: {wall[name] / wall[bare]:.2f}x wall, {cpu[name] / cpu[bare]:.2f}x cpu"
                )

        logged(state)
        rows = import_costs(json.dumps(payload(10**6, session, cwd)).encode(), env)
        site = next((c for c, name in rows if name.strip() == "site"), 0)
        ours_rows = [(c, n) for c, n in rows if n.strip().startswith("loopwatch")]
        print(f"\nimport cost (python -X importtime -m loopwatch hook, one run, cumulative): site {site / 1000:.1f} ms")
        for cost, name in sorted(ours_rows, reverse=True)[:12]:
            print(f"  {cost / 1000:6.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()
