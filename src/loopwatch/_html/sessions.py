"""The report's data: each session replayed as `scan` replays it, with what happened
at each step, its label and outcome where given, as one plain JSON-ready dict.

Names, digests, counts and times only, as in `scan --json`; a tool's input and result
only when excerpts are asked for. Calls are lists, not dicts (`CALL_FIELDS`), so a page
of thousands of sessions stays small.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from .._analysis.evaluation import Label
from .._analysis.outcomes import Outcomes
from .._analysis.pool import LOST, default_jobs, in_order
from .._analysis.replay import SessionResult, replay_steps
from .._core.config import Config

__all__ = ["CALL_FIELDS", "Sources", "collect", "error_row", "session_rows"]

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
) -> list[dict[str, Any]]:
    """Every session of every file `(path, label)`, in order, as `session_rows` makes
    them; `jobs` processes (default one per core)."""
    items = list(items)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if any(path == "-" for path, _ in items):  # standard input: every file here, in order
        jobs = 1
    rows: list[dict[str, Any]] = []
    work = partial(_rows, config=config, sources=sources, format=format, excerpts=excerpts)
    for found in in_order(work, items, jobs, lost=lambda item: [_lost(item, sources)]):
        rows += found
        if progress:
            progress(1)
    return rows


def _rows(
    item: tuple[str, str], config: Config, sources: Sources, format: str | None, excerpts: bool
) -> list[dict[str, Any]]:
    return session_rows(item[0], item[1], config, sources, format, excerpts)


def _lost(item: tuple[str, str], sources: Sources) -> dict[str, Any]:
    row = _row(SessionResult(path=item[1], error=LOST), [], {}, item[0], sources)
    row["multi"] = False
    return row


def session_rows(
    path: str, label: str, config: Config, sources: Sources, format: str | None = None, excerpts: bool = False
) -> list[dict[str, Any]]:
    """The sessions of one file, replayed; a file that cannot be read is one row with
    `error` set, as in `scan`."""
    from .._readers import ReadError, open_stdin, read

    rows: list[dict[str, Any]] = []
    try:
        stream = open_stdin() if path == "-" else None
        for session in read(path, format, stream):
            result, notes = replay_steps(session, config, label, excerpts=excerpts)
            rows.append(_row(result, notes, session.meta.get("step_of") or {}, path, sources))
    except ReadError as exc:
        rows.append(_row(SessionResult(path=label, format=format, error=str(exc)), [], {}, path, sources))
    except OSError as exc:
        rows.append(_row(SessionResult(path=label, error=f"cannot read: {exc.strerror or exc}"), [], {}, path, sources))
    except Exception as exc:  # noqa: BLE001 - as in scan: one bad file must not end a report of thousands
        error = f"reader failed: {type(exc).__name__}: {exc}"
        rows.append(_row(SessionResult(path=label, format=format, error=error), [], {}, path, sources))
    if not rows:
        rows.append(
            _row(SessionResult(path=label, format=format, error="no session in this file"), [], {}, path, sources)
        )
    for row in rows:
        row["multi"] = len(rows) > 1  # the table then names the session beside the file
    return rows


def _row(
    result: SessionResult, notes: list[dict[str, Any]], step_of: dict[str, int], path: str, sources: Sources
) -> dict[str, Any]:
    record = result.as_json()
    verdict = record["verdict"]
    first = verdict or (record["interventions"][0] if record["interventions"] else None)
    shown = "stop" if verdict else ("nudge" if record["interventions"] else "none")
    saved = record["saved"] or {}
    label = sources.label(path)
    outcome = sources.outcome(path)
    if not step_of:  # formats without their own step numbers: tool calls, counted (as `evaluate` does)
        refs = dict.fromkeys(n["ref"] for n in notes if n["kind"] in ("call", "exempt") and n["ref"])
        step_of = {ref: number for number, ref in enumerate(refs, start=1)}
    stop_step = _step(verdict, step_of)
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
    row.update(_timeline(notes))
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


def _timeline(notes: list[dict[str, Any]]) -> dict[str, Any]:
    """Calls as lists (`CALL_FIELDS`), a repeated result marked (the same call gave the
    same result before); everything else as `[kind, step, count]`, a run of one kind
    between two calls counted once."""
    calls: list[list[Any]] = []
    others: list[list[Any]] = []
    seen: set[str] = set()
    for note in notes:
        if note["kind"] == "call":
            repeat = note["action"] in seen
            seen.add(note["action"])
            call = [note["step"], note["tool"], note["call"], repeat, note["error"], note["at"], note["ref"]]
            call.append(note["after_stop"])
            if "input" in note:
                call += [note["input"], note["result"]]
            calls.append(call)
            continue
        kind = note["kind"]
        if kind == "exempt":
            kind = "exempt:" + note["tool"]
        if others and others[-1][0] == kind and others[-1][1] == note["step"]:
            others[-1][2] += 1
        else:
            others.append([kind, note["step"], 1])
    return {"calls": calls, "others": others}


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def error_row(label: str, problem: str) -> dict[str, Any]:
    """The row of a file that could not be read at all (missing, not a regular file)."""
    row = _row(SessionResult(path=label, error=problem), [], {}, label, Sources())
    row["multi"] = False
    return row
