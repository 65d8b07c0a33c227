"""Building a `Step` skips work that cannot change it: each fast form gives what its
plain form, written out here, gives.

- `arguments_of` finds an input string's long tokens with one pattern instead of
  splitting the string and looping over every token;
- `_shifted` copies a call's body only when its first line's range is masked;
- a call with no result skips `arguments_of`: nothing is there to mask.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch._core import fingerprint, step
from loopwatch._core.fingerprint import arguments_of, digest, normalize

# -- the plain forms --------------------------------------------------------------------

TOKEN_SPLIT = re.compile(r"[\s\"'`=,;()<>|&]+")
QUOTED = re.compile(r"\"([^\"\n]{4,})\"|'([^'\n]{4,})'")
RANGE = re.compile(rb"(?<![0-9A-Za-z_.])[0-9]+[:,][0-9]+(?![0-9A-Za-z_.])")


def plain_arguments_of(value: Any) -> list[str]:
    found: set[str] = set()
    stack = [value]
    while stack and len(found) < 64:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) <= 256:
                for pair in QUOTED.findall(item):
                    found.add(pair[0] or pair[1])
                tokens = TOKEN_SPLIT.split(item.strip())
                for token in tokens[1:] if len(tokens) > 1 else tokens:
                    if len(token) >= 4:
                        found.add(token)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return sorted(found, key=lambda t: (-len(t), t))[:16]


def plain_shifted(name: str, call: bytes, body: bytes) -> bytes:
    head, newline, rest = body.partition(b"\\n")
    if not newline:
        return call
    masked = RANGE.sub(b"#", head)
    if masked == head:
        return call
    return digest(name.encode() + b"\x00" + masked + newline + rest)


# -- inputs: separators of every kind, Unicode whitespace, quotes, short and long runs ----

pieces = st.sampled_from(
    ["ab", "abcd", "pattern-1", "src/x.py", " ", "  ", "\t", "\n", "\u00a0", "\u2028", "\x1c", '"', "'", "`", "=", ","]
    + [";", "(", ")", "<", ">", "|", "&", "-n", "é", "x" * 40]
)
strings = st.lists(pieces, max_size=40).map("".join)
inputs = st.recursive(
    strings | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None)
@given(inputs)
def test_arguments_are_those_the_plain_split_finds(value: Any) -> None:
    assert arguments_of(value) == plain_arguments_of(value)


def test_the_program_is_not_an_argument_but_a_lone_word_is() -> None:
    assert arguments_of({"command": "ping example.org"}) == ["example.org"]
    assert arguments_of({"command": "  pytest  "}) == ["pytest"]
    # a leading quote: the first token is empty, so no word is taken for the program
    expected = ["quoted phrase", "phrase", "quoted", "here"]
    assert arguments_of({"command": '"quoted phrase" here'}) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["edit ", "72:83", "10,20", "x", " ", "\\n", "\\", "n", "body", "1.2:3"]), max_size=30))
def test_a_shifted_call_is_digested_as_the_plain_partition_digests_it(parts: list[str]) -> None:
    body = "".join(parts).encode()
    call = digest(b"call")
    assert step._shifted("Edit", call, body) == plain_shifted("Edit", call, body)


@settings(max_examples=200, deadline=None)
@given(inputs)
def test_no_result_normalizes_to_nothing_whatever_the_arguments(value: Any) -> None:
    assert normalize("", arguments_of(value)) == ""


def test_a_step_with_no_result_is_the_step_the_full_path_makes(monkeypatch: Any) -> None:
    value = {"command": "grep -rn pattern-1 src", "path": "src"}
    fast = [step.make_step(1, "Grep", value, result, False, (), 1.0) for result in ("", None, [], {})]
    calls: list[Any] = []
    monkeypatch.setattr(step, "arguments_of", lambda v: calls.append(v) or fingerprint.arguments_of(v))
    assert [step.make_step(1, "Grep", value, result, False, (), 1.0) for result in ("", None, [], {})] == fast
    assert len(calls) == 2  # `[]` and `{}` are text (`[]`, `{}`) and take the full path
