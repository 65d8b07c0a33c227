"""The OpenHands reader: event lists, evaluation records, [action, observation] pairs,
and output.jsonl."""

from __future__ import annotations

import json

import pytest
from readers_support import (
    EVENTS_JSONL,
    calls,
    claims,
    corpus_samples,
    events_of,
    fixture,
    foreign_fixtures,
    one_session,
    shape,
    stop_of,
)

from loopwatch._readers import ReadError, detect, openhands, read
from loopwatch._readers._common import iso_seconds
from loopwatch._core.verdict import Action

TRAJECTORY = fixture("openhands", "trajectory.json")
PAIRS = fixture("openhands", "history-pairs.json")


def test_event_list_in_order_with_index_refs():
    session, events = events_of(TRAJECTORY)
    assert (session.format, session.session, session.outcome) == ("openhands", "trajectory", "finished")
    assert shape(events) == [
        ("UserMessage", None, "[1]"),  # [0] system prompt, [2] recall: nothing
        ("ToolCall", "execute_bash", "[4]"),
        ("ToolCall", "str_replace_editor", "[6]"),
        ("ToolCall", "think", "[8]"),
        ("ToolCall", "str_replace_editor", "[10]"),
        ("ToolCall", "str_replace_editor", "[12]"),
        ("ToolCall", "execute_bash", "[14]"),
        ("ModelText", None, "[16]"),
        ("UserMessage", None, "[18]"),
        ("ToolCall", "execute_bash", "[19]"),
        ("ModelText", None, "[21]"),  # the finish action's final thought
        ("ToolCall", "finish", "[21]"),  # and the call itself
    ]
    assert session.skipped == []


def test_the_finish_call_is_a_call_with_no_result():
    _, events = events_of(TRAJECTORY)
    finish = calls(events)[-1]
    assert (finish.name, finish.result, finish.error, finish.changed) == ("finish", None, False, ())
    assert finish.input == {"task_completed": "true", "outputs": {}}  # its thought is the text before it
    assert finish.cost == pytest.approx(0.084 - 0.078)  # the growth since the metrics before it


def test_observations_join_their_action_by_cause():
    _, events = events_of(TRAJECTORY)
    first = calls(events)[0]
    assert first.input == {
        "command": "python -m pytest tests/test_json.py -q",
        "is_input": False,
    }  # no thought, no bookkeeping
    assert first.result.startswith("F\nE   TypeError")
    assert (first.error, first.call_id) == (True, "4")  # exit code 1
    assert first.at == iso_seconds("2025-03-11T16:00:08.063352")  # the observation's time
    assert calls(events)[5].error is False  # the rerun passes
    think = calls(events)[2]
    assert think.input == {"thought": "Decimal must be converted to str in _default."}


def test_edits_change_files_unless_they_fail_or_only_view():
    _, events = events_of(TRAJECTORY)
    assert [(c.source_ref, c.error, c.changed) for c in calls(events) if c.name == "str_replace_editor"] == [
        ("[6]", False, ()),  # a read
        ("[10]", False, ("/workspace/flask/src/flask/json/provider.py",)),
        ("[12]", True, ()),  # an error observation
    ]


def test_costs_and_tokens_from_llm_metrics():
    session, events = events_of(TRAJECTORY)
    assert session.cost == pytest.approx(0.084)
    assert session.tokens == 36600 + 910  # the last accumulated prompt + completion tokens
    assert [c.cost for c in calls(events)] == pytest.approx([0.01] * 7 + [0.006])  # the last: finish


def test_older_pairs_in_an_evaluation_record():
    session, events = events_of(PAIRS)
    assert session.session == "psf__requests-512"
    assert shape(events) == [
        ("UserMessage", None, "[0]"),
        ("ToolCall", "run", "[1]"),
        ("ToolCall", "run", "[2]"),
        ("ToolCall", "write", "[3]"),
        ("ModelText", None, "[4]"),
    ]
    assert [(c.error, c.changed) for c in calls(events)] == [
        (False, ()),
        (True, ()),
        (False, ("/workspace/requests/utils.py",)),
    ]
    assert calls(events)[0].input == {"command": "grep -rn 'def parse' requests/"}
    assert session.cost == pytest.approx(0.0731)  # from the record's metrics


def test_output_jsonl_is_one_session_a_line():
    sessions = list(read(fixture("openhands", "output.jsonl")))
    assert [(s.session, s.meta["line"]) for s in sessions] == [("psf__requests-512", 1), ("psf__requests-1963", 2)]
    assert [len(calls(list(s))) for s in sessions] == [3, 2]


def test_output_jsonl_broken_line_is_skipped_and_counted(tmp_path):
    lines = open(fixture("openhands", "output.jsonl"), "rb").read().splitlines(keepends=True)
    path = tmp_path / "output.jsonl"
    path.write_bytes(lines[0] + b'{"instance_id": "cut", "history": [\n' + lines[1])
    sessions = list(read(str(path)))
    assert [s.session for s in sessions] == ["psf__requests-512", "psf__requests-1963"]
    assert sessions[1].skipped == ["line 2: not JSON"]


def test_a_non_object_event_is_skipped_and_counted(tmp_path):
    events = json.load(open(TRAJECTORY))
    events.insert(5, "garbage")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    session, read_events = events_of(str(path))
    assert session.skipped == ["[5]: not an event object"]
    assert len(calls(read_events)) == 8  # every call of the fixture, finish included


def test_an_action_without_observation_is_kept(tmp_path):
    events = json.load(open(TRAJECTORY))[:15]  # cut after the last run's action
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    _, read_events = events_of(str(path))
    last = calls(read_events)[-1]
    assert (last.name, last.result, last.source_ref) == ("execute_bash", None, "[14]")


def test_a_truncated_file_is_a_clear_error(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(open(TRAJECTORY, "rb").read()[:3000])
    with pytest.raises(ReadError, match="not valid JSON"):
        list(openhands.read(str(path)))


@pytest.mark.parametrize("data", [{"history": "no"}, [{"role": "user", "content": "hi"}], {"steps": []}, 42])
def test_not_an_openhands_file_raises_a_clear_error(tmp_path, data):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data, indent=1))
    with pytest.raises(ReadError, match="not an OpenHands trajectory"):
        list(openhands.read(str(path)))


@pytest.mark.parametrize("name", ["trajectory.json", "looping.json", "history-pairs.json", "output.jsonl"])
def test_sniff_claims_its_own_files(name):
    path = fixture("openhands", name)
    assert claims("openhands", path)
    assert detect(path, open(path, "rb").read()) == "openhands"


@pytest.mark.parametrize("path", foreign_fixtures("openhands") + corpus_samples())
def test_sniff_leaves_other_formats_alone(path):
    assert not claims("openhands", path)


def test_sniff_leaves_the_generic_events_jsonl_alone():
    assert not claims("openhands", "events.jsonl", EVENTS_JSONL)


def test_a_looping_trajectory_is_stopped():
    stop = stop_of(one_session(fixture("openhands", "looping.json")))
    assert stop is not None and stop.action is Action.STOP
    assert stop.source_ref == "[7]"  # the 4th identical call; its thoughts differed


def test_a_healthy_trajectory_is_not_stopped():
    assert stop_of(one_session(TRAJECTORY)) is None


def test_read_output_jsonl_from_a_stream():
    import io

    stream = io.BufferedReader(io.BytesIO(open(fixture("openhands", "output.jsonl"), "rb").read()))
    assert [s.session for s in read("-", stream=stream)] == ["psf__requests-512", "psf__requests-1963"]
