"""An interactive agent that looks at its terminal.

tty_probe.py report   print what it sees (isatty of 0/1/2, window size, a
                      controlling terminal, foreground group), then `size R C`
                      on every SIGWINCH, `got: LINE` for each line typed, and
                      exits 0 on `bye`, 130 on Ctrl-C (SIGINT)
tty_probe.py bytes    put its terminal in raw mode and write every byte value, then 64 KiB of
                      seeded random bytes
"""

import json
import os
import random
import signal
import sys
import tty

from _agent import note_pid, say

note_pid()
if sys.argv[1] == "bytes":
    tty.setraw(1)
    data = bytes(range(256)) + random.Random(11).randbytes(1 << 16) + b"\x1b[31mred\x1b[0m\r\n\rover"
    os.write(1, data)
    sys.exit(0)


def size() -> str:
    cols, rows = os.get_terminal_size(0)
    return f"size {rows} {cols}"


try:
    fd = os.open("/dev/tty", os.O_RDWR)
    ctty = True
    foreground = os.tcgetpgrp(fd) == os.getpgrp()
    os.close(fd)
except OSError:
    ctty = foreground = False


def interrupted(*_):
    say("interrupted\n")
    sys.exit(130)


# handlers first: the test acts once it has read what is printed below
signal.signal(signal.SIGINT, interrupted)
signal.signal(signal.SIGWINCH, lambda *_: say(size() + "\n"))
say(json.dumps({"isatty": [os.isatty(n) for n in (0, 1, 2)], "ctty": ctty, "foreground": foreground}) + "\n")
say(size() + "\n")
for line in sys.stdin:
    say(f"got: {line.strip()}\n")
    if line.strip() == "bye":
        sys.exit(0)
