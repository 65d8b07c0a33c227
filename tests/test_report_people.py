"""The report page for a person, in a real browser (headless Chromium, as
`test_report_browser`): paths relative to what was scanned and a sessions table that
fits a 1,400-pixel screen, a hint that rows open, each session linkable
(`page.html#session=...`), the calibration figures named in words, and a headline that
counts every kind of harm the labels see."""

from __future__ import annotations

import pytest

from browser_support import console_errors, needs_browser, page_url, start_browser
from conftest import EXAMPLES, jsonl, looping_events
from test_report_html import run

pytestmark = [pytest.mark.slow, needs_browser]


@pytest.fixture(scope="module")
def browser():
    driver = start_browser(width=1400, height=1000)
    yield driver
    driver.quit()


def load(browser, url):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(url)
    WebDriverWait(browser, 60).until(
        lambda d: d.execute_script("return document.querySelector('#sessions tbody').dataset.complete === 'true'")
    )


def js(browser, code):
    return browser.execute_script(code)


@pytest.fixture
def page(tmp_path):
    """A deep folder of sessions (long absolute paths), labelled: one stop on `brief`."""
    runs = tmp_path / ("a-rather-long-folder-name-" * 4) / "batch-2026-01-07" / "runs"
    runs.mkdir(parents=True)
    for name in ("runaway.jsonl", "healthy.jsonl"):
        (runs / name).write_text((EXAMPLES / name).read_text())
    (runs / "short-loop.jsonl").write_text(jsonl(looping_events()))
    labels = runs / "labels.tsv"
    labels.write_text(
        "local_path\tlabel\tonset_step\tend_step\n"
        "runaway.jsonl\tyes\t5\t47\nhealthy.jsonl\tno\t\t\nshort-loop.jsonl\tbrief\t1\t6\n"
    )
    out = tmp_path / "report.html"
    done = run("report", "--no-progress", runs, "--labels", labels, "-o", out)
    assert done.exit_code == 0, done.output
    return out, runs


def test_paths_are_relative_and_the_table_fits_the_screen(browser, page):
    out, runs = page
    load(browser, page_url(out))
    cells = js(browser, "return Array.from(document.querySelectorAll('#sessions tbody tr td')).map(t => t.textContent)")
    assert "runaway.jsonl" in cells and not any(str(runs) in c for c in cells)
    assert str(runs) in js(browser, "return document.getElementById('hint').textContent")
    width = js(browser, "return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width  # nothing pushed off to the right
    assert console_errors(browser) == []


def test_the_page_says_rows_open_and_a_session_has_its_own_address(browser, page):
    out, _ = page
    load(browser, page_url(out))
    hint = js(browser, "return document.getElementById('hint').textContent")
    assert "open its session's timeline" in hint and "links to that session" in hint
    js(browser, "document.querySelector('#sessions tbody tr[data-session]').click()")
    address = js(browser, "return location.hash")
    opened = js(browser, "return document.getElementById('session').dataset.index")
    assert address.startswith("#session=") and opened is not None
    # the address alone opens that session, as a link sent to someone would
    browser.get("about:blank")
    load(browser, page_url(out) + address)
    assert js(browser, "return document.getElementById('session').hidden") is False
    assert js(browser, "return document.getElementById('session').dataset.index") == opened
    assert console_errors(browser) == []


def test_calibration_figures_are_named_in_words(browser, page):
    from loopwatch._analysis.figures import FIGURES

    out, _ = page
    load(browser, page_url(out) + "#session=runaway.jsonl")
    names = js(
        browser,
        "return Array.from(document.querySelectorAll('#session aside.calibration dt'))"
        ".map(d => [d.title, d.firstChild.textContent])",
    )
    assert names, "no calibration figure shown"
    for key, shown in names:
        assert key in FIGURES and shown == FIGURES[key].name and shown != key
    text = js(browser, "return document.querySelector('#session aside.calibration').textContent")
    assert "churn_fewest_distinct" not in text


def test_the_headline_counts_every_kind_of_harm(browser, page):
    from loopwatch._analysis.evaluation import TERMS

    out, _ = page
    load(browser, page_url(out))
    card = js(browser, f"return document.querySelector('[data-total=\"{TERMS['false'].name}\"]').textContent")
    assert card.startswith("1" + TERMS["false"].name), card
    assert "0 on no, 1 on brief, 0 before the onset" in card
