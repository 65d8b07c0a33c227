"""The report of one long session: what writing its page holds, and what opening it in
a browser builds.

    PYTHONPATH=src python bench/report_session.py [--calls 300000] [--src DIR] [--no-browser]

Writes one events file of N tool calls (five tools, distinct commands, one call in seven
failing, a stretch repeated now and then: a long session that is mostly working), then,
each in a fresh process of its own:

- `scan --json` of it: the process's own peak memory (`VmHWM`) and its time: what
  replaying the session costs, the baseline;
- `report -o page.html`: its peak and time, and the page's size. The figure to read is
  the peak against scan's: the page's data must be streamed to the file, not held
  (a kilobyte per call was 336 MB for 300,000 calls);
- the page in headless Chromium (Debian's chromium and chromedriver, with selenium;
  skipped without them): the time from clicking the session's row to its timeline
  being drawn, and the number of SVG elements the timeline holds (to be bounded,
  whatever N: a mark per call froze the page for seconds).

`--src DIR` runs the loopwatch of another source tree (`git archive <commit> | tar -x -C
/tmp/before`, then `--src /tmp/before/src`) for a before/after comparison in one run.
Times depend on the machine's load (printed with them); peaks and counts do not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

_CHILD = """
import re, runpy, sys, time
start = time.perf_counter()
sys.argv = ["loopwatch", *sys.argv[1:]]
try:
    runpy.run_module("loopwatch", run_name="__main__")
except SystemExit as exc:
    status = exc.code
else:
    status = 0
peak = re.search(r"VmHWM:\\s*(\\d+)", open("/proc/self/status").read()).group(1)
print(f"BENCH {peak} {time.perf_counter() - start:.2f} {status}", file=sys.stderr)
"""


def write_session(path: Path, calls: int) -> None:
    tools = ("Bash", "Read", "Edit", "Grep", "Write")
    with path.open("w") as out:  # a line at a time: this process holds no list of calls
        out.write('{"type": "user", "session": "long"}\n')
        for i in range(calls):
            n = i if (i // 1000) % 10 else i % 7  # every tenth thousand: a stretch of seven calls repeated
            call = {"type": "tool", "name": tools[n % 5], "input": {"command": f"step {n}"}, "result": "ok"}
            if i % 7 == 3:
                call["error"], call["result"] = True, "E"
            out.write(json.dumps(call, separators=(",", ":")) + "\n")


def child(src: str, *args: str) -> tuple[int, float, int]:
    """(peak KiB, seconds, exit status) of `loopwatch ARGS` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True, timeout=3600, check=False
    )
    line = next(line for line in done.stderr.splitlines() if line.startswith("BENCH "))
    _, peak, seconds, status = line.split()
    return int(peak), float(seconds), int(status) if status.isdigit() else 1


def open_in_browser(page: Path) -> tuple[float, int]:
    """(ms from the row's click to the timeline drawn, SVG elements in it)."""
    from browser_support import page_url, start_browser
    from selenium.webdriver.support.ui import WebDriverWait

    driver = start_browser()
    driver.set_script_timeout(600)
    try:
        driver.get(page_url(page))
        WebDriverWait(driver, 600).until(
            lambda d: d.execute_script("return document.querySelector('#sessions tbody').dataset.complete === 'true'")
        )
        return driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const row = document.querySelector('#sessions tbody tr[data-session]');"
            "const t0 = performance.now(); row.click();"
            # the timeline is drawn when the frame after the click is
            "requestAnimationFrame(() => setTimeout(() => done([performance.now() - t0,"
            " document.querySelectorAll('#session svg *').length]), 0));"
        )
    finally:
        driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="loopwatch-bench-report-session-"))
    session = folder / "long.jsonl"
    write_session(session, args.calls)
    print(f"{args.calls:,} calls, {session.stat().st_size / 1e6:.1f} MB of events; loopwatch from {args.src}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    scan_peak, scan_s, _ = child(args.src, "scan", "--json", "--no-progress", str(session))
    print(f"scan --json:  peak {scan_peak / 1024:7.1f} MB   {scan_s:6.1f} s")
    page = folder / "page.html"
    page_peak, page_s, status = child(args.src, "report", "--no-progress", str(session), "-o", str(page))
    extra = (page_peak - scan_peak) * 1024 / args.calls
    print(
        f"report:       peak {page_peak / 1024:7.1f} MB   {page_s:6.1f} s   page {page.stat().st_size / 1e6:.1f} MB"
        f"   ({page_peak / scan_peak:.2f}x scan's peak, {extra:,.0f} bytes a call more; exit {status})"
    )
    from browser_support import have_browser

    if args.no_browser or not have_browser():
        print("browser: skipped" + ("" if args.no_browser else " (no chromium, chromedriver or selenium)"))
    else:
        start = time.perf_counter()
        ms, elements = open_in_browser(page)
        print(f"browser:      the session's timeline drawn {ms:,.0f} ms after the click, {elements:,} SVG elements")
        print(f"              (the page loaded and opened in {time.perf_counter() - start:.1f} s)")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
