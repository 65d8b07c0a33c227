"""An agent that handles Ctrl-C: says so and exits 130 (or, with `ignore`, ignores it)."""

import signal
import sys
import time

from _agent import note_pid, say

note_pid()
if sys.argv[1:] == ["ignore"]:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
else:

    def stop(signum, frame):
        say("interrupted, cleaning up\n")
        sys.exit(130)

    signal.signal(signal.SIGINT, stop)
say("ready\n")
for i in range(600):
    time.sleep(0.1)
