"""`loopwatch report` (and `scan --report`, `evaluate --report`): one self-contained HTML
page. The page's data against `scan --json`, escaping, privacy and bad input here; the
page in a real browser in test_report_browser.py."""

from __future__ import annotations

import json
import shutil
import os
import re
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

from loopwatch._cli import cli
from loopwatch._html.page import script_json

from conftest import EXAMPLES, jsonl

BLOB = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)
# A session whose names, results and id try to break out of the page.
HOSTILE = "</script><script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"
SECRET_INPUT = "input-secret-7f3a"
SECRET_RESULT = "result-secret-91bc"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def page_data(path) -> dict:
    text = open(path, encoding="utf-8").read()
    (blob,) = BLOB.findall(text)
    return json.loads(blob)


def scan_records(*paths) -> list[dict]:
    result = run("scan", "--json", "--no-progress", *paths)
    assert result.exit_code in (0, 1), result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def hostile_events() -> list[dict]:
    call = {
        "type": "tool",
        "name": HOSTILE,
        "input": {"command": SECRET_INPUT + HOSTILE},
        "result": SECRET_RESULT + HOSTILE,
        "error": True,
    }
    return [{"type": "user", "session": "s" + HOSTILE}] + [dict(call, at=float(i)) for i in range(8)]


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "hostile.jsonl"
    path.write_text(jsonl(hostile_events()))
    return path


def test_script_json_cannot_end_its_script_element():
    data = {"name": "</script><!-- <script>", "x": "a\u2028b&c"}
    text = script_json(data)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == data


def test_the_page_of_the_examples_matches_the_scan(tmp_path):
    out = tmp_path / "report.html"
    result = run("report", "--no-progress", EXAMPLES / "runaway.jsonl", EXAMPLES / "healthy.jsonl", "-o", out)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    records = scan_records(EXAMPLES / "runaway.jsonl", EXAMPLES / "healthy.jsonl")
    data = page_data(out)
    sessions = data["sessions"]
    assert data["root"] == str(EXAMPLES)  # the page names them relative to what was scanned
    assert [(s["id"], os.path.join(data["root"], s["path"]), s["actions"]) for s in sessions] == [
        (r["session"], r["path"], r["actions"]) for r in records
    ]
    for s, r in zip(sessions, records):
        assert s["verdict"] == ("stop" if r["verdict"] else "nudge" if r["interventions"] else "none")
        assert s["stop"] == (r["verdict"]["at_action"] if r["verdict"] else None)
        assert s["stop_ref"] == (r["verdict"]["source_ref"] if r["verdict"] else None)
        assert s["waste"] == (r["saved"]["actions"] if r["verdict"] else None)
        assert [i[:2] for i in s["interventions"]] == [[i["action"], i["at_action"]] for i in r["interventions"]]
        # one call per counted action, numbered as the record counts them
        assert [c[0] for c in s["calls"]] == list(range(1, r["actions"] + 1))
    runaway = sessions[0]
    assert runaway["verdict"] == "stop" and runaway["stop_ref"] == "line 40"
    # the calls after the stop are those the stop would have spared
    assert sum(1 for c in runaway["calls"] if c[7]) == runaway["waste"]


def test_the_page_forbids_every_request_and_loads_nothing(tmp_path):
    out = tmp_path / "report.html"
    assert run("report", "--no-progress", EXAMPLES, "-o", out).exit_code == 0
    text = out.read_text()
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    (nonce,) = set(re.findall(r"'nonce-([^']+)'", policy))
    # every script and style element is ours, with the nonce (the data blob is not run)
    assert re.findall(r"<script([^>]*)>", text) == [' type="application/json" id="report-data"', f' nonce="{nonce}"']
    assert re.findall(r"<style([^>]*)>", text) == [f' nonce="{nonce}"']
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//)""", text, re.I)
    assert "@import" not in text and "url(" not in text
    # a fresh nonce per page
    again = tmp_path / "again.html"
    run("report", "--no-progress", EXAMPLES, "-o", again)
    assert re.findall(r"'nonce-([^']+)'", again.read_text())[0] != nonce


def test_hostile_names_and_results_stay_data(tmp_path, hostile):
    for excerpts in ((), ("--excerpts",)):
        out = tmp_path / f"page{len(excerpts)}.html"
        assert run("report", "--no-progress", hostile, "-o", out, *excerpts).exit_code == 0
        text = out.read_text()
        assert text.count("<script") == 2 and text.lower().count("</script") == 2
        assert "onerror=" not in text.replace("\\u003c", "")[: text.index('id="report-data"')]
        assert "<img" not in text
        (session,) = page_data(out)["sessions"]
        assert session["calls"][0][1] == HOSTILE  # the name itself survives, as data


