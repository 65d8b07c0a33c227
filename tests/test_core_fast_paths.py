"""The core's fast paths give what their plain forms give.

Patterns are written to start with the character they need (a pattern that starts
with a lookbehind is tried at every character), loops skip what cannot change, and
sketches are compared after a length bound. Here each plain form is written out, and
a seeded stream of events (repeats, cycles, failing calls with moving counters,
edits, progress figures, streamed text, output lines with redraws) is replayed through
a monitor as shipped and through one with every fast path swapped for its plain form:
every verdict and the record must be the same. Properties check each fast form alone.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from loopwatch import Correction, Monitor, ModelText, Output, Retry, ToolCall, Turn, UserMessage
from loopwatch._core import fingerprint, lines, periodic, step, text
from loopwatch._core.signals import common, cycle, echo

# -- the plain forms --------------------------------------------------------------------

_COUNT = r"[0-9]+\s*(?:/|of)\s*[0-9]+\b"
PROGRESS = re.compile(r"(?<![0-9])[0-9]+(?:\.[0-9]+)?\s?(?:%|[kKMGT]i?B\b)|(?<![0-9A-Za-z.])" + _COUNT)
LINE_NUMBERS = re.compile(r"(?<![A-Za-z0-9.])(?:0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]+)*)")
LINE_PROGRESS = re.compile(r"(?<![0-9])[0-9]+(?:\.[0-9]+)?\s?(?:%|[kKMGT]i?B\b)|\b" + _COUNT)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MISSING_PROGRAM = re.compile(r"command not found|is not recognized as an internal or external command|: not installed")
NEVER = re.compile(r"(?!)")


def plain_similar(a: tuple[int, ...], b: tuple[int, ...], threshold: float) -> bool:
    if a == b:
        return True
    if not a or not b:
        return False
    return Indel.normalized_similarity(a, b) >= threshold


def plain_first_words(text: str, limit: int = 0) -> str:
    return " ".join(text.split())


def plain_call_sketch(name: str, body: bytes) -> tuple[int, ...]:
    return step.sketch_of(name + " " + plain_first_words(body.decode("utf-8", "replace")), step._CALL_SKETCH_WORDS)


def plain_push(self: periodic.TailCycles, item: Any, min_period: int = 1) -> tuple[int, int, int]:
    tail, matches = self._tail, self._matches
    n = len(tail)
    for p in range(1, self.max_period + 1):
        if p <= n and tail[-p] == item:
            matches[p] += 1
        else:
            matches[p] = 0
    tail.append(item)
    best = (0, 0, 0)
    for p in range(min_period, self.max_period + 1):
        m = matches[p]
        if m == 0:
            continue
        if any(p % d == 0 and matches[d] >= m for d in range(1, p)):
            continue
        copies = (m + p) // p
        if copies > best[1]:
            best = (p, copies, m + p)
    return best


def plain_shift(self: cycle.Cycle, s: Any) -> tuple[int, int, int]:
    tail, matches, drift = self._shifts, self._shift_matches, self.params.drift
    n = len(tail)
    for p in range(1, self.params.max_period + 1):
        if p <= n and tail[-p].shifted == s.shifted and cycle._alike(tail[-p], s, drift):
            matches[p] += 1
        else:
            matches[p] = 0
    tail.append(s)
    best = (0, 0, 0)
    for p in range(2, self.params.max_period + 1):
        m = matches[p]
        if m == 0 or any(p % d == 0 and matches[d] >= m for d in range(1, p)):
            continue
        copies = (m + p) // p
        if copies > best[1]:
            best = (p, copies, m + p)
    if best[1] < 2:
        self._shift_key = None
    return best


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fast path swapped for its plain form."""
    monkeypatch.setattr(fingerprint, "_PROGRESS", PROGRESS)
    monkeypatch.setattr(fingerprint, "_LINE_NUMBERS", LINE_NUMBERS)
    monkeypatch.setattr(fingerprint, "_LINE_PROGRESS", LINE_PROGRESS)
    monkeypatch.setattr(text, "_SENTENCE_END", SENTENCE_END)
    monkeypatch.setattr(lines, "_OTHER_LETTER", NEVER)
    monkeypatch.setattr(step, "_first_words", plain_first_words)
    monkeypatch.setattr(step, "_call_sketch", plain_call_sketch)
    monkeypatch.setattr(periodic.TailCycles, "push", plain_push)
    monkeypatch.setattr(cycle.Cycle, "_shift", plain_shift)
    monkeypatch.setattr(cycle, "similar", plain_similar)
    monkeypatch.setattr(echo, "similar", plain_similar)


