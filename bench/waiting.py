"""How long an agent's round takes, and how far apart its copies of one call come:
the evidence behind the time rules of `repeat` (`wait`) and `repeated_lines`
(`beat_min`, `beat_max`).

    PYTHONPATH=src python bench/waiting.py [--corpus DIR]

For every session of the corpus whose format records times (mini-swe-agent's response
times, ATIF's timestamps; the others place events a second apart and are left out),
prints the seconds from one tool call to the next (a round: a model call and a tool
call) as quantiles, and how many took under 1 s and 100 s or more; then, for the
copies of one call in a row (the identical call with the identical result, as `repeat`
counts them), the gap from the copy before, by outcome (a labelled loop, a session
that solved its task, the others), and the streaks whose gaps are mostly `wait` seconds
or more (what `repeat` reads as waiting). Prints figures only: no call, no result.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from loopwatch import ToolCall
from loopwatch._core.config import Config
from loopwatch._core.signals.repeat import Params
from loopwatch._core.step import make_step
from loopwatch._readers import ReadError, read

TIMED = ("mini-swe-agent", "atif")


def quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    values = sorted(values)
    at = lambda p: values[min(len(values) - 1, int(p * len(values)))]
    return f"n {len(values)}, p50 {at(0.5):g} s, p90 {at(0.9):g} s, p99 {at(0.99):g} s, p99.9 {at(0.999):g} s, max {values[-1]:g} s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()
    corpus = args.corpus
    with open(os.path.join(corpus, "labels.tsv"), encoding="utf-8") as fh:
        labels = {row["local_path"]: row["label"] for row in csv.DictReader(fh, delimiter="\t")}
    with open(os.path.join(corpus, "MANIFEST.tsv"), encoding="utf-8") as fh:
        manifest = list(csv.DictReader(fh, delimiter="\t"))
    wait = Params().wait
    config = Config()
    rounds: list[float] = []
    copies: dict[str, list[float]] = {"loop": [], "resolved": [], "other": []}
    waiting: dict[str, int] = {"loop": 0, "resolved": 0, "other": 0}
    sessions = 0
    for row in manifest:
        if not row["format"].startswith(TIMED):
            continue
        path = row["local_path"]
        kind = "loop" if labels.get(path) == "yes" else "resolved" if row["resolved"] == "yes" else "other"
        try:
            found = list(read(os.path.join(corpus, path)))
        except (ReadError, OSError):
            continue
        for session in found:
            sessions += 1
            last = None
            gaps: list[float] = []  # of the current streak of copies
            for event in session.events:
                if not isinstance(event, ToolCall) or event.at is None:
                    continue
                rule = config.rule(event.name)
                step = make_step(
                    0,
                    event.name,
                    event.input,
                    event.result,
                    event.error,
                    event.changed,
                    event.at,
                    rule.role,
                    rule.identity,
                )
                if last is not None:
                    rounds.append(step.at - last.at)
                    if step.call == last.call and step.result == last.result:
                        gaps.append(step.at - last.at)
                        copies[kind].append(step.at - last.at)
                    else:
                        waiting[kind] += len(gaps) >= 2 and 2 * sum(g >= wait for g in gaps) > len(gaps)
                        gaps = []
                last = step
            waiting[kind] += len(gaps) >= 2 and 2 * sum(g >= wait for g in gaps) > len(gaps)
    print(f"timed sessions ({', '.join(TIMED)}): {sessions}")
    print(f"rounds (one tool call to the next): {quantiles(rounds)}")
    print(f"  under 1 s: {sum(r < 1 for r in rounds)}; {wait:g} s or more: {sum(r >= wait for r in rounds)}")
    for kind, gaps in copies.items():
        print(f"copies in a row, gap from the copy before, {kind}: {quantiles(gaps)}")
        print(f"  streaks of 3 copies or more read as waiting (most gaps >= {wait:g} s): {waiting[kind]}")


if __name__ == "__main__":
    main()
