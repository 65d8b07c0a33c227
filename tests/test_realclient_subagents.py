"""Session files the real Claude Code CLI wrote for a session whose sub-agent loops, read
back: one session, each agent's calls as many as the scripted model asked for, and a
scan of the CLI's own folder that reads its transcripts and skips the rest, unopened.

The real CLI (the pinned release and the current one) runs offline against a scripted
model (`real_claude_support`), without loopwatch installed, so the loop runs to its end
and what is on disk is what a user would have: `~/.claude/projects/<dir>/<session>.jsonl`,
the sub-agent's `<session>/subagents/agent-<id>.jsonl` and its `.meta.json` sidecar, and
the CLI's own files around them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from real_claude_support import (
    CLAUDE_CODE_VERSION,
    CURRENT_CLAUDE_CODE_VERSION,
    SRC,
    ClaudeRun,
    ScriptedAnthropic,
    claude_binary,
    loop_script,
    subagent_script,
)
from readers_support import calls

from loopwatch._readers import read

pytestmark = pytest.mark.slow

LOOPS = 8  # the sub-agent's script: the same failing listing this many times


def _scan(*paths: Path) -> tuple[int, list[dict], str]:
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "scan", "--json", "--no-progress", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


@pytest.mark.parametrize("version", [CLAUDE_CODE_VERSION, CURRENT_CLAUDE_CODE_VERSION])
def test_a_session_with_a_looping_sub_agent_is_one_session(tmp_path, version):
    with ScriptedAnthropic({"subagent": subagent_script(), "loop": loop_script(LOOPS)}) as server:
        run = ClaudeRun(tmp_path, server, claude_binary(version))
        finished = run.claude("SCENARIO:subagent delegate the listing")
        asked = Counter(r.answered for r in server.of("loop"))
        asked_main = Counter(r.answered for r in server.of("subagent"))
    assert finished.code == 0, finished.stderr
    assert asked["tool:Bash"] == LOOPS and asked_main["tool:Agent"] == 1  # what the model asked for

    state = run.home / ".claude"
    (session_file,) = sorted(state.glob("projects/*/*.jsonl"))
    agent_files = sorted(state.glob("projects/*/*/subagents/agent-*.jsonl"))
    assert len(agent_files) == 1 and agent_files[0].parent.parent.name == session_file.stem
    agent_id = agent_files[0].stem.removeprefix("agent-")

    # read: one session, each agent's calls
    (session,) = list(read(str(session_file)))
    per_agent = Counter((c.agent, c.name) for c in calls(session))
    assert per_agent == {(None, "Agent"): asked_main["tool:Agent"], (agent_id, "Bash"): asked["tool:Bash"]}

    # scan the CLI's folder: that one session, the loop stopped in the sub-agent, the
    # CLI's own files (its backups, 2.1.332's plugin store) left out, none unreadable
    status, found, said = _scan(state)
    assert [r["path"] for r in found] == [str(session_file)]
    assert found[0]["actions"] == LOOPS + 1 and found[0]["error"] is None
    assert found[0]["verdict"]["source_ref"].startswith(f"subagents/agent-{agent_id}.jsonl line ")
    assert "Left out by name:" in said and "of Claude Code's state" in said
    assert status == 1  # a loop would have been stopped; nothing unreadable

    # the project folder alone, and the session file named by itself: the same session
    for path in (session_file.parent, session_file):
        status, found, _ = _scan(path)
        assert [(r["path"], r["actions"], r["error"]) for r in found] == [(str(session_file), LOOPS + 1, None)]
