"""What the framework guards cost `import loopwatch` and each guarded tool call.

    PYTHONPATH=src python bench/adapters.py             # 30 imports, 20,000 calls
    PYTHONPATH=src python bench/adapters.py --runs 10   # a quick run

1. `import loopwatch` in fresh interpreters, the fastest of --runs each: as it is now,
   against what it imported before the guards (the same core modules, without
   `loopwatch.guard`), alternating in the same run so the ratio holds on a busy machine
   where absolute times do not; and the modules it now loads that it did not
   (expected: none: `Guard` is imported on first use). It also lists any framework module
   `import loopwatch` or `import loopwatch.adapters` loads (expected: none).
2. Per tool call: `Guard.before_call` + `Guard.after_call` against the bare
   `Monitor.check` + `Monitor.observe` they wrap, on the same calls (ratio; the guard's
   work is the pending-block bookkeeping and the key function lookup).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "agents", "openai", "pydantic_ai", "mcp", "opentelemetry")


# Before the guards, `loopwatch/__init__` imported exactly these; the baseline imports
# them under a bare package module, so the package's new __init__ does not run.
_BEFORE = ("config", "events", "finding", "monitor", "verdict")
_BASELINE = (
    "import sys, time, types, loopwatch_path as p\n"
    "t = time.perf_counter()\n"
    "pkg = types.ModuleType('loopwatch'); pkg.__path__ = [p.PATH]; sys.modules['loopwatch'] = pkg\n"
    + "".join(f"import loopwatch.{name}\n" for name in _BEFORE)
    + "print(time.perf_counter() - t, ' '.join(sorted(sys.modules)))\n"
)
_NOW = (
    "import sys, time, loopwatch_path\n"
    "t = time.perf_counter()\n"
    "import loopwatch\n"
    "print(time.perf_counter() - t, ' '.join(sorted(sys.modules)))\n"
)


def import_times(runs: int) -> tuple[float, float, set[str]]:
    """Fastest seconds of the old and the new `import loopwatch`, alternating in fresh
    interpreters, and the modules the new one loads that the old did not."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "loopwatch")
    helper = os.path.join(os.environ.get("TMPDIR", "/tmp"), "loopwatch_path.py")
    with open(helper, "w") as fh:
        fh.write(f"PATH = {os.path.abspath(folder)!r}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(helper), os.environ.get("PYTHONPATH", "")])}
    best = {"before": 1e9, "now": 1e9}
    modules: dict[str, set[str]] = {}
    for _ in range(runs):
        for key, code in (("before", _BASELINE), ("now", _NOW)):
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
            ).stdout
            seconds, names = out.split(" ", 1)
            best[key] = min(best[key], float(seconds))
            modules[key] = set(names.split())
    return best["before"], best["now"], modules["now"] - modules["before"]


def frameworks_loaded(module: str) -> list[str]:
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    names = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return sorted(set(FRAMEWORKS) & set(names))


def per_call(calls: int, rounds: int = 3) -> tuple[float, float]:
    """Microseconds per call, bare monitor and guard, the fastest of `rounds` alternating."""
    from loopwatch import Attempt, Guard, Monitor, ToolCall

    # All different: a healthy run, so neither ever stops (a stopped guard refuses at once).
    inputs = [{"command": f"pytest tests/test_{i}.py", "description": "run the tests"} for i in range(calls)]
    results = [f"{i} passed in {i / 100:.2f}s; file_{i}.py ok" for i in range(calls)]

    def bare() -> float:
        monitor = Monitor()
        start = time.perf_counter()
        for i, (value, result) in enumerate(zip(inputs, results)):
            monitor.check(Attempt("Bash", value, at=float(i)))
            monitor.observe(ToolCall("Bash", value, result, at=float(i)))
        return time.perf_counter() - start

    def guarded() -> float:
        guard = Guard(clock=None)
        start = time.perf_counter()
        for i, (value, result) in enumerate(zip(inputs, results)):
            guard.before_call("Bash", value, at=float(i))
            guard.after_call("Bash", value, result, at=float(i))
        return time.perf_counter() - start

    best_bare = best_guarded = 1e9
    for _ in range(rounds):
        best_bare = min(best_bare, bare())
        best_guarded = min(best_guarded, guarded())
    return best_bare / calls * 1e6, best_guarded / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()

    before, now, extra = import_times(args.runs)
    print(
        f"import loopwatch (fastest of {args.runs} each, alternating): before the guards {before * 1000:.1f} ms, "
        f"now {now * 1000:.1f} ms ({now / before:.2f}x); modules added: {', '.join(sorted(extra)) or 'none'}"
    )
    for module in ("loopwatch", "loopwatch.adapters"):
        print(f"frameworks loaded by `import {module}`: {', '.join(frameworks_loaded(module)) or 'none'}")
    bare, guarded = per_call(args.calls)
    print(
        f"per tool call, {args.calls} calls: Monitor.check+observe {bare:.1f} us, "
        f"Guard.before_call+after_call {guarded:.1f} us ({guarded / bare:.2f}x)"
    )


if __name__ == "__main__":
    main()
