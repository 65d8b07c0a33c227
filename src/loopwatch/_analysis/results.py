"""Scan results as data: one row per session, in JSON Lines or Parquet, written as the scan goes.

    with open_results("results.parquet") as out:
        for results in replay_files(items, config):
            out.write(results)

A row is the `scan --json` record (`SessionResult.as_json`). In JSON Lines it is that
object, one per line. In Parquet the flat fields are typed columns and the nested ones
(`verdict`, `interventions`, `findings`, `calibration`, `saved`) are JSON text, so a
reader needs no schema of loopwatch's to load them (`json.loads`, DuckDB's
`json_extract`); `skipped` is a list of strings. `COLUMNS` names them in order.

Nothing is held but one row group (`rows_per_group` sessions, 1,024 by default): memory
stays flat whatever the number of sessions. pyarrow is needed for Parquet only and is
imported when a Parquet file is opened (the `loopwatch[parquet]` extra). Files are
created private to the user (0600).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from types import TracebackType
from typing import Any, BinaryIO, Self

from .replay import SessionResult

__all__ = [
    "COLUMNS",
    "OutputError",
    "ResultWriter",
    "decode_json",
    "encode_json",
    "json_bytes",
    "open_results",
    "record_line",
]

#: Parquet columns, in order, with their Arrow types.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("path", "string"),
    ("format", "string"),
    ("session", "string"),
    ("actions", "int64"),
    ("verdict", "string (JSON)"),
    ("interventions", "string (JSON)"),
    ("interventions_after_stop", "int64"),
    ("findings", "string (JSON)"),
    ("calibration", "string (JSON)"),
    ("saved", "string (JSON)"),
    ("tokens", "int64"),
    ("cost", "float64"),
    ("outcome", "string"),
    ("skipped", "list<string>"),
    ("error", "string"),
)
_NESTED = frozenset(name for name, kind in COLUMNS if kind.endswith("(JSON)"))
_INT64 = (-(2**63), 2**63 - 1)


class OutputError(ValueError):
    """The results file cannot be written (its kind, a missing extra, the disk); the message says why."""


def record_line(result: SessionResult) -> bytes:
    """One record as a JSON line. orjson refuses integers past 64 bits (a file's token
    totals can be anything): such a record goes through the standard library, which
    writes them exactly (and escapes a lone surrogate orjson refuses too), so no
    file's record can end the scan."""
    return json_bytes(result.as_json()) + b"\n"


def json_bytes(value: Any) -> bytes:
    """`value` as compact JSON, whatever its integers (see `record_line`)."""
    return encode_json(value)[0]


def encode_json(value: Any) -> tuple[bytes, bool]:
    """`json_bytes(value)`, and whether orjson wrote it: then `decode_json` may read it
    back with orjson, else only the standard library reads it exactly (orjson reads an
    integer past 64 bits as a float, and refuses an escaped lone surrogate)."""
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS), True
    except TypeError:
        return json.dumps(value, separators=(",", ":"), default=str).encode(), False  # ASCII: lone surrogates escaped


def decode_json(data: bytes, by_orjson: bool) -> Any:
    """What `encode_json` wrote, read back exactly (orjson is the faster reader)."""
    if by_orjson:
        import orjson

        return orjson.loads(data)
    return json.loads(data)


class ResultWriter:
    """Rows to a results file; `write` takes one file's results. Close it (or use it
    as a context manager) to finish the file: a Parquet file is unreadable until then."""

    def __init__(self, path: str, stream: BinaryIO, rows_per_group: int) -> None:
        self.path, self.rows = path, 0
        self._stream, self._per_group = stream, max(1, rows_per_group)

    def write(self, results: Iterable[SessionResult]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class _JsonLines(ResultWriter):
    def write(self, results: Iterable[SessionResult]) -> None:
        for result in results:
            self._stream.write(record_line(result))
            self.rows += 1


class _Parquet(ResultWriter):
    def __init__(self, path: str, stream: BinaryIO, rows_per_group: int) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        super().__init__(path, stream, rows_per_group)
        types = {
            "string": pa.string(),
            "int64": pa.int64(),
            "float64": pa.float64(),
            "list<string>": pa.list_(pa.string()),
        }
        self._schema = pa.schema([(name, types[kind.removesuffix(" (JSON)")]) for name, kind in COLUMNS])
        self._table = pa.Table.from_pydict
        self._writer = pq.ParquetWriter(stream, self._schema)
        self._held: dict[str, list[Any]] = {name: [] for name, _ in COLUMNS}
        self._count = 0

    def write(self, results: Iterable[SessionResult]) -> None:
        for result in results:
            for name, value in result.as_json().items():
                self._held[name].append(_cell(name, value))
            self._count += 1
            self.rows += 1
            if self._count >= self._per_group:
                self._flush()

    def _flush(self) -> None:
        if self._count:
            self._writer.write_table(self._table(self._held, schema=self._schema))
            self._stream.flush()  # each group on disk as it is done
            for column in self._held.values():
                column.clear()
            self._count = 0

    def close(self) -> None:
        try:
            self._flush()
            self._writer.close()
        finally:
            super().close()


def _cell(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _NESTED:
        return json_bytes(value).decode()
    if name == "tokens" and not _INT64[0] <= value <= _INT64[1]:
        return None  # past int64: the JSON Lines output keeps it exactly
    return value


_KINDS = {".jsonl": _JsonLines, ".parquet": _Parquet}


def open_results(path: str, rows_per_group: int = 1024) -> ResultWriter:
    """A writer for `path`, its kind from the extension (`.jsonl` or `.parquet`).
    Raises OutputError, before anything is created, when the kind is unknown or
    pyarrow is missing; and when the file cannot be created."""
    kind = _KINDS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise OutputError(f"{path}: a results file ends in .jsonl or .parquet")
    if kind is _Parquet:
        try:
            import pyarrow.parquet  # noqa: F401 - checked before the file is created
        except ImportError:
            raise OutputError("Parquet output needs pyarrow: pip install 'loopwatch[parquet]'") from None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    stream = os.fdopen(fd, "wb")
    try:
        return kind(path, stream, rows_per_group)
    except BaseException:
        stream.close()
        raise
