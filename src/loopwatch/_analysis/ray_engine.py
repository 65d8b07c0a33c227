"""Replaying files on a Ray cluster: `loopwatch scan --engine ray [--address ADDR]`.

    for results in replay_files_ray(items, config, address="auto"):
        ...

The same contract as `replay.replay_files`: each file's results, in the order given, as
soon as they are ready, and the same records (each file goes through the same
`replay_file`, on a worker, which reads it at its path: the files must be at the same
path on every node, a shared or copied folder, as for `evaluate`; a relative path is
taken from the driver's working directory). The files go out in chunks of up to
`_CHUNK` paths, one Ray task each (plain tasks, not Ray Data: a dataset's planning,
path resolution and scheduling loop cost the driver ~0.2 ms a file, more than the rest
together); each task's results come back as one JSON array (`encode_json`), decoded
in one call. The driver's work per file is a few dict and list operations and the
`SessionResult`s it gives back; per task, about a millisecond.

At most `_AHEAD` tasks a CPU of the cluster are out, and `_WINDOW` items (more on a
cluster of over 16 CPUs: twice what its tasks hold, so that they stay full) are read
ahead and not yet given back: what the driver holds is bounded whatever the number of
files. A path given twice within the window is replayed once. Nothing is
dropped: a task whose worker died is retried by Ray (`_RETRIES` times); a task that
fails all the same (a worker lost past those retries, a task that raised) is sent
again whole, then in halves, and a file that fails alone is reported as an error with
the cause. A file that cannot be read is reported as the local scan reports it.
Standard input (`-`) is replayed in this process, in its turn.

Ray is imported when this runs (the `loopwatch[ray]` extra).

A Ray that loopwatch starts (no `address`) listens on the loopback interface only
(127.0.0.1: its GCS, raylet, agents and workers), so nothing of a local scan is
reachable from the network; so does this driver when it joins a cluster by a loopback
address. Joining a cluster has a deadline: the address must accept a connection within
`CONNECT_SECONDS` (an address where nothing listens is refused at once, without a
join), and Ray must answer within `JOIN_SECONDS` in all. Ray retries an address it
cannot reach for many minutes, in calls that no signal interrupts, so the join runs in
a thread of its own while this one waits: Ctrl-C or SIGTERM end the wait
(`RayInterrupted`). A join given up is abandoned, not cancelled (Ray has no way to
cancel one): its thread ends when Ray gives up.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from types import FrameType
from typing import Any

from .._core.config import Config
from .._encode import decode_json, encode_json
from .evaluation import Case, Replayed, replay_case
from .replay import SessionResult, replay_file

__all__ = ["RayInterrupted", "RayUnavailable", "connect", "replay_cases_ray", "replay_files_ray", "start_local"]

# Items read ahead and not yet given back, at least: what the driver holds (their labels,
# and the results that arrive before an earlier item's, a few KB each).
_WINDOW = 8192
# Files replayed by one Ray task, at most. Each task costs the driver about a millisecond
# (sending it, waiting for it, taking its results in), so a session's share of it is
# small next to a session's ~5 ms on a worker; fewer when few files are left.
_CHUNK = 128
_AHEAD = 2  # tasks out per CPU of the cluster: one running, one waiting to start
_RETRIES = 3  # times Ray runs a task again after its worker died


#: Where a Ray that loopwatch starts listens: this machine only.
LOOPBACK = "127.0.0.1"
#: Seconds for a cluster's address to accept a connection when joining it.
CONNECT_SECONDS = 5.0
#: Seconds for the whole join: the connection, then Ray's own handshake (a second or two
#: on a healthy cluster).
JOIN_SECONDS = 60.0
_SLICE = 0.25  # seconds: the longest a signal waits to be handled while joining


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached; the message says which."""


class RayInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM (`signum`) while waiting for a cluster to answer."""

    def __init__(self, signum: int, address: str) -> None:
        super().__init__(f"interrupted while connecting to Ray at {address}")
        self.signum = signum


def connect(address: str | None = None, *, timeout: float = JOIN_SECONDS) -> None:
    """Start Ray here (no `address`, or `local`), or join the cluster at `address`
    within `timeout` seconds; once per process."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--engine ray needs Ray: pip install 'loopwatch[ray]'") from None
    if ray.is_initialized():
        return
    if address in (None, "local"):
        try:
            start_local()
        except Exception as exc:  # noqa: BLE001 - any failure to start is one message
            raise RayUnavailable(f"cannot start Ray: {_cause(exc)}") from None
        return
    assert address is not None
    _join(address, timeout)


