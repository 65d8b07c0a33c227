"""Moving the child's output: read each pipe as data arrives, write it through as is.

One thread and a selector: a read is taken from whichever pipe has data, so a child
that fills its stderr while we wait on its stdout never deadlocks. Bytes are written
through unchanged (colours, CRs, partial lines and all) before anyone looks at them.
A sink that closes (our stdout piped into `head`) stops being written to, and the
pipes written through to it are listed in `broken`: the supervisor closes them, so the
child meets the closed pipe at its next write, as it would without loopwatch between.
"""

from __future__ import annotations

import os
import selectors
from dataclasses import dataclass, field

__all__ = ["Chunk", "Pump"]

READ_SIZE = 64 * 1024


@dataclass
class Chunk:
    stream: str  # "stdout" or "stderr"
    data: bytes  # b"" when the pipe closed


@dataclass
class _Source:
    stream: str
    sink: int
    bytes: int = 0


@dataclass
class Pump:
    """`sources` maps a pipe's fd to (stream name, fd to write it through to).
    `wakeup` is an fd that only wakes `wait` (the signal wakeup pipe); it is drained."""

    sources: dict[int, tuple[str, int]]
    wakeup: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    _dead_sinks: set[int] = field(default_factory=set)
    _line_start: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._open: dict[int, _Source] = {}
        for fd, (stream, sink) in self.sources.items():
            self._open[fd] = _Source(stream, sink)
            self.counts[stream] = 0
            self._selector.register(fd, selectors.EVENT_READ)
        if self.wakeup is not None:
            self._selector.register(self.wakeup, selectors.EVENT_READ)

    @property
    def open(self) -> bool:
        """Some pipe of the child is still open."""
        return bool(self._open)

    def wait(self, timeout: float | None) -> list[Chunk]:
        """Wait at most `timeout` seconds for data; read and write through what came."""
        chunks = []
        for key, _ in self._selector.select(timeout):
            fd = key.fd
            if fd == self.wakeup:
                _drain(fd)
                continue
            source = self._open[fd]
            try:
                data = os.read(fd, READ_SIZE)
            except OSError:
                data = b""
            if not data:
                self._selector.unregister(fd)
                del self._open[fd]
            else:
                source.bytes += len(data)
                self.counts[source.stream] += len(data)
                self.write(source.sink, data)
            chunks.append(Chunk(source.stream, data))
        return chunks

    @property
    def broken(self) -> list[int]:
        """The pipes still open whose sink has closed."""
        return [fd for fd, source in self._open.items() if source.sink in self._dead_sinks]

    def drop(self, fd: int) -> None:
        """Stop reading pipe `fd` (its owner closes it)."""
        if self._open.pop(fd, None) is not None:
            self._selector.unregister(fd)

    def write(self, sink: int, data: bytes) -> None:
        """Write all of `data` to `sink`, unless the sink has closed."""
        if sink in self._dead_sinks or not data:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(sink, view) :]
        except OSError:  # EPIPE and friends: the reader went away
            self._dead_sinks.add(sink)
            return
        self._line_start[sink] = data[-1:] in (b"\n", b"\r")

    def at_line_start(self, sink: int) -> bool:
        """Did the last write to `sink` end a line? (So our own messages start one.)"""
        return self._line_start.get(sink, True)

    def close(self) -> None:
        self._selector.close()


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass
