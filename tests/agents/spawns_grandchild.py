"""An agent that starts a helper process (which ignores SIGTERM), then loops on a
retry line, or (with `exit`) exits at once leaving the helper behind."""

import subprocess
import sys
import time

from _agent import note_pid, say

note_pid()
helper = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
)
note_pid(helper.pid)
time.sleep(0.2)  # let the helper set its handler
if sys.argv[1:] == ["exit"]:
    say("started the helper; bye\n")
    sys.exit(0)
n = 0
while True:
    n += 1
    say(f"helper not ready (poll {n}); retrying\n")
    time.sleep(0.005)
