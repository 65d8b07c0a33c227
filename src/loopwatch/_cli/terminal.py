"""Where the command line's text meets the terminal: every byte a command writes to
standard output or error passes `loopwatch._encode.visible` here, so text from data
(tool names, file names, session ids, labels, the messages quoting them) never
reaches the terminal raw, whichever way it is printed (`click.echo`, click's own
error messages, `print`, rich).

- `visible_streams()` wraps `sys.stdout` and `sys.stderr` (and their binary
  `.buffer`, where `--json` goes) for the length of a command: what is written is
  made visible on its way through. JSON stays the same JSON: the characters escaped
  can only be inside its strings, and are escaped as JSON escapes them (`\\u202e`).
- `console()` is the rich console the commands print tables with: it writes our
  own styles straight to the real stream, so the data it shows is made visible
  before it is laid out (and markup is off: a `[bold]` in a file name is text).

It does not change what is written to files (`--out`, the report page), nor the
streams of a command that hands them to another program (`run`, `mcp-proxy`).
"""

from __future__ import annotations

import codecs
import io
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, TextIO

from .._encode import visible

__all__ = ["console", "real_stream", "release", "visible_streams"]


class _VisibleText(io.TextIOBase):
    """A text stream whose writes are made visible, then written to `raw`."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        buffer = getattr(raw, "buffer", None)
        self._buffer = _VisibleBytes(buffer) if buffer is not None else None

    @property
    def buffer(self) -> Any:
        if self._buffer is None:
            raise AttributeError("buffer")
        return self._buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only here, as on a real stream
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]  # as above
        return getattr(self.raw, "errors", None) or "strict"

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._buffer is not None:
            self._buffer.flush()  # what went to the binary stream first comes first
        self.raw.write(visible(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:  # type: ignore[override]  # str lines only
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._buffer is not None:
            self._buffer.flush()
        self.raw.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def close(self) -> None:  # the real stream stays open: it is not ours
        _quietly(self.flush)
        super().close()


class _VisibleBytes(io.RawIOBase):
    """The binary side (UTF-8): the same, a character cut between two writes kept
    until the next one."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")

    def write(self, data: Any) -> int:
        blob = bytes(data)
        if blob.isascii() and not _has_controls(blob) and not self._decoder.getstate()[0]:
            self.raw.write(blob)
        else:
            self.raw.write(visible(self._decoder.decode(blob)).encode("utf-8"))
        return len(blob)

    def writelines(self, lines: Iterable[Any]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        rest = self._decoder.decode(b"", final=True)
        if rest:
            self.raw.write(visible(rest).encode("utf-8"))
        self.raw.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def close(self) -> None:
        _quietly(self.flush)
        super().close()


def _quietly(flush: Any) -> None:
    try:
        flush()
    except (OSError, ValueError):  # a stream closed, or a pipe gone: nothing more to write
        pass


_CONTROLS = bytes(c for c in range(32) if c not in (9, 10)) + b"\x7f"


def _has_controls(blob: bytes) -> bool:
    return blob.translate(None, _CONTROLS) != blob


@contextmanager
def visible_streams() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` made visible until the block ends."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _VisibleText(saved[0])
    sys.stderr = _VisibleText(saved[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            _quietly(stream.flush)
        sys.stdout, sys.stderr = saved


def release() -> None:
    """The real streams back, for a command that hands them to another program."""
    sys.stdout = real_stream(sys.stdout)
    sys.stderr = real_stream(sys.stderr)


def real_stream(stream: Any) -> TextIO:
    """The stream under `visible_streams`'s wrapper (the stream itself otherwise)."""
    return stream.raw if isinstance(stream, _VisibleText) else stream


def console(stderr: bool = False, width: int | None = None) -> Any:
    """A rich console on standard output (or error) that shows data as text: markup
    and highlighting off, everything it lays out made visible first."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.text import Text

    class VisibleConsole(Console):
        def render_str(self, text: str, **options: Any) -> Text:
            shown: Text = _visible_text(super().render_str(text, **options))
            return shown

        def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
            if isinstance(renderable, Text):
                renderable = _visible_text(renderable)
            for segment in super().render(renderable, options):
                # anything laid out otherwise: escaped here, never raw
                yield segment if segment.control else Segment(visible(segment.text), segment.style)

    stream = real_stream(sys.stderr if stderr else sys.stdout)
    return VisibleConsole(file=stream, width=width, markup=False, highlight=False, emoji=False)


def _visible_text(text: Any) -> Any:
    """A rich `Text` with its plain text made visible, its styles kept."""
    plain = text.plain
    shown = visible(plain)
    if shown == plain:
        return text
    if not text.spans:
        return text.blank_copy(shown)
    cuts = sorted({i for i, char in enumerate(plain) if visible(char) != char for i in (i, i + 1)})
    out = text.blank_copy()
    for piece in text.divide(cuts):
        if visible(piece.plain) != piece.plain:
            styles = [span.style for span in piece.spans]
            piece = piece.blank_copy(visible(piece.plain))
            for style in styles:
                piece.stylize(style)
        out.append_text(piece)
    return out
