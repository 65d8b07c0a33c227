"""`loopwatch scan`: which recorded sessions looped, from where, and what it cost."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from functools import partial
from typing import BinaryIO

import click

from .._analysis.pool import default_jobs
from .._analysis.replay import SessionResult, replay_files
from .._analysis.results import OutputError, ResultWriter, check_results, open_results, record_line
from .._core.config import Config
from ._common import config_options, engine_options, fail, format_option, make_config, progress_bar, use_ray
from .paths import LeftOut, Target, expand, named
from .report import Totals, first_block, print_problems, print_table

_PROGRESS_MIN_FILES = 10  # below this a bar only flickers


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session per line, instead of the table.")
@click.option(
    "--out",
    "out_path",
    metavar="FILE",
    help="Also write one row per session to FILE, as the scan goes: .jsonl, or .parquet (needs loopwatch[parquet]).",
)
@config_options
@format_option
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Processes to use (default: one per core; never more than the cores or the files; 1 scans in this process).",
)
@engine_options
@click.option(
    "--no-progress", is_flag=True, help="No progress bar (it is shown only on a terminal, for 10 files or more)."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Also write the sessions as one HTML page (as `loopwatch report` does; they are replayed again for it).",
)
def scan(
    paths: tuple[str, ...],
    as_json: bool,
    out_path: str | None,
    config_path: str | None,
    profile: str | None,
    mode: str | None,
    format_name: str | None,
    jobs: int | None,
    engine: str,
    address: str | None,
    no_progress: bool,
    report_path: str | None,
) -> None:
    """Replay recorded agent sessions and report the ones that went in circles.

    FILE may be a file, a folder (searched recursively for transcripts), a glob
    (quoted or not: 'runs/**/*.traj') or - for standard input. The format of each
    file is detected (--format to force one).

    Each session is replayed, as recorded, through fresh monitors (one per agent,
    as the live hook watches each sub-agent) with the unattended profile; the table shows every session loopwatch would have stopped:
    the signal, the action where the loop began, the action where the run would have
    ended, and the actions (and tokens and cost, where the file records them) wasted
    after it. Then the totals.

    \b
    Examples:
      loopwatch scan examples/runaway.jsonl
      loopwatch scan runs/ --json > results.jsonl
      loopwatch scan runs/ --out results.parquet
      loopwatch scan 'trajs/**/*.traj' --jobs 4
      loopwatch scan s3-mounted/rollouts/ --engine ray --address auto --out results.parquet
      my-agent --events | loopwatch scan -

    Exit status: 0 no session was stopped, 1 at least one was, 2 a file could not
    be read, or an output written (or bad usage); 130 or 143 after Ctrl-C or SIGTERM.
    """
    config = make_config(config_path, profile, mode)
    if format_name is not None:
        _check_format(format_name)
    if report_path is not None and "-" in paths:
        raise click.UsageError("--report replays the files again: it cannot read standard input twice")
    # Every output is checked before anything is read or written: never a file the
    # scan reads, nor the other output.
    inputs = [*named(paths), *([config_path] if config_path else [])]
    if out_path is not None:
        try:
            check_results(out_path, [*inputs, *([report_path] if report_path else [])])
        except OutputError as exc:
            fail("scan", f"--out {exc}")
    if report_path is not None:
        from .page_output import check_page_output

        check_page_output(report_path, [*inputs, *([out_path] if out_path else [])])
    out = sys.stdout.buffer
    replay = partial(replay_files, jobs=jobs or default_jobs())
    if use_ray(engine, address):
        from .._analysis.ray_engine import replay_files_ray

        replay = partial(replay_files_ray, address=address)
    outputs = [p for p in (out_path, report_path) if p is not None]
    try:
        with ExitStack() as files:
            rows_out = files.enter_context(open_results(out_path, inputs=inputs)) if out_path is not None else None
            status = _scan(paths, as_json, config, format_name, replay, no_progress, out, rows_out, outputs)
    except OutputError as exc:
        fail("scan", f"--out {exc}")
    if report_path is not None:
        from .page_output import write_page

        targets = list(_targets(paths, outputs))
        items = [(t.path, t.label) for t in targets if not t.problem]
        unread = [(t.label, t.problem) for t in targets if t.problem]
        write_page(
            report_path,
            items,
            config,
            problems=unread,
            format=format_name,
            jobs=jobs,
            progress=not no_progress,
            inputs=[*inputs, *([out_path] if out_path else [])],
        )
    sys.exit(status)


def _scan(
    paths: tuple[str, ...],
    as_json: bool,
    config: Config,
    format_name: str | None,
    replay: Callable[..., Iterator[list[SessionResult]]],
    no_progress: bool,
    out: BinaryIO,
    rows_out: ResultWriter | None,
    outputs: list[str],
) -> int:
    totals = Totals()
    rows: list[SessionResult] = []
    # Two passes over the arguments, so nothing per file is held: the first finds the
    # files that cannot be read (JSON writes them first) and counts the others (the
    # progress bar's total); the second streams the files to read into the replay.
    problems: set[str] = set()
    readable = 0
    for target in _targets(paths, outputs, totals.left_out):
        if target.problem:
            problems.add(target.label)
            totals.add_file([SessionResult(path=target.label, error=target.problem)], counted=not target.missing)
            if rows_out is not None:
                rows_out.write(totals.failed[-1:])
        else:
            readable += 1
    if as_json:  # problems found before reading come first, in the same stream
        out.writelines(record_line(result) for result in totals.failed)
    with ExitStack() as stack:
        progress = stack.enter_context(progress_bar(readable, "scanning", not no_progress, _PROGRESS_MIN_FILES))

        def to_read() -> Iterator[tuple[str, str]]:
            for target in _targets(paths, outputs):
                if not target.problem:
                    yield target.path, target.label
                elif target.label not in problems:  # appeared since the first pass
                    problems.add(target.label)
                    totals.add_file(
                        [SessionResult(path=target.label, error=target.problem)], counted=not target.missing
                    )
                    if rows_out is not None:
                        rows_out.write(totals.failed[-1:])
                    if as_json:
                        out.write(record_line(totals.failed[-1]))

        for results in replay(to_read(), config, format_name):
            kept = totals.add_file(results)
            if rows_out is not None:
                rows_out.write(kept)
            if as_json:
                out.writelines(record_line(result) for result in kept)
                out.flush()
            if not as_json:  # the table's rows; JSON lines are written as they come
                rows.extend(r for r in kept if r.verdict is not None or first_block(r))
            progress.advance()
    if not as_json:
        print_table(rows, totals)
    print_problems(totals, as_json)
    return totals.exit_status


def _targets(paths: tuple[str, ...], outputs: list[str], left_out: LeftOut | None = None) -> Iterator[Target]:
    """The files to scan, less the files the scan writes (a folder walked may hold
    them): by path, and by device and inode; what agent CLIs' state folders hold besides
    transcripts is counted in `left_out`."""
    own = {os.path.realpath(path) for path in outputs}
    ids = set()
    for path in outputs:
        try:
            info = os.stat(path)
        except OSError:
            continue
        ids.add((info.st_dev, info.st_ino))
    for target in expand(paths, left_out):
        if own and not target.problem and target.path != "-" and _is_one_of(target.path, own, ids):
            continue
        yield target


def _is_one_of(path: str, real: set[str], ids: set[tuple[int, int]]) -> bool:
    if os.path.realpath(path) in real:
        return True
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) in ids


def _check_format(name: str) -> None:
    from .._readers import reader

    try:
        reader(name)
    except ImportError:
        raise click.BadParameter(
            f"the {name!r} reader is not available in this version", param_hint="--format"
        ) from None
