"""A healthy agent waiting on its model: a heartbeat line every 0.8 s (argv[1] times,
default 15: 12 s, past the 9 s at which a line repeated over time is ended), then its
answer and a clean exit 0."""

import sys
import time

from _agent import note_pid, say

note_pid()
say("Sending the request to the model\n")
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
    say("Waiting for the model to respond...\n")
    time.sleep(0.8)
say("The model answered: 3 files changed\n")
sys.exit(0)
