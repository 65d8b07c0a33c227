"""Plays an asciinema v2 recording's output to stdout, its gaps compressed (a tenth,
at most 0.05 s): a real agent's console, as `loopwatch run` would watch it."""

import json
import sys
import time

from _agent import note_pid

note_pid()
out = sys.stdout.buffer
last = 0.0
with open(sys.argv[1], encoding="utf-8") as fh:
    fh.readline()
    for line in fh:
        t, kind, text = json.loads(line)
        if kind != "o":
            continue
        gap = min(max(t - last, 0.0) / 10, 0.05)
        last = t
        if gap > 0.001:
            time.sleep(gap)
        out.write(text.encode("utf-8", "surrogatepass"))
        out.flush()
