"""An agent that prints a little, then hangs without a word."""

import time

from _agent import note_pid, say

note_pid()
say("Thinking about the task\n")
time.sleep(60)
