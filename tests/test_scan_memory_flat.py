"""A scan's memory does not grow with the number of files (issue 9): the folder walk
and the scan hold no record per file. Measured with tracemalloc in a child process
(the scan's own allocations, not the interpreter's), 3,000 tiny files against 30."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The peak over the walk and the replay: read when the scan reaches its last report
# (`print_problems`, after every file), so what the interpreter does at exit is not in it.
_CHILD = """
import sys, tracemalloc
tracemalloc.start()
from loopwatch.cli import scan
report = scan.print_problems
def print_problems(*args):
    sys.stderr.write("PEAK %d\\n" % tracemalloc.get_traced_memory()[1])
    report(*args)
scan.print_problems = print_problems
from loopwatch.__main__ import main
sys.argv = ["loopwatch", "scan", "--json", "--no-progress", "--jobs", "1", sys.argv[1]]
main()
"""

_CALL = b'{"type": "tool", "name": "Bash", "input": {"command": "pytest -x"}, "error": true, "result": "E fail"}\n'


def _peak(folder: Path, count: int) -> int:
    # 100 files a folder: a walk holds one folder's names to sort them (inherent, and
    # not what this test is about); runs/<task>/<file> trees look like this.
    for i in range(count):
        sub = folder / f"t{i // 100:03}"
        sub.mkdir(exist_ok=True)
        (sub / f"s{i:05}.jsonl").write_bytes(b'{"type": "user"}\n' + _CALL * 6)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(folder)], capture_output=True, env=env, timeout=300, check=False
    )
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == count and all(json.loads(line)["verdict"] for line in lines)  # every file scanned, looped
    return int(proc.stderr.decode().rsplit("PEAK ", 1)[1])


def test_a_scan_of_3000_files_peaks_like_one_of_30(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    base, peak = _peak(small, 30), _peak(large, 3000)
    growth = (peak - base) / (3000 - 30)
    print(f"peak {base} -> {peak} B: {growth:.0f} B per file")
    # Profiled (tracemalloc by traceback; BENCHMARKS.md "Reliability: a scan flat in
    # files"): before, ~370 B per file: a Target, its path, a (path, label) tuple, a
    # device/inode key and three lists, all kept at once, plus pathlib's interned file
    # names. After, ~35 B (finished monitors' cyclic garbage awaiting the collector).
    # 100 B fails if any one of those records comes back (>= 64 B each, with the path)
    # and leaves that garbage room to vary.
    assert growth < 100, f"{growth:.0f} B of peak memory per file scanned"
