"""A recorded-style `claude -p --output-format stream-json --verbose` session that
loops: the model runs the same failing test again and again."""

import json
import time

from _agent import note_pid, say

note_pid()
SESSION = "4f1c2a7e-0000-4000-8000-000000000001"


def emit(obj):
    say(json.dumps(obj) + "\n")


emit(
    {
        "type": "system",
        "subtype": "init",
        "session_id": SESSION,
        "cwd": "/repo",
        "model": "claude-sonnet-4",
        "tools": ["Bash", "Read", "Edit"],
        "permissionMode": "bypassPermissions",
    }
)
emit(
    {
        "type": "assistant",
        "session_id": SESSION,
        "parent_tool_use_id": None,
        "message": {
            "id": "msg_0",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me run the failing test."}],
        },
    }
)
n = 0
while True:
    n += 1
    tool_id = f"toolu_{n:04d}"
    emit(
        {
            "type": "assistant",
            "session_id": SESSION,
            "parent_tool_use_id": None,
            "message": {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "Bash",
                        "input": {"command": "pytest -x tests/test_parser.py", "description": "Run the parser tests"},
                    }
                ],
            },
        }
    )
    emit(
        {
            "type": "user",
            "session_id": SESSION,
            "parent_tool_use_id": None,
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "is_error": True,
                        "content": f"FAILED tests/test_parser.py::test_tokens - AssertionError: expected 3, got 2\n1 failed in 0.{n % 10}2s",
                    }
                ],
            },
        }
    )
    time.sleep(0.005)
