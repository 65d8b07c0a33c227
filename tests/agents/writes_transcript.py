"""A stand-in for `claude` or `codex` that writes a real recorded transcript, line by
line, where that agent writes its own, while its console says nothing useful.

    writes_transcript.py claude-code|codex RECORDED.jsonl DELAY CONSOLE

Claude Code: `$HOME/.claude/projects/<cwd, non-alphanumerics as ->/<session>.jsonl`
(as the real CLI wrote `/tmp/cc-e2e/work` to `-tmp-cc-e2e-work`). Codex:
`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, its `session_meta`
naming this working directory, as the real one does. Each line is written in two
pieces (a reader must wait for the rest of a line). CONSOLE is `quiet` (nothing) or
`same` (one line exactly, over and over: what would be a loop on a console).
After the last line it waits a little at the prompt, then exits 0.
"""

import json
import os
import re
import sys
import time
import uuid
from datetime import datetime

from _agent import note_pid, say

note_pid()
BEGAN = time.monotonic()
agent, recorded, delay, console = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
cwd = os.getcwd()
if agent == "claude-code":
    folder = os.path.join(os.environ["HOME"], ".claude", "projects", re.sub(r"[^A-Za-z0-9]", "-", cwd))
    name = f"{uuid.uuid4()}.jsonl"
else:
    now = datetime.now()
    folder = os.path.join(
        os.environ.get("CODEX_HOME") or os.path.join(os.environ["HOME"], ".codex"),
        "sessions",
        now.strftime("%Y"),
        now.strftime("%m"),
        now.strftime("%d"),
    )
    name = f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{uuid.uuid4()}.jsonl"
os.makedirs(folder, exist_ok=True)
time.sleep(0.3)  # the agent starts up before it writes anything
with open(recorded, "rb") as fh:
    lines = fh.read().splitlines(keepends=True)
with open(os.path.join(folder, name), "wb") as out:
    for n, line in enumerate(lines):
        if agent == "codex" and n == 0:  # the rollout names where it runs, as Codex does
            first = json.loads(line)
            first["payload"]["cwd"] = cwd
            line = json.dumps(first).encode() + b"\n"
        half = len(line) // 2
        out.write(line[:half])
        out.flush()
        time.sleep(delay / 2)
        out.write(line[half:])
        out.flush()
        if console == "same":
            say("  working...\n")
        time.sleep(delay / 2)
# The same line for 6 s at least: a console loop needs a span of time to be proof
# (`repeated_lines.min_span`), and this one must be proof, to show the transcript outranks it.
until = BEGAN + (6.0 if console == "same" else 0.0)
for n in range(10_000):
    if n >= 20 and time.monotonic() >= until:
        break
    if console == "same":
        say("  working...\n")
    time.sleep(0.05)