def start_local(num_cpus: int | None = None) -> None:
    """Start a Ray on this machine for this process, listening on the loopback interface
    only. Ray's own errors are raised as they are."""
    import ray

    with _on_loopback():
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            dashboard_host=LOOPBACK,
            log_to_driver=False,
            configure_logging=False,
            _node_ip_address=LOOPBACK,
        )


@contextmanager
def _on_loopback() -> Iterator[None]:
    """While Ray starts or joins: its address for this node is the loopback one. Ray
    takes `127.0.0.1` given as the node's address for "the machine's network address"
    unless it runs as a single machine (as on macOS and Windows by default), and the
    servers it starts listen on every interface unless the node's address is loopback."""
    try:
        import ray._private.ray_constants as constants

        saved = constants.ENABLE_RAY_CLUSTER
    except (ImportError, AttributeError):
        raise RayUnavailable(
            "this version of Ray offers no way to keep its servers on the loopback interface; "
            "join a cluster with --address instead"
        ) from None
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = saved


def _host_port(address: str) -> tuple[str, int] | None:
    """`host:port` (or `ray://host:port`, `[v6]:port`) as a pair; None for `auto` or
    anything else Ray resolves itself."""
    host, _, port = address.rpartition("://")[2].rpartition(":")
    host = host.strip("[]")
    return (host, int(port)) if host and port.isdigit() else None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _reach(host: str, port: int) -> None:
    """Open (and close) a connection to the address, or raise RayUnavailable saying why."""
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except ConnectionRefusedError:
        raise RayUnavailable("connection refused") from None
    except socket.gaierror:
        raise RayUnavailable(f"no such host: {host}") from None
    except TimeoutError:
        raise RayUnavailable(f"nothing answered within {CONNECT_SECONDS:g} s") from None
    except OSError as exc:
        raise RayUnavailable(exc.strerror or str(exc)) from None


class _SigtermHandlerNotSet(logging.Filter):
    """Ray warns, joining from a thread other than the main one, that it set no SIGTERM
    handler: the wait for it handles SIGTERM instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


def _join(address: str, timeout: float) -> None:
    """Join the cluster at `address` (see the module's doc); RayUnavailable or
    RayInterrupted otherwise."""
    import ray

    target = _host_port(address)
    outcome: list[BaseException | None] = []
    reached, done = threading.Event(), threading.Event()

    def join() -> None:
        # Ray's threads are started from this one and keep its mask: Ctrl-C and SIGTERM
        # then reach the waiting thread, whose wait they interrupt, and never a Ray thread.
        if hasattr(signal, "pthread_sigmask"):  # POSIX
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            if target is not None:
                _reach(*target)
                reached.set()
            with _on_loopback() if target is not None and _is_loopback(target[0]) else nullcontext():
                ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which says what it was
            outcome.append(exc)
        finally:
            done.set()

    logger = logging.getLogger("ray._private.worker")
    if not any(isinstance(f, _SigtermHandlerNotSet) for f in logger.filters):
        logger.addFilter(_SigtermHandlerNotSet())
    with _signals_interrupt(address):
        threading.Thread(target=join, name="loopwatch-ray-join", daemon=True).start()
        deadline = time.monotonic() + timeout
        # In slices: a signal another thread took is handled at the end of the slice.
        while not (answered := done.wait(min(_SLICE, max(0.0, deadline - time.monotonic())))):
            if time.monotonic() >= deadline:
                break
    if not answered:
        if target is not None and not reached.is_set():
            why = f"nothing answered within {timeout:g} s"
        else:
            accepted = "it accepted the connection, but " if target is not None else ""
            why = f"{accepted}no Ray answered within {timeout:g} s"
        raise RayUnavailable(f"cannot reach Ray at {address}: {why}")
    error = outcome[0]
    if isinstance(error, RayUnavailable):
        raise RayUnavailable(f"cannot reach Ray at {address}: {error}") from None
    if error is not None:
        raise RayUnavailable(f"cannot reach Ray at {address}: {_cause(error)}") from None


@contextmanager
def _signals_interrupt(address: str) -> Iterator[None]:
    """Ctrl-C and SIGTERM raise RayInterrupted in the waiting thread (SIGTERM's handler
    is ours only for the wait, and only where a handler can be set: the main thread)."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise RayInterrupted(signum, address)

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, interrupt) if main else None
    try:
        yield
    except RayInterrupted:
        raise
    except KeyboardInterrupt:
        raise RayInterrupted(signal.SIGINT, address) from None
    finally:
        if main:  # a handler set outside Python reads as None: the default is what is left
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def replay_files_ray(
    items: Iterable[tuple[str, str]], config: Config, format: str | None = None, address: str | None = None
) -> Iterator[list[SessionResult]]:
    """Replay many files, each `(path, label)`, on Ray; see the module's doc."""
    connect(address)
    import ray

    scan = _Scan(ray, config, format, _cpus(ray))
    try:
        yield from scan.run(iter(items))
    finally:
        scan.cancel()


