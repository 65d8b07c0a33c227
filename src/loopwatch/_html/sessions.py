"""The report's data: each session replayed as `scan` replays it, with what happened
at each step, its label and outcome where given, as one plain JSON-ready dict.

Names, digests, counts and times only, as in `scan --json`; a tool's input and result
only when excerpts are asked for. Calls are lists, not dicts (`CALL_FIELDS`), so a page
of thousands of sessions stays small.

A session's timeline (`calls`, `others`) grows with the session: given a `spool`
folder, it is written as it is replayed to private scratch files there (`Spooled`,
JSON already made safe for the page), which the page's writer copies in and removes;
nothing of it is held, whatever the session's length. Without one, it is a list.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, BinaryIO

from .._analysis.evaluation import Label
from .._analysis.outcomes import Outcomes
from .._analysis.pool import LOST, default_jobs, in_order
from .._analysis.replay import SessionResult, replay_steps
from .._core.config import Config
from .page import Spooled, script_json

__all__ = ["CALL_FIELDS", "Sources", "Spooled", "collect", "error_row", "session_rows"]

#: The fields of one call in a session's `calls` list, in order.
CALL_FIELDS = ("step", "tool", "call", "repeat", "error", "at", "ref", "after_stop", "input", "result")


class Sources:
    """What is known about sessions from outside them: hand labels, outcomes, and the
    agent and model columns of a TSV that lists sessions by path (the corpus'
    MANIFEST.tsv), each by absolute path."""

    def __init__(
        self,
        labels: Iterable[Label] | None = None,
        folder: str = ".",
        outcomes: Outcomes | None = None,
        columns: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """`folder`: the one the labels' paths are relative to (`evaluate`'s corpus)."""
        self.labels = {_norm(os.path.join(folder, label.path)): label for label in labels or ()}
        self.has_labels = labels is not None
        self.outcomes = outcomes
        self.columns = columns or {}

    def label(self, path: str) -> Label | None:
        return self.labels.get(_norm(path))

    def outcome(self, path: str) -> bool | None:
        return self.outcomes.lookup(path) if self.outcomes is not None else None

    def column(self, name: str, path: str) -> str | None:
        return self.columns.get(name, {}).get(_norm(path))


def collect(
    items: Iterable[tuple[str, str]],
    config: Config,
    sources: Sources,
    *,
    format: str | None = None,
    excerpts: bool = False,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    spool: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Every session of every file `(path, label)`, in order, as `session_rows` makes
    them, one file's at a time as they are ready; `jobs` processes (default one per
    core)."""
    items = list(items)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if any(path == "-" for path, _ in items):  # standard input: every file here, in order
        jobs = 1
    work = partial(_rows, config=config, sources=sources, format=format, excerpts=excerpts, spool=spool)
    for found in in_order(work, items, jobs, lost=lambda item: [_lost(item, sources)]):
        yield from found
        if progress:
            progress(1)


def _rows(
    item: tuple[str, str], config: Config, sources: Sources, format: str | None, excerpts: bool, spool: str | None
) -> list[dict[str, Any]]:
    return session_rows(item[0], item[1], config, sources, format, excerpts, spool)


def _lost(item: tuple[str, str], sources: Sources) -> dict[str, Any]:
    row = _row(SessionResult(path=item[1], error=LOST), _Timeline(None), {}, item[0], sources)
    row["multi"] = False
    return row


def session_rows(
    path: str,
    label: str,
    config: Config,
    sources: Sources,
    format: str | None = None,
    excerpts: bool = False,
    spool: str | None = None,
) -> list[dict[str, Any]]:
    """The sessions of one file, replayed; a file that cannot be read is one row with
    `error` set, as in `scan`. With `spool`, each timeline goes to scratch files there
    (see the module docstring)."""
    from .._readers import ReadError, open_stdin, read

    rows: list[dict[str, Any]] = []

    def failed(result: SessionResult) -> None:
        rows.append(_row(result, _Timeline(None), {}, path, sources))

    try:
        stream = open_stdin() if path == "-" else None
        for session in read(path, format, stream):
            timeline = _Timeline(spool)
            try:
                result, _ = replay_steps(session, config, label, excerpts=excerpts, on_note=timeline.add)
            except BaseException:
                timeline.discard()
                raise
            rows.append(_row(result, timeline, session.meta.get("step_of") or {}, path, sources))
    except ReadError as exc:
        failed(SessionResult(path=label, format=format, error=str(exc)))
    except OSError as exc:
        failed(SessionResult(path=label, error=f"cannot read: {exc.strerror or exc}"))
    except Exception as exc:  # noqa: BLE001 - as in scan: one bad file must not end a report of thousands
        failed(SessionResult(path=label, format=format, error=f"reader failed: {type(exc).__name__}: {exc}"))
    if not rows:
        failed(SessionResult(path=label, format=format, error="no session in this file"))
    for row in rows:
        row["multi"] = len(rows) > 1  # the table then names the session beside the file
    return rows


