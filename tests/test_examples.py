"""The bundled examples are a labelled set in the shapes of the shared corpus (its
`labels.tsv` and `MANIFEST.tsv` columns, PROTOCOL.md's labels and kinds), so every
documented `evaluate`, `calibrate` and `report` command works in a fresh clone."""

from __future__ import annotations

import csv
import json

from conftest import EXAMPLES
from loopwatch._analysis.evaluation import load_labels

LABEL_COLUMNS = ["local_path", "label", "onset_step", "end_step", "rounds", "kind", "confidence", "note"]
MANIFEST_COLUMNS = [
    "local_path", "source_repo", "source_path", "commit", "format", "agent",
    "exit_status", "resolved", "model", "task_id", "n_steps", "cost_usd",
]  # fmt: skip
KINDS = {"identical", "near-identical", "cycle", "same-error", "text", "none"}


def rows(name: str) -> list[dict[str, str]]:
    with open(EXAMPLES / name, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def tool_calls(name: str) -> list[dict]:
    events = [json.loads(line) for line in (EXAMPLES / name).read_text().splitlines()]
    return [e for e in events if e["type"] == "tool"]


def test_every_session_is_labelled_and_has_its_outcome():
    sessions = sorted(p.name for p in EXAMPLES.glob("*.jsonl"))
    assert sessions == sorted(r["local_path"] for r in rows("labels.tsv"))
    assert sessions == sorted(r["local_path"] for r in rows("MANIFEST.tsv"))
    with open(EXAMPLES / "labels.tsv") as handle:
        assert handle.readline().rstrip("\n").split("\t") == LABEL_COLUMNS
    with open(EXAMPLES / "MANIFEST.tsv") as handle:
        assert handle.readline().rstrip("\n").split("\t") == MANIFEST_COLUMNS


def test_labels_follow_the_protocol():
    labels = {label.path: label for label in load_labels(str(EXAMPLES / "labels.tsv"))}
    kinds = {label.label for label in labels.values()}
    assert kinds == {"yes", "brief", "no"}, "the set shows every label"
    for row in rows("labels.tsv"):
        assert row["kind"] in KINDS and row["confidence"] in {"high", "medium", "low"} and row["note"]
        steps = len(tool_calls(row["local_path"]))
        if row["label"] == "no":
            assert row["onset_step"] == row["end_step"] == "" and row["kind"] == "none"
        else:
            assert 1 <= int(row["onset_step"]) < int(row["end_step"]) <= steps
            assert int(row["rounds"]) >= 3 and row["kind"] != "none"


def test_the_manifest_counts_what_the_files_hold():
    for row in rows("MANIFEST.tsv"):
        assert row["resolved"] in {"yes", "no"}
        assert int(row["n_steps"]) == len(tool_calls(row["local_path"])), row["local_path"]
        first = json.loads((EXAMPLES / row["local_path"]).read_text().splitlines()[0])
        assert first["session"] == row["task_id"]


def test_the_set_is_small():
    assert sum(p.stat().st_size for p in EXAMPLES.iterdir()) < 100_000


def test_what_the_examples_page_says_evaluate_finds(tmp_path):
    """docs/examples.md: with the defaults, the loops of identical calls, near-identical calls
    and the cycle are stopped after their onset, the same error from varied calls is only
    nudged, nothing is stopped on a healthy, brief or solved session, and the brief one is
    nudged once."""
    from click.testing import CliRunner

    from loopwatch._cli import cli

    done = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--no-progress",
            "--json",
            "--labels",
            str(EXAMPLES / "labels.tsv"),
            "--outcomes",
            str(EXAMPLES / "MANIFEST.tsv"),
        ],
    )
    assert done.exit_code == 0, done.output
    figures = json.loads(done.stdout)["detectors"]["all"]
    stop, nudge = figures["stop"], figures["nudge"]
    assert (stop["yes"], stop["caught"], stop["stops_before_onset"]) == (4, 3, 0)
    assert stop["false_stops"] == stop["stops_on_brief"] == figures["outcomes"]["stops_on_succeeded"] == 0
    assert nudge["caught"] == 4 and nudge["false_paths"] == ["escaped.jsonl"]
    # which loop is the one only nudged: the same error from varied calls
    scanned = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", str(EXAMPLES / "same-error.jsonl")])
    (record,) = [json.loads(line) for line in scanned.stdout.splitlines()]
    assert record["verdict"] is None and [i["action"] for i in record["interventions"]] == ["nudge"]
    scanned = CliRunner().invoke(cli, ["scan", "--no-progress", "--json", str(EXAMPLES / "escaped.jsonl")])
    (record,) = [json.loads(line) for line in scanned.stdout.splitlines()]
    assert [(i["action"], i["at_action"]) for i in record["interventions"]] == [("nudge", 3)]
