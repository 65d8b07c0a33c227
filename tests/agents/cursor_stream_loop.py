"""A `cursor-agent -p --output-format stream-json` session in the shape Cursor's
documentation gives (never captured from the real CLI), that loops: the model runs the
same failing test again and again."""

import json
import time

from _agent import note_pid, say

note_pid()
SESSION = "5d1c0e7a-0000-4000-8000-000000000001"


def emit(obj):
    say(json.dumps(obj) + "\n")


emit(
    {
        "type": "system",
        "subtype": "init",
        "apiKeySource": "login",
        "cwd": "/repo",
        "session_id": SESSION,
        "model": "Claude 4 Sonnet",
        "permissionMode": "default",
    }
)
emit(
    {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        "session_id": SESSION,
    }
)
n = 0
while True:
    n += 1
    call_id = f"toolu_{n:04d}"
    args = {"command": "pytest -x tests/test_parser.py", "workingDirectory": ""}
    emit(
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Running the tests."}]},
            "session_id": SESSION,
        }
    )
    emit(
        {
            "type": "tool_call",
            "subtype": "started",
            "call_id": call_id,
            "tool_call": {"shellToolCall": {"args": args}},
            "session_id": SESSION,
        }
    )
    result = {
        "success": {
            "command": args["command"],
            "exitCode": 1,
            "stdout": "FAILED tests/test_parser.py::test_tokens - AssertionError: expected 3, got 2",
            "stderr": "",
        }
    }
    emit(
        {
            "type": "tool_call",
            "subtype": "completed",
            "call_id": call_id,
            "tool_call": {"shellToolCall": {"args": args, "result": result}},
            "session_id": SESSION,
        }
    )
    time.sleep(0.005)
