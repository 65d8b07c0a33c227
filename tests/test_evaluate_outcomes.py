"""Outcomes as a measure: reading them, matching sessions, harm, folds, calibrations."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwatch import load_config
from loopwatch._core.config import Config
from loopwatch._analysis.crossval import (
    GRID,
    Candidate,
    _Row,
    assign_folds,
    bootstrap,
    choose,
    cross_validate,
)
from loopwatch._analysis.evaluation import EARLY_STEPS, Case, Interventions, Label, Replayed, Scored, harm, judge, score
from loopwatch._analysis.outcomes import OutcomeError, load_groups, load_outcomes, parse_resolved

HERE = os.path.dirname(__file__)
SRC = os.path.join(HERE, "..", "src")
CORPUS = os.path.join(HERE, "..", "..", "shared", "corpus")
needs_corpus = pytest.mark.skipif(
    not os.path.isfile(os.path.join(CORPUS, "MANIFEST.tsv")), reason="shared corpus absent"
)


def run(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(SRC)}
    env.pop("LOOPWATCH_MODE", None)
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize(
    "value, expected",
    [
        ("yes", True),
        ("no", False),
        ("no_empty_patch", False),
        ("no (reward 0.0)", False),
        ("unknown", None),
        ("", None),
        (True, True),
        (0, False),
        ("resolved", True),
    ],
)
def test_resolved_values(value, expected):
    assert parse_resolved(value) is expected


@needs_corpus
def test_the_manifest_matches_every_file_by_path_relative_to_it():
    outcomes = load_outcomes([os.path.join(CORPUS, "MANIFEST.tsv")])
    with open(os.path.join(CORPUS, "MANIFEST.tsv"), newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    for row in rows:
        got = outcomes.lookup(os.path.join(CORPUS, row["local_path"]))
        assert got is parse_resolved(row["resolved"]), row["local_path"]
    assert sum(1 for r in rows if r["resolved"] == "yes") == sum(1 for p in outcomes.paths() if outcomes.lookup(p))


@needs_corpus
def test_terminal_bench_trial_results_apply_to_their_folder():
    folder = os.path.join(CORPUS, "tb1-console-log")
    outcomes = load_outcomes([folder])
    with open(os.path.join(CORPUS, "MANIFEST.tsv"), newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["local_path"].startswith("tb1-console-log/")]
    assert rows
    for row in rows:
        trial = os.path.join(CORPUS, os.path.dirname(row["local_path"]))
        with open(os.path.join(trial, "results.json")) as fh:
            expected = json.load(fh)["is_resolved"]
        assert outcomes.lookup(os.path.join(CORPUS, row["local_path"])) is parse_resolved(expected)


def test_swe_bench_results_are_scoped_to_their_run(tmp_path):
    # two runs share instance ids; each run's results name only its own sessions
    for run_name, resolved in (("run-a", ["django__django-1"]), ("run-b", [])):
        (tmp_path / run_name / "trajs").mkdir(parents=True)
        (tmp_path / run_name / "trajs" / "django__django-1.traj").write_text("{}")
        (tmp_path / run_name / "results.json").write_text(
            json.dumps(
                {
                    "resolved": resolved,
                    "unresolved_ids": [] if resolved else ["django__django-1"],
                    "empty_patch_ids": [],
                }
            )
        )
    outcomes = load_outcomes([str(tmp_path / "run-a" / "results.json"), str(tmp_path / "run-b" / "results.json")])
    assert outcomes.lookup(str(tmp_path / "run-a" / "trajs" / "django__django-1.traj")) is True
    assert outcomes.lookup(str(tmp_path / "run-b" / "trajs" / "django__django-1.traj")) is False
    assert outcomes.lookup(str(tmp_path / "elsewhere" / "django__django-1.traj")) is None


def test_json_and_tsv_of_session_to_resolved(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "task-7.traj.json").write_text("{}")
    (tmp_path / "map.json").write_text(json.dumps({"task-7": True, "task-8": "no"}))
    (tmp_path / "map.tsv").write_text("session\tresolved\ntask-7\tno\n")
    (tmp_path / "list.json").write_text(json.dumps([{"instance_id": "task-7", "is_resolved": True}]))
    assert load_outcomes([str(tmp_path / "map.json")]).lookup(str(tmp_path / "a" / "task-7.traj.json")) is True
    assert load_outcomes([str(tmp_path / "map.tsv")]).lookup(str(tmp_path / "a" / "task-7.traj.json")) is False
    assert load_outcomes([str(tmp_path / "list.json")]).lookup(str(tmp_path / "a" / "task-7.traj.json")) is True


def test_a_json_list_by_path_keeps_failed_sessions_as_well_as_solved_ones(tmp_path):
    items = [{"path": "runs/a.jsonl", "resolved": True}, {"path": "runs/b.jsonl", "is_resolved": False}]
    (tmp_path / "list.json").write_text(json.dumps(items))
    outcomes = load_outcomes([str(tmp_path / "list.json")])
    assert outcomes.lookup(str(tmp_path / "runs" / "a.jsonl")) is True
    assert outcomes.lookup(str(tmp_path / "runs" / "b.jsonl")) is False
    assert len(outcomes.paths()) == 2


@pytest.mark.parametrize(
    "text, message",
    [
        ("path\tlabel\nx\tyes\n", "no resolved column"),
        ("resolved\tnotes\nyes\tx\n", "no column naming the session"),
        ("{not json", "not valid JSON"),
        ('{"unrelated": {"a": 1}}', "no session outcome"),
    ],
)
def test_bad_outcome_files_say_why(tmp_path, text, message):
    path = tmp_path / "outcomes.txt"
    path.write_text(text)
    with pytest.raises(OutcomeError, match=message):
        load_outcomes([str(path)])


def _case(label: str | None, resolved: bool | None, onset: int | None = None, name: str = "s") -> Case:
    return Case(name, Label(name, label, onset, onset + 5 if onset else None) if label else None, resolved)


def test_harm_counts_stops_and_nudges_on_sessions_that_succeeded():
    items = [
        Scored(_case(None, True), 30, 12, 10),  # stopped while succeeding
        Scored(_case(None, True), 30, None, 8),  # nudged only
        Scored(_case(None, True), 30, None, None),
        Scored(_case(None, False), 40, 10, 9),  # a failed run stopped at 10: 30 steps saved
        Scored(_case(None, None), 40, 5, 5),  # unknown outcome: left out
    ]
    h = harm(items)
    assert (h.succeeded, h.stopped, h.nudged, h.failed, h.failed_stopped, h.saved_steps) == (3, 1, 2, 1, 1, 30)


def _replayed(case: Case, stops: list[int | None]) -> Replayed:
    return Replayed(
        case, None, 50, "x", [Interventions(s, "sig" if s else None, s, "sig" if s else None, s) for s in stops]
    )


def _cands(n: int) -> list[Candidate]:
    return [Candidate({"signals.x.threshold": n - i}, (i,), None) for i in range(n)]  # type: ignore[arg-type]


def test_the_choice_never_stops_a_successful_session_and_keeps_a_margin():
    # candidate 0 most conservative, 3 most aggressive; 3 stops a success, so with a
    # margin of one step the choice is 1 (2's neighbour 3 is unsafe), without it 2
    loop = _case("yes", None, onset=10, name="loop")
    won = _case(None, True, name="won")
    rows = [_Row(_replayed(loop, [None, 20, 15, 12])), _Row(_replayed(won, [None, None, None, 30]))]
    assert choose(rows, _cands(4), margin=0) == 2
    assert choose(rows, _cands(4), margin=1) == 1


def _grid(axes: list[int]) -> list[Candidate]:
    """Every point of a grid with `axes[i]` values on axis i, position 0 the most conservative."""
    import itertools

    points = itertools.product(*(range(n) for n in axes))
    return [Candidate({f"signals.x{a}.threshold": p for a, p in enumerate(pos)}, pos, None) for pos in points]  # type: ignore[arg-type]


def test_an_axis_whose_first_step_is_the_edge_shuts_out_no_other_axis():
    # axis 0 (two values): its aggressive value stops a success, so its conservative one
    # is on the edge with nothing further back; on axis 1, values 1 and 2 catch a loop
    # safely. The margin asks nothing of axis 0 at its first value: (0, 1), not the
    # grid's first point.
    loop = _case("yes", None, onset=10, name="loop")
    won = _case(None, True, name="won")
    cands = _grid([2, 3])  # (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)
    rows = [_Row(_replayed(loop, [None, 12, 12, None, 12, 12])), _Row(_replayed(won, [None, None, None, 30, 30, 30]))]
    assert choose(rows, cands, margin=1) == 1
    assert choose(rows, cands, margin=0) == 1


def test_an_axis_end_is_not_shipped_with_a_margin():
    # nothing beyond the most aggressive value shows it is off the edge: one step back
    loop = _case("yes", None, onset=10, name="loop")
    rows = [_Row(_replayed(loop, [None, 14, 12]))]  # the last value stops it sooner
    assert choose(rows, _cands(3), margin=1) == 1
    assert choose(rows, _cands(3), margin=0) == 2


def test_the_margin_still_holds_on_an_axis_that_can_step_back():
    # axis 1 (three values): its last stops a success, so the margin keeps its first
    loop = _case("yes", None, onset=10, name="loop")
    won = _case(None, True, name="won")
    cands = _grid([1, 3])
    rows = [_Row(_replayed(loop, [None, 12, 12])), _Row(_replayed(won, [None, None, 30]))]
    assert choose(rows, cands, margin=1) == 0
    assert choose(rows, cands, margin=0) == 1


def test_the_harm_floor_is_never_given_up_for_the_margin():
    # the only setting with no stop on a success (1) has an unsafe neighbour: no setting
    # keeps the margin, and the floor alone decides (never the grid's first point, which
    # stops the success)
    won = _case(None, True, name="won")
    loop = _case("yes", None, onset=10, name="loop")
    rows = [_Row(_replayed(won, [30, None, 30])), _Row(_replayed(loop, [12, 12, 12]))]
    assert choose(rows, _cands(3), margin=1) == 1


def test_the_confirm_axis_reaches_back_past_a_harmless_streak_of_several_rounds():
    # a session that solved its task held a suspicion streak 6 rounds past its nudge; a
    # loop held 20. Suspicion stops at the nudge (step 10) plus `confirm` rounds, so every
    # confirm from 1 to 6 stops the success: with a margin the grid must still offer a
    # setting that stops the loop, not only 0 (suspicion never stops)
    axis = GRID["evidence.confirm"]
    cands = [Candidate({"evidence.confirm": v}, (i,), None) for i, v in enumerate(axis)]  # type: ignore[arg-type]

    def stops(rounds: int) -> list[int | None]:
        return [10 + c if 0 < c <= rounds else None for c in axis]

    loop = _case("yes", None, onset=5, name="loop")
    won = _case(None, True, name="won")
    rows = [_Row(_replayed(loop, stops(20))), _Row(_replayed(won, stops(6)))]
    chosen = axis[choose(rows, cands, margin=1)]
    assert 6 < chosen <= 20


def test_a_stop_well_before_onset_is_unsafe():
    loop = _case("yes", None, onset=10, name="loop")
    rows = [_Row(_replayed(loop, [None, 12, 10 - EARLY_STEPS - 1]))]
    assert choose(rows, _cands(3), margin=0) == 1


def test_a_stop_on_a_loop_the_agent_escaped_is_false():
    # the choice trades a stop on a `brief` session like one on a healthy one
    loops = [_case("yes", False, 10, f"l{i}") for i in range(2)]
    escaped = _case("brief", False, 10, name="escaped")
    rows = [_Row(_replayed(loops[0], [None, 12, 12])), _Row(_replayed(loops[1], [None, None, 12]))]
    rows.append(_Row(_replayed(escaped, [None, None, 11])))
    assert choose(rows, _cands(3), margin=0) == 1


@pytest.mark.parametrize(
    "label, step, expected",
    [
        ("yes", None, None),
        ("yes", 10, "caught"),
        ("yes", 30, "caught"),
        ("yes", 10 - EARLY_STEPS, "early"),
        ("yes", 9, "early"),
        ("yes", 10 - EARLY_STEPS - 1, "false"),
        ("yes", 1, "false"),
        ("brief", 12, "false"),
        ("brief", None, None),
        ("no", 3, "false"),
    ],
)
def test_the_yardstick(label, step, expected):
    assert judge(_case(label, False, 10 if label != "no" else None).label, step) == expected


def test_early_stops_are_neither_caught_nor_harm_and_brief_stops_are_harm():
    labels = [_case("yes", False, 10, f"l{i}").label for i in range(4)] + [
        _case("brief", False, 10, "b").label,
        _case("no", False, name="n").label,
    ]
    result = score(zip(labels, [8, 3, 12, None, 11, None]))
    assert (result.caught, result.early_yes, result.before_onset, result.brief_stopped, result.false_no) == (
        1,
        1,
        1,
        1,
        0,
    )
    assert result.false_stops == 2  # before the onset, and the brief one
    assert sorted(result.false_paths) == ["b", "l1"]
    assert result.as_dict()["early_stops_on_yes"] == 1 and result.as_dict()["stops_before_onset"] == 1


def test_folds_are_stratified_and_deterministic():
    cases = [_case("yes", False, 3, f"l{i}") for i in range(10)] + [_case(None, True, name=f"w{i}") for i in range(20)]
    folds = assign_folds(cases, 5, seed=7)
    assert folds == assign_folds(cases, 5, seed=7)
    assert folds != assign_folds(cases, 5, seed=8)
    for fold in range(5):
        assert sum(1 for c, f in zip(cases, folds) if f == fold and c.label) == 2
        assert sum(1 for c, f in zip(cases, folds) if f == fold and not c.label) == 4


def test_cross_validation_scores_each_fold_on_a_choice_made_without_it():
    # one success that only the most aggressive setting stops: whichever fold holds it,
    # the other folds cannot see it, so out of fold it IS stopped (an honest miss)
    loops = [_case("yes", None, 10, f"l{i}") for i in range(8)]
    rows = [_replayed(c, [None, 14, 12]) for c in loops]
    rows.append(_replayed(_case(None, True, name="won"), [None, None, 40]))
    rows += [_replayed(_case(None, True, name=f"ok{i}"), [None, None, None]) for i in range(7)]
    report = cross_validate(rows, _cands(3), k=4, seed=0, margin=0, resamples=50)
    assert report.out_of_fold.outcomes.stopped == 1
    assert report.in_sample.outcomes.stopped == 0
    assert report.chosen == {"signals.x.threshold": 2}
    again = cross_validate(rows, _cands(3), k=4, seed=0, margin=0, resamples=50)
    assert again.intervals == report.intervals


def test_a_calibration_file_keeps_any_value_as_given():
    # the file is TOML written by tomli-w: a string with quotes, a backslash and a
    # newline reads back as it was, next to the numbers and booleans of the grid
    import tomllib

    from loopwatch._analysis.crossval import calibration_toml

    odd = 'say "hi" \\ C:\\dir\nnext'
    values = [{"signals.x.pattern": odd, "signals.x.threshold": 3, "evidence.second_signal": True}] * 2
    cands = [Candidate(v, (i,), None) for i, v in enumerate(values)]  # type: ignore[arg-type]
    rows = [_replayed(_case(None, True, name=f"s{i}"), [None, None]) for i in range(4)]
    text = calibration_toml(cross_validate(rows, cands, k=2, resamples=10), "loopwatch calibrate x")
    assert tomllib.loads(text) == {
        "signals": {"x": {"pattern": odd, "threshold": 3}},
        "evidence": {"second_signal": True},
    }


def test_holding_out_an_agent_scores_it_on_a_choice_made_without_any_of_its_sessions():
    # agent "b" has the one success only the aggressive setting stops; the loops of "a"
    # want that setting. Chosen on "a" alone, it is applied to "b": out of fold, the
    # success IS stopped, as a default shipped before anyone ran agent "b" would.
    loops = [_case("yes", None, 10, f"a{i}") for i in range(6)]
    rows = [_replayed(c, [None, 14, 12]) for c in loops]
    rows.append(_replayed(_case(None, True, name="b-won"), [None, None, 40]))
    rows += [_replayed(_case(None, True, name=f"b-ok{i}"), [None, None, None]) for i in range(3)]
    groups = {r.case.path: r.case.path[0] for r in rows}  # "a..." or "b..."
    report = cross_validate(rows, _cands(3), k=99, seed=0, margin=0, resamples=20, groups=groups)
    assert report.folds == 2  # one fold per group: k is ignored
    by_group = {fold.group: fold for fold in report.per_fold}
    # chosen on b alone: no loop to catch there, so the most conservative setting, which
    # misses every loop of a (an honest miss: b could not tell)
    assert by_group["a"].chosen == {"signals.x.threshold": 3}
    assert by_group["a"].figures.stop.caught == 0
    assert by_group["b"].chosen == {"signals.x.threshold": 1}  # chosen on a alone: the quickest stop
    assert by_group["b"].figures.outcomes.stopped == 1
    assert report.out_of_fold.outcomes.stopped == 1
    assert report.in_sample.outcomes.stopped == 0
    assert (by_group["a"].sessions, by_group["b"].sessions) == (6, 4)


def test_one_group_only_cannot_be_held_out():
    rows = [_replayed(_case(None, True, name=f"s{i}"), [None, None]) for i in range(4)]
    with pytest.raises(ValueError, match="one group"):
        cross_validate(rows, _cands(2), groups={f"s{i}": "same" for i in range(4)})


def test_groups_are_read_from_a_tsv_column_by_path(tmp_path):
    (tmp_path / "m.tsv").write_text("local_path\tresolved\tagent\nruns/a.jsonl\tyes\tclaude\nruns/b.jsonl\tno\t\n")
    (tmp_path / "r.json").write_text("{}")
    groups = load_groups([str(tmp_path / "r.json"), str(tmp_path), str(tmp_path / "m.tsv")], "agent")
    assert groups == {os.path.join(str(tmp_path), "runs", "a.jsonl"): "claude"}  # an empty value is no group
    with pytest.raises(OutcomeError, match="no TSV given lists sessions by path with a 'model' column.*agent"):
        load_groups([str(tmp_path / "m.tsv")], "model")


def test_bootstrap_intervals_contain_the_estimate():
    items = [Scored(_case("yes", None, 10, f"l{i}"), 50, 12 if i % 2 else None, None) for i in range(40)]
    iv = bootstrap(items, 200, seed=1)
    low, high = iv["recall"]
    assert low <= 0.5 <= high and low < high


# -- the command line -----------------------------------------------------------------


def _runs(tmp_path) -> str:
    """Two sessions in the events format with a results file: one loops and failed,
    one works and succeeded."""
    runs = tmp_path / "runs"
    runs.mkdir()
    loop = [
        {"type": "tool", "name": "Bash", "input": {"command": "pytest -x"}, "result": "1 failed", "error": True}
    ] * 12
    work = [
        {"type": "tool", "name": "Bash", "input": {"command": f"cat f{i}.py"}, "result": f"body {chr(97 + i)}"}
        for i in range(12)
    ]
    for name, events in (("loop", loop), ("work", work)):
        (runs / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (runs / "results.json").write_text(json.dumps({"resolved": ["work"], "unresolved_ids": ["loop"]}))
    return str(runs)


def test_evaluate_with_outcomes_alone(tmp_path):
    runs = _runs(tmp_path)
    result = run("evaluate", runs, "--outcomes", os.path.join(runs, "results.json"), "--json", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    outcomes = report["detectors"]["all"]["outcomes"]
    assert (outcomes["succeeded"], outcomes["failed"]) == (1, 1)
    assert outcomes["stops_on_succeeded"] == 0 and outcomes["stops_on_failed"] == 1
    assert outcomes["failed_steps_saved"] > 0.5


def test_labels_kept_apart_from_their_sessions_are_found_beside_the_outcomes(tmp_path):
    # labels in a repository, sessions in a corpus whose manifest is the outcomes file
    runs = _runs(tmp_path)
    labels = tmp_path / "repo" / "labels" / "labels.tsv"
    labels.parent.mkdir(parents=True)
    labels.write_text("local_path\tlabel\tonset_step\tend_step\nloop.jsonl\tyes\t1\t12\nwork.jsonl\tno\t\t\n")
    result = run(
        "evaluate", "--labels", str(labels), "--outcomes", os.path.join(runs, "results.json"), "--json", "--jobs", "1"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["labelled"], report["errors"]) == (2, [])
    stop = report["detectors"]["all"]["stop"]
    assert (stop["yes"], stop["caught"], stop["no"], stop["false_stops"]) == (1, 1, 1, 0)


def test_labels_beside_their_sessions_keep_their_own_folder(tmp_path):
    runs = _runs(tmp_path)
    (tmp_path / "runs" / "labels.tsv").write_text("local_path\tlabel\tonset_step\tend_step\nloop.jsonl\tyes\t1\t12\n")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    (elsewhere / "loop.jsonl").write_text("")  # an empty namesake beside the outcomes: not the one read
    (elsewhere / "results.json").write_text(json.dumps({"resolved": [], "unresolved_ids": ["loop"]}))
    result = run(
        "evaluate",
        "--labels",
        os.path.join(runs, "labels.tsv"),
        "--outcomes",
        str(elsewhere / "results.json"),
        "--json",
        "--jobs",
        "1",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["detectors"]["all"]["stop"]["caught"] == 1


def test_evaluate_needs_labels_or_outcomes(tmp_path):
    result = run("evaluate", _runs(tmp_path))
    assert result.returncode == 2 and "--outcomes" in result.stderr and "Traceback" not in result.stderr


def test_evaluate_refuses_a_bad_outcomes_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\n1\t2\n")
    result = run("evaluate", "--outcomes", str(bad))
    assert result.returncode == 2 and "no resolved column" in result.stderr and "Traceback" not in result.stderr


def test_calibrate_writes_a_calibration_the_config_loads(tmp_path):
    runs = _runs(tmp_path)
    out = tmp_path / "calibration.toml"
    result = run(
        "calibrate",
        runs,
        "--outcomes",
        os.path.join(runs, "results.json"),
        "--folds",
        "2",
        "--resamples",
        "20",
        "--write",
        str(out),
        "--jobs",
        "1",
    )
    assert result.returncode == 0, result.stderr
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    text = out.read_text()
    assert "Out of fold" in text and "[evidence]" in text
    config = load_config(str(out), env={})
    assert "evidence.confirm" in config.given
    # a key the calibration sets is not overridden by a built-in one
    assert config.for_source("swe-agent").confirm == config.confirm


def test_calibrate_write_needs_folds(tmp_path):
    result = run("calibrate", _runs(tmp_path), "--write", str(tmp_path / "c.toml"))
    assert result.returncode == 2 and "--folds" in result.stderr


def _agents_runs(tmp_path) -> tuple[str, str]:
    """Four sessions of two agents, with an outcomes TSV naming each one's agent."""
    runs = tmp_path / "runs"
    loop = [{"type": "tool", "name": "Bash", "input": {"command": "make"}, "result": "Error 2", "error": True}] * 10
    rows = ["local_path\tresolved\tagent"]
    for agent in ("alpha", "beta"):
        (runs / agent).mkdir(parents=True)
        work = [
            {"type": "tool", "name": "Bash", "input": {"command": f"cat {agent}{i}.py"}, "result": f"body {i}"}
            for i in range(8)
        ]
        for name, events, resolved in (("loop", loop, "no"), ("work", work, "yes")):
            (runs / agent / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
            rows.append(f"{agent}/{name}.jsonl\t{resolved}\t{agent}")
    (runs / "outcomes.tsv").write_text("\n".join(rows) + "\n")
    return str(runs), str(runs / "outcomes.tsv")


@pytest.mark.parametrize("by", ["agent", "folder"])
def test_evaluate_folds_by_holds_out_one_group_per_fold(tmp_path, by):
    _, tsv = _agents_runs(tmp_path)
    result = run("evaluate", "--outcomes", tsv, "--folds-by", by, "--resamples", "20", "--json", "--jobs", "1")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["folds_by"] == by and report["folds"] == 2
    assert sorted(f["group"] for f in report["per_fold"]) == ["alpha", "beta"]  # the column, or the folder
    for fold in report["per_fold"]:
        out = fold["figures"]["outcomes"]
        assert (fold["sessions"], out["succeeded"], out["failed"], out["stops_on_failed"]) == (2, 1, 1, 1)
    text = run("evaluate", "--outcomes", tsv, "--folds-by", by, "--resamples", "20", "--jobs", "1", "--no-progress")
    assert text.returncode == 0 and f"one fold per {by} (2)" in text.stdout
    assert f"{by} alpha (2 sessions)" in text.stdout and "held out: stops on succeeded 0 of 1" in text.stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--folds-by", "model"), "--folds-by: no TSV given lists sessions by path with a 'model' column"),
        (("--folds-by", "agent", "--folds", "3"), "not both"),
    ],
)
def test_evaluate_folds_by_refuses_bad_input_in_one_line(tmp_path, extra, message):
    _, tsv = _agents_runs(tmp_path)
    result = run("evaluate", "--outcomes", tsv, *extra)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_calibrate_folds_by_writes_a_calibration_saying_how_it_was_held_out(tmp_path):
    _, tsv = _agents_runs(tmp_path)
    out = tmp_path / "calibration.toml"
    result = run("calibrate", "--outcomes", tsv, "--folds-by", "agent", "--resamples", "20", "--write", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "4 sessions, one fold per agent (2), margin 1." in text and "[evidence]" in text
    assert "evidence.confirm" in load_config(str(out), env={}).given


@pytest.mark.slow
@needs_corpus
def test_evaluate_folds_is_deterministic_and_reports_out_of_fold(tmp_path):
    # a small slice of the corpus: the mini-swe-agent sessions' outcomes, 3 folds
    manifest = tmp_path / "MANIFEST.tsv"
    with open(os.path.join(CORPUS, "MANIFEST.tsv"), newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    keep = [r for r in rows if r["local_path"].startswith("tb1-console-log/") and r["resolved"] in ("yes", "no")][:9]
    # paths in an outcomes TSV are relative to it: here, absolute
    manifest.write_text(
        "local_path\tresolved\n" + "".join(f"{os.path.join(CORPUS, r['local_path'])}\t{r['resolved']}\n" for r in keep)
    )
    args = ("evaluate", "--outcomes", str(manifest), "--corpus", CORPUS, "--folds", "3", "--resamples", "30", "--json")
    first, second = run(*args), run(*args)
    assert first.returncode == 0, first.stderr
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["out_of_fold"] == b["out_of_fold"] and a["per_fold"] == b["per_fold"]
    assert len(a["per_fold"]) == 3 and a["sessions"] == len(keep)


def test_a_calibrated_config_is_applied_by_source():
    from loopwatch._core.calibrations import CALIBRATIONS

    for source, profile in CALIBRATIONS.items():
        config = Config.make().for_source(source)
        assert config.calibrated == source
        for signal, values in profile.get("signals", {}).items():
            for key, value in values.items():
                assert getattr(config.signals[signal], key) == value


@needs_corpus
def test_mini_swe_agent_actions_are_read_as_the_harness_reads_them():
    # An assistant message quoting an unlabelled code block in its thought before its one
    # ```bash block: the harness ran the bash block (the next message has its
    # returncode), so it is a tool call; before, 12% of this run's steps were lost.
    from loopwatch._core.events import ToolCall
    from loopwatch._readers import read

    path = os.path.join(CORPUS, "mini-swe-agent-traj-json/swebv-gemini-3-pro/sphinx-doc__sphinx-9320.traj.json")
    session = next(iter(read(path)))
    calls = [e for e in session.events if isinstance(e, ToolCall)]
    step_of = session.meta["step_of"]
    steps = {step_of[c.source_ref]: c.input["command"] for c in calls}
    assert steps[24] == "sed -i 's/timeout=2/timeout=5/' test_valid_path.py"
    with open(path) as fh:
        messages = json.load(fh)["messages"]
    # every reply of the harness that is not a format correction answers an action
    answered = sum(
        1
        for i, m in enumerate(messages[:-1])
        if m["role"] == "assistant"
        and messages[i + 1]["role"] == "user"
        and not messages[i + 1]["content"].startswith("Please always provide EXACTLY ONE action")
    )
    assert len(calls) == answered


@needs_corpus
def test_sessions_that_recover_from_format_corrections_are_not_stopped():
    # the gemini-3-pro sessions that drew 3 or more format corrections in a row and then
    # solved their task: the shipped configuration (with its calibration) lets them be
    from loopwatch._analysis.evaluation import _load, first_interventions

    outcomes = load_outcomes([os.path.join(CORPUS, "MANIFEST.tsv")])
    folder = os.path.join(CORPUS, "mini-swe-agent-traj-json", "swebv-gemini-3-pro")
    checked = 0
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if outcomes.lookup(path) is not True:
            continue
        events, step_of, source = _load(path, CORPUS)
        row = best = 0
        for e in events:
            kind = type(e).__name__
            if kind == "Correction":
                row += 1
                best = max(best, row)
            elif kind == "ToolCall":
                row = 0
        if best < 3:
            continue
        checked += 1
        stop = first_interventions(events, Config.make().for_source(source), step_of).stop
        assert stop is None, name
    assert checked >= 3


def test_one_signal_alone_stays_alone_under_a_calibration():
    from loopwatch._analysis.evaluation import only

    alone = only(Config.make(), "repeat").for_source("swe-agent")
    assert alone.signals["same_error"].threshold == 0 and alone.signals["repeat"].threshold == 4


def test_a_false_stop_must_buy_five_loops():
    # setting 2 catches one more loop but stops a healthy session that failed: not
    # worth it; setting 3 catches six more for one false stop: worth it
    loops = [_case("yes", False, 10, f"l{i}") for i in range(7)]
    healthy = _case("no", False, name="h")
    rows = [_Row(_replayed(loops[0], [None, 12, 12, 12]))]
    rows.append(_Row(_replayed(loops[1], [None, None, 12, 12])))
    rows += [_Row(_replayed(c, [None, None, None, 12])) for c in loops[2:]]
    rows.append(_Row(_replayed(healthy, [None, None, 20, 20])))
    assert choose(rows, _cands(4), margin=0) == 3
    assert choose(rows[:2] + rows[-1:], _cands(4), margin=0) == 1


# -- sub-agents: one monitor each; what a sub-agent's stop means -----------------------


def _calls(agent: str | None, n: int, start: int, command: str = "javac Test.java") -> list:
    from loopwatch._core.events import ToolCall

    return [
        ToolCall(
            "bash",
            {"command": command},
            "bash: javac: command not found",
            error=True,
            agent=agent,
            source_ref=f"s{start + i}",
        )
        for i in range(n)
    ]


def _steps(events: list) -> dict[str, int]:
    return {e.source_ref: i + 1 for i, e in enumerate(events)}


def test_a_streak_never_runs_across_two_sub_agents():
    from loopwatch._analysis.evaluation import first_interventions

    config = Config.make().for_source("swe-agent")  # repeat: stop on the 5th identical round
    split = _calls("Manager", 1, 0, "plan") + _calls("Reproducer", 4, 1) + _calls("Programmer", 4, 5)
    assert first_interventions(split, config, _steps(split)).stop is None
    # the same calls from one agent are one streak of 8, stopped
    single = [e._replace(agent=None) for e in split]
    assert first_interventions(single, config, _steps(single)).stop is not None


def test_a_stopped_sub_agent_ends_and_its_session_goes_on():
    from loopwatch._analysis.evaluation import first_interventions

    config = Config.make().for_source("swe-agent")
    events = (
        _calls("Manager", 1, 0, "plan")
        + _calls("Programmer", 8, 1)
        + _calls("Tester", 2, 9, "python reproduce.py")
        + _calls("Manager", 8, 11, "submit")
    )
    found = first_interventions(events, config, _steps(events))
    stop, nudge, session_stop, agent = found.stop, found.nudge, found.session_stop, found.stop_agent
    assert agent == "Programmer" and stop is not None and nudge is not None and nudge <= stop <= 9
    # the Programmer's later calls are skipped; the Manager's own streak stops the session
    assert session_stop is not None and session_stop > 11


def test_harm_says_which_stops_were_a_sub_agent_s_and_which_came_after_the_last_write():
    cases = [Case(f"s{i}", None, True) for i in range(4)]
    items = [
        Scored(cases[0], 30, 10, 9, 10, None, 5),  # own agent, after the last write
        Scored(cases[1], 30, 12, 11, None, "Programmer", 20),  # a sub-agent, before the last write
        Scored(cases[2], 30, 8, 7, 8, None, 8),  # stopped at the write itself: the write had run
        Scored(cases[3], 30, None, None, None, None, 3),
    ]
    result = harm(items)
    assert (result.stopped, result.stopped_session, result.stopped_sub_agent, result.stopped_after_last_write) == (
        3,
        2,
        1,
        2,
    )
    assert result.stopped_before_last_write == 1  # s1: stopped at 12, its last write at 20
    assert result.as_dict()["stops_on_succeeded_before_last_write"] == 1
    # the plain count is not changed by the breakdown
    assert harm(Scored(i.case, i.steps, i.stop, i.nudge) for i in items).stopped == 3


@needs_corpus
@pytest.mark.parametrize(
    "name, sub_agent, after_last_write",
    [
        # the Programmer wrote its fix (steps 3-4), then resubmitted a rejected test edit
        # 27 times until its own exit_cost; the session was submitted and solved
        ("swe-agent-traj/coder-swebench-lite/django__django-11039.traj", "Programmer", True),
        # the Programmer's rejected edit resubmitted 18 times, then its own fix at step 46:
        # the stop (a sub-agent's) comes before the work that solved the task
        ("swe-agent-traj/coder-swebench-lite/mwaskom__seaborn-3010.traj", "Programmer", False),
        # one agent: 20 identical javac calls to the cost cap, then autosubmit of step 3's edit
        ("swe-agent-traj/msb-java/20240825_SWE-agent_deepseek-chat-v2/googlecontainertools__jib-4035.traj", None, True),
    ],
)
def test_the_stops_on_successful_sessions_of_the_corpus_as_they_are(name, sub_agent, after_last_write):
    from loopwatch._analysis.evaluation import _load, first_interventions, last_write

    events, step_of, source = _load(name, CORPUS)
    found = first_interventions(events, Config.make().for_source(source), step_of)
    stop, session_stop, agent = found.stop, found.session_stop, found.stop_agent
    assert stop is not None and agent == sub_agent
    assert (session_stop is None) == (sub_agent is not None)
    written = last_write(events, step_of)
    assert written is not None and (stop >= written) == after_last_write


@needs_corpus
def test_evaluate_shows_both_counts_of_stops_on_successful_sessions():
    names = [
        "swe-agent-traj/coder-swebench-lite/mwaskom__seaborn-3010.traj",
        "swe-agent-traj/msb-java/20240825_SWE-agent_deepseek-chat-v2/googlecontainertools__jib-4035.traj",
    ]
    args = (
        "evaluate",
        "--outcomes",
        os.path.join(CORPUS, "MANIFEST.tsv"),
        "--jobs",
        "1",
        "--no-progress",
        *(os.path.join(CORPUS, n) for n in names),
    )
    done = run(*args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["detectors"]["all"]["outcomes"]
    assert out["stops_on_succeeded"] == 2  # the plain count keeps both
    assert (out["stops_on_succeeded_of_session_agent"], out["stops_on_succeeded_by_sub_agent"]) == (1, 1)
    assert out["stops_on_succeeded_after_last_write"] == 1  # jib-4035; seaborn-3010 was stopped before its fix
    assert out["stops_on_succeeded_before_last_write"] == 1  # seaborn-3010
    text = run(*args)
    assert all(words in text.stdout for words in ("(own / sub-agent)", "(before / after write)"))  # the headers
    assert "1 / 1" in text.stdout and max(map(len, text.stdout.splitlines())) <= 100


_TSV_HEADS = ["local_path\tresolved\tagent", "session\tresolved", "path\tis_resolved\tmodel", "resolved", ""]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    head=st.sampled_from(_TSV_HEADS),
    body=st.text(st.characters(blacklist_categories=("Cs",)), max_size=300),
    json_like=st.booleans(),
)
def test_outcome_and_group_files_of_any_content_are_read_or_refused_in_one_line(tmp_path, head, body, json_like):
    # an outcomes or groups file is read, or refused with an OutcomeError: never another exception
    path = tmp_path / "outcomes.tsv"
    path.write_text(("{" + body) if json_like else f"{head}\n{body}", encoding="utf-8")
    for read in (lambda: load_outcomes([str(path)]), lambda: load_groups([str(path)], "agent")):
        try:
            read()
        except OutcomeError as exc:
            assert "\n" not in str(exc)
