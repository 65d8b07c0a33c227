"""`cycle`: a short cycle of actions repeated at the tail, in O(max period) per step."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwatch import Action, Config
from loopwatch._core.finding import PROOF, SUSPICION
from loopwatch._core.periodic import TailCycles
from loopwatch._core.signals.cycle import Params

from core_support import bash, call, feed, only, severity, strongest
from conftest import corpus_label, needs_corpus
from conftest import replay_corpus as replay


def server_round(i: int = 0):
    """kill the server, start it, curl it, read the log: the same results each round."""
    return [
        bash("pkill -f 'python app.py'", ""),
        bash("python app.py &", "[1] 4242"),
        bash("curl -s localhost:8000/health", "curl: (7) Failed to connect to localhost port 8000", error=True),
        call("Read", {"file_path": "app.log"}, "Traceback ... ImportError: cannot import name 'db'"),
    ]


@pytest.mark.parametrize("repeats", [2, 3, 4])
def test_a_four_step_cycle_is_a_loop_after_the_given_copies(repeats):
    monitor = only("cycle", {"repeats": repeats, "max_period": 5})
    events = [e for i in range(repeats) for e in server_round(i)]
    verdicts = feed(monitor, events, step=10.0)
    assert verdicts[-1].action is Action.NUDGE and verdicts[-1].signal == "cycle"
    assert all(v.action.rank < Action.NUDGE.rank for v in verdicts[:-1])
    finding = verdicts[-1].finding
    assert (finding.period, finding.repeats) == (4, repeats)
    assert finding.started_index == 1 and finding.index == 4 * repeats
    assert finding.description.startswith("the same 4-step action cycle (Bash, Bash, Bash, Read) repeated")


def test_the_default_is_three_copies():
    repeats = Params().repeats
    monitor = only("cycle")  # default parameters: the documented behaviour
    verdicts = feed(monitor, [e for i in range(repeats) for e in server_round(i)])
    assert verdicts[-1].action is Action.NUDGE
    assert verdicts[-1].finding.repeats == repeats


def test_warns_from_half_the_copies():
    monitor = only("cycle", {"repeats": 4})
    verdicts = feed(monitor, [e for i in range(2) for e in server_round(i)])
    assert verdicts[-1].action is Action.WARN


@pytest.mark.parametrize("period", [2, 3, 4, 5])
def test_periods_up_to_the_maximum_are_found(period):
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    events = [bash(f"step-{k}", f"out {chr(97 + k)}") for _ in range(3) for k in range(period)]
    assert feed(monitor, events)[-1].finding.period == period


def test_a_longer_cycle_than_the_maximum_is_not_a_cycle():
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    events = [bash(f"step-{k}", f"out {chr(97 + k)}") for _ in range(6) for k in range(6)]
    assert strongest(feed(monitor, events)) is Action.ALLOW
    assert severity(monitor, "cycle") == 0.0


def test_a_changing_result_breaks_the_cycle():
    """The cycle is over actions (call and result): the same calls getting new results are progress."""
    monitor = only("cycle", {"repeats": 3})
    events = []
    for i in range(6):
        events += [bash("make", f"built target {chr(97 + i)}"), bash("./run", f"answer {chr(97 + i)}")]
    assert strongest(feed(monitor, events)) is Action.ALLOW


def test_the_shortest_period_wins():
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    events = [bash(c, c.upper()) for c in "abababababab"]  # also 4-periodic
    finding = feed(monitor, events)[-1].finding
    assert finding.period == 2 and finding.repeats == 6


def test_a_plain_repeat_is_not_a_cycle():
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, [bash("ls", "a") for _ in range(20)])) is Action.ALLOW


def test_only_the_last_max_period_actions_are_kept():
    monitor = only("cycle", {"repeats": 3, "max_period": 5})
    feed(monitor, [bash(f"c{i % 7}", "r") for i in range(5000)])
    (signal,) = monitor._signals
    assert len(signal._tail._tail) <= 5
    assert len(signal._recent) <= 5 * 3 + 5


def test_calibration_keeps_the_most_copies_and_their_period():
    monitor = only("cycle", {"repeats": 9})
    feed(monitor, [e for i in range(5) for e in server_round(i)] + [bash("x", "y")])
    assert monitor.calibration()["cycle_most"] == 5
    assert monitor.calibration()["cycle_period"] == 4


# -- TailCycles against a naive rescan --------------------------------------------------


def naive(seq: list, max_period: int, min_period: int) -> tuple[int, int]:
    """(period, copies) by rescanning: for each period the longest p-periodic tail;
    a period whose stretch is as periodic under a divisor belongs to the divisor; most
    copies win, the shortest period among equals."""

    def run(p):
        m = 0
        while m + p < len(seq) and seq[-1 - m] == seq[-1 - m - p]:
            m += 1
        return m

    runs = {p: run(p) for p in range(1, max_period + 1)}
    best = (0, 0)
    for p in range(min_period, max_period + 1):
        m = runs[p]
        if m == 0 or any(p % d == 0 and runs[d] >= m for d in range(1, p)):
            continue
        copies = (m + p) // p
        if copies > best[1]:
            best = (p, copies)
    return best


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=40), st.integers(1, 6), st.integers(1, 2))
def test_property_tail_cycles_match_a_rescan(seq, max_period, min_period):
    tail = TailCycles(max_period)
    for i, item in enumerate(seq):
        period, copies, length = tail.push(item, min_period=min(min_period, max_period))
        prefix = seq[: i + 1]
        assert (period, copies) == naive(prefix, max_period, min(min_period, max_period))
        if copies:
            stretch = prefix[-length:]
            assert length == len(stretch) and copies == length // period
            assert all(stretch[k] == stretch[k - period] for k in range(period, length))


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5), st.data())
def test_property_inserting_a_new_action_breaks_a_cycle(period, data):
    repeats = 3
    pattern = [bash(f"cmd-{k}", f"result {chr(97 + k)}") for k in range(period)]
    stream = pattern * repeats
    whole = only("cycle", {"repeats": repeats, "max_period": 5})
    assert feed(whole, stream)[-1].action is Action.NUDGE  # the stream alone is a loop
    at = data.draw(st.integers(1, len(stream) - 1), label="insert at")
    broken = stream[:at] + [bash("git status", "nothing new here")] + stream[at:]
    monitor = only("cycle", {"repeats": repeats, "max_period": 5})
    assert strongest(feed(monitor, broken)).rank < Action.NUDGE.rank
    assert severity(monitor, "cycle") < 1.0


def test_the_nudge_names_the_cycle_and_says_what_to_do_instead():
    monitor = only("cycle", {"repeats": 3})
    verdict = feed(monitor, [e for i in range(3) for e in server_round(i)])[-1]
    assert verdict.message.startswith(
        "loopwatch: you appear to be going in circles: the same 4-step action cycle "
        "(Bash, Bash, Bash, Read) repeated 3 times"
    )
    assert "try a different approach" in verdict.message
    assert verdict.finding.tools == ("Bash", "Read")  # most repeated first


# -- cycles whose rounds shift (issue 10, round 3) ---------------------------------------

#: A file's lines as distinct words with no digits (results have their numbers masked).
LINES = [a + b + c for a in "bcdfg" for b in "aeiou" for c in "klmnprst"]


def view(start: int, size: int = 40) -> str:
    """An editor's view of the file from line `start`: the window moves with the edit."""
    return f"[File: /repo/TypeParser.java ({len(LINES)} lines total)] " + " ".join(
        f"{k}:{LINES[k]}" for k in range(start, start + size)
    )