def test_inputs_and_results_only_with_excerpts(tmp_path, hostile):
    plain, shown = tmp_path / "plain.html", tmp_path / "shown.html"
    assert run("report", "--no-progress", hostile, "-o", plain).exit_code == 0
    assert run("report", "--no-progress", hostile, "-o", shown, "--excerpts").exit_code == 0
    for secret in (SECRET_INPUT, SECRET_RESULT):
        assert secret not in plain.read_text()
        assert secret in shown.read_text()
    call = page_data(shown)["sessions"][0]["calls"][0]
    assert call[8].startswith('{"command": "' + SECRET_INPUT) and call[9].startswith(SECRET_RESULT)


def test_labels_and_outcomes_judge_each_session(tmp_path):
    for name in ("runaway.jsonl", "healthy.jsonl"):
        (tmp_path / name).write_text((EXAMPLES / name).read_text())
    (tmp_path / "labels.tsv").write_text(
        "local_path\tlabel\tonset_step\tend_step\nrunaway.jsonl\tyes\t20\t47\nhealthy.jsonl\tno\t\t\n"
    )
    (tmp_path / "MANIFEST.tsv").write_text(
        "local_path\tresolved\tagent\tmodel\nrunaway.jsonl\tyes\tagent-a\tmodel-x\nhealthy.jsonl\tno\tagent-b\tmodel-x\n"
    )
    out = tmp_path / "report.html"
    result = run(
        "report",
        "--no-progress",
        "--labels",
        tmp_path / "labels.tsv",
        "--outcomes",
        tmp_path / "MANIFEST.tsv",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    data = page_data(out)
    assert data["labels"] and data["outcomes"]
    by_id = {s["path"]: s for s in data["sessions"]}
    runaway, healthy = by_id["runaway.jsonl"], by_id["healthy.jsonl"]
    # stopped at step 13 (events count tool calls), before the labelled onset at 20
    assert runaway["stop_step"] == 13 and runaway["judgement"] == "stop before the onset"
    assert runaway["outcome"] == "succeeded" and runaway["agent"] == "agent-a" and runaway["model"] == "model-x"
    assert healthy["judgement"] == "left alone" and healthy["outcome"] == "failed"


def test_scan_and_evaluate_write_the_same_page(tmp_path):
    out = tmp_path / "scan.html"
    result = run("scan", "--no-progress", EXAMPLES, "-o", out)
    assert result.exit_code == 1  # the runaway is stopped, as without the page
    assert "Loops found" in result.stdout
    direct = tmp_path / "direct.html"
    run("report", "--no-progress", EXAMPLES, "-o", direct)
    assert page_data(out) == page_data(direct)
    (tmp_path / "labels.tsv").write_text(
        "local_path\tlabel\tonset_step\tend_step\nrunaway.jsonl\tyes\t5\t47\nhealthy.jsonl\tno\t\t\n"
    )
    evaluated = tmp_path / "evaluate.html"
    result = run(
        "evaluate", "--no-progress", "--labels", tmp_path / "labels.tsv", "--corpus", EXAMPLES, "-o", evaluated
    )
    assert result.exit_code == 0, result.output
    judged = {s["path"]: s["judgement"] for s in page_data(evaluated)["sessions"]}
    assert judged == {"runaway.jsonl": "caught", "healthy.jsonl": "left alone"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["report", "-o", "{tmp}/x.html"], "give the session files"),
        (["report", str(EXAMPLES), "-o", "{tmp}/missing/x.html"], "no such folder"),
        (["report", str(EXAMPLES), "-o", "{tmp}"], "is a directory"),
        (["scan", "-", "-o", "{tmp}/x.html"], "standard input"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = subprocess.run([sys.executable, "-m", "loopwatch", *args], capture_output=True, text=True, input="")
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_an_unreadable_file_is_listed_and_exits_2(tmp_path):
    """Listed by its name in the folder scanned (the one holding every argument: here
    `tmp_path`, wherever the checkout is), beside the sessions that read."""
    (tmp_path / "empty.jsonl").write_text("")
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    out = tmp_path / "report.html"
    result = run(
        "report",
        "--no-progress",
        tmp_path / "empty.jsonl",
        tmp_path / "nothere.jsonl",
        tmp_path / "examples",
        "-o",
        out,
    )
    assert result.exit_code == 2
    sessions = page_data(out)["sessions"]
    errors = {s["path"] for s in sessions if s["error"]}
    assert errors == {"empty.jsonl", "nothere.jsonl"}
    assert any(s["path"].startswith("examples/") and not s["error"] for s in sessions)


def test_import_loopwatch_loads_no_jinja2():
    code = "import sys, loopwatch, loopwatch._html; print('jinja2' in sys.modules, 'markupsafe' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
