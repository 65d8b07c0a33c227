"""An agent stuck in a 3-line cycle whose counters change every round.

All three lines go to one stream: lines written to two pipes reach a reader in an
order the scheduler decides (stdout alone would be a 2-line cycle)."""

import time

from _agent import note_pid, say

note_pid()
n = 1
while True:
    say(f"[step {n}] running tests/test_parser.py\n")
    say(f"E   AssertionError: expected 3 tokens, got 2 (run {n}, {n * 37} ms)\n")
    say(f"[step {n}] applying the same patch to src/parser.py (attempt {n})\n")
    n += 1
    time.sleep(0.005)