def edit(command: str, result: str, **kw):
    return call("edit", {"command": command}, result, changed=() if kw.get("error") else ("TypeParser.java",), **kw)


def shifting_rounds(n: int) -> list:
    """Delete a line, re-paste the same body a line higher, run the same failing test:
    the line range and the view move one line each round, nothing else changes."""
    body = "\n    ArrayList<JavaType> types = new ArrayList<JavaType>();\n    return types;\nend_of_edit"
    events = []
    for i in range(n):
        line = 72 - i
        events += [
            edit(f"edit {line}:{line}\nend_of_edit", view(21 - i)),
            edit(f"edit {line}:{line + 11}{body}", view(21 - i)),
            bash("javac TypeParser.java", "TypeParser.java:75: error: missing return statement", error=True),
        ]
    return events


def test_a_cycle_whose_line_numbers_shift_every_round_is_suspicion_that_nudges():
    monitor = only("cycle", {"repeats": 2})  # no calibration: suspicion only nudges
    verdicts = feed(monitor, shifting_rounds(6))
    got = [v.action for v in verdicts]
    assert got.index(Action.NUDGE) == 5 and got.count(Action.NUDGE) == 1 and Action.STOP not in got
    finding = verdicts[5].finding
    assert finding.grade == SUSPICION and (finding.period, finding.repeats) == (3, 2)
    assert finding.started_index == 1 and finding.index == 6
    assert finding.description.startswith("nearly the same 3-step action cycle (Bash, edit, edit) repeated 2 times")


def test_a_shifting_cycle_stops_when_corroborated_by_one_more_round():
    monitor = only("cycle", {"repeats": 2}, evidence={"confirm": 1})  # the measured calibration's rule
    got = [v.action for v in feed(monitor, shifting_rounds(4))]
    assert got[5] is Action.NUDGE and got[6] is Action.STOP


def test_an_exact_cycle_stays_proof():
    monitor = only("cycle", {"repeats": 2})
    verdicts = feed(monitor, [e for i in range(3) for e in server_round(i)])
    nudge = next(v for v in verdicts if v.action is Action.NUDGE)
    assert nudge.finding.grade == PROOF
    assert Action.STOP in [v.action for v in verdicts]


def test_drift_zero_turns_shifting_cycles_off():
    monitor = only("cycle", {"repeats": 2, "drift": 0})
    assert strongest(feed(monitor, shifting_rounds(6))).rank < Action.NUDGE.rank


