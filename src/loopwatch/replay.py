"""Replaying recorded sessions through a fresh `Monitor`: what loopwatch would have done.

    from loopwatch.replay import replay_file
    for result in replay_file("runs/task-7.traj", config):
        print(result.verdict, result.saved)

Used by `loopwatch scan`, `evaluate` and `calibrate`. Every session is fed to its own
monitor, in order, to the end (calibration figures cover the whole session, and
`interventions` lists what came after a stop too). `verdict` is the first stop;
`saved` is what stopping there would have spared: the actions after it, and tokens and
cost where the format records them.

Bad input never raises here: a file that cannot be read becomes one result with
`error` set, and a reader that fails half-way keeps what it had read.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from .config import Config
from .events import ToolCall, Turn
from .monitor import Monitor
from .readers import ReadError, Session, read
from .record import finding_record, verdict_record

__all__ = ["SessionResult", "replay", "replay_file", "replay_files", "default_jobs"]

_MAX_SKIPPED = 100  # skipped-line messages kept per session; the rest are counted


@dataclass
class SessionResult:
    """What replaying one session gave.

    `verdict` is the first stop (a `record.verdict_record` dict plus `started_ref`, the
    `source_ref` of the action where the pattern began), or None. `interventions`
    lists every nudge, block and stop up to and including the first stop (a run
    stopped there would have ended); `interventions_after_stop` counts the rest.
    `refs[i]` is the `source_ref` of counted tool call `i + 1` (the numbering of `at_action` and
    `started_action`; exempt tools are not counted), so callers can map actions to
    steps. `saved` is None without a stop, else `{"actions", "tokens", "cost",
    "estimated"}`: tokens and cost are summed from the events after the stop where
    they carry figures, else prorated by actions from the session's totals
    (`estimated: true`), else None. `not_transcript` is True when the file was read
    but no reader recognised its format (a folder walk may ignore such files).
    """

    path: str
    format: str | None = None
    session: str | None = None
    actions: int = 0
    events: int = 0
    verdict: dict[str, Any] | None = None
    interventions: list[dict[str, Any]] = field(default_factory=list)
    interventions_after_stop: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    calibration: dict[str, Any] = field(default_factory=dict)
    saved: dict[str, Any] | None = None
    tokens: int | None = None
    cost: float | None = None
    outcome: str | None = None
    skipped: list[str] = field(default_factory=list)
    error: str | None = None
    not_transcript: bool = False
    refs: list[str | None] = field(default_factory=list, repr=False)

    @property
    def stopped(self) -> bool:
        return self.verdict is not None

    def as_json(self) -> dict[str, Any]:
        """The `scan --json` object (everything but `refs` and `not_transcript`)."""
        return {
            "path": self.path,
            "format": self.format,
            "session": self.session,
            "actions": self.actions,
            "verdict": self.verdict,
            "interventions": self.interventions,
            "interventions_after_stop": self.interventions_after_stop,
            "findings": self.findings,
            "calibration": self.calibration,
            "saved": self.saved,
            "tokens": self.tokens,
            "cost": self.cost,
            "outcome": self.outcome,
            "skipped": self.skipped,
            "error": self.error,
        }


def replay(session: Session, config: Config, path: str = "") -> SessionResult:
    """Feed one session to a fresh monitor and collect the result. Exceptions raised
    by the reader while its events are consumed are caught: the result keeps what was
    replayed and says what went wrong in `error`. The monitor gets the built-in
    calibration of the session's format, if loopwatch has one (`Config.for_source`)."""
    monitor = Monitor(config.for_source(session.format))
    refs: list[str | None] = []
    after_tokens = after_cost = None  # figures carried by events after the stop
    error = None
    try:
        for event in session.events:
            stopped = monitor.stop is not None
            before = monitor.actions
            monitor.observe(event)
            if monitor.actions != before:
                refs.append(event.source_ref)
            if stopped and type(event) in (ToolCall, Turn):
                if event.tokens is not None:
                    after_tokens = (after_tokens or 0) + event.tokens
                if event.cost is not None:
                    after_cost = (after_cost or 0.0) + event.cost
    except ReadError as exc:
        error = str(exc)
    except Exception as exc:  # a reader bug must not end a scan of thousands of files
        error = f"reader failed at event {monitor.events + 1}: {type(exc).__name__}: {exc}"

    result = SessionResult(
        path=path,
        format=session.format,
        session=session.session,
        actions=monitor.actions,
        events=monitor.events,
        tokens=session.tokens,
        cost=session.cost,
        outcome=session.outcome,
        skipped=_capped(session.skipped),
        error=error,
        refs=refs,
    )
    if error is None and monitor.events == 0 and session.skipped:
        result.error = f"no readable events ({len(session.skipped)} lines skipped)"
    origin = monitor.first_at or 0.0
    # A run stopped there would have ended: later interventions are only counted.
    kept = monitor.interventions
    if monitor.stop is not None:
        end = next((i for i, v in enumerate(kept) if v is monitor.stop), len(kept) - 1)
        kept = kept[: end + 1]
    result.interventions = [_with_start(verdict_record(v, origin), refs) for v in kept]
    result.interventions_after_stop = monitor.interventions_total - len(kept)
    result.findings = [finding_record(f, origin) for f in monitor.strongest.values()]
    result.calibration = monitor.calibration()
    if monitor.stop is not None:
        result.verdict = _with_start(verdict_record(monitor.stop, origin), refs)
        result.saved = _saved(result, monitor.stop.index, after_tokens, after_cost)
    return result


