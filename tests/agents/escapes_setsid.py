"""An agent that starts a daemon in a session of its own (out of reach of its
process group) which keeps stdout open and prints for 20 s, then either exits at
once (`exit`) or sleeps (`stay`). The daemon prints changing lines, or (with `same`
as the second argument) one line over and over. It ends itself after 20 s; the test
kills it sooner by the pid noted second."""

import os
import sys
import time

from _agent import note_pid, say


def _word(n: int) -> str:
    """A different word for every n, in letters (digits would be masked as counters)."""
    return "".join(chr(97 + int(d)) for d in str(n * 7919 % 1000003))


note_pid()
how = sys.argv[1] if len(sys.argv) > 1 else "exit"
same = sys.argv[2:] == ["same"]
pid = os.fork()
if pid == 0:
    os.setsid()
    note_pid()
    deadline = time.monotonic() + 20
    n = 0
    while time.monotonic() < deadline:
        n += 1
        try:
            say("daemon: still here\n" if same else f"daemon: processed item {_word(n)} of the queue\n")
        except BrokenPipeError:
            os._exit(0)
        time.sleep(0.02)
    os._exit(0)
time.sleep(0.3)  # the daemon has noted its pid
say("started the daemon\n")
if how == "stay":
    time.sleep(60)
sys.exit(0)