def test_pages_of_a_file_read_in_turn_are_progress():
    """`sed -n 10,20p` then `30,40p`: calls alike once digits are masked, results not."""
    events = []
    for i in range(8):
        events += [
            bash(f"sed -n {20 * i + 1},{20 * i + 20}p TypeParser.java", " ".join(LINES[20 * i : 20 * i + 20])),
            bash("javac TypeParser.java", "error: missing return statement", error=True),
        ]
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, events)).rank < Action.NUDGE.rank
    assert severity(monitor, "cycle") < 1.0


def test_searches_that_find_nothing_are_never_rounds_of_a_shifting_cycle():
    """`grep pattern-1`, `grep pattern-2` are two searches (the README), even when both
    find nothing and the same file is read between them."""
    events = []
    for i in range(8):
        events += [
            call("Grep", {"pattern": f"handler_{i}"}, "No files found"),
            call("Read", {"file_path": "app.py"}, view(10)),
        ]
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, events)).rank < Action.NUDGE.rank


def test_different_edits_between_the_same_failing_run_are_progress():
    """The same test re-run after different edits: the edits' bodies differ (late in a
    long body, where a word sketch of the head cannot see it), so no round repeats."""
    head = "import os\nimport django\nfrom django.conf import settings\n" * 8
    events = []
    for i in range(6):
        events += [
            bash(
                f"cat > reproduce.py <<'EOF'\n{head}print({LINES[i]!r})\nEOF",
                "<returncode>0</returncode> <output> </output>",
            ),
            bash("python reproduce.py", "Traceback: OperationalError: no such table", error=True),
        ]
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, events)).rank < Action.NUDGE.rank


def test_bad_drift_is_refused_clearly():
    with pytest.raises(ValueError, match="drift"):
        Config.make(signals={"cycle": {"drift": 1.5}})


# -- on the real corpus -----------------------------------------------------------------


@needs_corpus
@pytest.mark.parametrize(
    "path, stop",
    [
        # the Reproducer's run/edit cycle, the edit results moving a line (labelled yes, onset 42)
        ("swe-agent-traj/coder-swebench-lite/django__django-16229.traj", 60),
        # the Tester re-editing two __init__s to the same states, the same TypeError (onset 37)
        ("swe-agent-traj/coder-swebench-lite/scikit-learn__scikit-learn-14983.traj", 51),
        # 'edit N:N' then 'edit N:N+11' with the same body, N one lower each round (onset 12)
        ("swe-agent-traj/msb-java/20240825_SWE-agent_deepseek-coder-v2/fasterxml__jackson-databind-4013.traj", 14),
    ],
)
def test_labelled_shifting_cycles_of_the_corpus_are_stopped(path, stop):
    label = corpus_label(path)
    got = replay(path)
    assert label.label == "yes" and label.onset <= got.stop <= label.end
    assert (got.stop, got.stop_signal) == (stop, "cycle")


@needs_corpus
@pytest.mark.parametrize(
    "path",
    [
        # gemini-3-pro rewrites reproduce_issue.py (bodies alike in their heads) and re-runs it; solved
        "mini-swe-agent-traj-json/swebv-gemini-3-pro/django__django-15930.traj.json",
        # CodeR's Reproducer re-edits reproduce.py and re-runs it, the traceback alike each time; solved
        "swe-agent-traj/coder-swebench-lite/django__django-13964.traj",
        # goto/edit pairs applying the same change at different call sites (labelled no)
        "swe-agent-traj/msb-java/20240825_SWE-agent_deepseek-coder-v2/fasterxml__jackson-core-1016.traj",
    ],
)
def test_successful_work_of_the_corpus_that_merely_looks_alike_is_not_stopped(path):
    assert replay(path).stop is None


def test_a_number_changed_in_an_edit_is_a_different_edit_not_a_shifted_range():
    """Only a line range in the call's first line is masked (`edit 72:83`); `depth = 1`
    then `depth = 2`, re-running the same failing test each time, are different edits."""
    events = []
    for i in range(6):
        events += [
            call(
                "Edit",
                {"file_path": "/p/parser.py", "old_string": f"    depth = {i}", "new_string": f"    depth = {i + 1}"},
                "The file /p/parser.py has been updated.",
            ),
            bash("pytest -x tests/test_parser.py", "1 failed in 0.31s", error=True),
        ]
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, events)).rank < Action.NUDGE.rank


def test_a_one_line_sweep_of_number_pairs_is_not_a_shifted_range():
    """The range mask is for an edit's command line above its body (`edit 72:83` then
    the body); a one-line command has no body to be the same, its numbers are what it
    asks: `--window 10,20` then `10,30`, each checked by the same run, is a sweep."""
    events = []
    for i in range(6):
        events += [
            bash(f"python tune.py --window 10,{20 + 10 * i}", f"accuracy 0.{80 + i} over 1200 samples"),
            bash("pytest -x tests/test_tune.py", "1 failed in 0.31s", error=True),
        ]
    monitor = only("cycle", {"repeats": 2})
    assert strongest(feed(monitor, events)).rank < Action.NUDGE.rank
