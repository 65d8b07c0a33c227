"""The record of a run: verdict, warnings, calibration; names, counts and times only."""

from __future__ import annotations

import json
import pickle

import orjson
import pytest

import loopwatch._core.monitor as monitor_module
from loopwatch import Action, Attempt, Correction, ModelText, Monitor, Output, Retry, ToolCall, Turn

from core_support import bash, call, feed, only

SECRET = "SECRET-TOKEN-123"


def cycle_round():
    return [
        bash("pkill -f server", ""),
        bash("./server &", "[1] 77"),
        call("Read", {"file_path": "log"}, "bind: in use"),
        bash("curl localhost:8080", "connection refused", error=True),
    ]


def test_the_record_of_a_stopped_cycle():
    m = only("cycle", {"repeats": 3, "max_period": 5})
    events = [ToolCall("Bash", {"command": "ls"}, "x", at=100.0)]
    for i in range(4):
        events += cycle_round()
    for i, event in enumerate(events[1:], 1):
        events[i] = ToolCall(
            event.name, event.input, event.result, error=event.error, at=100.0 + 37.0 * i, source_ref=f"line {i + 1}"
        )
    verdicts = feed(m, events)
    assert [v.action for v in verdicts].count(Action.STOP) >= 1
    record = m.record()
    verdict = record["verdict"]
    assert verdict["signal"] == "cycle" and verdict["action"] == "stop"
    # nudged at the 3rd copy (action 13), stopped at the next action: the first stop is the verdict
    assert verdict["period"] == 4 and verdict["repeats"] == 3
    assert verdict["tools"] == ["Bash", "Read"]
    assert verdict["started_action"] == 2 and verdict["at_action"] == 14
    assert verdict["started_at"] == 37.0  # relative to the first event
    assert verdict["detected_at"] == verdict["at"] == 13 * 37.0
    assert verdict["source_ref"] == "line 14"
    assert (
        verdict["description"]
        == "the same 4-step action cycle (Bash, Bash, Bash, Read) repeated 3 times and begun again over 7m24s"
    )
    assert [v["action"] for v in record["interventions"]] == ["nudge"] + ["stop"] * 4
    assert record["interventions"][0]["at_action"] == 13 and record["interventions_total"] == 5
    assert (record["events"], record["actions"], record["duration"]) == (17, 17, 16 * 37.0)
    assert (record["mode"], record["profile"]) == ("enforce", "unattended")
    assert record["calibration"]["cycle_most"] == 4 and record["calibration"]["cycle_period"] == 4


def test_the_record_of_a_quiet_run():
    m = Monitor()
    feed(m, [bash(f"echo {w}", w) for w in ("alpha", "beta", "gamma")] + [Turn()])
    record = m.record()
    assert record["verdict"] is None and record["interventions"] == [] and record["warnings"] == 0
    assert record["findings"] == []
    assert set(record["calibration"]) >= {
        "repeat_most",
        "cycle_most",
        "cycle_period",
        "stagnation_seconds",
        "stagnation_actions",
        "lines_most",
        "retry_longest",
        "churn_fewest_distinct",
    }


def test_without_a_stop_the_verdict_is_the_strongest_intervention():
    m = only("repeat", {"threshold": 3}, profile="attended")
    feed(m, [bash("make", "error", error=True) for _ in range(4)])
    assert m.record()["verdict"]["action"] == "block"


def test_the_record_counts_warnings_and_keeps_findings():
    m = only("repeat", {"threshold": 10}, mode="warn")
    feed(m, [bash("make", "error", error=True) for _ in range(12)])
    record = m.record()
    assert record["warnings"] == m.warnings == 2
    (finding,) = record["findings"]
    assert finding["signal"] == "repeat" and finding["repeats"] == 12 and finding["severity"] == 1.2


