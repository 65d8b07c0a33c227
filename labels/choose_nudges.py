"""Choose the nudge-only thresholds out of fold, on both corpora together.

The thresholds that only decide nudges (`text_only`'s threshold, `reverify`'s rounds,
`unchanged`'s rounds, `wedged`'s turns) decide no stop on their own, so `loopwatch
evaluate --folds` (which trades stops) does not choose them. (`cycle`'s repeats also
earn its stop and are at their floor, 2; the stop-governing thresholds are chosen by
`evaluate`.) Here every session of the TB2 half and of the 2024 corpus is replayed once
per setting of the grid `AXES` (the whole detector, with each source's shipped
calibration), the sessions are dealt into 5 folds (stratified by corpus, label and
outcome, seeded), and for each fold a setting is chosen on the other four, harm first:

1. admissible: at most 3% of the resolved TB2 sessions nudged (the bound for today's agents); the 2024
   corpus's successful sessions nudged no more than 1% of them above the shipped setting's;
   no more harmful stops (on a successful session, a `no` or `brief` label, or well before
   an onset) than the shipped setting;
2. with a margin (`--margin`, 1 by default, as `evaluate`'s): on every axis where it is not
   the grid's most careful value, the setting `margin` steps more aggressive is admissible
   too (a step past the grid's end is not known to be; when no admissible setting keeps
   the margin, the admissible ones are the pool);
3. the most labelled loops whose first nudge is at or after the onset (`--objective
   recall`, the default: the issue's targets are recall within harm budgets), or that
   less the false first nudges (`--objective net`);
4. then the fewest false first nudges and nudged successful sessions, then the more
   conservative setting.

Each held-out fold is scored under its own choice; the out-of-fold figures are those
scores together. The replays are cached (`--cache`); `--reuse` reads the cache and takes
the labels afresh (labels read since the replay count). Run from the repository root:

    python labels/choose_nudges.py --cache /tmp/nudges.json
    python labels/choose_nudges.py --cache /tmp/nudges.json --reuse --margin 0
    python labels/choose_nudges.py --cache /tmp/nudges.json --reuse --tb2-labels all.tsv

`--tb2-labels` scores the TB2 sessions against another labels file (the replays do not
depend on labels): the three non-blind sets together, to estimate a choice on more loops.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import random
import sys

#: (signal, field, values), each axis most careful first (0: off).
AXES = (
    ("text_only", "threshold", (7, 6, 5)),
    ("reverify", "rounds", (4, 3, 2)),
    ("unchanged", "rounds", (5, 4, 3, 2)),
    ("wedged", "turns", (3, 2)),
)
POSITIONS = list(itertools.product(*(range(len(values)) for *_, values in AXES)))
SETTINGS = [tuple(values[i] for (*_, values), i in zip(AXES, position)) for position in POSITIONS]
CORPORA = (
    ("tb2", "../shared/corpus-tb2", "labels/tb2-labels.tsv", "../shared/corpus-tb2/MANIFEST.tsv"),
    ("2024", "../shared/corpus", "../shared/corpus/labels.tsv", "../shared/corpus/MANIFEST.tsv"),
)
FIELDS = ("yes", "caught", "false", "harmful_stops", "tb2_resolved", "tb2_nudged", "old_succeeded", "old_nudged")


def replay(jobs: int) -> list[dict]:
    from loopwatch._analysis.evaluation import Case, load_labels, replay_cases
    from loopwatch._core.config import Config

    rows = []
    configs = [
        Config.make(signals={signal: {field: value} for (signal, field, _), value in zip(AXES, setting)})
        for setting in SETTINGS
    ]
    for name, corpus, labels_path, manifest in CORPORA:
        labels = {os.path.normpath(label.path): label for label in load_labels(labels_path)}
        with open(manifest, newline="", encoding="utf-8") as fh:
            outcomes = {
                os.path.normpath(r["local_path"]): r.get("resolved") for r in csv.DictReader(fh, delimiter="\t")
            }
        cases = [Case(p, labels.get(p), None if r is None else r == "yes") for p, r in outcomes.items()]
        cases += [Case(p, label, None) for p, label in labels.items() if p not in outcomes]
        for r in replay_cases(cases, corpus, configs, jobs=jobs):
            rows.append(
                {
                    "corpus": name,
                    "path": os.path.normpath(r.case.path),
                    "resolved": r.case.resolved,
                    "error": r.error,
                    "nudge": [x.nudge for x in r.results],
                    "stop": [x.stop for x in r.results],
                }
            )
    return rows


def relabel(rows: list[dict]) -> None:
    from loopwatch._analysis.evaluation import load_labels

    for name, _, labels_path, _ in CORPORA:
        labels = {os.path.normpath(label.path): label for label in load_labels(labels_path)}
        for row in rows:
            if row["corpus"] == name:
                label = labels.get(row["path"])
                row["label"] = None if label is None else [label.label, label.onset, label.end]


def figures(rows: list[dict], k: int | dict[int, int]) -> dict[str, int]:
    """The figures of `rows` under setting `k` (or, per row index, `k[i]`)."""
    from loopwatch._analysis.evaluation import Label, judge

    f = dict.fromkeys(FIELDS, 0)
    for i, row in enumerate(rows):
        if row["error"]:
            continue
        s = k[i] if isinstance(k, dict) else k
        if row["label"] is not None:
            label = Label(row["path"], *row["label"])
            f["yes"] += label.label == "yes"
            first = judge(label, row["nudge"][s])
            f["caught"] += first == "caught"
            f["false"] += first == "false"
            f["harmful_stops"] += judge(label, row["stop"][s]) == "false"
        if row["resolved"]:
            tb2 = row["corpus"] == "tb2"
            f["tb2_resolved" if tb2 else "old_succeeded"] += 1
            f["tb2_nudged" if tb2 else "old_nudged"] += row["nudge"][s] is not None
            f["harmful_stops"] += row["stop"][s] is not None
    return f


def shipped() -> int:
    """The index of the setting loopwatch ships (each field's default)."""
    from loopwatch._core.config import Config

    config = Config.make()
    return SETTINGS.index(tuple(getattr(config.params(signal), field) for signal, field, _ in AXES))


def choose(rows: list[dict], objective: str, margin: int) -> int:
    every = [figures(rows, k) for k in range(len(SETTINGS))]
    base = every[shipped()]
    admissible = [
        f["tb2_nudged"] <= 0.03 * f["tb2_resolved"]
        and f["old_nudged"] <= base["old_nudged"] + 0.01 * f["old_succeeded"]
        and f["harmful_stops"] <= base["harmful_stops"]
        for f in every
    ]
    where = {position: k for k, position in enumerate(POSITIONS)}

    def kept(k: int) -> bool:
        position = POSITIONS[k]
        return all(
            n is not None and admissible[n]
            for a in range(len(position))
            if position[a] > 0
            for step in range(1, margin + 1)
            for n in [where.get(position[:a] + (position[a] + step,) + position[a + 1 :])]
        )

    pool = [k for k in range(len(SETTINGS)) if admissible[k]]
    pool = [k for k in pool if kept(k)] or pool  # the shipped setting is always admissible

    def merit(k: int) -> tuple[int, ...]:
        f = every[k]
        gain = f["caught"] if objective == "recall" else f["caught"] - f["false"]
        return (gain, -f["false"] - f["tb2_nudged"] - f["old_nudged"], -k)

    return max(pool, key=merit)


def show(f: dict[str, int]) -> str:
    pct = lambda a, b: 100 * a / max(1, b)
    return (
        f"first nudge at or after onset {f['caught']}/{f['yes']} ({pct(f['caught'], f['yes']):.0f}%), "
        f"false first nudges {f['false']}, harmful stops {f['harmful_stops']}; "
        f"resolved TB2 nudged {f['tb2_nudged']}/{f['tb2_resolved']} ({pct(f['tb2_nudged'], f['tb2_resolved']):.1f}%); "
        f"2024 succeeded nudged {f['old_nudged']}/{f['old_succeeded']} ({pct(f['old_nudged'], f['old_succeeded']):.1f}%)"
    )


def name(k: int) -> str:
    return " ".join(f"{signal}.{field}={value}" for (signal, field, _), value in zip(AXES, SETTINGS[k]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", required=True, help="JSON file of the replays (written, or read with --reuse)")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--objective", choices=("recall", "net"), default="recall")
    parser.add_argument("--margin", type=int, default=1, help="grid steps past the choice that must be admissible too")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tb2-labels", help="TB2 labels file (default: labels/tb2-labels.tsv)")
    args = parser.parse_args(argv)
    if args.tb2_labels:
        global CORPORA
        CORPORA = tuple((c[0], c[1], args.tb2_labels, c[3]) if c[0] == "tb2" else c for c in CORPORA)
    sys.path.insert(0, "src")
    if args.reuse:
        with open(args.cache, encoding="utf-8") as fh:
            rows = json.load(fh)
    else:
        rows = replay(args.jobs)
        with open(args.cache, "w", encoding="utf-8") as fh:
            json.dump(rows, fh)
    relabel(rows)
    rng = random.Random(args.seed)
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        key = f"{row['corpus']} {row['label'][0] if row['label'] else '-'} {row['resolved']}"
        groups.setdefault(key, []).append(i)
    fold = {}
    for key in sorted(groups):
        members = groups[key]
        rng.shuffle(members)
        for n, i in enumerate(members):
            fold[i] = n % args.folds
    chosen: dict[int, int] = {}
    for f in range(args.folds):
        k = choose([r for i, r in enumerate(rows) if fold[i] != f], args.objective, args.margin)
        print(f"fold {f}: {name(k)}")
        chosen.update({i: k for i in range(len(rows)) if fold[i] == f})
    for corpus, *_ in CORPORA:
        part = [(i, r) for i, r in enumerate(rows) if r["corpus"] == corpus]
        out_of_fold = figures([r for _, r in part], {n: chosen[i] for n, (i, _) in enumerate(part)})
        print(f"out of fold, {corpus}: {show(out_of_fold)}")
    k = choose(rows, args.objective, args.margin)
    print(f"on every session: {name(k)} (shipped: {name(shipped())})")
    print(f"in sample, each setting ({', '.join(f'{signal}.{field}' for signal, field, _ in AXES)}):")
    for k, setting in enumerate(SETTINGS):
        for corpus, *_ in CORPORA:
            print(f"  {setting} {corpus}: {show(figures([r for r in rows if r['corpus'] == corpus], k))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
