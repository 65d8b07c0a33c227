"""Write tests/fixtures/copilot/ from the real GitHub Copilot CLI (both releases).

    python tests/copilot_fixtures.py

Runs the real CLI offline (`real_copilot_support`) with loopwatch installed and, beside
it, a capturing hook that keeps every payload it is handed: a loop (unattended: ended at
its fourth call), the same loop attended (refused from the fourth), a healthy session,
a sub-agent's loop, and a tool that fails. Keeps, with every path of the run written as
`/FIXTURE` and Copilot's long texts (its system prompt, its skill and tool lists) left
out, so that only the scripted content remains:

- `../copilot-hooks/<release>-<event>-<tool>.json`: hook payloads, one per kind (two of
  the loop's identical failures);
- `<release>-<scenario>.events.jsonl`: the session file Copilot wrote;
- `<release>-<scenario>.output.jsonl`: what `--output-format json` printed (its
  ephemeral progress lines left out but for one of each kind).

Left out of every file: Copilot's system prompt, its skill, tool and MCP lists, its usage
records and telemetry, and all but one of each of its hook bookkeeping lines.

The unit tests (tests/test_hosts_copilot.py, the reader's) read these.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import real_copilot_support as support
from scripted_chat import ScriptedChat, Step

OUT = HERE / "fixtures" / "copilot"
PAYLOADS = HERE / "fixtures" / "copilot-hooks"
PLACEHOLDER = "/FIXTURE"
#: Lines of Copilot's own long text, or its accounting: left out of the fixtures.
LONG = frozenset(
    {
        "system.message",
        "session.skills_loaded",
        "session.tools_updated",
        "session.mcp_servers_loaded",
        "session.usage_record",
    }
)
#: Lines kept once each: hooks' bookkeeping (a copy of each payload).
FEW = frozenset({"hook.start", "hook.end"})

#: The (release, scenario) whose session file, and whose printed output, are kept.
EVENTS = frozenset({"89-loop", "102-loop", "89-healthy", "102-healthy", "102-attended", "102-subagent"})
OUTPUTS = frozenset({"102-loop", "89-subagent"})

CAPTURE = """
import json, os, sys
event = sys.argv[1]
data = sys.stdin.read()
folder = os.environ["CAPTURE_DIR"]
os.makedirs(folder, exist_ok=True)
n = len(os.listdir(folder))
with open(os.path.join(folder, f"{n:04d}-{event}.json"), "w") as fh:
    fh.write(data)
"""


def _scrub(text: str, roots: list[str]) -> str:
    for root in sorted(roots, key=len, reverse=True):
        text = text.replace(root, PLACEHOLDER)
    return text


def _capture_hook(machine: support.CopilotRun, folder: Path) -> None:
    script = machine.root / "capture.py"
    script.write_text(CAPTURE)
    hooks = {
        event: [{"type": "command", "bash": f"{sys.executable} {script} {event}", "timeoutSec": 30}]
        for event in ("preToolUse", "postToolUse", "postToolUseFailure", "userPromptSubmitted", "agentStop")
    }
    (machine.copilot_home / "hooks").mkdir(parents=True, exist_ok=True)
    (machine.copilot_home / "hooks" / "capture.json").write_text(json.dumps({"version": 1, "hooks": hooks}))
    machine.extra_env["CAPTURE_DIR"] = str(folder)


def _keep_lines(path: Path, roots: list[str], stream: bool) -> str:
    kept: list[str] = []
    seen: list[str] = []
    for line in path.read_text().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        kind = obj.get("type")
        if kind in LONG:
            continue
        if (stream and obj.get("ephemeral")) or kind in FEW:
            if kind in seen:
                continue
            seen.append(kind)
        if isinstance(obj.get("data"), dict) and "toolTelemetry" in obj["data"]:
            del obj["data"]["toolTelemetry"]  # Copilot's counters, not the call
            line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        kept.append(_scrub(line, roots))
    return "\n".join(kept) + "\n"


def scenario(
    version: str,
    name: str,
    scripts: Callable[[Path], dict[str, list[Step]]],
    prompt: str,
    profile: str | None = None,
) -> None:
    """One run; `scripts` makes the scripts from the run's work folder."""
    with tempfile.TemporaryDirectory(prefix="copilot-fixture-") as tmp:
        root = Path(tmp)
        with ScriptedChat(scripts(root / "work")) as server:
            machine = support.CopilotRun(root, server, version, profile=profile)
            machine.install()
            captured = root / "captured"
            _capture_hook(machine, captured)
            run = machine.run(prompt)
        assert not run.leftover, run.leftover
        roots = [str(root), os.path.realpath(root), str(support.cache_home(version).parent)]
        (root / "stdout.jsonl").write_text(run.stdout)
        short = version.rsplit(".", 1)[-1]
        if f"{short}-{name}" in OUTPUTS:
            (OUT / f"{short}-{name}.output.jsonl").write_text(_keep_lines(root / "stdout.jsonl", roots, stream=True))
        (session,) = machine.sessions()
        if f"{short}-{name}" in EVENTS:
            (OUT / f"{short}-{name}.events.jsonl").write_text(_keep_lines(session, roots, stream=False))
        for path in sorted(captured.glob("*.json")):
            payload = json.loads(path.read_text())
            event = path.stem.split("-", 1)[1]
            tag = payload.get("toolName", "")
            if event == "postToolUse" and isinstance(payload.get("toolResult"), dict):
                text = payload["toolResult"].get("textResultForLlm", "")
                tag += "-exit0" if text.endswith("exit code 0>") else "-exit2" if text.endswith("exit code 2>") else ""
            if name == "subagent" and (payload.get("agentId") or payload.get("toolName") == "bash"):
                tag = f"{tag}-subagent" if tag else "subagent"
            target = PAYLOADS / f"{short}-{event}{'-' + tag if tag else ''}.json"
            if target.exists() and tag == "bash-exit2":  # the loop's next identical failure, once
                target = target.with_name(target.stem + "-again.json")
            if not target.exists():
                target.write_text(_scrub(json.dumps(payload, indent=1), roots) + "\n")


def _healthy(work: Path) -> dict[str, list[Step]]:
    """The healthy session, then a tool that fails (an edit of a missing file)."""
    steps = support.healthy_script(work)
    edit = {"path": str(work / "missing.txt"), "old_str": "a", "new_str": "b"}
    steps.insert(-1, Step.call("Editing another.", "edit", edit))
    return {"healthy": steps}


def main() -> int:
    for folder in (OUT, PAYLOADS):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    for version in (support.PINNED, support.CURRENT):
        scenario(version, "loop", lambda work: {"loop": support.loop_script(12)}, "SCENARIO:loop do the task")
        scenario(version, "attended", lambda work: {"loop": support.loop_script(6)}, "SCENARIO:loop do it", "attended")
        scenario(
            version,
            "subagent",
            lambda work: {"subagent": support.subagent_script(), "loop": support.loop_script(12)},
            "SCENARIO:subagent delegate the listing",
        )
        scenario(version, "healthy", _healthy, "SCENARIO:healthy fix the test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
