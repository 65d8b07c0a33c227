"""Every module-level regex of loopwatch runs in linear time on adversarial input.

Tool results and output lines are capped at 128 KiB (`fingerprint._RESULT_LIMIT` each
side), so a pattern that is quadratic on some input turns one event into minutes (a run
of digits in a result that holds `B` took 47 s for 60 KB). The patterns are found by
walking the package's modules, so a new one is covered without being listed here. Each
is timed (CPU time of this process, the best of a few runs) on the same adversarial
text at size n and 4n: a linear pattern takes about 4x as long, a quadratic one 16x. A ratio, not an absolute timing, so a slow machine does
not fail it; a tiny absolute time (a pattern that rejects the text at once) is not
compared, its ratio being noise.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time

import pytest

import loopwatch

pytestmark = pytest.mark.slow

CAP = 128 * 1024
FACTOR = 4
MAX_RATIO = 9.0  # linear: ~4; quadratic: ~16
NOISE_FLOOR = 0.002  # seconds at the larger size below which the ratio is noise

# (head, unit repeated, tail): digit runs next to `B` and `%`, repeated separators,
# openers that are never closed, and the literal heads of the patterns that scan on
# to the end of a line or a span.
TEMPLATES = [
    ("", "1", " B"),
    ("", "1", "%"),
    ("", "1", " KiB"),
    ("1.", "1", "x"),
    ("", "1.", "%"),
    ("", "1 ", "B"),
    ("", "1B", ""),
    ("", "1%", ""),
    ("", "B1", ""),
    ("", "%1", ""),
    ("", "1/", ""),
    ("", "1 of ", ""),
    ("", " ", "x"),
    ("a", " ", "b"),
    ("", "\t \n", "x"),
    ("", "-", "x"),
    ("", "/", "x"),
    ("", "|", ""),
    ("", ".", ""),
    ("", "=", ""),
    ("", "open(", "'w'"),
    ("", "open('", ""),
    ("open(", "a", "'w'"),
    ("", '"', ""),
    ("", "'", ""),
    ("", '"a', ""),
    ("", "\\", ""),
    ("", '\\"', ""),
    ("", "`", ""),
    ("", "```", ""),
    ("```bash", " ", ""),
    ("", "\x1b[", ""),
    ("", "\x1b]", ""),
    ("\x1b]", "a", ""),
    ("", "[", ""),
    ("[", "=", ""),
    ("", "(", ""),
    ("(", "1", ""),
    ("", ":", ""),
    ("", "1:", ""),
    ("", "a", ""),
    ("", "a ", "!"),
    ("", ">", ""),
    ("", "> ", ""),
    ("", "sed ", ""),
    ("git", " ", "x"),
    ("cat", " ", "x"),
    ("*** Add File: a", " ", "b"),
    ("*** Move to: a", " ", "b"),
    ("Exit code: 1", " ", "x"),
    ("", "<returncode>", ""),
    ("", "{", ""),
    ("", '{"type":', ""),
    ("", '"a":', ""),
    ("", "i ", ""),
    ("", "sorry ", ""),
    ("", "Waiting ", ""),
    ("mini-swe-agent (step 1, $", "1", "x"),
]


def _patterns() -> list[tuple[str, re.Pattern]]:
    found: dict[tuple[str, int], tuple[str, re.Pattern]] = {}
    for module in pkgutil.walk_packages(loopwatch.__path__, "loopwatch."):
        try:
            mod = importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, value in vars(mod).items():
            if isinstance(value, re.Pattern):
                found.setdefault((value.pattern, value.flags), (f"{module.name}.{name}", value))
    return sorted(found.values(), key=lambda item: item[0])


PATTERNS = _patterns()


def _text(template: tuple[str, str, str], size: int, binary: bool) -> str | bytes:
    head, unit, tail = template
    text = head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail
    return text.encode("utf-8") if binary else text


def _time(pattern: re.Pattern, text: str | bytes) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.process_time()  # CPU time: a preempted run is not a slow pattern
        pattern.findall(text)  # type: ignore[arg-type]
        best = min(best, time.process_time() - start)
        if best > 0.05:  # slow enough that preemption is a small part of it
            break
    return best


def test_the_walk_finds_the_patterns_that_read_results():
    names = {name for name, _ in PATTERNS}
    for expected in (
        "loopwatch._core.fingerprint._PROGRESS",
        "loopwatch._core.fingerprint._LINE_PROGRESS",
        "loopwatch._readers._common._WRITES",
        "loopwatch._core.lines._PROGRESS",
    ):
        assert expected in names


def _ratio(pattern: re.Pattern, small: str | bytes, large: str | bytes) -> float:
    """t(large) / t(small); a high ratio is measured three times more (the machine is shared,
    and one preempted run is not a quadratic pattern) and the lowest is kept."""
    ratio = 0.0
    for attempt in range(4):
        t_small, t_large = _time(pattern, small), _time(pattern, large)
        if t_large < NOISE_FLOOR:
            return 0.0
        ratio = t_large / max(t_small, 1e-9) if attempt == 0 else min(ratio, t_large / max(t_small, 1e-9))
        if ratio <= MAX_RATIO or t_large > 0.5:  # a clear case needs no second look
            return ratio
    return ratio


@pytest.mark.parametrize("name,pattern", PATTERNS, ids=[name for name, _ in PATTERNS])
def test_linear_time_on_adversarial_input(name, pattern):
    binary = isinstance(pattern.pattern, bytes)
    slow = []
    for template in TEMPLATES:
        # A small pair first, so a quadratic pattern fails in seconds rather than
        # taking minutes at the cap; then the cap itself.
        for size in (CAP // FACTOR // 16, CAP // FACTOR):
            ratio = _ratio(pattern, _text(template, size, binary), _text(template, size * FACTOR, binary))
            if ratio > MAX_RATIO:
                slow.append(f"{template!r} at {size * FACTOR} chars: {ratio:.1f}x for {FACTOR}x the input")
                break
        if slow:
            break
    assert not slow, f"{name} is not linear: {slow}"
