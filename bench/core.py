"""Benchmark of the loopwatch core: the whole Monitor against the bare digest cost.

    PYTHONPATH=src python bench/core.py                 # 1,000,000 events (a few minutes)
    PYTHONPATH=src python bench/core.py --events 50000  # a quick run

What it measures, on one long mixed stream (tool calls with realistic inputs and
results of 100 B to 8 KB, some repeated, some in cycles, some failing with moving
counters; model text, some streamed; output lines; turns, retries, corrections and
pre-dispatch attempts):

1. events per second through `Monitor.observe` (every signal on, default config);
2. events per second for the bare cost any detector must pay: canonical JSON
   (`orjson.dumps` with sorted keys) and an 8-byte BLAKE2b digest of the same inputs
   and results (of the text, for text and output events);
3. the ratio of the two (target: the monitor at most 3x the bare digest cost);
4. peak traced memory (tracemalloc) of the monitor after 10,000 events and after all
   events (target: flat).

Events are built before any timing: a pool of `--pool` distinct events (counters and
file names vary across it) is cycled through. The pool is larger than the stagnation
signal's memory, so a second pass through it looks new to the monitor as a long run
would. Times are left to the monitor (one second apart). Verdicts are ignored: the run
goes on after a stop, which costs more than ending it would.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import random
import sys
import time
import tracemalloc
from itertools import cycle, islice
from typing import Any

import orjson

from loopwatch import Attempt, Config, Correction, ModelText, Monitor, Output, Retry, ToolCall, Turn

WORDS = (
    "def class return self value result error import from config path file line test assert none true false "
    "data items index count name user request response server client cache build module package version "
    "update create delete read write open close start stop check parse load save http json yaml token"
).split()


def prose(rng: random.Random, size: int) -> str:
    """Code- or log-like text of about `size` characters."""
    lines, total = [], 0
    while total < size:
        n = rng.randint(3, 12)
        indent = " " * rng.choice((0, 4, 8))
        line = indent + " ".join(rng.choice(WORDS) for _ in range(n))
        if rng.random() < 0.3:
            line += f" = {rng.randint(0, 99999)}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def sized(rng: random.Random) -> int:
    """A result size between 100 B and 8 KB, small ones more common (log-uniform)."""
    return int(100 * (80 ** rng.random()))


class Pool:
    """Builds the mixed stream: plain calls, repeats, cycles, errors, text and output."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.bodies = [prose(self.rng, sized(self.rng)) for _ in range(400)]
        self.events: list[Any] = []
        self.n = 0

    def body(self) -> str:
        return self.rng.choice(self.bodies)

    def call(self) -> ToolCall:
        rng, n = self.rng, self.n
        self.n += 1
        kind = rng.random()
        path = f"src/pkg/mod_{rng.randrange(300)}.py"
        if kind < 0.35:
            command = rng.choice(["pytest -x -q", "ls -la src", "git status", "python -m build", "ruff check ."])
            command += f" tests/test_{rng.randrange(200)}.py" if rng.random() < 0.5 else ""
            failed = rng.random() < 0.25
            result = self.body() + (f"\nFAILED at line {n}: exit code 1" if failed else f"\nok ({n} ms)")
            return ToolCall("Bash", {"command": command, "description": "run it"}, result, error=failed)
        if kind < 0.6:
            return ToolCall("Read", {"file_path": path}, self.body())
        if kind < 0.75:
            return ToolCall(
                "Grep",
                {"pattern": f"def {rng.choice(WORDS)}_{n % 97}", "path": "src"},
                self.body() if rng.random() < 0.7 else f'No matches found for "def x_{n % 97}"',
            )
        if kind < 0.9:
            old, new = self.body()[:200], self.body()[:200]
            return ToolCall(
                "Edit",
                {"file_path": path, "old_string": old, "new_string": new},
                f"The file {path} has been updated.",
                changed=(path,),
            )
        return ToolCall("Write", {"file_path": path, "content": self.body()}, f"File created: {path}", changed=(path,))

    def add(self, event: Any) -> None:
        self.events.append(event)

    def build(self, size: int) -> list[Any]:
        rng = self.rng
        while len(self.events) < size:
            r = rng.random()
            if r < 0.42:
                self.add(self.call())
            elif r < 0.45:  # the same call and result, consecutively
                c = self.call()
                for _ in range(rng.randint(2, 5)):
                    self.add(c)
            elif r < 0.47:  # a short cycle
                steps = [self.call() for _ in range(rng.randint(2, 4))]
                for _ in range(rng.randint(2, 4)):
                    for c in steps:
                        self.add(c)
            elif r < 0.50:  # an error with a moving counter
                for k in range(rng.randint(2, 6)):
                    self.add(
                        ToolCall(
                            "Bash",
                            {"command": "cd fastjson/"},
                            f"/bin/bash: line {11301 + 15 * k + self.n}: cd: fastjson/: No such file or directory",
                            error=True,
                        )
                    )
            elif r < 0.68:
                text = prose(rng, rng.randint(50, 800)).replace("\n", ". ")
                if rng.random() < 0.5:
                    for i in range(0, len(text), 120):
                        self.add(ModelText(text[i : i + 120], chunk=True))
                    self.add(Turn())
                else:
                    self.add(ModelText(text))
            elif r < 0.86:
                lines = "".join(
                    f"[{self.n + i}] {prose(rng, rng.randint(20, 120))}\n".replace("\n", " ", 1)
                    for i in range(rng.randint(1, 5))
                )
                self.add(Output(lines.encode(), stream=rng.choice(("stdout", "stderr"))))
            elif r < 0.93:
                self.add(Turn())
            elif r < 0.95:
                self.add(Retry(reason="overloaded"))
            elif r < 0.96:
                self.add(Correction(rng.choice(["No such tool: str_replace", "Please provide exactly one action."])))
            else:
                c = self.call()
                self.add(Attempt(c.name, c.input))
                self.add(c)
            self.n += 1
        return self.events[:size]


