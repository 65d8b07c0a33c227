"""`loopwatch evaluate`: how well a configuration does on hand-labelled sessions."""

from __future__ import annotations

import os
import sys

import click
import orjson

from ..evaluation import Label, load_labels, only, replay_many, score
from ._common import config_options, make_config, progress_bar

__all__ = ["evaluate"]


@click.command()
@click.option("--labels", "labels_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Tab-separated labels: local_path, label (yes|brief|no), onset_step, end_step, ...")
@click.option("--corpus", type=click.Path(exists=True, file_okay=False),
              help="Folder the label paths are relative to (default: the labels file's folder).")
@config_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every figure, for machines.")
@click.option("--jobs", type=int, default=0, help="Worker processes (default: one per core).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def evaluate(labels_path: str, corpus: str | None, config_path: str | None, profile: str | None, mode: str | None,
             as_json: bool, jobs: int, no_progress: bool) -> None:
    """Measure detection against hand-labelled sessions.

    Each labelled session is replayed as recorded; the step of loopwatch's first stop
    (and of its first nudge) is compared with the label. For the whole detector and for
    each signal alone it prints: recall (loops stopped at or after their onset, over
    all loops), the median delay in steps from onset to stop, the share of looping
    steps the stop would have saved, false stops (on sessions labelled `no`, and
    before the onset of a loop) and stops on `brief` loops (which the agent escaped by
    itself).

    \b
    Example:
      loopwatch evaluate --labels ../shared/corpus/labels.tsv
      loopwatch evaluate --labels labels.tsv --config strict.toml --json
    """
    config = make_config(config_path, profile or "unattended", mode)
    try:
        labels = load_labels(labels_path)
    except (OSError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    corpus = corpus or os.path.dirname(os.path.abspath(labels_path))
    names = list(config.signals)
    configs = [config] + [only(config, name) for name in names]
    with progress_bar(len(labels), "replaying", not no_progress) as bar:
        results = replay_many(labels, corpus, configs, jobs or None, bar.advance)
    errors = [(label.path, error) for label, error, _ in results if error]
    report = {"sessions": len(labels), "errors": [{"path": p, "error": e} for p, e in errors], "detectors": {}}
    for k, name in enumerate(["all"] + names):
        stops = score((label, r[k][0]) for label, error, r in results if not error)
        nudges = score((label, r[k][2]) for label, error, r in results if not error)
        report["detectors"][name] = {"stop": stops.as_dict(), "nudge": nudges.as_dict()}
    if as_json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _print(report)
    sys.exit(2 if errors else 0)


def _print(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 120)
    all_stop = report["detectors"]["all"]["stop"]
    console.print(
        f"{report['sessions']} labelled sessions: {all_stop['yes']} loops (yes), {all_stop['brief']} brief, "
        f"{all_stop['no']} healthy (no)"
    )
    for what in ("stop", "nudge"):
        table = Table(title=f"first {what}", title_justify="left")
        false = "false stops" if what == "stop" else "false nudges"
        for column in ("detector", "recall", "caught", "median delay", "saved", false, "(on no / early)", "on brief"):
            table.add_column(column, justify="left" if column == "detector" else "right")
        for name, figures in report["detectors"].items():
            f = figures[what]
            delay = "-" if f["median_delay"] is None else f"{f['median_delay']:g}"
            table.add_row(
                name, f"{f['recall']:.0%}", f"{f['caught']}/{f['yes']}", delay, f"{f['saved']:.0%}",
                str(f["false_stops"]), f"{f['false_stops_on_no']} / {f['early_stops_on_yes']}", str(f["stops_on_brief"]),
            )
        console.print(table)
    stop = report["detectors"]["all"]["stop"]
    if stop["false_paths"]:
        console.print("false stops (whole detector):")
        for path in stop["false_paths"]:
            console.print(f"  {path}")
    for item in report["errors"]:
        console.print(f"[red]could not read[/red] {item['path']}: {item['error']}")
