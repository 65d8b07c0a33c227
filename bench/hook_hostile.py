"""One hook call against what an agent can do to its own guard: how long it takes,
and what it answered.

    PYTHONPATH=src python bench/hook_hostile.py [--src DIR] [--timeout 60] [--repeat 3]

Cases, each a fresh state folder and a PreToolUse of the same `Bash` call, run with
the real `python -m loopwatch hook` (`[hook] fail = "closed"` in the user's own file,
so an answer that gave up shows as a denial):

- `plain`: nothing hostile (the baseline, measured in the same run);
- `sparse 1 GiB`: a sparse 1 GiB `loopwatch.toml` in the project;
- `nested 100k`: a `loopwatch.toml` holding an array nested 100,000 deep;
- `lock held`: a live process holds `state.lock` and never lets go (the default
  `answer_within`; the host's timeout as installed is 30 s);
- `env off`: the project's `.claude/settings.json` sets `LOOPWATCH_MODE=off`, which
  Claude Code passes to the hook (answered `allow` without looking = the guard is off).

Printed per case: the median wall time of `--repeat` calls (start to exit), the peak
RSS of the hook process (from `wait4`), and the answer: deny, killed (after
`--timeout`), or allow, "checked" when the call reached the state database and "not
checked" when the guard let it through without looking. `--src` runs another source tree (a before/after comparison:
`git archive <commit> src | tar -x -C /tmp/before`).
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

HOLDER = r"""
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, b"%12d\n" % os.getpid(), 0)
print("held", flush=True)
time.sleep(3600)
"""


def call(src: str, state: Path, project: Path, extra_env: dict[str, str], timeout: float) -> tuple[float, int, str]:
    payload = {
        "session_id": "bench-hostile",
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "make", "description": "build"},
        "tool_use_id": f"toolu_{time.monotonic_ns()}",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWATCH_", "XDG_", "CLAUDE_"))}
    env.update(PYTHONPATH=src, LOOPWATCH_STATE_DIR=str(state), HOME=str(state.parent / "home"))
    env["LOOPWATCH_PROFILE"] = "attended"
    env.update(extra_env)
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loopwatch", "hook"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=project,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    deadline = began + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            proc.stdout.close()
            return time.monotonic() - began, usage.ru_maxrss, "killed"
        time.sleep(0.02)
    took = time.monotonic() - began
    out = proc.stdout.read()
    proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    denied = b'"deny"' in out or proc.returncode == 2
    return took, usage.ru_maxrss, "deny" if denied else "allow"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"source: {args.src}")
    print(f"{'case':<14} {'median s':>9} {'peak MiB':>9}  answers")
    for case in ("plain", "sparse 1 GiB", "nested 100k", "lock held", "env off"):
        times, peaks, answers = [], [], []
        for _ in range(args.repeat if case != "lock held" else 1):
            with tempfile.TemporaryDirectory(prefix="lw-hostile-") as tmp:
                root = Path(tmp)
                state, project = root / "state", root / "project"
                project.mkdir()
                mine = root / "home" / ".config" / "loopwatch" / "loopwatch.toml"
                mine.parent.mkdir(parents=True)
                mine.write_text('[hook]\nfail = "closed"\n')
                extra: dict[str, str] = {}
                holder = None
                if case == "sparse 1 GiB":
                    with open(project / "loopwatch.toml", "wb") as fh:
                        fh.write(b'mode = "off"\n')
                        fh.truncate(1 << 30)
                elif case == "nested 100k":
                    (project / "loopwatch.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
                elif case == "lock held":
                    state.mkdir(mode=0o700)
                    holder = subprocess.Popen(
                        [sys.executable, "-c", HOLDER, str(state / "state.lock")], stdout=subprocess.PIPE
                    )
                    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
                elif case == "env off":
                    (project / ".claude").mkdir()
                    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {"LOOPWATCH_MODE": "off"}}))
                    extra["LOOPWATCH_MODE"] = "off"
                    extra["CLAUDE_PROJECT_DIR"] = str(project)
                try:
                    took, peak, answer = call(args.src, state, project, extra, args.timeout)
                finally:
                    if holder is not None:
                        holder.kill()
                        holder.wait()
                        assert holder.stdout is not None
                        holder.stdout.close()
                if answer == "allow":
                    answer += " (checked)" if (state / "state.db").exists() else " (not checked)"
                times.append(took)
                peaks.append(peak / 1024)
                answers.append(answer)
        print(f"{case:<14} {statistics.median(times):>9.2f} {max(peaks):>9.1f}  {', '.join(answers)}")


if __name__ == "__main__":
    main()