# -- the bare cost ----------------------------------------------------------------------

_OPT = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def bare_digest(event: Any) -> None:
    """Canonical JSON and an 8-byte BLAKE2b of what the event carries."""
    blake = hashlib.blake2b
    kind = type(event)
    if kind is ToolCall:
        blake(orjson.dumps(event.input, option=_OPT), digest_size=8).digest()
        result = event.result
        blake(result.encode() if isinstance(result, str) else orjson.dumps(result, option=_OPT), digest_size=8).digest()
    elif kind is Attempt:
        blake(orjson.dumps(event.input, option=_OPT), digest_size=8).digest()
    elif kind is ModelText:
        blake(event.text.encode(), digest_size=8).digest()
    elif kind is Output:
        data = event.data
        blake(data if isinstance(data, bytes) else data.encode(), digest_size=8).digest()
    elif kind is Correction:
        blake(event.message.encode(), digest_size=8).digest()


def rate(fn, events: list[Any], total: int) -> float:
    # CPU time of this process, not the wall clock: the work is single-threaded, and on a
    # shared machine the wall clock also counts the time other processes held the core
    # (the same tree measured 24x and 39x by the wall clock an hour apart).
    gc.collect()
    start = time.process_time()
    for event in islice(cycle(events), total):
        fn(event)
    return total / (time.process_time() - start)


def best_rate(fn_factory, events: list[Any], total: int, repeats: int) -> float:
    return max(rate(fn_factory(), events, total) for _ in range(repeats))


# -- memory -----------------------------------------------------------------------------


def memory(events: list[Any], total: int) -> list[tuple[int, int, int]]:
    """(events, current, peak) bytes traced for a monitor built after tracing starts,
    at 10,000 events, at a few points between, and at the end. `current` is what the
    monitor retains; `peak` adds the largest transient (one big event being digested).
    The event iterator is primed before tracing, so only the monitor is measured."""
    stream = cycle(events)
    for _ in islice(stream, len(events)):  # `cycle` keeps its own copy of the pool
        pass
    gc.collect()
    tracemalloc.start()
    monitor = Monitor(Config.make())
    out = []
    for mark in sorted({min(m, total) for m in (10_000, 100_000, total // 4, total // 2, total)}):
        for event in islice(stream, mark - monitor.events):
            monitor.observe(event)
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        out.append((mark, current, peak))
    tracemalloc.stop()
    return out


def breakdown(events: list[Any], timed: int, repeats: int, bare: float) -> None:
    """Where the time goes: the monitor with no signal (reading and digesting events,
    policy) and with one signal at a time, each as a multiple of the bare digest cost."""
    from loopwatch._core.signals import SIGNALS

    off = {name: cls.Params.off() for name, cls in SIGNALS.items()}
    runs = {"no signal": off} | {f"only {name}": {**off, name: {}} for name in SIGNALS}
    for label, signals in runs.items():
        r = best_rate(lambda signals=signals: Monitor(Config.make(signals=signals)).observe, events, timed, repeats)
        print(f"  {label:24s} {r:12,.0f} events/s  {bare / r:6.2f}x bare")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events to feed (default 1,000,000)")
    parser.add_argument("--pool", type=int, default=20_000, help="distinct events built beforehand (default 20,000)")
    parser.add_argument(
        "--timed", type=int, default=200_000, help="events in each timed run (default 200,000, at most --events)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each kind; the best counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-memory", action="store_true", help="skip the (slow) tracemalloc run")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the monitor with every signal off, and with each signal alone",
    )
    args = parser.parse_args(argv)

    events = Pool(args.seed).build(min(args.pool, args.events))
    tools = [e for e in events if type(e) is ToolCall]
    sizes = sorted(len(e.result) for e in tools)
    print(
        f"stream: {len(events):,} distinct events cycled; {len(tools):,} tool calls, results "
        f"{sizes[0]:,} B .. {sizes[-1]:,} B (median {sizes[len(sizes) // 2]:,} B)"
    )
    timed = min(args.timed, args.events)

    bare = best_rate(lambda: bare_digest, events, timed, args.repeats)
    whole = best_rate(lambda: Monitor(Config.make()).observe, events, timed, args.repeats)
    ratio = bare / whole
    print(f"bare digest (orjson sorted keys + blake2b-8): {bare:12,.0f} events/s")
    print(f"Monitor.observe, all signals, defaults:      {whole:12,.0f} events/s")
    print(
        f"ratio (monitor cost / bare digest cost):      {ratio:12.2f}x   (target <= 3x: "
        f"{'met' if ratio <= 3 else 'NOT met'})"
    )

    if args.breakdown:
        breakdown(events, timed, args.repeats, bare)

    if not args.no_memory:
        marks = memory(events, args.events)
        for n, current, peak in marks:
            print(
                f"memory after {n:>9,} events: current {current / 1024:8.1f} KiB, peak {peak / 1024:8.1f} KiB",
                flush=True,
            )
        (n0, c0, p0), (n1, c1, p1) = marks[0], marks[-1]
        print(f"growth {n0:,} -> {n1:,} events: current {c1 / c0:.2f}x, peak {p1 / p0:.2f}x   (target: flat)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
