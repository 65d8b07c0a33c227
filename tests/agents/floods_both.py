"""An agent that writes a lot to stderr and stdout at once (a full pipe must not
deadlock the supervisor), lines that never repeat, then exits 3."""

import os
import random
import string
import sys

from _agent import note_pid

note_pid()
rng = random.Random(7)
size = int(sys.argv[1]) if sys.argv[1:] else 1 << 20
for fd in (2, 1, 2, 1):
    chunk = "".join("".join(rng.choices(string.ascii_lowercase, k=60)) + "\n" for _ in range(size // 61 // 4)).encode()
    os.write(fd, chunk)
sys.exit(3)
