"""What identifies a call, measured in the real CLIs and on the corpora.

    # the real `claude -p` (2.1.197, 2.1.332) and `codex exec` (0.171.0), a scripted model
    # running the same failing `ls` 12 times, fixed or with its free fields reworded; the
    # hook runs the loopwatch found at SRC (another checkout for "before")
    PYTHONPATH=src python bench/identity.py clients --src src

    # `scan --json` outputs of two checkouts, compared per file (resolved from MANIFEST.tsv)
    PYTHONPATH=src python bench/identity.py scans BEFORE.jsonl AFTER.jsonl ../shared/corpus

Needs node/npm for `clients` (the CLIs are installed as the real-client tests install them).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
LOOP = "ls /nonexistent-dir-xyz"


def _scan(path: Path, env: dict[str, str], src: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--json", str(path)],
        env={**env, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(done.stdout)


def _verdict(scanned: dict) -> str:
    v = scanned["verdict"]
    return "none" if v is None else f"{v['action']} by {v['signal']} at call {v['at_action']}"


def clients(src: str) -> None:
    sys.path.insert(0, str(TESTS))
    import codex_support as cs
    import real_claude_support as rc

    src = os.path.abspath(src)
    rc.SRC = cs.SRC = src
    for version in (rc.CLAUDE_CODE_VERSION, rc.CURRENT_CLAUDE_CODE_VERSION):
        for kind, script in (("fixed", rc.loop_script(12)), ("reworded", rc.reworded_script(12))):
            with tempfile.TemporaryDirectory() as d, rc.ScriptedAnthropic({"loop": script}) as server:
                machine = rc.ClaudeRun(Path(d), server, rc.claude_binary(version))
                machine.install()
                run = machine.claude("SCENARIO:loop do the task")
                calls, results = rc.tool_uses(run.lines), rc.tool_results(run.lines)
                ran = sum(1 for c in calls if "loopwatch" not in results.get(c["id"], {}).get("text", ""))
                (session,) = machine.sessions()
                print(
                    f"claude-code {version} {kind:8}: {ran:2} of 12 ran; ended {run.result.get('terminal_reason')}; "
                    f"replay of its session file: {_verdict(_scan(session, machine.env(), src))}",
                    flush=True,
                )
    binary = cs.require_codex()
    reworded = [
        {
            "call": "exec_command",
            "arguments": {"cmd": LOOP, "yield_time_ms": 1000 + 250 * i, "max_output_tokens": 4000 + i},
        }
        for i in range(12)
    ]
    for kind, script in (("fixed", [cs.shell(LOOP)] * 12), ("reworded", reworded)):
        with tempfile.TemporaryDirectory() as d, cs.ScriptedResponses(script) as server:
            home = cs.CodexHome(Path(d), server, binary)
            home.install()
            done = home.exec("list the missing dir")
            (rollout,) = home.rollouts()
            print(
                f"codex {cs.CODEX_VERSION} {kind:8}: {len(cs.stream_items(done.stdout)):2} of 12 ran; "
                f"replay of its rollout: {_verdict(_scan(rollout, home.env(), src))}",
                flush=True,
            )


def _load(path: str) -> dict[str, tuple[str, str]]:
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out[row["path"]] = (
                json.dumps(row["verdict"], sort_keys=True),
                json.dumps(row["interventions"], sort_keys=True),
            )
    return out


def scans(before: str, after: str, root: str) -> None:
    resolved = {}
    with open(os.path.join(root, "MANIFEST.tsv"), encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            resolved[os.path.normpath(os.path.join(root, row["local_path"]))] = row["resolved"] == "yes"
    b, a = _load(before), _load(after)
    common = sorted(set(b) & set(a))
    verdicts = [p for p in common if b[p][0] != a[p][0]]
    interventions = [p for p in common if b[p][1] != a[p][1]]
    print(f"{root}: {len(common)} sessions in both scans ({len(b)} before, {len(a)} after)")
    print(
        f"  verdict changed: {len(verdicts)} ({sum(resolved.get(os.path.normpath(p), False) for p in verdicts)} resolved)"
    )
    print(f"  any intervention changed: {len(interventions)}")
    for name, rows in (("before", b), ("after", a)):
        stopped = [p for p in common if rows[p][0] != "null"]
        on_resolved = sum(resolved.get(os.path.normpath(p), False) for p in stopped)
        print(f"  {name}: {len(stopped)} stopped, {on_resolved} of them resolved")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("clients", help="the real CLIs, fixed and reworded fields")
    one.add_argument("--src", default="src", help="the loopwatch source folder the hook runs")
    two = sub.add_parser("scans", help="compare two `scan --json` outputs per file")
    two.add_argument("before")
    two.add_argument("after")
    two.add_argument("root", help="the corpus folder (with MANIFEST.tsv)")
    args = parser.parse_args()
    if args.what == "clients":
        clients(args.src)
    else:
        scans(args.before, args.after, args.root)


if __name__ == "__main__":
    main()
