"""Parallel tool calls fire hooks concurrently: nothing may be lost or counted twice."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hook_support import Agent, bash, state_actions

pytestmark = pytest.mark.slow


def test_32_concurrent_post_tool_use_calls_lose_nothing(tmp_path):
    agent = Agent(tmp_path / "state", tmp_path, session="sess-parallel")
    agent.run("Bash", bash("git status"), response={"stdout": "clean"})  # the database exists
    payloads = [
        {
            **agent.base("PostToolUse"),
            "tool_name": "Read",
            "tool_input": {"file_path": f"/p/src/mod_{i}.py"},
            "tool_response": {"type": "text", "file": {"filePath": f"/p/src/mod_{i}.py", "content": f"x = {i}\n"}},
            "tool_use_id": f"toolu_batch_{i:02d}",
        }
        for i in range(32)
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "loopwatch", "hook"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=agent.env(),
        )
        for _ in payloads
    ]
    for proc, payload in zip(procs, payloads):
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
    results = [(proc.wait(timeout=60), proc.stdout.read(), proc.stderr.read()) for proc in procs]
    assert all(code == 0 for code, _, _ in results), results
    assert not (agent.state / "hook.log").exists(), (agent.state / "hook.log").read_text()
    assert state_actions(agent.state, "sess-parallel") == 33

    # The same calls reported again as one PostToolBatch are not counted twice;
    # a call only the batch reports is.
    batch = {
        **agent.base("PostToolBatch"),
        "tool_calls": [
            {
                "tool_name": p["tool_name"],
                "tool_input": p["tool_input"],
                "tool_use_id": p["tool_use_id"],
                "tool_response": p["tool_response"],
            }
            for p in payloads
        ]
        + [
            {
                "tool_name": "Glob",
                "tool_input": {"pattern": "**/*.py"},
                "tool_use_id": "toolu_batch_new",
                "tool_response": "a.py",
            }
        ],
    }
    assert agent.send(batch).code == 0
    assert state_actions(agent.state, "sess-parallel") == 34
