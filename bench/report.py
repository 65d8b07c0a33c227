"""How fast the report page of a corpus shows its rows in a browser, and how big it is.

    PYTHONPATH=src python bench/report.py [CORPUS] [--repeat N] [--scale K]

CORPUS defaults to ../shared/corpus next to the repository (or /work/shared/corpus);
without it, or without Debian's chromium and chromedriver and selenium, the benchmark
says so and exits 0. It writes the page `loopwatch report CORPUS --labels
CORPUS/labels.tsv --outcomes CORPUS/MANIFEST.tsv` writes (timing that, and its size),
then opens it in headless Chromium N times (best and median) and reads the page's
own marks, in milliseconds from the start of navigation (the file's parse included):

- rows-first: the first slice of the table is in the document;
- rows-shown: every row is, up to the first 1,000 (built a slice per frame; more are
  built as the table is scrolled to its end);
- load: the load event.

`--scale K` also renders a page of K copies of every session (the same data, K times
as many rows) to see that thousands of sessions stay responsive.

Targets: the 711-session page shows its rows within 2 s (rows-shown) and its
HTML stays under 10 MB. Other work on the machine slows the browser: the load average
is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from browser_support import have_browser, page_url, requests_made, start_browser


def find_corpus(given: str | None) -> Path | None:
    candidates = (
        [Path(given)]
        if given
        else [Path(__file__).resolve().parents[1].parent / "shared" / "corpus", Path("/work/shared/corpus")]
    )
    return next((c for c in candidates if (c / "labels.tsv").is_file()), None)


def marks(driver, path: Path) -> dict[str, float]:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page_url(path))
    WebDriverWait(driver, 120).until(
        lambda d: d.execute_script("return performance.getEntriesByName('rows-shown').length > 0")
    )
    figures = driver.execute_script(
        "const m = n => performance.getEntriesByName(n)[0].startTime;"
        "const nav = performance.getEntriesByType('navigation')[0];"
        "return {'rows-first': m('rows-first'), 'rows-shown': m('rows-shown'), load: nav.loadEventEnd,"
        " rows: document.querySelectorAll('#sessions tbody tr[data-session]').length}"
    )
    assert requests_made(driver) == [page_url(path)], "the page made a request"
    return figures


def measure(driver, path: Path, repeat: int, label: str) -> None:
    runs = [marks(driver, path) for _ in range(repeat)]
    size = path.stat().st_size
    print(f"{label}: {runs[0]['rows']} rows, {size / 1e6:.2f} MB of HTML")
    for key in ("rows-first", "rows-shown", "load"):
        values = [r[key] for r in runs]
        print(f"  {key:10s} best {min(values):7.0f} ms   median {statistics.median(values):7.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=0, help="also a page of K copies of every session")
    args = parser.parse_args()
    corpus = find_corpus(args.corpus)
    if corpus is None:
        print("no corpus (../shared/corpus): nothing to measure")
        return 0
    if not have_browser():
        print("no chromium, chromedriver or selenium: nothing to measure")
        return 0
    from loopwatch._analysis.evaluation import load_labels
    from loopwatch._analysis.outcomes import load_outcomes
    from loopwatch._cli.page_output import write_page
    from loopwatch._cli.paths import expand
    from loopwatch._core.config import Config

    folder = Path(tempfile.mkdtemp(prefix="loopwatch-bench-report-"))
    page = folder / "corpus.html"
    items = [(t.path, t.label) for t in expand([str(corpus)]) if not t.problem]
    start = time.perf_counter()
    write_page(
        str(page),
        items,
        Config.make(profile="unattended"),
        labels=load_labels(str(corpus / "labels.tsv")),
        outcomes=load_outcomes([str(corpus / "MANIFEST.tsv")]),
        tables=[str(corpus / "labels.tsv"), str(corpus / "MANIFEST.tsv")],
        corpus=str(corpus),
        progress=False,
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"writing the page of {len(items)} files: {time.perf_counter() - start:.1f} s")
    driver = start_browser()
    try:
        measure(driver, page, args.repeat, str(corpus))
        if args.scale > 1:
            from loopwatch._html.page import render

            import json
            import re

            text = page.read_text(encoding="utf-8")
            blob = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
            assert blob is not None
            data = json.loads(blob.group(1))
            data["sessions"] = data["sessions"] * args.scale
            big = folder / f"corpus-x{args.scale}.html"
            big.write_text(render(data), encoding="utf-8")
            measure(driver, big, args.repeat, f"{args.scale} copies of every session")
    finally:
        driver.quit()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
