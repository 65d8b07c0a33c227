"""Calls killed for running too long, per Terminal-Bench 2.0 session: do they tell loops apart?

    python bench/tb2_timeouts.py [--corpus ../shared/corpus-tb2] [--labels FILE ...] [--exclude FILE ...]

For every session of the corpus's MANIFEST.tsv (those of an `--exclude` labels file are
skipped unread: a blind batch stays blind), counts the tool calls whose result text says the
harness killed them for time (`TIMED_OUT`: mini-swe-agent's `<returncode>-15</returncode>`
and "timed out ... killed", exit 124, OpenHands' and terminus' timeout notes), in all and in
a row (a call with another non-empty result ends a row). Prints, for each threshold, how
many sessions reach it: resolved, failed, and by label of the `--labels` files. The source
keeps no `error` flag, so result text is the only trace of a timeout; this reads it for a
measurement only, never for detection. Nothing of a session's text is printed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
from collections import Counter

TIMED_OUT = re.compile(
    r"<returncode>(?:-15|124)</returncode>|timed out|has been killed|Timeout(?!s)",
    re.IGNORECASE,
)
THRESHOLDS = (2, 3, 4, 5, 6, 8)


def rows_of(path: str) -> dict[str, dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["local_path"]: row for row in csv.DictReader(fh, delimiter="\t")}


def counts(path: str) -> tuple[int, int]:
    """Timed-out calls in the session at `path`: in all, and most in a row."""
    total = run = most = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            event = json.loads(line)
            if event.get("type") != "tool":
                continue
            result = event.get("result")
            text = result if isinstance(result, str) else json.dumps(result)
            if text and TIMED_OUT.search(text):
                total, run = total + 1, run + 1
                most = max(most, run)
            elif text:
                run = 0
    return total, most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="../shared/corpus-tb2")
    parser.add_argument("--labels", action="append", default=[], help="labels file (repeatable)")
    parser.add_argument("--exclude", action="append", default=[], help="labels file whose sessions stay unread")
    args = parser.parse_args()
    skipped: set[str] = set()
    for path in args.exclude:
        skipped |= set(rows_of(path))
    labels: dict[str, str] = {}
    for path in args.labels:
        labels.update({p: row["label"] for p, row in rows_of(path).items()})
    sessions = []
    for local, row in rows_of(os.path.join(args.corpus, "MANIFEST.tsv")).items():
        if local in skipped:
            continue
        sessions.append((row["resolved"], labels.get(local, "-"), *counts(os.path.join(args.corpus, local))))
    print(f"{len(sessions)} sessions ({len(skipped)} left unread)")
    for title, column in (("in all", 2), ("in a row", 3)):
        print(f"timed-out calls {title}, sessions with at least N: resolved / failed / labelled yes / no / brief")
        for n in THRESHOLDS:
            reached = [s for s in sessions if s[column] >= n]
            outcome = Counter(s[0] for s in reached)
            label = Counter(s[1] for s in reached)
            print(f"  {n}: {outcome['yes']} / {outcome['no']} / {label['yes']} / {label['no']} / {label['brief']}")


if __name__ == "__main__":
    main()
