"""Replaying files on a Ray cluster: `loopwatch scan --engine ray [--address ADDR]`.

    for results in replay_files_ray(items, config, address="auto"):
        ...

The same contract as `replay.replay_files`: each file's results, in the order given, as
soon as they are ready, and the same verdicts (each file goes through the same
`replay_file`, on a worker, from its bytes). Files are read by Ray Data as binary files
with their paths (`read_binary_files(include_paths=True)`: the readers, not Arrow, make
sense of them, so mixed formats and schemas are no problem) and replayed in
`map_batches`; the results come back as JSON, one row per file, and the driver takes
them in a block at a time (Arrow columns, no dict a row).

A window of `_WINDOW` files is one Ray dataset, so what the driver holds is bounded
whatever the number of files. Nothing is dropped: a task whose worker died is retried
by Ray (`_RETRIES` times, not Ray Data's default of for ever: a file that kills its
worker every time would hang the scan); when a window fails all the same (a worker lost
past those retries, a task that raised, a file Ray cannot read), the files whose results
did not come back are tried again together, then in halves, and a file that fails alone
is reported as an error with the cause. Standard input (`-`) is replayed in this process.

Ray is imported when this runs (the `loopwatch[ray]` extra: `ray[data]` and pyarrow).

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

import importlib
import io
import ipaddress
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from functools import partial
from itertools import islice
from types import FrameType
from typing import Any

from .._core.config import Config
from .._encode import decode_json, encode_json
from .._readers import HEAD_SIZE
from .evaluation import Case, Replayed, replay_case
from .replay import SessionResult, replay_file

__all__ = ["RayInterrupted", "RayUnavailable", "connect", "replay_cases_ray", "replay_files_ray", "start_local"]

# Files in one Ray dataset. A dataset costs seconds to plan and start (about 10 s on a busy
# 2-core machine, BENCHMARKS.md "Scan, scale and Ray"), so windows are wide; the driver holds their paths
# and the results that arrive before an earlier file's (a few KB each).
_WINDOW = 8192
_BATCH = 64  # files replayed in one `map_batches` call (a Ray task costs ~10 ms of scheduling; a session ~10 ms)
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
        import ray.data
    except ImportError:
        raise RayUnavailable("--engine ray needs Ray Data: pip install 'loopwatch[ray]'") from None
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its progress lines would bury the scan's output
    ray.data.DataContext.get_current().enable_progress_bars = False
    _fail_fsspec_http_fast()
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


def _fail_fsspec_http_fast() -> None:
    """Ray Data asks of every path it resolves whether its filesystem is fsspec's HTTP one,
    by importing `fsspec.implementations.http`. Without aiohttp that import fails, and a
    failed import runs the module again each time: 0.1-0.3 ms a path, most of the driver's
    CPU a file. Marking the module missing makes each later import fail at once, with the
    same `ModuleNotFoundError` Ray expects."""
    name = "fsspec.implementations.http"
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "known missing", as the import system reads it


def replay_files_ray(
    items: Iterable[tuple[str, str]], config: Config, format: str | None = None, address: str | None = None
) -> Iterator[list[SessionResult]]:
    """Replay many files, each `(path, label)`, on Ray; see the module's doc."""
    connect(address)
    items = iter(items)
    while window := list(islice(items, _WINDOW)):
        done: dict[int, list[SessionResult]] = {}
        local = [i for i, (path, _) in enumerate(window) if path == "-"]
        remote = [i for i in range(len(window)) if i not in local]
        if _run(window, remote, config, format, done) is not None:
            _retry([i for i in remote if i not in done], window, config, format, done)
        for index, (path, label) in enumerate(window):
            yield done.pop(index) if index not in local else replay_file(path, config, format, label=label)


