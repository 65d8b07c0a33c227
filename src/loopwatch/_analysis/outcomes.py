"""Outcomes: which recorded sessions solved their task.

A stop on a session that solved its task ended successful work, the worst thing
loopwatch can do; a stop on one that failed may have saved its cost. `load_outcomes`
reads what the harnesses write, and `Outcomes.lookup` finds the outcome of a session
file:

- a TSV with a header: a `resolved` column (`yes`/`no`, `true`/`false`, `1`/`0`;
  `no_empty_patch`, `no (reward 0.0)` count as no; `unknown` as unknown) and a column
  naming the session: `local_path`, `path` or `file` (a path relative to the TSV, as in the
  corpus' `MANIFEST.tsv`), else `session`, `instance_id` or `task_id`;
- JSON: an object `{session: resolved}`, or a list of objects with `session`,
  `path`, `instance_id` or `task_id` and `resolved` or `is_resolved`;
- SWE-bench style results (`{"resolved": [ids], "unresolved_ids": [...], ...}`,
  `resolved_ids`, `empty_patch_ids`, `error_ids`; ids in none of the lists are unknown);
- Terminal-Bench `results.json`: one trial's (`is_resolved` at the top: it applies to
  the session files in its folder) or a run's (`results: [{trial_name, task_id,
  is_resolved}]`);
- a folder: every `results.json` and `report.json` under it.

Ids are matched against a session file's name without its extensions
(`django__django-11099.traj.json` -> `django__django-11099`) and the names of the
folders above it, within the folder of the outcomes file (a run's results name
instances that other runs share). Paths are matched relative to the file that lists
them. This module knows nothing of the command line.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from .._files import read_file

__all__ = ["OutcomeError", "Outcomes", "load_groups", "load_outcomes", "parse_resolved"]

_ID_COLUMNS = ("session", "instance_id", "task_id", "trial_name", "id")
_PATH_COLUMNS = ("local_path", "path", "file")  # file: the console recordings' MANIFEST.tsv
_RESOLVED_LISTS = ("resolved", "resolved_ids")
_FAILED_LISTS = ("unresolved", "unresolved_ids", "empty_patch_ids", "error_ids", "no_generation")
_EXTENSIONS = (".traj.json", ".traj", ".jsonl", ".json", ".log", ".cast", ".txt")


class OutcomeError(ValueError):
    """An outcomes file that cannot be read: the message says which and why."""


def parse_resolved(value: Any) -> bool | None:
    """`yes`/`no` and their kin as True/False; anything else (unknown, empty) None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value > 0
    text = str(value or "").strip().lower()
    if text in ("yes", "true", "1", "resolved", "pass", "passed", "success"):
        return True
    if text in ("no", "false", "0", "unresolved", "fail", "failed") or text.startswith(("no_", "no ")):
        return False
    return None


class Outcomes:
    """Session outcomes by path, by folder and by id (see the module docstring)."""

    def __init__(self) -> None:
        self.by_path: dict[str, bool] = {}
        self.by_folder: dict[str, bool] = {}
        self.by_id: list[tuple[str, dict[str, bool]]] = []  # (scope folder, id -> resolved)
        self.sources: list[str] = []

    def __len__(self) -> int:
        return len(self.by_path) + len(self.by_folder) + sum(len(ids) for _, ids in self.by_id)

    def paths(self) -> list[str]:
        """The session files listed by path (absolute), in the order read."""
        return list(self.by_path)

    def lookup(self, path: str) -> bool | None:
        """The outcome of the session in file `path`, or None when unknown."""
        path = _norm(path)
        if path in self.by_path:
            return self.by_path[path]
        folder = os.path.dirname(path)
        names = _names(path)
        found: tuple[int, bool] | None = None
        for scope, ids in self.by_id:
            if not _under(path, scope):
                continue
            for name in names:
                if name in ids and (found is None or len(scope) > found[0]):
                    found = (len(scope), ids[name])
                    break
        if found is not None:
            return found[1]
        while True:
            if folder in self.by_folder:
                return self.by_folder[folder]
            parent = os.path.dirname(folder)
            if parent == folder:
                return None
            folder = parent

    def merge(self, other: Outcomes) -> None:
        self.by_path.update(other.by_path)
        self.by_folder.update(other.by_folder)
        self.by_id.extend(other.by_id)
        self.sources.extend(other.sources)


def load_outcomes(paths: Iterable[str]) -> Outcomes:
    """Read outcomes files and folders (see the module docstring). Raises
    `OutcomeError` for one that cannot be read or holds no outcome."""
    outcomes = Outcomes()
    for path in paths:
        if os.path.isdir(path):
            found = 0
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name in ("results.json", "report.json"):
                        try:
                            outcomes.merge(_load_file(os.path.join(root, name)))
                            found += 1
                        except OutcomeError:
                            continue  # a results.json of another kind: not an outcome file
            if not found:
                raise OutcomeError(f"{path}: no results.json or report.json with outcomes under this folder")
        else:
            outcomes.merge(_load_file(path))
    return outcomes


