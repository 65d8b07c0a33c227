"""Replaying recorded sessions through a fresh `Monitor`: what loopwatch would have done.

    from loopwatch.analysis.replay import replay_file
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
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import chain, islice
from typing import Any, BinaryIO

from ..core.config import Config
from ..core.events import ToolCall, Turn
from ..core.monitor import Monitor
from ..core.record import finding_record, verdict_record
from ..core.step import Step
from ..core.verdict import Action, Verdict
from ..hosts import codex
from ..readers import ReadError, Session, open_stdin, read

__all__ = ["SessionResult", "default_jobs", "replay", "replay_file", "replay_files", "replay_steps", "workers"]

_MAX_SKIPPED = 100  # skipped-line messages kept per session; the rest are counted
# Source refs of the latest counted actions kept while replaying, to name where a
# pattern began (`started_ref`) when it is reported. A streak is reported soon after it
# starts (the default thresholds are a few calls; a churn window is 20 calls), so 4,096
# cover any configuration seen; keeping one ref per action instead held 36 MiB at 300k
# events and 67 MiB at 1.2M. A start further back is reported without its ref.
_REFS_KEPT = 4096


@dataclass
class SessionResult:
    """What replaying one session gave.

    `verdict` is the first stop (a `record.verdict_record` dict plus `started_ref`, the
    `source_ref` of the action where the pattern began), or None. `interventions`
    lists every nudge, block and stop up to and including the first stop (a run
    stopped there would have ended); `interventions_after_stop` counts the rest.
    `refs[i]` is the `source_ref` of counted tool call `i + 1` (the numbering of `at_action` and
    `started_action`; exempt tools are not counted), so callers can map actions to
    steps; kept only when asked for (`keep_refs`), as it grows with the session. `saved` is None without a stop, else `{"actions", "tokens", "cost",
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


def replay(
    session: Session,
    config: Config,
    path: str = "",
    *,
    keep_refs: bool = False,
    make_monitor: Callable[[Config], Monitor] = Monitor,
) -> SessionResult:
    """Feed one session to a fresh monitor and collect the result. Exceptions raised
    by the reader while its events are consumed are caught: the result keeps what was
    replayed and says what went wrong in `error`. Memory does not grow with the
    session: only the latest refs are kept (all of them with `keep_refs`). The monitor
    gets the built-in calibration of the session's format, if loopwatch has one
    (`Config.for_source`); `make_monitor` makes it (`replay_steps` passes one that
    notes every event)."""
    config = config.for_source(session.format)
    if session.format == "codex":  # exec_command, command_execution, Bash: one shell tool
        config = config._replace(tools=codex.shared_tool_rules(config.tools))
    monitor = make_monitor(config)
    recent: deque[str | None] = deque(maxlen=None if keep_refs else _REFS_KEPT)
    started: dict[int, str | None] = {}  # started action -> its ref, noted when reported
    noted = 0  # interventions whose start has been noted
    after_tokens = after_cost = None  # figures carried by events after the stop
    error = None
    try:
        for event in session.events:
            stopped = monitor.stop is not None
            before = monitor.actions
            monitor.observe(event)
            if monitor.actions != before and (keep_refs or not stopped):  # nothing after the stop is reported
                recent.append(event.source_ref)
            if not stopped and len(monitor.interventions) != noted:
                for verdict in monitor.interventions[noted:]:
                    index = verdict.finding.started_index if verdict.finding is not None else 0
                    started.setdefault(index, _recent_ref(recent, monitor.actions, index))
                noted = len(monitor.interventions)
            if stopped and type(event) in (ToolCall, Turn):
                if event.tokens is not None:
                    after_tokens = (after_tokens or 0) + event.tokens
                if event.cost is not None:
                    after_cost = (after_cost or 0.0) + event.cost
    except ReadError as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not end a scan of thousands of files
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
        refs=list(recent) if keep_refs else [],
    )
    if error is None and monitor.events == 0 and session.skipped:
        result.error = f"no readable events ({len(session.skipped)} lines skipped)"
    origin = monitor.first_at or 0.0
    # A run stopped there would have ended: later interventions are only counted.
    kept = monitor.interventions
    if monitor.stop is not None:
        end = next((i for i, v in enumerate(kept) if v is monitor.stop), len(kept) - 1)
        kept = kept[: end + 1]
    result.interventions = [_with_start(verdict_record(v, origin), started) for v in kept]
    result.interventions_after_stop = monitor.interventions_total - len(kept)
    result.findings = [finding_record(f, origin) for f in monitor.strongest.values()]
    result.calibration = monitor.calibration()
    if monitor.stop is not None:
        result.verdict = _with_start(verdict_record(monitor.stop, origin), started)
        result.saved = _saved(result, monitor.stop.index, after_tokens, after_cost)
    return result


def replay_file(
    path: str,
    config: Config,
    format: str | None = None,
    *,
    label: str | None = None,
    keep_refs: bool = False,
    stream: BinaryIO | None = None,
) -> list[SessionResult]:
    """Every session in one file, replayed; `-` is standard input, read as it comes.
    `label` is the path reported in results (default: `path`); `stream`, the file's
    content when it was read elsewhere (a Ray worker gets bytes). Never raises for bad
    input: an unreadable file is one result with `error` set."""
    label = path if label is None else label
    results: list[SessionResult] = []
    try:
        stream = open_stdin() if path == "-" else stream
        for session in read(path, format, stream):
            results.append(replay(session, config, label, keep_refs=keep_refs))
    except ReadError as exc:
        message = str(exc)
        results.append(
            SessionResult(path=label, format=format, error=message, not_transcript=message.startswith("unknown format"))
        )
    except OSError as exc:
        results.append(SessionResult(path=label, format=format, error=f"cannot read: {exc.strerror or exc}"))
    except Exception as exc:  # noqa: BLE001 - see replay(): never end a scan on one bad file
        results.append(SessionResult(path=label, format=format, error=f"reader failed: {type(exc).__name__}: {exc}"))
    if not results:
        results.append(SessionResult(path=label, format=format, error="no session in this file"))
    return results


def replay_steps(
    session: Session, config: Config, path: str = "", *, excerpts: bool = False
) -> tuple[SessionResult, list[dict[str, Any]]]:
    """`replay`, and what happened at each event, in order: one dict per event with
    its `kind` (`call` for a counted tool call, `exempt` for one that is not counted,
    else `text`, `correction`, `retry`, `output`, `turn`, `user`, `attempt`), `step`
    (tool calls counted so far: a call's own number, as `at_action` counts it),
    `after_stop` (the run would have ended before it), `ref` (its `source_ref`), and for
    a counted call its `tool`, `call` (digest of the tool and its identifying input),
    `action` (of the call and its result), `error` and `at` (seconds from the first
    event); `verdict` (`{"action", "signal", "description", "started_action"}`) when the
    event drew a warning, nudge, block or stop up to the first stop. Names, digests,
    counts and times only; with `excerpts`, a call's `input` and `result` too (the
    start of each, as text)."""
    monitors: list[_Noting] = []

    def make(config: Config) -> Monitor:
        monitors.append(_Noting(config, excerpts))
        return monitors[-1]

    result = replay(session, config, path, make_monitor=make)
    return result, monitors[0].noted if monitors else []


_EXCERPT = 600  # characters of a tool input or result kept with --excerpts
_KINDS = {"ToolCall": "call", "ModelText": "text", "UserMessage": "user"}


class _Noting(Monitor):
    """A monitor that notes each event it is fed, for `replay_steps`."""

    def __init__(self, config: Config, excerpts: bool) -> None:
        super().__init__(config)
        self.noted: list[dict[str, Any]] = []
        self._excerpts = excerpts
        self._step: Step | None = None

    def _digest(self, call: ToolCall, rule: Any, at: float) -> Step:
        self._step = super()._digest(call, rule, at)
        return self._step

    def observe(self, event: Any) -> Verdict:
        self._step = None
        stopped = self.stop is not None
        verdict = super().observe(event)
        kind = _KINDS.get(type(event).__name__, type(event).__name__.lower())
        note: dict[str, Any] = {"kind": kind, "step": self.actions, "after_stop": stopped}
        note["ref"] = getattr(event, "source_ref", None)
        step = self._step
        if kind == "call" and step is None:
            note["kind"] = "exempt"
            note["tool"] = event.name
        elif step is not None:
            note.update(
                tool=step.name,
                call=step.call.hex()[:12],
                action=step.action.hex()[:12],
                error=bool(event.error),
                at=round(step.at - (self.first_at or 0.0), 3),
            )
            if self._excerpts:
                note.update(input=_excerpt(event.input), result=_excerpt(event.result))
        if verdict.action is not Action.ALLOW and not stopped:
            note["verdict"] = {
                "action": verdict.action.value,
                "signal": verdict.signal,
                "description": verdict.description,
                "started_action": verdict.finding.started_index if verdict.finding is not None else None,
            }
        self.noted.append(note)
        return verdict


def _excerpt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    else:
        import json

        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def workers(jobs: int | None, files: int) -> int:
    """Processes to replay `files` files with when `jobs` were asked for (None: one per
    core): never more than the cores nor the files (`--jobs 1000` for 4 files forked
    1,000 workers), at least one."""
    return max(1, min(jobs or default_jobs(), default_jobs(), files))


# Files a parallel replay holds at once: admitted in order, given to the workers
# largest first within this window, yielded in order. It bounds what is held (their
# paths, and the results that finished before an earlier file did) whatever the number
# of files (the same peak for 10 and 10,000 files: `bench/scan_memory.py --files
# 10,10000`), and it is wide enough for
# largest-first to work: 1,024 is 64 times the files in hand on 2 cores (2 chunks of 8
# a worker) and 8 times on 8. Sizes in a folder of runs vary by 1000x; the window sees
# many of them.
_WINDOW = 1024