def replay_file(path: str, config: Config, format: str | None = None, *, label: str | None = None) -> list[SessionResult]:
    """Every session in one file, replayed. `label` is the path reported in results
    (default: `path`), e.g. `-` for stdin copied to a temporary file. Never raises for
    bad input: an unreadable file is one result with `error` set."""
    label = path if label is None else label
    results: list[SessionResult] = []
    try:
        for session in read(path, format):
            results.append(replay(session, config, label))
    except ReadError as exc:
        message = str(exc)
        results.append(SessionResult(path=label, format=format, error=message, not_transcript=message.startswith("unknown format")))
    except OSError as exc:
        results.append(SessionResult(path=label, format=format, error=f"cannot read: {exc.strerror or exc}"))
    except Exception as exc:  # see replay(): never end a scan on one bad file
        results.append(SessionResult(path=label, format=format, error=f"reader failed: {type(exc).__name__}: {exc}"))
    if not results:
        results.append(SessionResult(path=label, format=format, error="no session in this file"))
    return results


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def replay_files(
    items: Sequence[tuple[str, str]], config: Config, format: str | None = None, jobs: int | None = None
) -> Iterator[list[SessionResult]]:
    """Replay many files, each `(path, label)`, yielding each file's results in the
    order given, as soon as they are ready. `jobs` processes (default: one per core);
    1, or very few files, replays in this process."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if jobs == 1 or len(items) < 4:
        for path, label in items:
            yield replay_file(path, config, format, label=label)
        return
    # Largest files first, so no core is left with a big one at the end (sizes vary
    # by 1000x); small chunks for the same reason. Results are yielded in the order
    # given, each as soon as it and all before it are done.
    order = sorted(range(len(items)), key=lambda i: _size(items[i][0]), reverse=True)
    chunksize = max(1, min(8, len(items) // (jobs * 16)))
    # fork is cheapest (no re-import) where it exists; callers start no thread
    # before the pool (scan's progress bar has no refresh thread for this reason).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    done: dict[int, list[SessionResult]] = {}
    following = 0
    with context.Pool(min(jobs, len(items)), initializer=_init_worker, initargs=(config, format)) as pool:
        for index, results in pool.imap_unordered(_worker, ((i, items[i]) for i in order), chunksize):
            done[index] = results
            while following in done:
                yield done.pop(following)
                following += 1


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


_worker_config: tuple[Config, str | None] | None = None


def _init_worker(config: Config, format: str | None) -> None:
    global _worker_config
    _worker_config = (config, format)


def _worker(job: tuple[int, tuple[str, str]]) -> tuple[int, list[SessionResult]]:
    assert _worker_config is not None
    config, format = _worker_config
    index, (path, label) = job
    return index, replay_file(path, config, format, label=label)


def _with_start(record: dict[str, Any], refs: list[str | None]) -> dict[str, Any]:
    started = record.get("started_action")
    record["started_ref"] = _ref(refs, started) if started else None
    return record


def _ref(refs: list[str | None], action: int) -> str | None:
    return refs[action - 1] if 0 < action <= len(refs) else None


def _saved(result: SessionResult, at_action: int, tokens: int | None, cost: float | None) -> dict[str, Any]:
    actions = max(0, result.actions - at_action)
    estimated = False
    if tokens is None and cost is None and result.actions and (result.tokens is not None or result.cost is not None):
        # No per-step figures: prorate the session's totals. Later steps carry a
        # longer context and cost more, so this underestimates.
        share = actions / result.actions
        tokens = round(result.tokens * share) if result.tokens is not None else None
        cost = round(result.cost * share, 6) if result.cost is not None else None
        estimated = True
    return {"actions": actions, "tokens": tokens, "cost": cost, "estimated": estimated}


def _capped(messages: Iterable[str]) -> list[str]:
    messages = list(messages)
    if len(messages) <= _MAX_SKIPPED:
        return messages
    return messages[:_MAX_SKIPPED] + [f"... and {len(messages) - _MAX_SKIPPED} more lines skipped"]