def load_groups(paths: Iterable[str], column: str) -> dict[str, str]:
    """Each session's value of `column` (absolute path -> value) in the TSV files among
    `paths` that list sessions by path and have that column (the corpus' MANIFEST.tsv
    has `agent` and `model`); folders and JSON files are passed over. Raises
    `OutcomeError` when none of them has the column."""
    groups: dict[str, str] = {}
    seen: list[str] = []
    found = False
    for path in paths:
        if os.path.isdir(path):
            continue
        text = _read(path)
        if text.lstrip()[:1] in ("{", "["):
            continue
        fields, rows = _tsv(text)
        seen += [f for f in fields if f not in seen]
        key = next((c for c in _PATH_COLUMNS if c in fields), None)
        if column not in fields or key is None:
            continue
        found = True
        folder = _norm(os.path.dirname(os.path.abspath(path)))
        for row in rows:
            where, value = (row.get(key) or "").strip(), (row.get(column) or "").strip()
            if where and value:
                groups[_norm(os.path.join(folder, where))] = value
    if not found:
        listed = ", ".join(seen[:12]) or "none"
        raise OutcomeError(f"no TSV given lists sessions by path with a {column!r} column (columns seen: {listed})")
    return groups


def _read(path: str) -> str:
    try:
        return read_file(path).decode("utf-8", "replace")
    except OSError as exc:
        raise OutcomeError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _tsv(text: str) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """A tab-separated text's column names and its rows, names stripped."""
    reader = csv.DictReader(text.splitlines(), delimiter="\t")
    fields = [f.strip() for f in reader.fieldnames or ()]
    return fields, ({(k or "").strip(): v for k, v in row.items()} for row in reader)


def _load_file(path: str) -> Outcomes:
    text = _read(path)
    folder = _norm(os.path.dirname(os.path.abspath(path)))
    result = Outcomes()
    result.sources.append(path)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        data = _lenient_json(text, path)
        _from_json(data, folder, result, path)
    else:
        _from_tsv(text, folder, result, path)
    if not len(result):
        raise OutcomeError(
            f"{path}: no session outcome found (expected a resolved column, resolved lists or is_resolved)"
        )
    return result


def _lenient_json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    import re  # CodeR's results.json has trailing commas

    try:
        return json.loads(re.sub(r",(\s*[\]}])", r"\1", text))
    except ValueError as exc:
        raise OutcomeError(f"{path}: not valid JSON: {exc}") from None


def _from_tsv(text: str, folder: str, result: Outcomes, path: str) -> None:
    fields, rows = _tsv(text)
    if "resolved" not in fields and "is_resolved" not in fields:
        raise OutcomeError(f"{path}: no resolved column in the header")
    key_path = next((c for c in _PATH_COLUMNS if c in fields), None)
    key_id = next((c for c in _ID_COLUMNS if c in fields), None)
    if key_path is None and key_id is None:
        raise OutcomeError(f"{path}: no column naming the session ({', '.join(_PATH_COLUMNS + _ID_COLUMNS)})")
    ids: dict[str, bool] = {}
    for row in rows:
        value = parse_resolved(row.get("resolved", row.get("is_resolved")))
        if value is None:
            continue
        if key_path is not None and (row.get(key_path) or "").strip():
            result.by_path[_norm(os.path.join(folder, row[key_path].strip()))] = value
        elif key_id is not None and (row.get(key_id) or "").strip():
            ids[row[key_id].strip()] = value
    if ids:
        result.by_id.append((folder, ids))


def _from_json(data: Any, folder: str, result: Outcomes, path: str) -> None:
    if isinstance(data, dict) and "is_resolved" in data and not isinstance(data.get("results"), list):
        value = parse_resolved(data.get("is_resolved"))  # one Terminal-Bench trial: its folder
        if value is not None:
            result.by_folder[folder] = value
        return
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]  # a Terminal-Bench run: one entry per trial
    ids: dict[str, bool] = {}
    if isinstance(data, list):
        for item in data:
            if not isinstance(item, dict):
                continue
            value = parse_resolved(item.get("resolved", item.get("is_resolved")))
            if value is None:
                continue
            where = next((item[c] for c in _PATH_COLUMNS if isinstance(item.get(c), str)), None)
            if where:
                result.by_path[_norm(os.path.join(folder, where))] = value
            for column in _ID_COLUMNS:
                if isinstance(item.get(column), str):
                    ids[item[column]] = value
    elif isinstance(data, dict):
        lists = [k for k in _RESOLVED_LISTS + _FAILED_LISTS if isinstance(data.get(k), list)]
        if lists:
            for key in _FAILED_LISTS:
                for item in data.get(key) or ():
                    if isinstance(item, str):
                        ids[item] = False
            for key in _RESOLVED_LISTS:
                for item in data.get(key) or ():
                    if isinstance(item, str):
                        ids[item] = True
        else:
            for key, value in data.items():
                if isinstance(value, dict):  # {id: {"resolved": true, ...}} (SWE-bench reports)
                    value = value.get("resolved", value.get("is_resolved"))
                resolved = parse_resolved(value) if isinstance(value, (bool, int, float, str)) else None
                if resolved is not None:
                    ids[str(key)] = resolved
    else:
        raise OutcomeError(f"{path}: expected a JSON object or list")
    if ids:
        result.by_id.append((folder, ids))


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _names(path: str) -> list[str]:
    """The ids a session file may go by: its name without extensions, then the names
    of the folders above it (a trial folder, an instance folder)."""
    base = os.path.basename(path)
    stem = base
    for ext in _EXTENSIONS:
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    names = [stem, base]
    folder = os.path.dirname(path)
    for _ in range(3):
        name = os.path.basename(folder)
        if not name:
            break
        names.append(name)
        folder = os.path.dirname(folder)
    return names
