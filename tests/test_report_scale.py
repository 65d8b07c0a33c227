"""The report of one long session: writing the page streams its data (what the writer
holds does not grow by a kilobyte a call), and opening the session in a browser builds
a bounded number of marks (a mark per call froze the page for seconds): beyond a few
thousand calls the timeline is an overview of bins, and the calls of the stretch a
person picks (the stop's, at first) are drawn one by one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from browser_support import needs_browser, page_url, start_browser

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parent.parent / "src"
TOOLS = ("Bash", "Read", "Edit", "Grep", "Write")
BLOB = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def long_session(path: Path, calls: int, loop_at: int | None = None) -> None:
    """`calls` distinct calls (one in seven failing); from `loop_at` on, the same failing
    command again and again (a loop to stop)."""
    with path.open("w") as out:
        out.write('{"type": "user", "session": "long"}\n')
        for i in range(calls):
            if loop_at is not None and i >= loop_at:
                call = {"type": "tool", "name": "Bash", "input": {"command": "pytest -x"}, "error": True, "result": "E"}
            else:
                call = {"type": "tool", "name": TOOLS[i % 5], "input": {"command": f"step {i}"}, "result": "ok"}
                if i % 7 == 3:
                    call["error"], call["result"] = True, "E"
            out.write(json.dumps(call) + "\n")
            if i % 50 == 0:
                out.write(json.dumps({"type": "text", "text": f"Looking at part {i}."}) + "\n")


_PEAK = (
    "import re, runpy, sys\n"
    "sys.argv = ['loopwatch', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('loopwatch', run_name='__main__')\n"
    "except SystemExit as exc:\n    assert exc.code in (0, 1, None), exc.code\n"
    "print(re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1))\n"
)


def peak_kib(*args: str) -> int:
    """The process's own peak resident memory (VmHWM: ru_maxrss carries over exec)."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


def test_writing_the_page_holds_no_kilobyte_a_call(tmp_path):
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    long_session(small, 10_000)
    long_session(large, 60_000)
    grown = {}
    for name in ("scan", "report"):
        peaks = []
        for path in (small, large):
            args = ["scan", "--json", "--no-progress", str(path)]
            if name == "report":
                args = ["report", "--no-progress", str(path), "-o", str(tmp_path / f"{path.stem}.html")]
            peaks.append(peak_kib(*args))
        grown[name] = (peaks[1] - peaks[0]) * 1024 / 50_000  # bytes a call more, from 10,000 calls to 60,000
    # Replaying itself grows a little (the scan's own figure); the page's data must not
    # be held on top of it: it held about 1,100 bytes a call.
    assert grown["report"] < grown["scan"] + 150, grown
    page = (tmp_path / "large.html").read_text()
    (blob,) = BLOB.findall(page)
    (session,) = json.loads(blob)["sessions"]
    assert [c[0] for c in session["calls"]] == list(range(1, 60_001))  # every call is in the page's data


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


def open_session(browser, page: Path) -> dict:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page_url(page))
    WebDriverWait(browser, 120).until(
        lambda d: d.execute_script("return document.querySelector('#sessions tbody').dataset.complete === 'true'")
    )
    browser.find_element("css selector", "#sessions tbody tr[data-session]").click()
    return shown(browser)


def shown(browser) -> dict:
    return browser.execute_script(
        "const box = document.getElementById('session');"
        "const marks = k => Array.from(box.querySelectorAll(`[data-kind=${k}]`));"
        "return {elements: box.querySelectorAll('svg *').length,"
        " calls: marks('call').map(m => Number(m.dataset.step)),"
        " stops: marks('stop').map(m => Number(m.dataset.step)),"
        " bins: marks('bin').map(m => [Number(m.dataset.from), Number(m.dataset.to)])}"
    )


@needs_browser
def test_a_long_session_opens_with_a_bounded_number_of_marks(browser, tmp_path):
    source = tmp_path / "long.jsonl"
    long_session(source, 30_000, loop_at=20_000)
    page = tmp_path / "long.html"
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "report", "--no-progress", str(source), "-o", str(page)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (session,) = json.loads(BLOB.findall(page.read_text())[0])["sessions"]
    stop = session["stop"]
    assert session["verdict"] == "stop" and stop > 20_000

    seen = open_session(browser, page)
    assert seen["elements"] < 20_000, seen["elements"]  # a mark per call: about 100,000
    bins = seen["bins"]
    assert bins and bins[0][0] == 1 and bins[-1][1] == 30_000  # the overview covers the whole session
    assert all(a[1] + 1 == b[0] for a, b in zip(bins, bins[1:]))
    assert stop in seen["stops"]
    # the stop's stretch, call by call: consecutive actions around the stop
    calls = seen["calls"]
    assert 100 <= len(calls) <= 5_000 and calls == list(range(calls[0], calls[-1] + 1))
    assert calls[0] <= stop <= calls[-1]

    # a bin picked shows its own calls
    first = browser.find_element("css selector", '#session [data-kind=bin][data-from="1"]')
    first.click()
    picked = shown(browser)
    low, high = bins[0]
    assert picked["calls"][0] <= low and high <= picked["calls"][-1]
    assert picked["elements"] < 20_000
    # and a call drawn there says what it is, as in a short session
    browser.execute_script(f"document.querySelector('#session g[data-kind=call][data-step=\"{low}\"]').focus()")
    tip = browser.execute_script("return document.getElementById('tip').textContent")
    assert f"action {low}: " in tip
