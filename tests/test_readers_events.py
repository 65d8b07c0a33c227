"""The generic events JSON Lines reader."""

from __future__ import annotations

import io
import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Action, Monitor
from loopwatch._analysis.evaluation import Case, Label, replay_case
from loopwatch._core.config import Config
from loopwatch._core.events import Attempt, Correction, ModelText, Output, Retry, ToolCall, Turn, UserMessage
from loopwatch._readers import detect, read
from loopwatch._readers import events as reader


def write(tmp_path, lines, name="s.jsonl"):
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def events_of(path):
    (session,) = list(read(path))
    return session, list(session.events)


def test_every_type_maps_to_its_core_event(tmp_path):
    path = write(
        tmp_path,
        [
            {
                "type": "tool",
                "name": "Bash",
                "input": {"command": "ls"},
                "result": "a.py",
                "error": True,
                "changed": ["a.py"],
                "at": 12.5,
                "id": "c1",
                "agent": "fixer",
                "tokens": 900,
                "cost": 0.01,
            },
            {"type": "attempt", "name": "Bash", "input": {"command": "ls"}, "call_id": "c2"},
            {"type": "text", "text": "Let me look.", "chunk": True},
            {"type": "output", "data": "Compiling...\r\n", "stream": "stderr"},
            {"type": "retry", "reason": "429"},
            {"type": "turn", "tokens": 1200, "cost": 0.02},
            {"type": "correction", "message": "no such tool: Bsh"},
            {"type": "user"},
        ],
    )
    _, got = events_of(path)
    assert got == [
        ToolCall("Bash", {"command": "ls"}, "a.py", True, ("a.py",), 12.5, "c1", "fixer", "line 1", 900, 0.01),
        Attempt("Bash", {"command": "ls"}, None, "c2", None, "line 2"),
        ModelText("Let me look.", None, True, "line 3"),
        Output("Compiling...\r\n", "stderr", None, "line 4"),
        Retry(None, "429", "line 5"),
        Turn(None, 1200, 0.02, "line 6"),
        Correction("no such tool: Bsh", None, "line 7"),
        UserMessage(None, "line 8"),
    ]


def test_source_refs_count_every_line_from_one_blank_ones_included(tmp_path):
    path = write(tmp_path, ["", {"type": "user"}, "   ", {"type": "tool", "name": "Read"}])
    _, got = events_of(path)
    assert [e.source_ref for e in got] == ["line 2", "line 4"]


def test_bad_lines_are_skipped_counted_and_named_by_line_number(tmp_path):
    path = write(
        tmp_path,
        [
            {"type": "tool", "name": "Bash"},
            '{"type": "tool", "name": "Ba',  # cut off
            {"type": "frobnicate"},
            {"type": "tool", "input": {}},
            {"type": "tool", "name": ""},
            [1, 2],
            {"type": "text", "text": 5},
            {"type": "tool", "name": "Bash", "at": "noon"},
            {"type": "tool", "name": "Bash", "changed": "a.py"},
            {"name": "Bash"},
            {"type": "user"},
        ],
    )
    session, got = events_of(path)
    assert [e.source_ref for e in got] == ["line 1", "line 11"]
    assert [m.split(":")[0] for m in session.skipped] == [f"line {n}" for n in range(2, 11)]
    text = "\n".join(session.skipped)
    assert "line 2: not JSON" in text
    assert "line 3: unknown event type (expected one of tool," in text
    assert "frobnicate" not in text and "noon" not in text  # the values are not quoted
    assert "line 4: tool event: 'name' missing" in text
    assert "not a JSON object" in text
    assert "'at' is a string, not a number" in text
    assert "'text' is a number, not a string" in text
    assert "'changed' is not a list" in text