def _retry(
    indices: list[int], window: list[tuple[str, str]], config: Config, format: str | None, done: dict[int, Any]
) -> None:
    """Replay again the files of a failed dataset: together (a lost worker is mostly a
    passing fault), then in halves, so that one bad file costs a few datasets, not one
    per file; a file that fails alone is reported as an error."""
    failure = _run(window, indices, config, format, done)
    left = [i for i in indices if i not in done]
    if failure is None or not left:
        return
    if len(indices) == 1:
        (index,) = indices
        done[index] = [SessionResult(path=window[index][1], format=format, error=f"lost on Ray: {failure}")]
        return
    half = (len(left) + 1) // 2
    for part in (left[:half], left[half:]):
        if part:
            _retry(part, window, config, format, done)


def _run(
    window: list[tuple[str, str]], indices: list[int], config: Config, format: str | None, done: dict[int, Any]
) -> str | None:
    """Replay `window[i]` for `i` in `indices` as one dataset, filling `done`; the
    failure, as text, if the dataset failed (what arrived before it is kept)."""
    if not indices:
        return None
    import ray.data

    by_path: dict[str, list[int]] = {}
    for index in indices:
        by_path.setdefault(os.path.abspath(window[index][0]), []).append(index)  # workers have their own cwd
    paths = list(by_path)
    try:
        dataset = ray.data.read_binary_files(
            paths, include_paths=True, ignore_missing_paths=False, override_num_blocks=max(1, len(paths) // _BATCH)
        )
        replay = partial(_replay_batch, config=config, format=format)
        # `max_retries` has no named parameter yet (Ray 2.60 warns that the catch-all goes in 2.64).
        replayed = dataset.map_batches(replay, batch_size=_BATCH, batch_format="pyarrow", max_retries=_RETRIES)
        blocks: Iterable[Any] = replayed.iter_batches(batch_size=None, batch_format="pyarrow")  # no dict a row
        for batch in blocks:
            columns = (batch.column(name).to_pylist() for name in ("path", "results", "by_orjson"))
            for path, data, by_orjson in zip(*columns, strict=True):
                records = decode_json(data, by_orjson)
                for index in _take(by_path, path):
                    done[index] = [_result(r, window[index][1]) for r in records]
    except Exception as exc:  # noqa: BLE001 - a lost worker or an unreadable file: retried, then reported
        return _cause(exc)
    missing = [i for i in indices if i not in done]
    return f"no result came back for {len(missing)} file(s)" if missing else None


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


def _take(by_path: dict[str, list[int]], path: str) -> list[int]:
    """The indices waiting for `path`, all of them: a file given twice is read once (Ray may
    give its path without a leading `/` or with a scheme)."""
    for key in (path, "/" + path, path.removeprefix("local://"), path.removeprefix("file://")):
        if by_path.get(key):
            return by_path.pop(key)
    return []


def _result(record: dict[str, Any], label: str) -> SessionResult:
    return SessionResult(**{**record, "path": label})


def _replay_batch(batch: Any, config: Config, format: str | None) -> dict[str, list[Any]]:
    """On a worker: a batch of `{bytes, path}` rows to `{path, results, by_orjson}`, the
    results as JSON (`encode_json`)."""
    paths = batch.column("path").to_pylist()
    contents = batch.column("bytes").to_pylist()
    out: list[bytes] = []
    by_orjson: list[bool] = []
    for path, data in zip(paths, contents, strict=True):
        stream = io.BufferedReader(io.BytesIO(data), buffer_size=HEAD_SIZE)
        results = replay_file(path, config, format, stream=stream)
        text, fast = encode_json([asdict(r) for r in results])
        out.append(text)
        by_orjson.append(fast)
    return {"path": paths, "results": out, "by_orjson": by_orjson}


# `loopwatch evaluate --engine ray`: each case under every configuration is one Ray task
# (the grid's settings are many, the files few and read where they are: the corpus must be
# at the same path on every node, a shared or copied folder). At most `_IN_FLIGHT` tasks
# a CPU are out at once; Ray retries a task whose worker died (`_RETRIES`), and a case
# lost past that is reported as an error.
_IN_FLIGHT = 4


def replay_cases_ray(
    cases: list[Case], corpus: str, configs: list[Config], progress: Any = None, address: str | None = None
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
        refs.append(remote.remote(case, corpus, configs_ref))
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
