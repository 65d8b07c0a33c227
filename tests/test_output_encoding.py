"""Every output is written by one encoder (`loopwatch._encode`) that never fails on a
name or a number: a file name that is not UTF-8, a token total past 2^64. `scan --json`,
`--out` (JSON Lines and Parquet), `report`, `scan --report`, `calibrate --json` and
`evaluate --json` all write it, exactly where the format allows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import jsonl, looping_events

SRC = Path(__file__).resolve().parent.parent / "src"
BIG = 2**70
ODD = b"run-\xff\xfe.jsonl"  # not UTF-8
BLOB = re.compile(rb'<script type="application/json" id="report-data">(.*?)</script>', re.S)


@pytest.fixture
def runs(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), ODD), "w") as fh:
        fh.write(jsonl([{"type": "user", "session": "odd"}, *looping_events()[1:]]))
    big = [dict(event, tokens=BIG) if event["type"] == "tool" else event for event in looping_events()]
    (folder / "big.jsonl").write_text(jsonl(big))
    (folder / "outcomes.tsv").write_text("session\tresolved\nbig\tno\nodd\tyes\n")
    return folder


def loopwatch(*args, cwd=None):
    return subprocess.run(
        [
            os.fsencode(sys.executable),
            b"-m",
            b"loopwatch",
            *(a if isinstance(a, bytes) else str(a).encode() for a in args),
        ],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        cwd=cwd,
        timeout=300,
        check=False,
    )


def odd_path(runs: Path) -> bytes:
    return os.path.join(os.fsencode(runs), ODD)


def clean(done: subprocess.CompletedProcess, *codes: int) -> None:
    assert done.returncode in codes, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr


def test_scan_json_and_jsonl_keep_names_and_numbers_exactly(runs, tmp_path):
    out = tmp_path / "rows.jsonl"
    done = loopwatch("scan", "--no-progress", "--json", "--out", out, odd_path(runs), runs / "big.jsonl")
    clean(done, 1)
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    assert [json.loads(line) for line in out.read_bytes().splitlines()] == printed
    assert os.fsencode(printed[0]["path"]) == odd_path(runs)
    assert printed[1]["tokens"] == 6 * BIG and printed[1]["saved"]["tokens"] > 2**64


def test_parquet_is_complete_with_a_name_that_is_not_utf8_and_a_huge_total(runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "rows.parquet"
    done = loopwatch("scan", "--no-progress", "--out", out, odd_path(runs), runs / "big.jsonl")
    clean(done, 1)
    rows = pq.read_table(out).to_pylist()
    assert [r["path"] for r in rows] == [str(runs / "run-\\xff\\xfe.jsonl"), str(runs / "big.jsonl")]
    assert rows[1]["tokens"] is None and json.loads(rows[1]["saved"])["tokens"] > 2**64


@pytest.mark.parametrize("command", ["report", "scan"])
def test_the_page_is_written_with_any_name_and_any_number(runs, tmp_path, command):
    pytest.importorskip("jinja2")
    out = tmp_path / "page.html"
    option = "-o" if command == "report" else "--report"
    done = loopwatch(command, "--no-progress", odd_path(runs), runs / "big.jsonl", option, out)
    clean(done, 0, 1)
    (blob,) = BLOB.findall(out.read_bytes())
    sessions = json.loads(blob)["sessions"]
    assert os.fsencode(sessions[0]["path"]) == odd_path(runs)
    assert sessions[1]["tokens"] == 6 * BIG


def test_calibrate_json_with_any_name_and_any_number(runs):
    done = loopwatch("calibrate", "--no-progress", "--json", odd_path(runs), runs / "big.jsonl")
    clean(done, 0)
    rows = json.loads(done.stdout)["sessions"]
    assert sorted(os.fsencode(r["path"]) for r in rows) == sorted([odd_path(runs), os.fsencode(runs / "big.jsonl")])


def test_evaluate_json_with_any_name_and_any_number(runs):
    unreadable = os.path.join(os.fsencode(runs), b"empty-\xff.jsonl")  # listed with its error
    open(unreadable, "wb").close()
    done = loopwatch(
        "evaluate", "--no-progress", "--json", unreadable, runs / "big.jsonl", "--outcomes", runs / "outcomes.tsv"
    )
    clean(done, 2)
    report = json.loads(done.stdout)
    assert report["sessions"] == 2
    assert [os.fsencode(os.path.join(runs, e["path"])) for e in report["errors"]] == [unreadable]


def test_the_encoder_itself():
    from loopwatch._encode import json_bytes, text, visible

    value = {"name": "a\udcffb", "tokens": BIG, "cost": float("nan"), (1, 2): "tuple key"}
    assert json.loads(json_bytes(value)) == {"name": "a\udcffb", "tokens": BIG, "cost": None, "(1, 2)": "tuple key"}
    assert json.loads(json_bytes({"plain": 1}, indent=True)) == {"plain": 1}
    assert text("run-\udcff.jsonl") == "run-\\xff.jsonl" and text("café") == "café"
    assert visible("run-\udcff") == "run-\\xff"