def test_the_record_is_json():
    m = Monitor()
    feed(m, cycle_round() * 5 + [ModelText("Sorry."), Output("x\n"), Retry(), Correction("no")])
    record = m.record()
    assert json.loads(json.dumps(record)) == record
    assert orjson.loads(orjson.dumps(record)) == record


def test_interventions_kept_are_bounded_but_all_counted():
    m = only("repeat", {"threshold": 2}, profile="attended")
    for i in range(1200):
        feed(m, [bash(f"probe {i:x}".replace("0", "g"), "same") for _ in range(2)])
    record = m.record()
    assert record["interventions_total"] == 1200
    assert len(record["interventions"]) == monitor_module.MAX_INTERVENTIONS < 1200


# -- privacy ----------------------------------------------------------------------------


def strings_in(obj, seen=None):
    """Every str and bytes reachable from `obj` (attributes, slots, containers)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, (str, bytes, bytearray)):
        yield obj
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings_in(k, seen)
            yield from strings_in(v, seen)
        return
    if isinstance(obj, (list, tuple, set, frozenset)) or type(obj).__name__ == "deque":
        for v in obj:
            yield from strings_in(v, seen)
        return
    if hasattr(obj, "__dict__"):
        yield from strings_in(vars(obj), seen)
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if hasattr(obj, name):
                yield from strings_in(getattr(obj, name), seen)


def assert_no_secret(m: Monitor) -> None:
    for s in strings_in(m):
        text = s if isinstance(s, str) else bytes(s).decode("latin-1")
        assert SECRET not in text, text[:200]
    assert SECRET not in repr(vars(m))
    state = pickle.dumps({k: v for k, v in vars(m).items() if k != "_lock"})
    assert SECRET.encode() not in state
    assert SECRET not in json.dumps(m.record())
    assert SECRET not in json.dumps(m.calibration())


def secret_everywhere():
    """Secrets in inputs, results, errors, text, streamed chunks, corrections and output
    lines, in a stream that loops (so findings and interventions exist)."""
    events = []
    for i in range(6):
        events += [
            call("Read", {"file_path": f"/home/u/.env{i}", "note": SECRET}, f"API_KEY={SECRET}\n" * 50),
            bash(f"curl -H 'X-Token: {SECRET}-{i}' api", f"401 {SECRET} denied", error=True),
            ModelText(f"I apologize, the token {SECRET} was wrong."),
            ModelText(f"Using {SECRET} now. ", chunk=True),
            ModelText(f"Using {SECRET} now. ", chunk=True),
            Turn(),
            Correction(f"No such tool: {SECRET}"),
            Output(f"auth failed for {SECRET}\r\n".encode()),
            Output(f"auth failed for {SECRET}\n", stream="stderr"),
            Retry(reason=SECRET),
            Attempt("Bash", {"command": f"echo {SECRET}"}),
        ]
    return events


@pytest.mark.parametrize("profile", ["unattended", "attended"])
def test_the_monitor_keeps_no_input_result_text_or_output(profile):
    m = Monitor(profile=profile, signals={"repeat": {"threshold": 0}, "echo": {"turns": 0}})
    feed(m, secret_everywhere(), step=30.0)
    assert m.interventions_total > 0  # the stream looped: findings and verdicts were made
    assert_no_secret(m)


def test_the_record_holds_no_content_even_when_a_nudge_names_the_call():
    m = only("repeat", {"threshold": 2}, profile="attended")
    verdicts = feed(m, [bash(f"curl -H 'X-Token: {SECRET}' api", "401", error=True) for _ in range(4)])
    nudge = next(v for v in verdicts if v.action is Action.NUDGE)
    assert SECRET in nudge.message  # the model is told which call (it wrote it)
    assert SECRET not in json.dumps(m.record())


def test_the_monitor_state_holds_no_input_even_when_a_nudge_names_the_call():
    m = only("repeat", {"threshold": 2}, profile="attended")
    feed(m, [bash(f"curl -H 'X-Token: {SECRET}' api", "401", error=True) for _ in range(4)])
    assert_no_secret(m)