def replay_files(
    items: Iterable[tuple[str, str]], config: Config, format: str | None = None, jobs: int | None = None
) -> Iterator[list[SessionResult]]:
    """Replay many files, each `(path, label)`, yielding each file's results in the
    order given, as soon as they are ready. `jobs` processes at most (see `workers`);
    1, or very few files, replays in this process. Standard input (`-`) is always read
    in this process. `items` is read as the replay goes: at most `_WINDOW` files are
    held at a time, however many there are.

    A worker that dies (the OOM killer, a signal) breaks its pool: the files it and
    the other workers had in hand are reported as errors, and the rest are replayed
    in a fresh pool; the scan never waits for a result that cannot come."""
    jobs = workers(jobs, _WINDOW)
    items = iter(items)
    first = list(islice(items, 4))
    if jobs == 1 or len(first) < 4:  # streamed: one file in hand at a time
        for path, label in chain(first, items):
            yield replay_file(path, config, format, label=label)
        return
    yield from _parallel(chain(first, items), config, format, jobs)


def _parallel(
    items: Iterator[tuple[str, str]], config: Config, format: str | None, jobs: int
) -> Iterator[list[SessionResult]]:
    # Largest files first within the window, so no core is left with a big one at the
    # end; small chunks for the same reason, smaller as the window empties.
    held: dict[int, tuple[str, str]] = {}  # admitted, not yet yielded
    waiting: list[tuple[int, int]] = []  # heap of (-size, index): admitted, not yet given out
    done: dict[int, list[SessionResult]] = {}
    admitted = following = 0

    def admit() -> None:
        nonlocal admitted
        for item in islice(items, following + _WINDOW - admitted):
            held[admitted] = item
            if item[0] != "-":
                heappush(waiting, (-_size(item[0]), admitted))
            admitted += 1

    def ready() -> Iterator[list[SessionResult]]:
        nonlocal following
        while following in held:
            path, label = held[following]
            if following in done:
                results = done.pop(following)
            elif path == "-":
                results = replay_file("-", config, format, label=label)
            else:
                return
            del held[following]
            following += 1
            yield results

    def lost(chunk: list[int]) -> None:
        for index in chunk:
            done[index] = [SessionResult(path=held[index][1], format=format, error=_LOST)]

    # fork is cheapest (no re-import) where it exists; callers start no thread
    # before the pool (scan's progress bar has no refresh thread for this reason).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    admit()
    while following < admitted:
        if not waiting:  # only standard input is left in the window
            yield from ready()
            admit()
            continue
        count = workers(jobs, len(waiting))
        pool = ProcessPoolExecutor(count, mp_context=context, initializer=_init_worker, initargs=(config, format))
        in_hand: dict[Future[list[tuple[int, list[SessionResult]]]], list[int]] = {}
        broken = False
        try:
            while waiting or in_hand:
                while waiting and len(in_hand) < 2 * count:
                    size = max(1, min(8, len(waiting) // (count * 16)))
                    chunk = [heappop(waiting)[1] for _ in range(min(size, len(waiting)))]
                    in_hand[pool.submit(_worker, [(i, held[i]) for i in chunk])] = chunk
                finished, _ = wait(in_hand, return_when=FIRST_COMPLETED)
                for future in finished:
                    chunk = in_hand.pop(future)
                    try:
                        for index, results in future.result():
                            done[index] = results
                    except BrokenProcessPool:
                        broken = True
                        lost(chunk)
                if broken:  # every file still in hand went down with the pool
                    for chunk in in_hand.values():
                        lost(chunk)
                    in_hand.clear()
                    break
                yield from ready()
                admit()
        finally:
            pool.shutdown(wait=not broken, cancel_futures=True)
        yield from ready()
        admit()


_LOST = "a worker process died while reading it (killed by a signal, or out of memory?)"


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


_worker_config: tuple[Config, str | None] | None = None


def _init_worker(config: Config, format: str | None) -> None:
    global _worker_config
    _worker_config = (config, format)


def _worker(jobs: list[tuple[int, tuple[str, str]]]) -> list[tuple[int, list[SessionResult]]]:
    assert _worker_config is not None
    config, format = _worker_config
    return [(index, replay_file(path, config, format, label=label)) for index, (path, label) in jobs]


def _with_start(record: dict[str, Any], started: dict[int, str | None]) -> dict[str, Any]:
    action = record.get("started_action")
    record["started_ref"] = started.get(action) if action else None
    return record


def _recent_ref(recent: deque[str | None], actions: int, action: int) -> str | None:
    """The ref of counted action `action`, when it is among the `recent` ones (the
    last of which is action `actions`)."""
    offset = actions - action
    return recent[len(recent) - 1 - offset] if 0 <= offset < len(recent) else None


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
