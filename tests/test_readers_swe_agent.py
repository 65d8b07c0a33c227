"""SWE-agent 1.1 trajectories, read right: a `.traj` written here in the shape SWE-agent
1.1 writes (its `TrajectoryStep`: `action`, `observation`, `response`, `thought`,
`execution_time`, a dict `state`, the `query` sent to the model, `extra_info`; its
`history` of messages with `message_type` and `agent: "main"`; `info` with the versions,
`exit_status` and `model_stats`), and what the reader must make of it: each step a call,
in order, with its tool, input, result, error and changed file.

SWE-agent 1.1's tools: `bash` commands, the `str_replace_editor` (view, create,
str_replace, insert, undo_edit: its replies say whether the edit was made), and `submit`
(whose observation is the patch). Its bash tool refuses an interactive command
("Operation '...' is not supported by this environment.") and a command with a syntax
error ("Your bash command contained syntax errors and was NOT executed").
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from readers_support import calls

from loopwatch._readers import detect, read
from loopwatch._readers.swe_agent import sniff

REPO = "/testbed"
FILE = f"{REPO}/src/shapes/area.py"

# (action, observation, the error it is, the file it changed)
STEPS: list[tuple[str, str, bool, str | None]] = [
    (f'find {REPO}/src -name "*.py" | grep area', f"{FILE}\n", False, None),
    (
        f"str_replace_editor view {FILE}",
        f"Here's the result of running `cat -n` on {FILE}:\n     1\tdef area(w, h):\n     2\t    return w + h\n",
        False,
        None,
    ),
    (
        "python reproduce.py",
        'Traceback (most recent call last):\n  File "/testbed/reproduce.py", line 3, in <module>\n    assert area(2, 3) == 6\nAssertionError\n',
        True,
        None,
    ),
    (
        f"str_replace_editor str_replace {FILE}   --old_str '    return w * h'   --new_str '    return w * h'",
        f"No replacement was performed, old_str `    return w * h` did not appear verbatim in {FILE}.",
        True,
        None,
    ),
    (
        f"str_replace_editor str_replace {FILE}   --old_str '    return w + h'   --new_str '    return w * h'",
        f"The file {FILE} has been edited. Here's the result of running `cat -n` on a snippet of {FILE}:\n     1\tdef area(w, h):\n     2\t    return w * h\nReview the changes and make sure they are as expected. Edit the file again if necessary.",
        False,
        FILE,
    ),
    ("vim reproduce.py", "Operation 'vim reproduce.py' is not supported by this environment.", True, None),
    ("python reproduce.py", "Your command ran successfully and did not produce any output.", False, None),
    (
        f"str_replace_editor create {REPO}/tests/test_area.py --file_text 'from shapes.area import area'",
        f"File created successfully at: {REPO}/tests/test_area.py",
        False,
        f"{REPO}/tests/test_area.py",
    ),
    ("python -m pytest tests/test_area.py -q", "1 passed in 0.01s\n", False, None),
    (
        "submit",
        "diff --git a/src/shapes/area.py b/src/shapes/area.py\n--- a/src/shapes/area.py\n+++ b/src/shapes/area.py\n@@ -1,2 +1,2 @@\n def area(w, h):\n-    return w + h\n+    return w * h\n",
        False,
        None,
    ),
]


def _tool_call(i: int, action: str) -> dict[str, Any]:
    name = action.split(None, 1)[0] if action.startswith(("str_replace_editor", "submit")) else "bash"
    return {
        "id": f"call_{i}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps({"command": action})},
    }


def trajectory() -> dict[str, Any]:
    """A SWE-agent 1.1 trajectory, as `DefaultAgent.save_trajectory` writes it."""
    system = {
        "role": "system",
        "content": "You are a helpful assistant that can interact with a computer.",
        "agent": "main",
        "message_type": "system_prompt",
    }
    demo = {
        "role": "user",
        "content": "Here is a demonstration of how to solve a task.",
        "agent": "main",
        "message_type": "demonstration",
        "is_demo": True,
    }
    task = {
        "role": "user",
        "content": [{"type": "text", "text": "<uploaded_files>\n/testbed\n</uploaded_files>\nFix area()."}],
        "agent": "main",
        "message_type": "user",
    }
    history: list[dict[str, Any]] = [system, demo, task]
    steps = []
    diff = ""
    for i, (action, observation, _, changed) in enumerate(STEPS):
        thought = f"Step {i + 1}: let me {action.split()[0]}."
        call = _tool_call(i, action)
        query = [dict(m) for m in history]  # what the model was sent for this step
        history.append(
            {
                "role": "assistant",
                "content": thought,
                "thought": thought,
                "action": action,
                "agent": "main",
                "tool_calls": [call],
                "message_type": "action",
            }
        )
        history.append(
            {
                "role": "tool",
                "content": [{"type": "text", "text": f"OBSERVATION:\n{observation}"}],
                "agent": "main",
                "message_type": "observation",
                "tool_call_ids": [call["id"]],
            }
        )
        if changed:
            diff += f"diff --git a{changed} b{changed}\n"
        steps.append(
            {
                "action": action,
                "observation": observation,
                "response": thought,
                "thought": thought,
                "execution_time": 0.25 + i / 100,
                "state": {"working_dir": REPO, "diff": diff},
                "query": query,
                "extra_info": {},
            }
        )
    return {
        "trajectory": steps,
        "history": history,
        "info": {
            "swe_agent_hash": "0" * 40,
            "swe_agent_version": "1.1.0",
            "swe_rex_version": "1.2.1",
            "swe_rex_hash": "unavailable",
            "submission": steps[-1]["observation"],
            "exit_status": "submitted",
            "edited_files30": "",
            "model_stats": {
                "instance_cost": 0.42,
                "tokens_sent": 120000,
                "tokens_received": 3000,
                "api_calls": len(STEPS),
            },
        },
        "replay_config": json.dumps({"env": {"deployment": {"image": "python:3.11"}}, "agent": {"name": "main"}}),
        "environment": "main",
    }


@pytest.fixture
def traj(tmp_path):
    path = tmp_path / "shapes__area-1.traj"
    path.write_text(json.dumps(trajectory(), indent=2))
    return path


def test_it_is_told_by_its_keys_under_any_name(tmp_path):
    data = json.dumps(trajectory(), indent=2).encode()
    assert sniff("run.json", data) and detect("run.json", data) == "swe-agent"


def test_each_step_is_a_call_in_order_with_its_tool_input_and_result(traj):
    (session,) = list(read(str(traj)))
    found = calls(session)
    assert [c.source_ref for c in found] == [f"trajectory[{i}]" for i in range(len(STEPS))]
    tools = [c.name for c in found]
    assert tools == [
        "bash",
        "str_replace_editor",
        "bash",
        "str_replace_editor",
        "str_replace_editor",
        "bash",
        "bash",
        "str_replace_editor",
        "bash",
        "submit",
    ]
    assert [c.input for c in found] == [{"command": action} for action, *_ in STEPS]
    assert [c.result for c in found] == [observation for _, observation, *_ in STEPS]


def test_errors_are_the_failed_steps(traj):
    (session,) = list(read(str(traj)))
    assert [c.error for c in calls(session)] == [error for _, _, error, _ in STEPS]


def test_an_edit_that_was_made_changed_its_file_and_a_refused_one_did_not(traj):
    (session,) = list(read(str(traj)))
    assert [c.changed for c in calls(session)] == [(changed,) if changed else () for *_, changed in STEPS]


def test_its_one_agent_is_the_sessions_own_and_its_totals_are_read(traj):
    (session,) = list(read(str(traj)))
    found = calls(session)
    assert {c.agent for c in found} == {None}  # `agent: "main"` is no sub-agent
    assert session.meta["coder"] is False
    assert (session.tokens, session.cost, session.outcome) == (123000, 0.42, "submitted")
    assert session.session == "shapes__area-1"