def test_a_broken_last_line_without_newline_says_it_may_be_cut_off(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type": "user"}\n{"type": "tool", "na')
    session, got = events_of(str(path))
    assert len(got) == 1
    assert session.skipped == ["line 2: not JSON (cut off?)"]


def test_session_id_is_the_first_events_session_field_else_the_file_stem(tmp_path):
    with_id = write(
        tmp_path, [{"type": "user", "session": "run-7"}, {"type": "tool", "name": "x", "session": "other"}], "a.jsonl"
    )
    without = write(tmp_path, [{"type": "user"}], "nightly-42.jsonl")
    assert events_of(with_id)[0].session == "run-7"
    assert events_of(without)[0].session == "nightly-42"


def test_token_and_cost_totals_are_summed_once_the_session_is_read(tmp_path):
    path = write(tmp_path, [{"type": "turn", "tokens": 100, "cost": 0.5}, {"type": "tool", "name": "x", "tokens": 20}])
    session, _ = events_of(path)
    assert (session.tokens, session.cost) == (120, 0.5)
    bare = write(tmp_path, [{"type": "tool", "name": "x"}], "b.jsonl")
    session, _ = events_of(bare)
    assert (session.tokens, session.cost) == (None, None)


def test_the_reader_streams_instead_of_loading_the_file(tmp_path):
    lines = [json.dumps({"type": "tool", "name": "Bash", "input": {"n": i}}).encode() + b"\n" for i in range(10_000)]

    class Counting(io.BytesIO):
        consumed = 0

        def __iter__(self):
            for line in lines:
                Counting.consumed += 1
                yield line

        def readline(self, size=-1):  # how the reader takes lines (bounded by the line cap)
            if Counting.consumed >= len(lines):
                return b""
            Counting.consumed += 1
            return lines[Counting.consumed - 1]

    (session,) = list(reader.read("s.jsonl", Counting()))
    events = iter(session.events)
    next(events)
    assert Counting.consumed < 50


@pytest.mark.parametrize(
    "head, expected",
    [
        (b'{"type": "tool", "name": "Bash"}\n', True),
        (b'\n\n  {"type":"user"}\n{"type": "tool"', True),
        (b'{"type": "tool", "name": "Bash", "result": "' + b"x" * 70_000, True),  # first line cut by the head
        (b'{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"}\n', False),  # Claude Code
        (b'{"type": "session_meta", "payload": {}}\n', False),  # Codex rollout
        (b'{"type": "result", "subtype": "success"}\n', False),
        (b'[{"type": "tool"}]\n', False),
        (b"hello world\n", False),
        (b'{"trajectory": []}', False),
    ],
)
def test_sniff(head, expected):
    assert reader.sniff("x.jsonl", head[: 64 * 1024]) is expected


def test_detect_names_the_events_format(tmp_path):
    path = write(tmp_path, [{"type": "tool", "name": "Bash"}])
    with open(path, "rb") as fh:
        assert detect(path, fh.read()) == "events"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_event = st.fixed_dictionaries(
    {"type": st.just("tool"), "name": st.text(min_size=1, max_size=6), "input": _json, "result": _json}
)
_garbage = st.one_of(st.text(max_size=20).filter(lambda s: "\n" not in s and "\r" not in s), _json.map(json.dumps))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(_event.map(json.dumps), _garbage), max_size=25))
def test_every_nonblank_line_is_either_an_event_or_a_skipped_line(lines):
    data = "".join(line + "\n" for line in lines).encode()
    (session,) = list(reader.read("s.jsonl", io.BytesIO(data)))
    got = list(session.events)
    nonblank = [n for n, line in enumerate(data.split(b"\n")[:-1], 1) if line.strip()]
    refs = [int(e.source_ref.split()[1]) for e in got] + [int(m.split(":")[0].split()[1]) for m in session.skipped]
    assert sorted(refs) == nonblank
    for event in got:
        original = orjson.loads(data.split(b"\n")[int(event.source_ref.split()[1]) - 1])
        assert (event.name, event.input, event.result) == (original["name"], original["input"], original["result"])


_REJECTION = (
    "Please always provide EXACTLY ONE action in triple backticks, found 0 actions.\n"
    "If you want to end the task, please issue the following command: `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`"
)


def _lost(step, result):
    """A call as a digest that lost its input records it (unique per step)."""
    return {
        "type": "tool",
        "name": "bash_command",
        "input": {"cmd": None, "unknown_input": f"s#{step}#0"},
        "result": result,
    }


def test_a_call_with_a_lost_input_that_the_harness_rejected_is_that_correction(tmp_path):
    no_input = {"type": "tool", "name": "bash_command", "result": "  \n" + _REJECTION}
    session, events = events_of(write(tmp_path, [_lost(1, _REJECTION), no_input]))
    first_line = "Please always provide EXACTLY ONE action in triple backticks, found 0 actions."
    assert events == [Correction(first_line, source_ref="line 1"), Correction(first_line, source_ref="line 2")]
    assert session.meta["rejected_calls"] == ["line 1", "line 2"]


def test_rejected_calls_still_number_the_steps_a_label_counts(tmp_path):
    # labels number every recorded call (labels/show.py): a nudge at the third rejection
    # in a row, after one call that ran, is at step 4 of 9
    lines = [{"type": "tool", "name": "bash_command", "input": {"cmd": "ls"}, "result": "a"}]
    lines += [_lost(i, _REJECTION) for i in range(8)]
    path = write(tmp_path, lines)
    case = Case(path, Label(path, "yes", 2, 9))
    replayed = replay_case(case, str(tmp_path), [Config()])
    assert (replayed.steps, replayed.results[0].nudge, replayed.results[0].nudge_signal) == (9, 4, "correction")


def test_a_recorded_call_or_a_lost_one_with_another_result_stays_a_call(tmp_path):
    recorded = {"type": "tool", "name": "bash_command", "input": {"cmd": "ls"}, "result": _REJECTION}
    quoted = "<returncode>0</returncode>\n<output>\n" + _REJECTION + "\n</output>"  # the agent printed it
    _, events = events_of(write(tmp_path, [recorded, _lost(2, quoted), _lost(3, "<returncode>0</returncode>")]))
    assert [type(e) for e in events] == [ToolCall, ToolCall, ToolCall]
    assert events[1].input == {"cmd": None, "unknown_input": "s#2#0"}


def test_rejected_replies_with_lost_inputs_in_a_row_are_a_correction_nudge_never_a_stop(tmp_path):
    # the TB2 digest's shape of mini-swe-agent's "found 0 actions" to the end of a run
    _, events = events_of(write(tmp_path, [_lost(i, _REJECTION) for i in range(6)]))
    verdicts = _observe_all(Monitor(), events)
    acted = [(v.action, v.signal) for v in verdicts if v.action.rank >= Action.NUDGE.rank]
    assert acted and all(a == (Action.NUDGE, "correction") for a in acted)


def test_lost_inputs_with_one_result_do_not_look_repeated(tmp_path):
    _, events = events_of(
        write(tmp_path, [_lost(i, "<returncode>0</returncode>\n<output>\n</output>") for i in range(8)])
    )
    assert all(v.action.rank < Action.NUDGE.rank for v in _observe_all(Monitor(), events))


def _observe_all(monitor, events):
    return [monitor.observe(e) for e in events]
