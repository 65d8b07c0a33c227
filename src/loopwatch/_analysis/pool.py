"""Local parallel work, in one place: `in_order` runs a function over many items on a
pool of processes and gives the results back in the order of the items.

    for results in in_order(partial(replay_file, config=config), paths, jobs, lost=...):
        ...

Used by `scan`, `evaluate`, `calibrate` and the report (Ray has its own engine,
`ray_engine`, calling the same replay functions). What it promises, whatever the number
of items:

- results in the order given, each as soon as it and those before it are done;
- the items are read as the work goes: at most `_WINDOW` are held at a time (their
  results included), the same peak for 10 and 10,000 files;
- within that window the largest items go first (`size`), in small chunks, smaller as
  the window empties, so no core is left with a big one at the end;
- a worker that dies (the OOM killer, a signal) breaks its pool: the items it and the
  other workers had in hand are given `lost(item)`, the rest are done in a fresh pool;
  the caller never waits for a result that cannot come;
- at most one process per core, and never more than the items (`workers`); with one
  job, or fewer than 4 items, everything runs in this process, one item at a time.

`work` is handed to the workers once, when the pool starts (fork where it exists: no
re-import, nothing pickled), not with every item.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from heapq import heappop, heappush
from itertools import chain, islice
from typing import Any, TypeVar

__all__ = ["LOST", "default_jobs", "file_size", "in_order", "workers"]

T = TypeVar("T")
R = TypeVar("R")

#: What an item whose worker died is reported with.
LOST = "a worker process died while reading it (killed by a signal, or out of memory?)"

# Items held at once: admitted in order, given to the workers largest first within this
# window, yielded in order. 1,024 is 64 times the items in hand on 2 cores (2 chunks of 8
# a worker) and 8 times on 8: wide enough for largest-first to work (sizes in a folder
# of runs vary by 1000x), and it bounds what is held whatever the number of items.
_WINDOW = 1024


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def workers(jobs: int | None, items: int) -> int:
    """Processes for `items` items when `jobs` were asked for (None: one per core):
    never more than the cores nor the items (`--jobs 1000` for 4 files forked 1,000
    workers), at least one."""
    return max(1, min(jobs or default_jobs(), default_jobs(), items))


def file_size(path: str) -> int:
    """A file's size, 0 when it cannot be told (it is then read, and fails, in turn)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def in_order(
    work: Callable[[T], R],
    items: Iterable[T],
    jobs: int | None,
    *,
    lost: Callable[[T], R],
    size: Callable[[T], int] = lambda item: 0,
    here: Callable[[T], bool] = lambda item: False,
) -> Iterator[R]:
    """`work(item)` for each item, in order, on at most `jobs` processes (see the
    module's doc). Items for which `here(item)` is true (standard input) are done in
    this process, in their turn."""
    jobs = workers(jobs, _WINDOW)
    items = iter(items)
    first = list(islice(items, 4))
    if jobs == 1 or len(first) < 4:  # one item in hand at a time
        for item in chain(first, items):
            yield work(item)
        return
    yield from _parallel(work, chain(first, items), jobs, lost, size, here)


def _parallel(
    work: Callable[[T], R],
    items: Iterator[T],
    jobs: int,
    lost: Callable[[T], R],
    size: Callable[[T], int],
    here: Callable[[T], bool],
) -> Iterator[R]:
    held: dict[int, T] = {}  # admitted, not yet yielded
    waiting: list[tuple[int, int]] = []  # heap of (-size, index): admitted, not yet given out
    done: dict[int, R] = {}
    admitted = following = 0

    def admit() -> None:
        nonlocal admitted
        for item in islice(items, following + _WINDOW - admitted):
            held[admitted] = item
            if not here(item):
                heappush(waiting, (-size(item), admitted))
            admitted += 1

    def ready() -> Iterator[R]:
        nonlocal following
        while following in held:
            item = held[following]
            if following in done:
                result = done.pop(following)
            elif here(item):
                result = work(item)
            else:
                return
            del held[following]
            following += 1
            yield result

    def gone(chunk: list[int]) -> None:
        for index in chunk:
            done[index] = lost(held[index])

    # fork is cheapest (no re-import) where it exists; callers start no thread
    # before the pool (scan's progress bar has no refresh thread for this reason).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    admit()
    while following < admitted:
        if not waiting:  # only items done here are left in the window
            yield from ready()
            admit()
            continue
        count = workers(jobs, len(waiting))
        pool = ProcessPoolExecutor(count, mp_context=context, initializer=_install, initargs=(work,))
        in_hand: dict[Future[list[tuple[int, Any]]], list[int]] = {}
        broken = False
        try:
            while waiting or in_hand:
                while waiting and len(in_hand) < 2 * count:
                    chunk_size = max(1, min(8, len(waiting) // (count * 16)))
                    chunk = [heappop(waiting)[1] for _ in range(min(chunk_size, len(waiting)))]
                    in_hand[pool.submit(_run, [(i, held[i]) for i in chunk])] = chunk
                finished, _ = wait(in_hand, return_when=FIRST_COMPLETED)
                for future in finished:
                    chunk = in_hand.pop(future)
                    try:
                        for index, result in future.result():
                            done[index] = result
                    except BrokenProcessPool:
                        broken = True
                        gone(chunk)
                if broken:  # every item still in hand went down with the pool
                    for chunk in in_hand.values():
                        gone(chunk)
                    in_hand.clear()
                    break
                yield from ready()
                admit()
        finally:
            pool.shutdown(wait=not broken, cancel_futures=True)
        yield from ready()
        admit()


_work: Callable[[Any], Any] | None = None  # in a worker: what it does to each item


def _install(work: Callable[[Any], Any]) -> None:
    global _work
    _work = work


def _run(chunk: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    assert _work is not None
    return [(index, _work(item)) for index, item in chunk]
