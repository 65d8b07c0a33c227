"""Scan results as data: one row per session, in JSON Lines or Parquet, written as the scan goes.

    with open_results("results.parquet") as out:
        for results in replay_files(items, config):
            out.write(results)

A row is the `scan --json` record (`SessionResult.as_json`). In JSON Lines it is that
object, one per line. In Parquet the flat fields are typed columns and the nested ones
(`verdict`, `interventions`, `findings`, `calibration`, `saved`) are JSON text, so a
reader needs no schema of loopwatch's to load them (`json.loads`, DuckDB's
`json_extract`); `skipped` is a list of strings. `COLUMNS` names them in order.

Values are written by `loopwatch._encode`: a token total past 64 bits is exact in JSON
Lines (null in Parquet's int64 column, exact in `saved`), and a name that is not UTF-8
is `\xff` in a Parquet string column.

Nothing is held but one row group (`rows_per_group` sessions, 1,024 by default): memory
stays flat whatever the number of sessions. pyarrow is needed for Parquet only and is
imported when a Parquet file is opened (the `loopwatch[parquet]` extra). The file is
written by `loopwatch._safefile`: private to the user (0600), never through a link nor
over a file the scan reads, and complete or absent (an interrupted scan leaves none).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from types import TracebackType
from typing import Any, BinaryIO, Self

from .. import _safefile as safefile
from .._encode import json_bytes, text
from .._safefile import Output
from .replay import SessionResult

__all__ = [
    "COLUMNS",
    "OutputError",
    "ResultWriter",
    "check_results",
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
    """The results file cannot be written (its kind, a missing extra, a link or an input
    in its place, the disk); the message says why, in one line naming the file."""


def record_line(result: SessionResult) -> bytes:
    """One record as a JSON line, by `loopwatch._encode`: no file's record (a token
    total past 64 bits, a name that is not UTF-8) can end the scan."""
    return json_bytes(result.as_json()) + b"\n"


class ResultWriter:
    """Rows to a results file; `write` takes one file's results. The file is complete
    or absent (`loopwatch._safefile`): rows go to a temporary file beside it, put in
    place by `close()`; `discard()` (or an exception out of the `with` block: an error,
    Ctrl-C, SIGTERM) removes it and leaves an older file as it was. An `OSError`
    (a full disk, a file-size limit) is raised as `OutputError`."""

    def __init__(self, path: str, output: Output, rows_per_group: int) -> None:
        self.path, self.rows = path, 0
        self._output, self._per_group = output, max(1, rows_per_group)
        self._stream: BinaryIO = output.stream

    @property
    def partial(self) -> str:
        """Where the rows are written until the file is complete."""
        return str(self._output._temporary)

    def write(self, results: Iterable[SessionResult]) -> None:
        try:
            self._write(results)
        except OSError as exc:
            raise self._failed(exc) from None

    def _write(self, results: Iterable[SessionResult]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        try:
            self._finish()
            self._output.commit()
        except OSError as exc:
            self.discard()
            raise self._failed(exc) from None
        except BaseException:
            self.discard()
            raise

    def _finish(self) -> None:
        """Write what ends the file (a Parquet footer)."""

    def discard(self) -> None:
        self._output.discard()

    def _failed(self, exc: OSError) -> OutputError:
        self.discard()
        return OutputError(f"{self.path}: cannot write: {exc.strerror or exc}")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()


class _JsonLines(ResultWriter):
    def _write(self, results: Iterable[SessionResult]) -> None:
        for result in results:
            self._stream.write(record_line(result))
            self.rows += 1


class _Parquet(ResultWriter):
    def __init__(self, path: str, output: Output, rows_per_group: int) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        super().__init__(path, output, rows_per_group)
        types = {
            "string": pa.string(),
            "int64": pa.int64(),
            "float64": pa.float64(),
            "list<string>": pa.list_(pa.string()),
        }
        self._schema = pa.schema([(name, types[kind.removesuffix(" (JSON)")]) for name, kind in COLUMNS])
        self._table = pa.Table.from_pydict
        self._writer = pq.ParquetWriter(self._stream, self._schema)
        self._held: dict[str, list[Any]] = {name: [] for name, _ in COLUMNS}
        self._count = 0

    def _write(self, results: Iterable[SessionResult]) -> None:
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

    def _finish(self) -> None:
        self._flush()
        self._writer.close()

    def discard(self) -> None:
        super().discard()
        # The footer is never written: ParquetWriter would write it when collected.
        self._writer.is_open = False


def _cell(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _NESTED:
        return json_bytes(value).decode()
    if name == "tokens" and not _INT64[0] <= value <= _INT64[1]:
        return None  # past int64: the JSON Lines output keeps it exactly
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list):
        return [text(v) if isinstance(v, str) else v for v in value]
    return value


_KINDS: dict[str, type[ResultWriter]] = {".jsonl": _JsonLines, ".parquet": _Parquet}


def check_results(path: str, inputs: Iterable[str] = ()) -> type[ResultWriter]:
    """The writer for `path`, its kind from the extension (`.jsonl` or `.parquet`), once
    `path` is known to be writable as one (see `open_results`); nothing is created."""
    kind = _KINDS.get(os.path.splitext(path)[1].lower())
    if kind is None:
        raise OutputError(f"{path}: a results file ends in .jsonl or .parquet")
    if kind is _Parquet:
        try:
            import pyarrow.parquet  # noqa: F401 - checked before the file is created
        except ImportError:
            raise OutputError("Parquet output needs pyarrow: pip install 'loopwatch[parquet]'") from None
    try:
        safefile.check(path, inputs=inputs)
    except safefile.UnsafeWrite as exc:
        raise OutputError(str(exc)) from None
    return kind


def open_results(path: str, rows_per_group: int = 1024, inputs: Iterable[str] = ()) -> ResultWriter:
    """A writer for `path`. Raises OutputError, before anything is created, when the
    kind is unknown, pyarrow is missing, or `path` is a link, not a regular file or
    one of `inputs` (the files the scan reads); and when the file cannot be created."""
    kind = check_results(path, inputs)
    try:
        output = safefile.Output(path, inputs=inputs)
    except safefile.UnsafeWrite as exc:
        raise OutputError(str(exc)) from None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        return kind(path, output, rows_per_group)
    except OSError as exc:
        output.discard()
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        output.discard()
        raise
