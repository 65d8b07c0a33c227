"""A healthy agent: a coloured banner, a progress bar redrawn with CR, pytest dots,
a few repeated-but-legitimate lines, then a clean exit 0."""

import sys
import time

from _agent import note_pid, say

note_pid()
say("\x1b[1;32mSetting up the environment\x1b[0m\n")
for i in range(101):  # tqdm-style redraws: one line, rewritten in place
    bar = "█" * (i // 10) + " " * (10 - i // 10)
    say(f"\rDownloading model: {i:3d}%|{bar}| {i}/100 [00:0{i // 50}<00:01, 88.3it/s]")
    if i % 20 == 0:
        time.sleep(0.01)
say("\n")
for i in range(30):  # a bracketed bar, redrawn
    say(f"\r[{'=' * i}>{' ' * (29 - i)}] building wheels")
say("\n")
say("Waiting for the database...\n" * 3)  # a short, legitimate repeat
say("============================= test session starts ==============================\n")
for name in ("test_lexer", "test_parser", "test_eval", "test_cli", "test_io", "test_repl"):
    say(f"tests/{name}.py " + "." * 25 + "s.." + f" [{(len(name) * 7) % 100:3d}%]\n")
say("\x1b[32m============================= 168 passed, 6 skipped in 1.23s =============================\x1b[0m\n")
say("done: all checks green\n", sys.stderr)
sys.exit(0)
