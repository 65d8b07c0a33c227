"""`scan --engine ray` over both shared corpora writes the local scan's Parquet rows, file for file.

Issue 22's "done when": every session of ../shared/corpus and ../shared/corpus-tb2 (their
formats detected, as a user would scan them), scanned once on a local Ray (2 CPUs, one
session for both corpora) and once by the local process pool, each with `--out` Parquet;
the two tables must hold the same rows (path, format, verdict, findings, errors, every
column) in the same order. Skipped without the shared corpora, Ray or pyarrow."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("ray")
pq = pytest.importorskip("pyarrow.parquet")

from loopwatch._cli import cli

from _ray_local import local_ray

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
CORPORA = [SHARED / "corpus", SHARED / "corpus-tb2"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all((folder / "MANIFEST.tsv").is_file() for folder in CORPORA), reason="shared corpora absent"
    ),
]


def sessions_of(folder: Path) -> set[str]:
    """The session files a corpus lists in its manifest (`local_path`, relative to it)."""
    with open(folder / "MANIFEST.tsv", newline="") as fh:
        return {str(folder / row["local_path"]) for row in csv.DictReader(fh, delimiter="\t")}


def scan(out: Path, *engine: str):
    return CliRunner().invoke(cli, ["scan", "--no-progress", "--out", str(out), *engine, *map(str, CORPORA)])


def first_difference(ray_rows: list[dict], local_rows: list[dict]) -> str:
    for i, (ray_row, local_row) in enumerate(zip(ray_rows, local_rows, strict=False)):
        if ray_row != local_row:
            fields = [k for k in local_row if ray_row.get(k) != local_row[k]]
            return f"row {i} ({local_row['path']}) differs in {fields}: ray {[ray_row.get(k) for k in fields]}, local {[local_row[k] for k in fields]}"
    return f"ray has {len(ray_rows)} rows, local {len(local_rows)}"


def test_ray_writes_the_local_rows_over_both_corpora(tmp_path):
    with local_ray(num_cpus=2):
        on_ray = scan(tmp_path / "ray.parquet", "--engine", "ray")
    local = scan(tmp_path / "local.parquet")
    assert on_ray.exit_code == local.exit_code, on_ray.output[-2000:]

    ray_table, local_table = pq.read_table(tmp_path / "ray.parquet"), pq.read_table(tmp_path / "local.parquet")
    assert ray_table.schema == local_table.schema
    ray_rows, local_rows = ray_table.to_pylist(), local_table.to_pylist()
    assert ray_rows == local_rows, first_difference(ray_rows, local_rows)
    assert on_ray.stdout == local.stdout  # the table of stopped sessions and the totals

    # Every session of both manifests is there, once; and the verdicts compared are real ones.
    paths = [row["path"] for row in local_rows]
    assert len(paths) == len(set(paths)) and set(paths) == sessions_of(CORPORA[0]) | sessions_of(CORPORA[1])
    stopped = [row for row in local_rows if row["verdict"] is not None]
    assert stopped and all(json.loads(row["verdict"])["signal"] for row in stopped)
    assert {row["path"].startswith(str(CORPORA[1])) for row in stopped} == {False, True}  # stops in both corpora
