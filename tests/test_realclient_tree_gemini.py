"""The working folder, seen live through Gemini CLI (npm `@google/gemini-cli`, the pinned
release) and `loopwatch install gemini-cli`, driven by a scripted Gemini API
(`scripted_gemini`): the same shapes as `test_realclient_tree` (Claude Code) in another
host's words (`replace`, `run_shell_command`, AfterTool).

- `replace` calls whose text is not in the file, between runs of the same check, the
  folder unchanged: proof; nudged at the 5th run of the check, stopped at the 6th.
- The same, each `replace` landing: today's nudge, never a stop.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tree_support import CHECK, project
from real_gemini_support import PINNED, SHELL, GeminiRun, gemini_binary
from scripted_gemini import ScriptedGemini, Step

pytestmark = pytest.mark.slow

NO_OWN_LOOP_CHECK = {"model": {"disableLoopDetection": True}}


def _script(calc: Path, rounds: int, lands: bool) -> list[Step]:
    steps = [Step("Reading.", "read_file", {"file_path": str(calc)}), Step("Checking.", SHELL, CHECK)]
    for i in range(rounds):
        old, new = (f"# v{i}\n", f"# v{i + 1}\n") if lands else (f"return a - b  # try {i}", "return a + b")
        edit = {"file_path": str(calc), "old_string": old, "new_string": new, "instruction": f"Fix add, try {i}"}
        steps += [Step(f"Fixing, try {i}.", "replace", edit), Step(f"Checking again, {i}.", SHELL, CHECK)]
    return steps + [Step("Done.")]


def _told(turn) -> bool:
    return any("loopwatch" in str(r.get("response")) for r in turn.results) or any("loopwatch" in t for t in turn.texts)


def test_replace_calls_that_never_land_are_stopped_at_the_6th_check(tmp_path):
    calc = project(tmp_path / "work")
    with ScriptedGemini({"noland": _script(calc, 10, lands=False)}) as server:
        machine = GeminiRun(tmp_path, server, gemini_binary(PINNED), settings=NO_OWN_LOOP_CHECK)
        run = machine.gemini("SCENARIO:noland fix add")
        turns = server.of("noland")
    uses, results = run.of_type("tool_use"), run.results()
    names = [u["tool_name"] for u in uses]
    assert names == ["read_file", SHELL] + ["replace", SHELL] * 5, names
    assert all(results[u["tool_id"]].get("error") for u in uses if u["tool_name"] == "replace")
    assert len(turns) == len(uses)  # no model turn after the stopping call
    assert any(_told(t) for t in turns)
    row = machine.status()[""]
    assert row["stops"] == 1 and row["nudges"] == 1
    # (same_error warns the person of the refused replaces before: a warning, for the person only)
    acted = [(d["signal"], d["action"], d["message"]) for d in row["decisions"] if d["action"] != "warn"]
    assert acted == [("unchanged", "nudge", "UnchangedTree"), ("unchanged", "stop", "UnchangedTree")]
    assert calc.read_text() == "def add(a, b):\n    return a - b  # v0\n"


def test_replace_calls_that_land_with_the_same_check_are_never_stopped(tmp_path):
    calc = project(tmp_path / "work")
    with ScriptedGemini({"land": _script(calc, 8, lands=True)}) as server:
        machine = GeminiRun(tmp_path, server, gemini_binary(PINNED), settings=NO_OWN_LOOP_CHECK)
        run = machine.gemini("SCENARIO:land fix add")
        turns = server.of("land")
    uses = run.of_type("tool_use")
    assert [u["tool_name"] for u in uses] == ["read_file", SHELL] + ["replace", SHELL] * 8
    assert calc.read_text().endswith("# v8\n")
    assert turns[-1].answered == "text"  # to its own end
    row = machine.status()[""]
    assert row["stops"] == 0 and row["blocks"] == 0 and row["nudges"] == 1
