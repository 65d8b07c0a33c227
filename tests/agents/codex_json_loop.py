"""A recorded-style `codex exec --json` session looping on the same failing command."""

import json
import time

from _agent import note_pid, say

note_pid()


def emit(obj):
    say(json.dumps(obj) + "\n")


emit({"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"})
emit({"type": "turn.started"})
n = 0
while True:
    item = {
        "id": f"item_{n}",
        "type": "command_execution",
        "command": "bash -lc 'cargo test parser'",
        "aggregated_output": "",
        "exit_code": None,
        "status": "in_progress",
    }
    emit({"type": "item.started", "item": item})
    emit(
        {
            "type": "item.completed",
            "item": {
                **item,
                "aggregated_output": f"error[E0308]: mismatched types\n --> src/parser.rs:{40 + n % 3}:9\n",
                "exit_code": 101,
                "status": "failed",
            },
        }
    )
    n += 1
    time.sleep(0.005)
