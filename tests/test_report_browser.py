"""The report page in a real browser: headless Chromium (Debian's package) through
Selenium. The page loads with no console error and no request; the rows, the stopped
rows and the timeline's marks match `scan --json`; a hostile session runs nothing; a
screenshot of the bundled examples is written for a person to look at
($LOOPWATCH_ARTIFACTS, default /tmp/loopwatch-artifacts).

How fast the 711-session page shows its rows depends on the machine's load: that is
measured in bench/report.py, not asserted here."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import pytest

from browser_support import console_errors, needs_browser, page_url, requests_made, start_browser
from conftest import CORPUS, EXAMPLES, needs_corpus
from test_report_html import HOSTILE, SECRET_RESULT, hostile_events, page_data, run, scan_records

from conftest import jsonl

pytestmark = [pytest.mark.slow, needs_browser]

ARTIFACTS = Path(os.environ.get("LOOPWATCH_ARTIFACTS") or Path(tempfile.gettempdir()) / "loopwatch-artifacts")
MAX_PAGE_BYTES = 10 * 1024 * 1024  # issue 21: the 711-session page stays under 10 MB


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


def load(browser, path):
    """Open the page; wait until every row is in the table (they are built a slice per frame)."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page_url(path))
    WebDriverWait(browser, 60).until(
        lambda d: d.execute_script("return document.querySelector('#sessions tbody').dataset.complete === 'true'")
    )


def rows(browser):
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#sessions tbody tr[data-session]'))"
        ".map(tr => [tr.dataset.session, tr.dataset.verdict, Number(tr.dataset.index)])"
    )


def open_row(browser, index):
    browser.find_element("css selector", f'#sessions tbody tr[data-index="{index}"]').click()
    return browser.execute_script(
        "const box = document.getElementById('session');"
        "return [box.dataset.index, Array.from(box.querySelectorAll('[data-kind]'))"
        ".filter(m => m.dataset.step !== undefined).map(m => [m.dataset.kind, Number(m.dataset.step)])]"
    )


def assert_clean(browser, path, loaded=True):
    """Nothing but the page itself (when it was `loaded` since the last look) was
    requested, and the console has no error."""
    assert requests_made(browser) == ([page_url(path)] if loaded else [])
    assert console_errors(browser) == []


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_the_examples_page(browser, tmp_path):
    paths = [EXAMPLES / "runaway.jsonl", EXAMPLES / "healthy.jsonl"]
    out = tmp_path / "examples.html"
    assert run("report", "--no-progress", *paths, "-o", out).exit_code == 0
    records = scan_records(*paths)
    load(browser, out)
    assert_clean(browser, out)
    shown = rows(browser)
    assert sorted((s, v) for s, v, _ in shown) == sorted(
        (r["session"], "stop" if r["verdict"] else "nudge" if r["interventions"] else "none") for r in records
    )
    assert browser.execute_script("return document.querySelector('[data-total=stopped] .value').textContent") == "1"

    sessions = page_data(out)["sessions"]
    for _, _, index in shown:
        record = records[index]
        opened, marks = open_row(browser, index)
        assert opened == str(index)
        calls = [step for kind, step in marks if kind == "call"]
        assert calls == list(range(1, record["actions"] + 1))
        stops = [step for kind, step in marks if kind == "stop"]
        assert stops == ([record["verdict"]["at_action"]] if record["verdict"] else [])
        nudges = [step for kind, step in marks if kind == "nudge"]
        assert nudges == [i["at_action"] for i in record["interventions"] if i["action"] == "nudge"]
        assert sessions[index]["id"] == record["session"]

    # hover and keyboard focus show the call's tool and the finding's description
    stopped = next(index for _, verdict, index in shown if verdict == "stop")
    open_row(browser, stopped)
    browser.execute_script("document.querySelector('#session g[data-kind=call][data-step=\"9\"]').focus()")
    tip = browser.execute_script("const t = document.getElementById('tip'); return [t.hidden, t.textContent]")
    assert tip[0] is False and "action 9: " in tip[1] and "4-step action cycle" in tip[1]

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-examples.png"
    browser.save_screenshot(str(shot))
    width, height = png_size(shot)
    assert width >= 800 and height >= 600 and shot.stat().st_size > 20_000
    print(f"screenshot of the examples' report: {shot}")
    assert_clean(browser, out, loaded=False)