# -- a stream that reaches every fast path ----------------------------------------------

WORDS = "def return value error import path file test none data index name read write open parse".split()
# Figures of every kind the patterns read, and near misses (`v3/10`, `12.5.1%`, `0x1f`).
FIGURES = [
    "40%",
    "12.5 %",
    "48 MB",
    "3KiB",
    "3 of 10",
    "3/10",
    "v3/10",
    "x.5%",
    "12.5.1%",
    "0x1f",
    "file12.o",
    "2024/01",
    "e1eabb",
    "[ 45%]",
    "....FF.",
]
SPACES = [" ", "  ", "\t", "\n", "\u00a0", "\u2028", "\x1c", " \n "]


def phrase(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        out.append(rng.choice(FIGURES) if rng.random() < 0.3 else rng.choice(WORDS))
        out.append(rng.choice(SPACES))
    return "".join(out)


def stream(seed: int, size: int = 400) -> list[Any]:
    rng = random.Random(seed)
    calls = [
        ToolCall("Bash", {"command": f"pytest tests/test_{i}.py -k '{rng.choice(WORDS)} x'"}, phrase(rng, 30))
        for i in range(6)
    ]
    events: list[Any] = []
    n = 0
    while len(events) < size:
        r = rng.random()
        n += 1
        if r < 0.15:  # the same call and result, in a row
            c = rng.choice(calls)
            events += [c] * rng.randint(2, 5)
        elif r < 0.25:  # a cycle
            k = rng.randint(2, 4)
            events += rng.sample(calls, k) * rng.randint(2, 3)
        elif r < 0.35:  # a failing call with a moving counter
            for k in range(rng.randint(2, 5)):
                result = f"/bin/bash: line {1130 + 15 * k}: cd: x/: No such file or directory"
                events.append(ToolCall("Bash", {"command": "cd x/"}, result, error=True))
        elif r < 0.45:  # edits at a shifting line range, and writes
            body = phrase(rng, 60)
            for k in range(rng.randint(2, 4)):
                events.append(
                    ToolCall(
                        "Edit",
                        {"command": f"edit {72 - k}:{83 - k}\n{body}"},
                        "Error: the edit failed " + phrase(rng, 4),
                        error=True,
                    )
                )
            events.append(ToolCall("Write", {"path": f"a{n}.py", "content": body}, "ok", changed=(f"a{n}.py",)))
        elif r < 0.55:  # a new call
            events.append(ToolCall("Read", {"path": f"src/{rng.choice(WORDS)}.py"}, phrase(rng, rng.randint(0, 150))))
        elif r < 0.70:  # model text, streamed or whole
            said = ". ".join(phrase(rng, 5) for _ in range(rng.randint(1, 5))) + rng.choice([".", "!", "?", ""])
            if rng.random() < 0.5:
                for i in range(0, len(said), 17):
                    events.append(ModelText(said[i : i + 17], chunk=True))
                events.append(Turn())
            else:
                events.append(ModelText(said))
        elif r < 0.85:  # output lines, some redrawn
            data = "".join(
                phrase(rng, rng.randint(1, 6)) + rng.choice(["\n", "\r", "\r\n", "\x1b[2K\r"]) for _ in range(4)
            )
            events.append(Output(data, stream=rng.choice(("stdout", "stderr"))))
        elif r < 0.9:
            events.append(Retry(reason="overloaded"))
        elif r < 0.95:
            events.append(Correction("No such tool: str_replace"))
        elif r < 0.97:
            events.append(UserMessage())
        else:
            events.append(Turn())
    return events


def replay(events: list[Any]) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    monitor = Monitor(profile="unattended")
    verdicts = []
    for at, event in enumerate(events):
        verdict = monitor.observe(event._replace(at=float(at)))
        verdicts.append((verdict.action, verdict.signal, verdict.message, verdict.description, verdict.finding))
    return verdicts, monitor.record()


SEEDS = range(6)


@pytest.fixture(scope="module")
def shipped() -> dict[int, Any]:
    return {seed: replay(stream(seed)) for seed in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
def test_a_stream_gets_the_same_verdicts_with_the_plain_forms(seed: int, shipped: dict[int, Any], plain: None) -> None:
    verdicts, record = shipped[seed]
    assert sum(1 for v in verdicts if v[0].value != "allow") > 5  # the stream does reach the signals
    plain_verdicts, plain_record = replay(stream(seed))
    assert plain_verdicts == verdicts
    assert plain_record == record


# -- each fast form alone ---------------------------------------------------------------

chars = st.sampled_from(list("0123456789.%kKMGTiBbxXafF/_-Es ") + ["of", "\t", "\n", "\u00a0", "٣", "é", "!", "?", "["])
texts = st.lists(chars, max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_the_patterns_find_what_their_plain_forms_find(s: str) -> None:
    assert fingerprint._PROGRESS.findall(s) == PROGRESS.findall(s)
    assert [m.span() for m in fingerprint._LINE_NUMBERS.finditer(s)] == [m.span() for m in LINE_NUMBERS.finditer(s)]
    assert fingerprint._LINE_PROGRESS.findall(s) == LINE_PROGRESS.findall(s)
    assert text._SENTENCE_END.split(s) == SENTENCE_END.split(s)
    if lines._OTHER_LETTER.search(s):  # a letter that survives the pytest marks
        assert lines._LETTER.search(lines._PYTEST_MARKS.sub("", s))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "command",
                " not ",
                "found",
                ": not",
                " installed",
                "is not recognized as an internal",
                " or ",
                "external command",
                "x",
                "\n",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_a_missing_program_is_told_as_the_plain_pattern_tells_it(s: str) -> None:
    assert any(words in s for words in step._MISSING_PROGRAM) == (MISSING_PROGRAM.search(s) is not None)


@st.composite
def sketch_pairs(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two sketches, the second often the first with a few words dropped or added
    (alike ones, near any threshold)."""
    a = draw(st.lists(st.integers(0, 6), max_size=60))
    if draw(st.booleans()):
        return tuple(a), tuple(draw(st.lists(st.integers(0, 6), max_size=60)))
    b = list(a)
    for _ in range(draw(st.integers(0, 8))):
        if b and draw(st.booleans()):
            del b[draw(st.integers(0, len(b) - 1))]
        else:
            b.insert(draw(st.integers(0, len(b))), draw(st.integers(0, 6)))
    return tuple(a), tuple(b)


@settings(max_examples=300, deadline=None)
@given(sketch_pairs(), st.one_of(st.floats(0, 1), st.sampled_from([0.8, 0.9])))
def test_similar_is_the_indel_similarity(pair: tuple[tuple[int, ...], tuple[int, ...]], threshold: float) -> None:
    exact = Indel.normalized_similarity(*pair)  # and the thresholds right at the pair's similarity
    for t in (threshold, exact, min(1.0, exact + 1e-9), max(0.0, exact - 1e-9)):
        assert common.similar(*pair, t) == plain_similar(*pair, t), t


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=80), st.integers(1, 4))
def test_tail_cycles_are_those_of_the_plain_loop(items: list[int], min_period: int) -> None:
    fast, slow = periodic.TailCycles(6), periodic.TailCycles(6)
    for item in items:
        assert fast.push(item, min_period) == plain_push(slow, item, min_period)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", "{}", "\u00a0", " ", "\n", "x\ty"]), max_size=120).map("".join))
def test_a_call_sketch_reads_the_first_words_only(body: str) -> None:
    whole = step.sketch_of("Bash " + plain_first_words(body), step._CALL_SKETCH_WORDS)
    assert step.sketch_of("Bash " + step._first_words(body), step._CALL_SKETCH_WORDS) == whole


call_bodies = st.lists(
    st.sampled_from(["a", "bb", "{}", '"k":', " ", "\n", "\t", "\x0b", "\x1c", "\x1f", "\u00a0", "é", "\udcff"]),
    max_size=120,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["Bash", "", "my tool", "x\ty", " "]), st.one_of(call_bodies, st.binary(max_size=40)))
def test_a_call_sketch_is_that_of_its_text(name: str, body: str | bytes) -> None:
    data = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    assert step._call_sketch(name, data) == plain_call_sketch(name, data)
