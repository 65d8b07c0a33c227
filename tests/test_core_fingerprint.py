"""Fingerprints: canonical input digests, result normalization, tool identity."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from loopwatch import Action, Config, Monitor, ToolCall
from loopwatch._core.fingerprint import arguments_of, canonical, digest_call, digest_value, normalize
from loopwatch._core.step import Step, make_step

from loopwatch._core.signals.same_error import Params as SameErrorParams

from core_support import bash, feed, only, severity, strongest


def step(name="Bash", input=None, result="", error=False, changed=(), role="", identity=None, index=1, at=0.0):
    return make_step(index, name, input, result, error, tuple(changed), at, role, identity)


# -- inputs -----------------------------------------------------------------------------


def test_key_order_does_not_change_the_input_digest():
    a = {"command": "ls", "opts": {"all": True, "long": False}, "cwd": "/tmp"}
    b = {"cwd": "/tmp", "opts": {"long": False, "all": True}, "command": "ls"}
    assert canonical(a) == canonical(b)
    assert digest_call("Bash", a) == digest_call("Bash", b)


def test_canonical_json_has_no_whitespace():
    assert canonical({"b": [1, 2], "a": {"y": 1, "x": 2}}) == b'{"a":{"x":2,"y":1},"b":[1,2]}'


def test_list_order_matters():
    assert digest_call("Edit", {"files": ["a.py", "b.py"]}) != digest_call("Edit", {"files": ["b.py", "a.py"]})


def test_none_and_empty_dict_inputs_are_the_same():
    assert digest_call("Ls", None) == digest_call("Ls", {})


def test_tool_name_is_part_of_the_call():
    assert digest_call("Read", {"path": "a.py"}) != digest_call("Write", {"path": "a.py"})


def test_unserializable_input_never_makes_two_calls_alike():
    thing = object()
    assert digest_call("Py", {"x": thing}) != digest_call("Py", {"x": thing})
    assert digest_value({"x": thing}) != digest_value({"x": thing})
    # and so a run of such calls is never a repeat
    monitor = only("repeat", {"threshold": 2})
    assert strongest(feed(monitor, [ToolCall("Py", {"x": thing}, "same result") for _ in range(5)])) is Action.ALLOW


def test_inputs_are_not_masked():
    """`grep pattern-1` .. `grep pattern-8` are eight different searches."""
    calls = {digest_call("Bash", {"command": f"grep -rn pattern-{i} src"}) for i in range(1, 9)}
    assert len(calls) == 8


def test_eight_different_searches_with_the_same_empty_result_are_not_a_loop():
    monitor = only("repeat", {"threshold": 2})
    verdicts = feed(monitor, [bash(f"grep -rn pattern-{i} src", "") for i in range(1, 9)])
    assert strongest(verdicts) is Action.ALLOW
    assert severity(monitor, "repeat") == 0.0
    # nor with every signal on (default thresholds): progress, never blocked or stopped
    monitor = Monitor()
    assert (
        strongest(feed(monitor, [bash(f"grep -rn pattern-{i} src", "") for i in range(1, 9)])).rank < Action.BLOCK.rank
    )


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
        max_leaves=20,
    )
)
def test_property_key_order_never_changes_a_digest(value):
    """Rebuilding every dict (at every depth) in reversed key order keeps the digest."""

    def reorder(v):
        if isinstance(v, dict):
            return {k: reorder(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reorder(x) for x in v]
        return v

    assert digest_call("T", value) == digest_call("T", reorder(value))
    assert digest_value(value) == digest_value(reorder(value))


# -- results ----------------------------------------------------------------------------


def test_an_error_differing_only_in_a_counter_is_the_same_error():
    results = [f"/bin/bash: line {n}: cd: fastjson/: No such file or directory" for n in (11301, 11316, 11331, 11346)]
    steps = [step(input={"command": "cd fastjson/"}, result=r, error=True) for r in results]
    assert len({s.result for s in steps}) == 1
    assert len({s.action for s in steps}) == 1
    assert len({s.failure for s in steps}) == 1


def test_the_fastjson_run_is_a_repeat():
    monitor = only("repeat", {"threshold": 4})
    verdicts = feed(
        monitor,
        [
            bash(
                "cd fastjson/",
                f"/bin/bash: line {11301 + 15 * i}: cd: fastjson/: No such file or directory",
                error=True,
            )
            for i in range(4)
        ],
    )
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "repeat"


def test_a_moving_download_is_not_a_repeat():
    a = step(result="Downloading: 40% (48 MB of 120 MB)")
    b = step(result="Downloading: 50% (60 MB of 120 MB)")
    assert a.result != b.result
    monitor = only("repeat", {"threshold": 2})
    polls = [bash("tail -1 dl.log", f"Downloading: {p}% ({p * 12 // 10} MB of 120 MB)") for p in range(10, 100, 10)]
    assert strongest(feed(monitor, polls)) is Action.ALLOW
    assert severity(monitor, "repeat") == 0.0


def test_a_stalled_download_is_a_repeat():
    monitor = only("repeat", {"threshold": 3})
    polls = [bash("tail -1 dl.log", "Downloading: 40% (48 MB of 120 MB)") for _ in range(3)]
    assert feed(monitor, polls)[-1].action is Action.NUDGE


@pytest.mark.parametrize("count", ["{i} of 40", "{i}/40", "{i}of 40"])
def test_a_poll_whose_count_advances_is_not_a_repeat(count):
    """The README keeps `3 of 10` as progress in results: a poll whose count advances is
    not the same result, and with every signal on (both profiles) it is never blocked or
    stopped, and no repeat, cycle or echo is found in it."""
    a = step(result="[12:00:01] indexed " + count.format(i=3) + " files")
    b = step(result="[12:00:09] indexed " + count.format(i=4) + " files")
    assert a.result != b.result
    for profile in ("attended", "unattended"):
        monitor = Monitor(Config.make(profile=profile))
        polls = [bash("cat progress.txt", "indexed " + count.format(i=i) + " files") for i in range(1, 41)]
        assert strongest(feed(monitor, polls)).rank < Action.BLOCK.rank
        assert not {"repeat", "cycle", "echo"} & set(monitor.strongest)


def test_a_poll_whose_count_stalls_is_a_repeat():
    a = step(result="[12:00:01] indexed 3 of 40 files")
    b = step(result="[12:00:09] indexed 3 of 40 files")
    assert a.result == b.result
    monitor = only("repeat", {"threshold": 3})
    polls = [bash("cat progress.txt", f"[12:00:0{i}] indexed 3 of 40 files") for i in range(3)]
    assert feed(monitor, polls)[-1].action is Action.NUDGE


def test_errors_echoing_the_calls_arguments_compare_equal():
    a = step(input={"pattern": "parse_header"}, result='No matches found for "parse_header"', error=True)
    b = step(input={"pattern": "read_config"}, result='No matches found for "read_config"', error=True)
    assert a.result == b.result
    assert a.failure == b.failure
    assert a.call != b.call  # the calls themselves stay different


def test_argument_masking_needs_the_argument_in_the_input():
    a = step(input={"pattern": "parse_header"}, result='No matches found for "parse_header"')
    b = step(input={"pattern": "parse_header"}, result='No matches found for "read_config"')
    assert a.result != b.result


def test_arguments_are_tokens_of_short_input_strings_only():
    assert "pattern-1" in arguments_of({"command": "grep -rn pattern-1 src"})
    assert arguments_of({"content": "x" * 300 + " secretword"}) == []  # file bodies are not arguments


def test_terminal_escapes_are_dropped_and_whitespace_collapsed():
    assert normalize("\x1b[31mError:\x1b[0m   file\n\n  missing\t!") == "Error: file missing !"


def test_hex_runs_are_masked():
    assert normalize("<Foo object at 0x7f3a2b1c9d40>") == normalize("<Foo object at 0x7f3a2b1c9e80>")
    assert normalize("HEAD is now at 3f2a91c fix") == normalize("HEAD is now at 8be04d7 fix")


def test_words_are_not_masked():
    assert normalize("cannot find module alpha") != normalize("cannot find module gamma")


def test_very_long_results_are_bounded_and_keep_head_and_tail():
    head_differs = normalize("x" + "a " * 200_000)
    assert len(head_differs) < 200_000
    assert normalize("x" + "a " * 200_000) != normalize("y" + "a " * 200_000)
    assert normalize("a " * 200_000 + "x") != normalize("a " * 200_000 + "y")


def test_structured_results_are_digested_canonically():
    assert step(result={"ok": False, "n": 1}).result == step(result={"n": 1, "ok": False}).result


def test_result_is_part_of_the_action():
    a = step(input={"command": "pytest"}, result="1 failed")
    b = step(input={"command": "pytest"}, result="all passed")
    assert a.call == b.call
    assert a.result != b.result and a.action != b.action


# -- tool identity and roles ------------------------------------------------------------


def test_identity_fields_ignore_the_rest_of_the_input():
    a = step(input={"command": "make", "description": "build it"}, identity=("command",))
    b = step(input={"command": "make", "description": "try the build again"}, identity=("command",))
    c = step(input={"command": "make", "description": "try the build again"})
    assert a.call == b.call
    assert a.call != c.call


def test_configured_identity_makes_reworded_calls_a_repeat():
    events = [
        ToolCall("Bash", {"command": "make", "description": f"build, {w}"}, "error: x", error=True)
        for w in ("first try", "again", "once more")
    ]
    # Bash's description is written for the person: by default it identifies nothing
    # (`core.identity`); a user who wants the whole input counted says `ignore = []`.
    whole = only("repeat", {"threshold": 3}, tools={"Bash": {"ignore": []}})
    assert strongest(feed(whole, events)) is Action.ALLOW
    plain = only("repeat", {"threshold": 3})
    assert strongest(feed(plain, events)) is Action.NUDGE
    keyed = only("repeat", {"threshold": 3}, tools={"Bash": {"identity": ["command"]}})
    assert strongest(feed(keyed, events)) is Action.NUDGE


def test_writer_success_is_progress_and_failure_is_not():
    assert step(name="Write", role="writer").wrote
    assert not step(name="Write", role="writer", error=True).wrote
    assert step(name="Bash", changed=["a.py"]).wrote
    assert not step(name="Bash").wrote


def test_exempt_tools_are_never_counted():
    monitor = only("repeat", {"threshold": 2}, tools={"TodoWrite": {"role": "exempt"}})
    verdicts = feed(monitor, [bash("x", "y")] + [ToolCall("TodoWrite", {"todos": []}, "ok") for _ in range(10)])
    assert strongest(verdicts) is Action.ALLOW
    assert monitor.actions == 1


def test_a_step_keeps_no_content():
    secret = "SECRET-TOKEN-123"
    s = step(input={"command": f"echo {secret}"}, result=f"{secret}\n" * 3, error=True)
    assert isinstance(s, Step)
    blob = pickle.dumps(s) + repr(s).encode()
    assert secret.encode() not in blob


def test_different_searches_that_find_nothing_are_only_flagged_by_echo():
    # near-identical calls that fail with no message: a search being refined
    monitor = only("echo", {"turns": 3})
    verdicts = feed(monitor, [bash(f"grep -rn pattern-{i} src", "", error=True) for i in range(1, 9)])
    assert strongest(verdicts).rank < Action.BLOCK.rank


def test_many_different_searches_that_find_nothing_meet_same_error_past_its_threshold():
    # Design: an empty answer to a search is a failure (grep exits 1). Healthy labelled
    # sessions run up to 6 such searches in a row ("find_file over 5 jars"), runaways
    # 10 to 40, so the default threshold nudges at the 6th; same_error is suspicion, so
    # it stops only when corroborated (here: one round past the nudge).
    threshold = SameErrorParams().threshold
    searches = [bash(f"grep -rn pattern-{i} src", "", error=True) for i in range(1, threshold + 2)]
    monitor = only("same_error", {}, evidence={"confirm": 1})
    verdicts = feed(monitor, searches)
    assert strongest(verdicts[: threshold - 1]).rank < Action.NUDGE.rank
    assert verdicts[threshold - 1].action is Action.NUDGE and verdicts[threshold].action is Action.STOP
    # uncorroborated (no calibration), the same searches are only nudged
    assert strongest(feed(only("same_error", {}), searches)) is Action.NUDGE


@given(st.text(alphabet="0123456789 .%kKMGTiBof/xyz-", max_size=40))
@example("step 3 of 10")
@example("48 MB")
@example("40% done")
@example("file 2/9")
def test_skipping_the_progress_pattern_changes_no_line(line):
    """`normalize_line` skips the progress pattern unless the line holds `%`, `B`, `/` or
    `of` (a speed-up): it must give what applying the pattern always gives."""
    from loopwatch._core.fingerprint import _LINE_NUMBERS, _LINE_PROGRESS, normalize_line

    progress = _LINE_PROGRESS.findall(line)
    expected = " ".join(_LINE_NUMBERS.sub("#", line).split())
    if progress:
        expected += " \x01" + " ".join(progress)
    assert normalize_line(line) == expected


@given(st.text(alphabet="0123456789 .%kKMGTiBof/xyz-", max_size=40))
@example("step 3 of 10")
@example("3of 10")
@example("file 2/9")
def test_skipping_the_progress_pattern_changes_no_result(text):
    """`normalize` skips the progress pattern unless the result holds `%`, `B`, `/` or
    `of` (a speed-up): it must give what applying the pattern always gives."""
    from loopwatch._core.fingerprint import _PROGRESS, mask_numbers

    progress = _PROGRESS.findall(text)
    expected = " ".join(mask_numbers(text).split())
    if progress:
        expected += " \x01" + " ".join(progress)
    assert normalize(text) == expected


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789abcdefABCDEFxXgz -_.:/\n", max_size=120))
def test_results_mask_hex_ids_and_numbers_in_one_pass_as_in_two(text: str) -> None:
    # normalize skips the hex-id pass where it could change nothing; both passes (hex
    # ids, then numbers from their first digit) are the specification.
    from loopwatch._core.fingerprint import _NUMBERS, mask_hex_ids, mask_numbers

    assert mask_numbers(text) == _NUMBERS.sub("#", mask_hex_ids(text))


def test_hex_ids_that_start_with_letters_are_masked_whole() -> None:
    from loopwatch._core.fingerprint import _NUMBERS, mask_hex_ids, mask_numbers

    for text in ("id " + "a" * 63 + "1 end", "id " + "a" * 64 + "1 end", "Chunk ID: e1eabb", "e2e b4 cafe 9b2e"):
        assert mask_numbers(text) == _NUMBERS.sub("#", mask_hex_ids(text))
    assert mask_numbers("Chunk ID: e1eabb, then 86d36c") == "Chunk ID: #, then #"


# The stubs as the real CLIs write them: Claude Code 2.1.332 (`Output too large (...).
# Full output saved to: ...`, or `... only the first 2KB were saved to: ...` past its
# persist limit) and Qwen Code 0.15.10 (`The full output has been saved to: ...`); the
# per-call file name is the only difference between two saves of one output.
_CLAUDE_STUB = (
    "<persisted-output>\nOutput too large (48.2KB). Full output saved to: "
    "/root/.claude/projects/-app/3f1c/tool-results/{call}.txt\n\nPreview (first 2KB):\n{head}\n</persisted-output>"
)
_QWEN_STUB = (
    "Tool output was too large and has been truncated.\nThe full output has been saved to: "
    "/root/.qwen/tmp/8e2d/{call}.output\nTo read the complete output, use the read_file tool.\n\n"
    "Truncated part of the output:\n{head}\n... [CONTENT TRUNCATED] ...\nsha256: {sha}"
)


def test_an_output_saved_elsewhere_is_fingerprinted_by_what_the_stub_carries_not_its_path():
    first = _CLAUDE_STUB.format(call="toolu_01QvXmRk", head="FAILED tests/test_a.py::test_x")
    again = _CLAUDE_STUB.format(call="toolu_01ZpWnHj", head="FAILED tests/test_a.py::test_x")
    other = _CLAUDE_STUB.format(call="toolu_01ZpWnHj", head="FAILED tests/test_b.py::test_y")
    assert step(result=first).result == step(result=again).result
    assert step(result=first).result != step(result=other).result
    persisted = first.replace(
        "Full output saved to", "Output exceeded the 2KB persist limit; only the first 2KB were saved to"
    )
    assert step(result=persisted).result == step(result=persisted.replace("01QvXmRk", "01AaBbCc")).result
    sha_a, sha_b = "9f" * 32, "a0" * 32
    q1 = _QWEN_STUB.format(call="call_3kq", head="line", sha=sha_a)
    q2 = _QWEN_STUB.format(call="call_7zz", head="line", sha=sha_a)
    q3 = _QWEN_STUB.format(call="call_7zz", head="line", sha=sha_b)
    assert step(result=q1).result == step(result=q2).result
    assert step(result=q2).result != step(result=q3).result  # same preview, another digest: another output


def test_the_same_large_output_saved_four_times_is_a_repeat():
    m = only("repeat", {"threshold": 3})
    calls = [
        bash("pytest -x", _CLAUDE_STUB.format(call=f"toolu_01{c}", head="1 failed"), error=True)
        for c in ("QvXmRk", "ZpWnHj", "RtYuKl", "MnOpLq")
    ]
    assert any(v.action is Action.NUDGE for v in feed(m, calls))
