"""Healthy output that `repeated_lines` (default thresholds) once called a loop.

Found while building `loopwatch run` (counters inside names, `N of M`, timers and
ASCII spinners redrawn with CR). Each case feeds the monitor exactly what the
supervisor would (one `Output` per write) and expects no nudge or stop.
"""

from __future__ import annotations

import hashlib

import pytest

from loopwatch import Action, Monitor, Output


def first_intervention(chunks: list[bytes]) -> tuple[int, str] | None:
    monitor = Monitor()
    for i, chunk in enumerate(chunks):
        verdict = monitor.observe(Output(chunk, "stdout", at=i * 0.5))
        if verdict.action.rank >= Action.NUDGE.rank:
            return i, verdict.description or ""
    return None


SPINNER = b"|/-\\"

CASES = {
    # a build making progress: the counter is the progress, masking it makes 8 "copies"
    "numbered build steps": [f"Compiling module {i} of 200\n".encode() for i in range(1, 40)],
    # different files, same shape: digits inside names are masked too
    "compiler per file": [f"gcc -c -o obj/file{i}.o src/file{i}.c\n".encode() for i in range(1, 40)],
    # `docker pull`: one line per layer, the layer ids are the first 12 hex digits of a hash
    "docker layers": [
        f"{hashlib.sha256(bytes([i])).hexdigest()[:12]}: Pulling fs layer\n".encode() for i in range(1, 20)
    ],
    # a waiting-for-the-model timer redrawn in place once a second (no %, no bar)
    "elapsed timer redraw": [f"\rThinking... ({i}s)".encode() for i in range(1, 40)],
    # the classic 4-glyph ASCII spinner, redrawn in place
    "ascii spinner": [b"\r" + SPINNER[i % 4 : i % 4 + 1] + b" Working" for i in range(1, 60)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_healthy_output_is_not_a_loop(case):
    assert first_intervention(CASES[case]) is None
