"""`loopwatch scan --out FILE`: one row per session in JSON Lines or Parquet, the same rows as `scan --json`."""

from __future__ import annotations

import json
import os
import stat

import pytest
from click.testing import CliRunner

from loopwatch._analysis.replay import SessionResult
from loopwatch._analysis.results import COLUMNS, open_results
from loopwatch._cli import cli

from conftest import CORPUS, healthy_events, jsonl, looping_events, needs_corpus


def scan(*args):
    return CliRunner().invoke(cli, ["scan", "--no-progress", *map(str, args)])


def json_records(result):
    return [json.loads(line) for line in result.stdout.splitlines()]


def parquet_rows(path):
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(path)
    assert [(f.name) for f in table.schema] == [name for name, _ in COLUMNS]
    nested = {name for name, kind in COLUMNS if kind.endswith("(JSON)")}
    return [
        {k: (json.loads(v) if k in nested and v is not None else v) for k, v in row.items()}
        for row in table.to_pylist()
    ]


@pytest.fixture
def mixed(tmp_path):
    """A looping session, a healthy one, a file of no known format and a missing path."""
    (tmp_path / "loop.jsonl").write_text(jsonl(looping_events()))
    (tmp_path / "healthy.jsonl").write_text(jsonl(healthy_events()))
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    return [tmp_path / "loop.jsonl", tmp_path / "healthy.jsonl", tmp_path / "notes.jsonl", tmp_path / "missing.jsonl"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_out_holds_the_same_rows_as_json(tmp_path, mixed, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"results{suffix}"
    result = scan(*mixed, "--json", "--out", out)
    assert result.exit_code == 2, result.output  # the missing file and the unknown format
    expected = json_records(result)
    assert len(expected) == 4 and any(r["verdict"] for r in expected) and any(r["error"] for r in expected)
    rows = parquet_rows(out) if suffix == ".parquet" else [json.loads(x) for x in out.read_text().splitlines()]
    assert rows == expected
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_out_with_the_table_writes_every_session_not_only_the_stopped(tmp_path, mixed):
    out = tmp_path / "results.jsonl"
    result = scan(*mixed[:2], "--out", out)
    assert result.exit_code == 1
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["verdict"] is not None for r in rows] == [True, False]


@needs_corpus
def test_parquet_round_trip_on_corpus_sessions(tmp_path):
    pytest.importorskip("pyarrow")
    folder = os.path.join(CORPUS, "swe-agent-traj")
    out = tmp_path / "results.parquet"
    result = scan(folder, "--json", "--out", out)
    expected = json_records(result)
    assert len(expected) > 5
    assert parquet_rows(out) == expected


def test_parquet_is_written_in_row_groups_as_it_goes(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "r.parquet"
    with open_results(str(path), rows_per_group=2) as writer:
        for i in range(5):
            writer.write([SessionResult(path=f"f{i}", format="events", actions=i)])
            # a full group is on disk before the file is finished, beside it: the file
            # itself appears complete or not at all
            if i == 1:
                assert os.path.getsize(writer.partial) > 0 and not path.exists()
    meta = pq.ParquetFile(path).metadata
    assert (meta.num_rows, meta.num_row_groups) == (5, 3)
    assert pq.read_table(path).column("actions").to_pylist() == [0, 1, 2, 3, 4]


def test_token_totals_past_int64_are_exact_in_jsonl_and_null_in_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    big = SessionResult(path="f", format="events", tokens=2**70)
    with open_results(str(tmp_path / "r.jsonl")) as writer:
        writer.write([big])
    assert json.loads((tmp_path / "r.jsonl").read_text())["tokens"] == 2**70
    with open_results(str(tmp_path / "r.parquet")) as writer:
        writer.write([big])
    assert parquet_rows(tmp_path / "r.parquet")[0]["tokens"] is None


def test_an_unknown_kind_of_output_is_a_one_line_usage_error(tmp_path, mixed):
    result = scan(mixed[0], "--out", tmp_path / "results.csv")
    assert result.exit_code == 2
    assert "--out" in result.output and ".jsonl or .parquet" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "results.csv").exists()


def test_parquet_without_pyarrow_is_a_one_line_error(tmp_path, mixed, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = scan(mixed[0], "--out", tmp_path / "results.parquet")
    assert result.exit_code == 2
    assert "loopwatch[parquet]" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "results.parquet").exists()


def test_the_results_file_in_the_scanned_folder_is_not_scanned(tmp_path, mixed):
    out = tmp_path / "results.jsonl"
    out.write_text(json.dumps({"path": "old", "actions": 0}) + "\n")  # a results file from an earlier run
    first = scan(tmp_path, "--json", "--out", out)
    again = scan(tmp_path, "--json", "--out", out)
    assert first.stdout == again.stdout
    assert not any(r["path"].endswith("results.jsonl") for r in json_records(again))
