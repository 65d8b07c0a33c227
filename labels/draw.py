"""Draw the sample of failed TB2 sessions to label by reading (labels/README.md).

A seeded random draw stratified by harness: from each agent's failed sessions
(MANIFEST.tsv `resolved` = no), a fixed quota drawn at random, then interleaved
round-robin across agents so that any prefix of the list is still spread across
harnesses. Re-running with the same seed and manifest gives the same list. A later
batch leaves out the sessions of the earlier ones (`--exclude`):

    python labels/draw.py ../shared/corpus-tb2/MANIFEST.tsv > labels/tb2-sample.tsv
    python labels/draw.py ../shared/corpus-tb2/MANIFEST.tsv --seed 20 --quota 4 \
        --exclude labels/tb2-sample.tsv --first 108 > labels/tb2-sample-2.tsv
"""

from __future__ import annotations

import argparse
import csv
import random
import sys

# Sessions per harness: equal shares where there are enough failed sessions, all of
# them where there are few (judy has 5, deepagent-harbor 11, terminus-3-3 14).
QUOTA = 13


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--quota", type=int, default=QUOTA)
    parser.add_argument("--exclude", action="append", default=[], help="a sample TSV whose sessions to leave out")
    parser.add_argument("--first", type=int, default=1, help="the order number of the first row")
    args = parser.parse_args(argv)
    drawn_before: set[str] = set()
    for path in args.exclude:
        with open(path, newline="", encoding="utf-8") as fh:
            drawn_before.update(r["local_path"] for r in csv.DictReader(fh, delimiter="\t"))
    with open(args.manifest, newline="", encoding="utf-8") as fh:
        rows = [
            r
            for r in csv.DictReader(fh, delimiter="\t")
            if r["resolved"] == "no" and r["local_path"] not in drawn_before
        ]
    by_agent: dict[str, list[dict[str, str]]] = {}
    for row in sorted(rows, key=lambda r: r["local_path"]):
        by_agent.setdefault(row["agent"], []).append(row)
    rng = random.Random(args.seed)
    drawn = {agent: rng.sample(group, min(args.quota, len(group))) for agent, group in sorted(by_agent.items())}
    out = csv.writer(sys.stdout, delimiter="\t", lineterminator="\n")
    out.writerow(["order", "local_path", "agent", "model", "task", "n_tool_calls"])
    order = args.first - 1
    for i in range(args.quota):
        for agent in sorted(drawn):
            if i < len(drawn[agent]):
                order += 1
                r = drawn[agent][i]
                out.writerow([order, r["local_path"], agent, r["model"], r["task"], r["n_tool_calls"]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