def _cpus(ray: Any) -> int:
    """The cluster's CPUs, as Ray counts them now."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class _File:
    """One path of the window, however many of its items ask for it (a file given twice
    is replayed once); `records` once its results are back."""

    __slots__ = ("path", "records", "uses")

    def __init__(self, path: str) -> None:
        self.path, self.uses = path, 0
        self.records: list[dict[str, Any]] | None = None


class _Chunk:
    """Files replayed by one Ray task; `again`: it is a failed chunk's second try, or a half
    of one (a failure then splits it)."""

    __slots__ = ("again", "files")

    def __init__(self, files: list[_File], again: bool = False) -> None:
        self.files, self.again = files, again


def _ready(file: _File | None) -> bool:
    """Whether an item can be given back: standard input (replayed here, then), or a
    file whose results are back."""
    return file is None or file.records is not None


class _Scan:
    """The driver's side of `replay_files_ray`: items read ahead (a window of them not yet
    given back), their distinct paths sent to the workers a chunk a task (at most
    `_AHEAD` tasks a CPU out), results given back in order."""

    def __init__(self, ray: Any, config: Config, format: str | None, cpus: int) -> None:
        self._ray, self._config, self._format = ray, config, format
        self._cpus, self._in_flight = cpus, _AHEAD * cpus
        self._window = max(_WINDOW, 2 * self._in_flight * _CHUNK)  # full chunks while the tasks out hold half
        self._remote = ray.remote(max_retries=_RETRIES)(_replay_chunk)
        self._config_ref = ray.put(config)  # sent once, not once a task
        self._cwd = os.getcwd()  # the workers join relative paths to it: none is resolved here
        self._running: dict[Any, _Chunk] = {}

    def run(self, items: Iterator[tuple[str, str]]) -> Iterator[list[SessionResult]]:
        held: deque[tuple[str, _File | None]] = deque()  # (label, its file; None: standard input)
        files: dict[str, _File] = {}  # the window's distinct paths
        waiting: deque[_File] = deque()  # not yet sent
        again: deque[_Chunk] = deque()  # failed: sent again first
        more = True
        while True:
            while more and len(held) < self._window:
                try:
                    path, label = next(items)
                except StopIteration:
                    more = False
                    break
                file = None
                if path != "-":
                    file = files.get(path)
                    if file is None:
                        file = files[path] = _File(path)
                        waiting.append(file)
                    file.uses += 1
                held.append((label, file))
            while len(self._running) < self._in_flight and (again or waiting):
                if again:
                    self._send(again.popleft())
                    continue
                if more:  # full chunks; a smaller one only for a CPU that would wait for it
                    if len(waiting) < _CHUNK and len(self._running) >= self._cpus:
                        break
                    size = _CHUNK
                else:  # the last files: a CPU's share of them, so that the workers end together
                    size = min(_CHUNK, -(-len(waiting) // self._cpus))
                self._send(_Chunk([waiting.popleft() for _ in range(min(size, len(waiting)))]))
            while held and _ready(held[0][1]):
                label, file = held.popleft()
                if file is None:
                    yield replay_file("-", self._config, self._format, label=label)
                    continue
                assert file.records is not None
                file.uses -= 1
                if not file.uses and files.get(file.path) is file:
                    del files[file.path]
                yield [SessionResult(path=label, **record) for record in file.records]
            if not self._running:
                if not held and not more:
                    return
                continue  # standard input next, or more to read
            self._take(again)

    def _send(self, chunk: _Chunk) -> None:
        paths = [file.path for file in chunk.files]
        self._running[self._remote.remote(self._cwd, paths, self._config_ref, self._format)] = chunk

    def _take(self, again: deque[_Chunk]) -> None:
        """Wait for a task to end, and take its results in; a failed one is sent again,
        whole the first time, then in halves, and a file that fails alone is reported."""
        (ref,), _ = self._ray.wait(list(self._running), num_returns=1)
        chunk = self._running.pop(ref)
        try:
            data, by_orjson = self._ray.get(ref)
            for file, records in zip(chunk.files, decode_json(data, by_orjson), strict=True):
                file.records = records
        except Exception as exc:  # noqa: BLE001 - a lost worker or a task that raised: retried, then reported
            if not chunk.again:
                again.append(_Chunk(chunk.files, again=True))
            elif len(chunk.files) > 1:
                half = (len(chunk.files) + 1) // 2
                again.extend(_Chunk(part, again=True) for part in (chunk.files[:half], chunk.files[half:]))
            else:
                chunk.files[0].records = [{"format": self._format, "error": f"lost on Ray: {_cause(exc)}"}]

    def cancel(self) -> None:
        """Cancel the tasks still out (a scan ended early: Ctrl-C, an output error)."""
        for ref in self._running:
            try:
                self._ray.cancel(ref)
            except Exception:  # noqa: BLE001, S110 - Ray may be gone already; nothing is left to cancel then
                pass
        self._running.clear()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The line of a traceback that names the exception: `RuntimeError: ...`, `ray.exceptions.WorkerCrashedError: ...`.
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)\b.*$", re.MULTILINE)


def _cause(exc: BaseException) -> str:
    """What went wrong, in one line. A task's error reaches the driver wrapped (a
    `RayTaskError` whose first line names only the task, in colour); the first line
    of its text that names an exception is the cause."""
    text = _ANSI.sub("", str(exc)).strip()
    if raised := _RAISED.search(text):
        return raised.group(0).strip()[:300]
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def _replay_chunk(cwd: str, paths: list[str], config: Config, format: str | None) -> tuple[bytes, bool]:
    """On a worker: each file's results, read and replayed here (`replay_file`, as the
    local scan does), as one JSON array of record lists (`encode_json`) without their
    paths, which the driver knows."""
    replayed = []
    for path in paths:
        records = [asdict(result) for result in replay_file(os.path.join(cwd, path), config, format)]
        for record in records:
            del record["path"]
        replayed.append(records)
    return encode_json(replayed)


# `loopwatch evaluate --engine ray`: each case under every configuration is one Ray task
# (the grid's settings are many, the files few and read where they are: the corpus must be
# at the same path on every node, a shared or copied folder). At most `_IN_FLIGHT` tasks
# a CPU are out at once; Ray retries a task whose worker died (`_RETRIES`), and a case
# lost past that is reported as an error.
_IN_FLIGHT = 4


def replay_cases_ray(
    cases: list[Case],
    corpus: str,
    configs: list[Config],
    progress: Any = None,
    address: str | None = None,
    format: str | None = None,
) -> list[Replayed]:
    """`evaluation.replay_cases` on Ray: the same `Replayed` per case, in order."""
    connect(address)
    import ray

    remote = ray.remote(max_retries=_RETRIES)(replay_case)
    configs_ref = ray.put(configs)  # sent once, not once a case
    cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]  # Ray leaves it unannotated
    limit = max(1, int(cpus) * _IN_FLIGHT)
    results: list[Replayed] = []
    refs: list[Any] = []
    for case in cases:
        refs.append(remote.remote(case, corpus, configs_ref, format))
        if len(refs) - len(results) >= limit:
            results.append(_get(refs[len(results)], cases[len(results)], progress))
    while len(results) < len(refs):
        results.append(_get(refs[len(results)], cases[len(results)], progress))
    return results


def _get(ref: Any, case: Case, progress: Any) -> Replayed:
    import ray

    try:
        result: Replayed = ray.get(ref)
    except Exception as exc:  # noqa: BLE001 - a worker lost past Ray's retries: the case is reported, not dropped
        result = Replayed(case, error=f"lost on Ray: {_cause(exc)}")
    if progress:
        progress(1)
    return result