def _row(
    result: SessionResult, timeline: _Timeline, step_of: dict[str, int], path: str, sources: Sources
) -> dict[str, Any]:
    record = result.as_json()
    verdict = record["verdict"]
    first = verdict or (record["interventions"][0] if record["interventions"] else None)
    shown = "stop" if verdict else ("nudge" if record["interventions"] else "none")
    saved = record["saved"] or {}
    label = sources.label(path)
    outcome = sources.outcome(path)
    stop_step = _step(verdict, step_of or timeline.step_of)
    row: dict[str, Any] = {
        "id": result.session,
        "path": result.path,
        "format": result.format,
        "agent": sources.column("agent", path),
        "model": sources.column("model", path),
        "actions": result.actions,
        "verdict": shown,
        "blocked": any(i["action"] == "block" for i in record["interventions"]),
        "signal": first["signal"] if first else None,
        "description": first["description"] if first else None,
        "onset": first.get("started_action") if first else None,
        "onset_ref": first.get("started_ref") if first else None,
        "stop": verdict["at_action"] if verdict else None,
        "stop_ref": verdict["source_ref"] if verdict else None,
        "waste": saved.get("actions") if verdict else None,
        "tokens_saved": saved.get("tokens"),
        "cost_saved": saved.get("cost"),
        "estimated": bool(saved.get("estimated")),
        "tokens": result.tokens,
        "cost": result.cost,
        "outcome": None if outcome is None else ("succeeded" if outcome else "failed"),
        "label": label.label if label else None,
        "label_onset": label.onset if label else None,
        "label_end": label.end if label else None,
        "stop_step": stop_step,
        "judgement": _judgement(label, stop_step),
        "error": result.error,
        "calibration": record["calibration"],
        "interventions": [
            [i["action"], i["at_action"], i.get("started_action"), i["signal"], i["description"], i["source_ref"]]
            for i in record["interventions"]
        ],
    }
    row.update(timeline.close())
    return row


def _step(verdict: dict[str, Any] | None, step_of: dict[str, int]) -> int | None:
    """A stop's step in the format's own numbering (as labels count), as `evaluate` finds it."""
    if verdict is None:
        return None
    return step_of.get(verdict["source_ref"] or "") or max(1, verdict["at_action"])


def _judgement(label: Label | None, stop_step: int | None) -> str | None:
    """What the first stop was, against the hand label (`evaluation.score`'s rules)."""
    if label is None:
        return None
    if label.label == "no":
        return "false stop" if stop_step is not None else "healthy"
    if label.label == "brief":
        return "stop on brief" if stop_step is not None else "brief"
    if stop_step is None:
        return "missed"
    assert label.onset is not None
    return "early stop" if stop_step < label.onset else "caught"


class _Timeline:
    """A session's calls as lists (`CALL_FIELDS`), a repeated result marked (the same
    call gave the same result before); everything else as `[kind, step, count]`, a run
    of one kind between two calls counted once. Taken a note at a time (`add`), to a
    list or, with a `spool` folder, to scratch files there.

    What it keeps as it goes: the results seen (one integer each, for the repeat
    marks) and, for formats without their own step numbers, the calls counted so far
    and the step of each note that drew an intervention (`step_of`: where a stop is,
    as `evaluate` numbers steps: tool calls, a source position shared by consecutive
    calls counted once)."""

    def __init__(self, spool: str | None) -> None:
        self._calls = _Array(spool)
        self._others = _Array(spool)
        self._seen: set[int] = set()
        self._last_other: list[Any] | None = None  # the run being counted, not written yet
        self._counted = 0
        self._last_ref: object = None
        self.step_of: dict[str, int] = {}

    def add(self, note: dict[str, Any]) -> None:
        kind, ref = note["kind"], note["ref"]
        if kind in ("call", "exempt") and ref and ref != self._last_ref:
            self._counted += 1
            self._last_ref = ref
        if "verdict" in note and ref and kind in ("call", "exempt"):
            self.step_of.setdefault(ref, self._counted)
        if kind == "call":
            self._flush_other()
            action = int(note["action"], 16)
            repeat = action in self._seen
            self._seen.add(action)
            call = [note["step"], note["tool"], note["call"], repeat, note["error"], note["at"], ref]
            call.append(note["after_stop"])
            if "input" in note:
                call += [note["input"], note["result"]]
            self._calls.add(call)
            return
        if kind == "exempt":
            kind = "exempt:" + note["tool"]
        last = self._last_other
        if last is not None and last[0] == kind and last[1] == note["step"]:
            last[2] += 1
        else:
            self._flush_other()
            self._last_other = [kind, note["step"], 1]

    def _flush_other(self) -> None:
        if self._last_other is not None:
            self._others.add(self._last_other)
            self._last_other = None

    def close(self) -> dict[str, Any]:
        """`{"calls": ..., "others": ...}`, each a list or `Spooled`."""
        self._flush_other()
        self._seen = set()
        return {"calls": self._calls.close(), "others": self._others.close()}

    def discard(self) -> None:
        self._calls.discard()
        self._others.discard()


class _Array:
    """Items to a list, or as a JSON array to a scratch file in `spool`."""

    def __init__(self, spool: str | None) -> None:
        self._spool = spool
        self._items: list[Any] = []
        self._file: BinaryIO | None = None
        self._path: str | None = None

    def add(self, item: Any) -> None:
        if self._spool is None:
            self._items.append(item)
            return
        if self._file is None:
            from .. import _safefile

            self._file, path = _safefile.scratch(self._spool, "loopwatch-report-")
            self._path = str(path)
            self._file.write(b"[")
        else:
            self._file.write(b",")
        self._file.write(script_json(item).encode("utf-8"))

    def close(self) -> list[Any] | Spooled:
        if self._file is None or self._path is None:
            return self._items
        self._file.write(b"]")
        self._file.close()
        self._file = None
        return Spooled(self._path)

    def discard(self) -> None:
        if self._file is not None and self._path is not None:
            self._file.close()
            self._file = None
            os.unlink(self._path)


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def error_row(label: str, problem: str) -> dict[str, Any]:
    """The row of a file that could not be read at all (missing, not a regular file)."""
    row = _row(SessionResult(path=label, error=problem), _Timeline(None), {}, label, Sources())
    row["multi"] = False
    return row