@pytest.mark.parametrize("excerpts", [False, True])
def test_a_hostile_session_runs_nothing(browser, tmp_path, excerpts):
    source = tmp_path / "hostile.jsonl"
    source.write_text(jsonl(hostile_events()))
    out = tmp_path / "hostile.html"
    assert run("report", "--no-progress", source, "-o", out, *(["--excerpts"] if excerpts else [])).exit_code == 0
    load(browser, out)
    (row,) = rows(browser)
    _, marks = open_row(browser, row[2])
    assert [k for k, _ in marks].count("call") == 8
    for step in range(1, 9):  # every tooltip (and excerpt) built
        browser.execute_script(f"document.querySelector('#session g[data-kind=call][data-step=\"{step}\"]').focus()")
    state = browser.execute_script(
        "return [window.__pwned === undefined, document.querySelectorAll('img').length,"
        " document.scripts.length, document.getElementById('tip').textContent,"
        " document.getElementById('session').textContent]"
    )
    assert state[0] is True and state[1] == 0 and state[2] == 2
    assert HOSTILE in state[3]  # shown as text
    assert (SECRET_RESULT + HOSTILE in state[4]) is excerpts
    assert row[0] == "s" + HOSTILE
    assert_clean(browser, out)


@needs_corpus
def test_the_corpus_page(browser, tmp_path):
    out = tmp_path / "corpus.html"
    result = run(
        "report",
        "--no-progress",
        CORPUS,
        "--labels",
        Path(CORPUS) / "labels.tsv",
        "--outcomes",
        Path(CORPUS) / "MANIFEST.tsv",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    size = out.stat().st_size
    print(f"corpus page: {size / 1e6:.2f} MB")
    assert size < MAX_PAGE_BYTES
    records = scan_records(CORPUS)
    assert len(records) == 711
    load(browser, out)
    shown = rows(browser)
    assert len(shown) == len(records) == 711
    data = page_data(out)
    assert data["root"] == os.path.abspath(CORPUS)  # paths are shown relative to the folder scanned
    sessions = [{**s, "path": os.path.join(CORPUS, s["path"])} for s in data["sessions"]]
    by_path = {r["path"]: r for r in records}
    assert {sessions[i]["path"] for _, _, i in shown} == set(by_path)
    stopped = {sessions[i]["path"] for _, verdict, i in shown if verdict == "stop"}
    assert stopped == {p for p, r in by_path.items() if r["verdict"]}
    nudged = {sessions[i]["path"] for _, verdict, i in shown if verdict == "nudge"}
    assert nudged == {p for p, r in by_path.items() if not r["verdict"] and r["interventions"]}
    # the stop mark of the first row (stops on successful sessions come first)
    first = shown[0][2]
    record = by_path[sessions[first]["path"]]
    _, marks = open_row(browser, first)
    assert [s for k, s in marks if k == "stop"] == ([record["verdict"]["at_action"]] if record["verdict"] else [])
    assert sessions[first]["outcome"] == "succeeded" and record["verdict"]
    assert_clean(browser, out)


def test_thousands_of_rows_are_built_as_the_table_is_scrolled(browser, tmp_path):
    from loopwatch._html.page import render

    out = tmp_path / "examples.html"
    assert run("report", "--no-progress", EXAMPLES, "-o", out).exit_code == 0
    data = page_data(out)
    # One stopped session and one left alone, 700 times each: 1,400 rows, 700 of them stops
    # (whatever else the bundled examples hold).
    stopped = next(s for s in data["sessions"] if s["verdict"] == "stop")
    alone = next(s for s in data["sessions"] if s["verdict"] == "none")
    data["sessions"] = [stopped, alone] * 700
    big = tmp_path / "big.html"
    big.write_text(render(data))
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page_url(big))
    count = "return document.querySelectorAll('#sessions tbody tr[data-session]').length"
    WebDriverWait(browser, 60).until(lambda d: d.execute_script("return !!document.querySelector('#sessions tr.more')"))
    assert browser.execute_script(count) == 1000
    assert browser.execute_script("return document.querySelector('#sessions tbody').dataset.complete") is None
    browser.execute_script(
        "const w = document.querySelector('#table-section .table-wrap'); w.scrollTop = w.scrollHeight;"
    )
    WebDriverWait(browser, 60).until(
        lambda d: d.execute_script("return document.querySelector('#sessions tbody').dataset.complete === 'true'")
    )
    assert browser.execute_script(count) == 1400
    # a filter starts again from the first rows
    browser.execute_script(
        "const f = document.getElementById('verdict-filter'); f.value = 'stop'; f.dispatchEvent(new Event('change'))"
    )
    WebDriverWait(browser, 60).until(lambda d: d.execute_script(count) == 700)
    assert_clean(browser, big)
