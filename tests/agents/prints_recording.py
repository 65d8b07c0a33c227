"""A stand-in agent that prints a real recorded stdout stream (e.g. `claude -p
--output-format stream-json`) line by line, then waits a little and exits 0.

    prints_recording.py RECORDED.jsonl DELAY
"""

import sys
import time

from _agent import note_pid, say

note_pid()
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        say(line)
        time.sleep(float(sys.argv[2]))
time.sleep(1)
