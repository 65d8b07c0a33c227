"""The working folder, seen live: real Claude Code, its hooks installed by `loopwatch
install claude-code`, a scripted model on 127.0.0.1 (`real_claude_support`).

- Edits that never land (an `Edit` whose text is not in the file) between runs of the
  same check, the folder unchanged: proof, so the unattended run is nudged at today's
  5th run of the check and stopped at the 6th; no model request after.
- The same shape, each edit landing (the folder changes every round): today's nudge,
  never a stop; the run goes on to its own end.
- A healthy session with the folder changing as it works: nothing (`test_realclient_claude`
  covers it too, with the fingerprint on as it always is now).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tree_support import CHECK, project
from real_claude_support import ClaudeRun, ScriptedAnthropic, Step, claude_binary, tool_results, tool_uses

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def claude() -> str:
    return claude_binary()


def never_landing(calc: Path, rounds: int) -> list[Step]:
    """Read the file, run the check, then `rounds` of: an edit of text the file does not
    hold (Claude Code refuses it: nothing written), the same check."""
    steps = [Step("Reading.", "Read", {"file_path": str(calc)}), Step("Checking.", "Bash", CHECK)]
    for i in range(rounds):
        edit = {"file_path": str(calc), "old_string": f"return a - b  # try {i}", "new_string": "return a + b"}
        steps += [Step(f"Fixing, try {i}.", "Edit", edit), Step(f"Checking again, {i}.", "Bash", CHECK)]
    return steps + [Step("Done.")]


def landing(calc: Path, rounds: int) -> list[Step]:
    """The same, each edit landing (a comment moves on; the check still says the same)."""
    steps = [Step("Reading.", "Read", {"file_path": str(calc)}), Step("Checking.", "Bash", CHECK)]
    for i in range(rounds):
        edit = {"file_path": str(calc), "old_string": f"# v{i}\n", "new_string": f"# v{i + 1}\n"}
        steps += [Step(f"Fixing, try {i}.", "Edit", edit), Step(f"Checking again, {i}.", "Bash", CHECK)]
    return steps + [Step("Done.")]


def _told(turn) -> bool:
    return any("loopwatch" in r["text"] for r in turn.results) or any("loopwatch" in t for t in turn.reminders)


def test_edits_that_never_land_on_an_unchanged_folder_are_stopped_at_the_6th_check(tmp_path, claude):
    calc = project(tmp_path / "work")
    with ScriptedAnthropic({"noland": never_landing(calc, 10)}) as server:
        machine = ClaudeRun(tmp_path, server, claude)
        machine.install()
        run = machine.claude("SCENARIO:noland fix add")
        turns = server.of("noland")
    calls = tool_uses(run.lines)
    results = tool_results(run.lines)
    names = [c["name"] for c in calls]
    checks = [c for c in calls if c["name"] == "Bash"]
    # Read, check, then 5 rounds of a refused edit and the check: the 6th check is the last call
    assert names == ["Read", "Bash"] + ["Edit", "Bash"] * 5, names
    assert all(results[c["id"]]["error"] for c in calls if c["name"] == "Edit")  # no edit landed
    assert {results[c["id"]]["text"] for c in checks} == {"add(2, 3) = -1 (expected 5)"}
    assert len(turns) == len(calls)  # no model request after the stopping call
    # the nudge came with the 5th check's result, worded as proof
    nudged = [i for i, t in enumerate(turns) if _told(t)]
    assert nudged and "no file changed" in " ".join(
        turns[nudged[0]].reminders + [r["text"] for r in turns[nudged[0]].results]
    )
    assert run.result["terminal_reason"] == "hook_stopped"
    row = machine.status()[""]
    assert row["stops"] == 1 and row["nudges"] == 1
    acted = [(d["signal"], d["action"], d["message"]) for d in row["decisions"]]
    assert acted == [("unchanged", "nudge", "UnchangedTree"), ("unchanged", "stop", "UnchangedTree")]
    assert calc.read_text() == "def add(a, b):\n    return a - b  # v0\n"


def test_edits_that_land_with_the_same_check_are_nudged_and_never_stopped(tmp_path, claude):
    calc = project(tmp_path / "work")
    with ScriptedAnthropic({"land": landing(calc, 8)}) as server:
        machine = ClaudeRun(tmp_path, server, claude)
        machine.install()
        run = machine.claude("SCENARIO:land fix add")
        turns = server.of("land")
    calls = tool_uses(run.lines)
    results = tool_results(run.lines)
    assert [c["name"] for c in calls] == ["Read", "Bash"] + ["Edit", "Bash"] * 8
    assert not any(results[c["id"]]["error"] for c in calls)  # every edit landed
    assert calc.read_text().endswith("# v8\n")
    assert len(turns) == len(calls) + 1 and turns[-1].answered == "text"  # to its own end
    assert any(_told(t) for t in turns)  # today's nudge: the same check across edits
    assert run.result["terminal_reason"] == "completed" and not run.result["permission_denials"]
    row = machine.status()[""]
    assert row["stops"] == 0 and row["blocks"] == 0 and row["nudges"] == 1
