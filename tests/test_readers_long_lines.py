"""A line over the cap (`jsonio.LINE_CAP`) is read in bounded memory: its long strings
are kept as their head and tail, cut between characters, and the core sees the same
digests as from the whole line (it reads no more of a result than that)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch._readers import events as events_reader
from loopwatch._readers.jsonio import lines
from loopwatch._core.step import make_step

# characters whose JSON forms are one byte, an escape, a \uXXXX escape, a surrogate
# pair or several UTF-8 bytes: every kind of boundary a cut can fall on
_CHARS = st.sampled_from(["a", "b", "\\", '"', "\n", "\x01", "é", "\u2028", "\ud7ff", "😀", "\\\\"])


def _head_and_tail(got: str, whole: str, keep: int) -> bool:
    """`got` is a head of `whole` and a tail of it, each at most `keep` characters."""
    return any(
        whole.startswith(got[:i]) and whole.endswith(got[i:]) and i <= keep and len(got) - i <= keep
        for i in range(len(got) + 1)
    )


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(_CHARS, min_size=0, max_size=1200).map("".join),
    other=st.integers(0, 1200),
    keep=st.sampled_from([5, 13, 40, 200]),
    chunk=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]),
    ascii_only=st.booleans(),
    cap=st.sampled_from([400, 2000]),
)
def test_a_long_line_is_the_same_json_with_its_long_strings_as_head_and_tail(text, other, keep, chunk, ascii_only, cap):
    obj = {
        "type": "tool",
        "name": "Bash",
        "input": {"command": "make"},
        "result": text,
        "other": [text[:other], 1, None],
    }
    raw = (json.dumps(obj).encode() if ascii_only else orjson.dumps(obj)) + b"\n"
    _check(obj, raw, cap, keep, chunk, text, text[:other])


def test_every_cut_position_falls_between_characters():
    # every kind of character at every offset from the cut, both encodings
    text = 'a😀\\"é\n\x01\u2028' * 40
    for ascii_only in (False, True):
        for shift in range(16):
            obj = {"type": "tool", "result": "b" * shift + text, "other": ["", 1, None]}
            raw = (json.dumps(obj).encode() if ascii_only else orjson.dumps(obj)) + b"\n"
            for keep in (3, 4, 5, 6, 7, 11, 12, 13):
                assert _check(obj, raw, 300, keep, 7, "b" * shift + text, "") == "cut"


def _check(obj, raw, cap, keep, chunk, text, other):
    got = list(lines(io.BytesIO(raw + b'{"next": 1}\n'), cap=cap, keep=keep, chunk=chunk))
    assert [number for number, _, _ in got] == [1, 2] and got[1][1:] == (b'{"next": 1}\n', None)
    _, shrunk, note = got[0]
    if len(raw) <= cap + 1:  # the cap is on the line without its newline
        assert (shrunk, note) == (raw, None)
        return "whole"
    assert note is not None
    if not shrunk:  # still over the cap once cut: skipped, and said so
        assert note.startswith("line 1: skipped")
        return "skipped"
    assert len(shrunk) <= cap and note.startswith("line 1: read in part")
    value = orjson.loads(shrunk)  # always valid JSON: no cut inside an escape or a character
    assert {k: v for k, v in value.items() if k not in ("result", "other")} == {
        k: v for k, v in obj.items() if k not in ("result", "other")
    }
    for part, whole in ((value["result"], text), (value["other"][0], other)):
        assert part == whole or _head_and_tail(part, whole, keep)
        if max(len(json.dumps(whole)), len(orjson.dumps(whole))) - 2 <= 2 * keep:
            assert part == whole  # a string within 2 x keep is never cut
    return "cut"


def test_a_result_cut_to_its_head_and_tail_gives_the_digests_of_the_whole():
    # 6 MiB of JSON in one string, with escapes, multibyte characters and surrogate
    # pairs right where the cuts fall; read with the real `_KEEP` (1 MiB), a 4 MiB cap
    unit = 'step 12% [##   ] é😀\t"quoted" \\path\\ ' * 7
    result = unit * (6 * 2**20 // len(unit) + 1)
    line = json.dumps({"type": "tool", "name": "Bash", "input": {"command": "make"}, "result": result}).encode() + b"\n"
    ((_, shrunk, note),) = lines(io.BytesIO(line), cap=4 * 2**20)
    assert note and "read in part" in note and len(shrunk) < 2.1 * 2**20
    whole, cut = (events_reader.parse_line(raw) for raw in (line, shrunk))
    assert len(cut.result) < len(whole.result)
    steps = [make_step(0, e.name, e.input, e.result, e.error, e.changed, 0.0) for e in (whole, cut)]
    assert steps[0] == steps[1]


@pytest.mark.slow
def test_a_200_mib_line_is_scanned_without_holding_it(tmp_path):
    path = tmp_path / "line.jsonl"
    chunk = b"progress 10% done, file_0001.o compiled; " * 1024
    with open(path, "wb") as fh:
        fh.write(b'{"type": "user"}\n{"type": "tool", "name": "Bash", "input": {"command": "make"}, "result": "')
        for _ in range(200 * 2**20 // len(chunk)):
            fh.write(chunk)
        fh.write(b'"}\n{"type": "tool", "name": "Bash", "input": {"command": "ls"}, "result": "a.py"}\n')
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking process
    code = (
        "import re, sys; from loopwatch._readers import read\n"
        "(s,) = read(sys.argv[1]); n = sum(1 for _ in s.events)\n"
        "peak = re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(n, int(peak) // 1024, s.skipped)"
    )
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    events, peak_mib, skipped = out.stdout.split(" ", 2)
    assert events == "3"  # the huge event is not lost, nor the one after it
    assert "line 2: read in part, 200 MiB in one line" in skipped
    # the line is never held: well under one copy of it (issue 9: 4x, 840 MB)
    assert int(peak_mib) < 100, peak_mib


def test_a_line_over_the_cap_even_once_cut_is_skipped_and_said_so():
    many = orjson.dumps({"type": "tool", "name": "Bash", "input": {"command": "x"}, "result": ["ab"] * 400}) + b"\n"
    got = list(lines(io.BytesIO(many + b'{"type": "user"}\n'), cap=1000, keep=5))
    assert got[0][:2] == (1, b"") and got[0][2].startswith("line 1: skipped, 0 MiB in one line, over the 0 MiB")
    assert got[1] == (2, b'{"type": "user"}\n', None)  # the next line is read as usual


def test_json_lines_readers_report_a_line_read_in_part(tmp_path):
    # JsonLines (Claude Code, Codex, OpenHands) reads through the same `lines`
    from loopwatch._readers.jsonio import JsonLines

    big = b'{"type": "x", "text": "' + b"ab" * (9 * 2**20) + b'"}\n'
    objects = JsonLines("t.jsonl", io.BytesIO(b'{"a": 1}\n' + big + b'{"b": 2}\n'))
    got = list(objects)
    assert [number for number, _ in got] == [1, 2, 3] and len(got[1][1]["text"]) == 2 * 2**20
    assert objects.skipped == ["line 2: read in part, 18 MiB in one line: 1 string kept as its first and last 1 MiB"]


@pytest.mark.slow
def test_a_200_mib_cast_line_is_read_without_holding_it(tmp_path):
    """The asciicast reader reads through the same `lines`: one 200 MiB output event
    costs no more than it does in an events file."""
    path = tmp_path / "run.cast"
    chunk = b"Compiling file_0001.o ... ok\\r\\n" * 1024
    with open(path, "wb") as fh:
        fh.write(b'{"version": 2, "width": 80, "height": 24}\n[0.5, "o", "$ make\\r\\n"]\n[1.0, "o", "')
        for _ in range(200 * 2**20 // len(chunk)):
            fh.write(chunk)
        fh.write(b'"]\n[2.0, "o", "done\\r\\n"]\n')
    code = (
        "import re, sys; from loopwatch._readers import read\n"
        "(s,) = read(sys.argv[1]); texts = [len(e.data) for e in s.events]\n"
        "peak = re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(len(texts), max(texts), int(peak) // 1024, s.skipped)"
    )
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    events, longest, peak_mib, skipped = out.stdout.split(" ", 3)
    assert events == "3"  # the huge event is kept (its head and tail), and the one after it
    assert int(longest) <= 2 * 2**20  # its first and last MiB
    assert "line 3: read in part, 200 MiB in one line" in skipped
    assert int(peak_mib) < 100, peak_mib  # issue 24: 620 MB
