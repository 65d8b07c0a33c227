"""Cutting output into lines and model text into passages."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loopwatch._core.fingerprint import digest, normalize
from loopwatch._core.lines import LineCutter
from loopwatch._core.text import PassageCutter, is_apology


def cut(*reads: str, stream: str = "stdout") -> list[bytes]:
    cutter = LineCutter()
    out: list[bytes] = []
    for data in reads:
        out += cutter.feed(data, stream)
    return out


def d(line: str) -> bytes:
    return digest(normalize(line))


# -- line ends --------------------------------------------------------------------------


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_lines_end_at_lf_and_crlf(end):
    assert cut(f"alpha{end}beta{end}") == [d("alpha"), d("beta")]


def test_a_lone_cr_ends_a_line():
    assert cut("alpha\rbeta\n") == [d("alpha"), d("beta")]


def test_bytes_are_decoded_with_replacement():
    assert cut(b"caf\xc3\xa9 ok\n", b"bad \xff byte\n") == [d("café ok"), d("bad \ufffd byte")]


def test_a_partial_line_waits_for_the_next_read():
    assert cut("hel", "lo wor", "ld\n") == [d("hello world")]


def test_a_crlf_split_across_two_reads_is_one_line_end():
    whole = cut("first line\r\nsecond line\r\n")
    for i in range(1, len("first line\r\nsecond line\r\n")):
        data = "first line\r\nsecond line\r\n"
        assert cut(data[:i], data[i:]) == whole, i


def test_a_crlf_split_across_reads_does_not_turn_a_line_into_a_redraw():
    data = "Installed 45% of the packages, still working\r\n"
    assert cut(data) == [d(data.strip())]
    assert cut(data[:-1], data[-1:]) == cut(data)


def test_streams_are_cut_separately():
    cutter = LineCutter()
    assert cutter.feed("out-", "stdout") == []
    assert cutter.feed("err line\n", "stderr") == [d("err line")]
    assert cutter.feed("line\n", "stdout") == [d("out-line")]


def test_only_the_first_kib_of_a_line_counts():
    head = "word " * 205  # > 1 KiB
    assert len(head) > 1024
    assert cut(head + "tail one\n") == cut(head + "tail two\n")
    assert cut("a" + head + "\n") != cut("b" + head + "\n")


def test_the_partial_line_held_between_reads_is_bounded():
    cutter = LineCutter()
    for _ in range(100):
        cutter.feed("y" * 1000)
    assert sum(len(v) for v in cutter._pending.values()) <= 1024
    assert len(cutter.feed("\n")) == 1


def test_numbers_in_lines_are_masked():
    assert cut("retrying in 1s (attempt 3)\n") == cut("retrying in 4s (attempt 4)\n")


# -- lines that never count -------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "------------------",
        "==========",
        "..F..s..",
        "....................... [ 42%]",
        "12345",
        "[100%]",
        "....x..X..E",
    ],
)
def test_lines_without_a_letter_are_skipped(line):
    assert cut(line + "\n") == []


@pytest.mark.parametrize(
    "redraw",
    [
        "Downloading 45%",
        "[=====>        ] 12/40",
        "⠋⠙⠹ Thinking",
        "████████░░░░ working",
        "Progress: |||||     ",
    ],
)
def test_cr_ended_progress_redraws_are_skipped(redraw):
    assert cut(redraw + "\r") == []
    assert cut((redraw + "\r") * 50) == []


def test_a_one_glyph_spinner_redraw_is_skipped():
    frames = [f"{glyph} Waiting for the model\r" for glyph in "|/-\\"]
    assert cut(*(frames * 20)) == []


def test_a_cr_ended_line_without_a_progress_mark_counts():
    # judged when the next read shows the CR was not half of a CRLF
    assert cut("Waiting for server\r") == []
    assert cut("Waiting for server\r", "next") == [d("Waiting for server")]


def test_a_progress_line_ended_by_lf_counts():
    assert cut("Downloading 45%\n") == [d("Downloading 45%")]


# -- model text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I apologize for the confusion.",
        "Sorry, that was wrong.",
        "My mistake: the path is src/.",
        "Please disregard (3) the previous output.",
        "please disregard my last message",
        "I'm so sorry.",
        "I made an error in the import.",
        "Apologies, let me fix that.",
    ],
)
def test_apologies_are_recognised(text):
    assert is_apology(text)


@pytest.mark.parametrize("text", ["Let me run the tests.", "The sorrow module is missing.", "Disregarded keys: 3"])
def test_ordinary_text_is_not_an_apology(text):
    assert not is_apology(text)


def test_passages_are_sentences_and_lines():
    cutter = PassageCutter()
    assert cutter.feed("Let me check. Then run") == ["Let me check."]
    assert cutter.feed(" it.\nDone") == ["Then run it."]
    assert cutter.flush() == ["Done"]
    assert cutter.flush() is None  # nothing fed since


def test_code_blocks_tables_and_bullet_lists_are_skipped():
    cutter = PassageCutter()
    text = (
        "Here is the plan.\n```python\nprint(1)\nprint(1)\n```\n| a | b |\n| a | b |\n"
        "- step one\n- step one\n* again\nAfter the code.\n"
    )
    assert cutter.feed(text) == ["Here is the plan.", "After the code."]


def test_numbered_lists_are_skipped():
    assert PassageCutter().feed("Checklist:\n1. Done\n2. Done\n3. Done\nAll good.\n") == ["Checklist:", "All good."]


def test_the_pending_passage_is_bounded():
    cutter = PassageCutter()
    for _ in range(100):
        cutter.feed("y" * 1000)
    assert len(cutter._pending) <= 1024


# -- terminal semantics: what a redraw is ------------------------------------------------

UV_FRAME = (
    "\x1b[1A\r\x1b[2K\x1b[1B\r\x1b[2K\x1b[1A   \x1b[36m\x1b[1mUpdating\x1b[0m https://github.com/org/repo.git "
    "(\x1b[2ma6301075ecb4\x1b[0m)\r\n\x1b[37m{glyph}\x1b[0m \x1b[2mResolving dependencies...\x1b[0m"
)


def test_a_display_redrawn_in_place_with_cursor_moves_is_one_line():
    """uv's shape, from a Terminal-Bench recording: up one row, erase, down, erase, up,
    draw the same row again, then a spinner row; every 0.2 s for a minute."""
    first = "\r\x1b[2K   Updating https://github.com/org/repo.git (a6301075ecb4)\r\n\x1b[37m⠋\x1b[0m Resolving dependencies..."
    frames = [first] + [UV_FRAME.format(glyph=g) for g in "⠙⠹⠸⠼⠴⠦⠧⠇⠏" * 30]
    assert len(cut(*frames)) == 1


def test_a_row_drawn_over_with_something_new_counts():
    assert cut("build one\n", "\x1b[1Abuild two\n") == [d("build one"), d("build two")]


def test_erased_frames_are_redraws_and_progress_frames_are_skipped():
    bar = "".join(f"\x1b[2K\r\x1b[35m━━━━━━╸━━━\x1b[0m {k}/60 packages" for k in range(60))
    assert cut(bar) == []
    assert cut(bar + "\x1b[2K\rInstalled 60 packages\n") == [d("Installed 60 packages")]


def test_a_full_screen_program_redrawing_the_same_screen_shows_it_once():
    screen = "\x1b[H\x1b[1;1HTop of the app\r\n\x1b[2;1Hstatus: waiting for input\r\n"
    assert cut(*([screen] * 20)) == [d("Top of the app"), d("status: waiting for input")]


def test_a_cleared_screen_starts_afresh():
    assert cut("hello there\n", "\x1b[H\x1b[2J", "hello there\n") == [d("hello there")] * 2


def test_erase_to_end_of_line_and_forward_moves_keep_the_row():
    assert cut("Get:1 http://deb\x1b[K.debian.org\x1b[3Cbookworm\n") == [d("Get:1 http://deb.debian.org bookworm")]


def test_lines_carry_exact_digests_and_what_they_say():
    (a,), (b,) = LineCutter().lines("retrying in 3s (attempt 3)\n"), LineCutter().lines("retrying in 4s (attempt 4)\n")
    assert a.key == b.key and a.exact != b.exact and a.retry and not a.failure
    (c,) = LineCutter().lines("E   AssertionError: expected 3, got 2\n")
    assert c.failure and not c.retry


@pytest.mark.parametrize(
    "text",
    [
        "Error: connect ECONNREFUSED 127.0.0.1:5432",
        "main.c:3:5: error: expected ';' before '}' token",
        "[ERROR] Failed to execute goal on project app",
        "npm ERR! code ENOENT",
        "bash: javac: command not found",
        "cat: /tmp/out.txt: No such file or directory",
        "ssh: connect to host db port 22: Connection refused",
        "rm: cannot remove '/etc/hosts': Permission denied",
    ],
)
def test_the_usual_ways_of_saying_a_failure_are_failures(text):
    (line,) = LineCutter().lines(text + "\n")
    assert line.failure


@pytest.mark.parametrize(
    "text",
    ["no errors found in 12 files", "error_count: 0", "Improved error handling in the parser", "INFO: 200 OK"],
)
def test_words_about_errors_are_not_failures(text):
    (line,) = LineCutter().lines(text + "\n")
    assert not line.failure


_PIECES = [
    "word ",
    "line 12 ",
    "retrying ",
    "Error: x ",
    "⠙ ",
    "45% ",
    "\n",
    "\r",
    "\r\n",
    "\x1b[2K",
    "\x1b[1A",
    "\x1b[1B",
    "\x1b[K",
    "\x1b[3C",
    "\x1b[H",
    "\x1b[2;1H",
    "\x1b[2J",
    "\x1bM",
    "\x1b[31m",
    "\x1b[0m",
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=60),
    st.lists(st.integers(min_value=0, max_value=60), max_size=6),
    st.lists(st.integers(min_value=0, max_value=400), max_size=3),
)
@example(["word ", "\r", "line 12 ", "\n"], [2], [])  # a read ending in a CR
@example(["word ", "\x1b[1A", "word ", "\n"], [], [6])  # a read ending inside an escape
def test_how_output_is_split_into_reads_never_changes_the_lines(pieces, boundaries, anywhere):
    text = "".join(pieces)
    whole = LineCutter().lines(text)
    # reads end between pieces (after a CR, inside nothing) and anywhere (inside an escape)
    cuts = {len("".join(pieces[:k])) for k in boundaries} | set(anywhere)
    cutter, got, start = LineCutter(), [], 0
    for cut_at in sorted(c for c in cuts if 0 < c < len(text)):
        got += cutter.lines(text[start:cut_at])
        start = cut_at
    got += cutter.lines(text[start:])
    assert got == whole


@pytest.mark.parametrize("final", ["A", "B", "C", "D", "G", "H", "f", "J", "K"])
@pytest.mark.parametrize(
    "count",
    ["9" * 5000, "2000000000", "0" * 4000 + "7", "99999;" + "9" * 5000],
    ids=["5000-digits", "2e9", "4000-zeros", "two-params"],
)
def test_a_huge_cursor_count_costs_nothing(final, count):
    """A count is clamped as a terminal clamps it: a 5,000-digit one is not parsed (it
    raised), `ESC[2000000000C` is not two billion blanks (3.8 GB)."""
    import tracemalloc

    cutter = LineCutter()
    tracemalloc.start()
    try:
        got = cutter.lines(f"building\x1b[{count}{final}step 3 failed\nnext line\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, peak
    assert got  # the lines after it are still read
