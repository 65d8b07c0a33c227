"""`Guard`: a `Monitor` behind the four questions a hand-written agent loop asks.

    from loopwatch import Guard

    guard = Guard(profile="attended", stop=True)
    for call in model_turn.tool_calls:
        decision = guard.before_call(call.name, call.args, call_id=call.id)
        if decision.blocks:                       # block or stop: do not run the tool
            result = decision.tool_result         # every tool call still gets a result
        else:
            result, failed = run(call)
            decision = guard.after_call(call.name, call.args, result, error=failed, call_id=call.id)
            if decision.message:                  # nudge: hand it to the model with the result
                result = f"{result}\\n\\n{decision.message}"
        send_tool_result(call.id, result)
        if guard.stopped:                          # end the run, saying why
            raise SystemExit(guard.stopped)

It adds to the monitor only what every integration otherwise gets wrong in its glue,
the same for the Claude Code and Codex hook (`loopwatch._core.session.GuardSession`):

- A blocked (or refused-after-stop) call is *not* a completed call: if the framework
  reports it afterwards anyway (a callback, an output hook, a span), `after_call`
  recognises it (by `call_id`, or else by tool and identifying input) and does not
  count it; counting the block message as the call's result would break the very
  streak that was blocked.
- Once stopped, every later call is refused with the same reason until the user speaks
  (`user()`), so a model that ignores the stop cannot carry on.
- A block decided after the call already ran (the attended ladder climbing on a
  completed call) is worded as what it is: the call ran, and the model is circling.
- Per-tool key functions say what identifies a call, so cosmetic arguments (a
  `description`, a `timeout`) do not hide a repeat: `keys={"Bash": drop("description")}`.
  A key function that raises is ignored for that call: the input comes from the model,
  and a malformed one must neither crash the agent nor switch the guard off.

One guard watches one run. A server that runs one agent for many users at once asks
its guard for each run's own: `guard.for_run(run_id)` is a guard with the same settings
and a monitor of its own, kept until `guard.end_run(run_id)` (or until the `lifetime=`
object the framework holds for the run is gone), so concurrent runs never mix their
calls. The framework adapters do this with each framework's own run identity. A
`lifetime`'s finalizer runs wherever the garbage collector happens to run, perhaps
inside this guard's own lock, so it never waits for that lock: it reports the run gone
on a queue that takes no lock, and releases it at once only if the lock is free
(otherwise the call holding it, or the next one that manages runs, does). The end is
tied to that registration, not to the run id: an id used again by a later run is not
ended by the earlier run's lifetime.

The clock is the caller's (`clock=`, or `at=` on each call), `time.monotonic` by
default; the core itself stays clock-free. It is safe to share between threads.
It does not run tools, talk to a model, or keep inputs and results: it keeps what the
monitor keeps (digests, names, counts and times).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from ._configfile import apply_env
from ._core.config import Config
from ._core.events import Attempt, ModelText, Retry, ToolCall, Turn, UserMessage
from ._core.monitor import Monitor
from ._core.session import Decision, GuardSession
from ._core.verdict import Verdict
from ._hosts.monitors import monitor_for

__all__ = ["Decision", "Guard", "drop"]

#: Runs kept by `for_run` that never said they ended (a run that raised past its
#: framework's end hook): beyond this many, the least recently used is forgotten.
_MAX_RUNS = 1024


def drop(*fields: str) -> Callable[[Any], Any]:
    """A key function that leaves `fields` out of a dict input (`drop("description")`)."""
    names = frozenset(fields)

    def key(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k not in names}
        return value

    return key


def _check_weakly_referenceable(lifetime: object) -> None:
    try:
        weakref.ref(lifetime)
    except TypeError:
        raise TypeError(
            f"Guard.for_run: lifetime= must be an object that can be weakly referenced (it is how the run's end "
            f"is noticed); got {type(lifetime).__name__}. Pass the framework's run object, or call end_run(run)."
        ) from None


def _lifetime_gone(guard_ref: weakref.ref[Guard], run: Hashable, token: int) -> None:
    """A run's `lifetime` was collected: report it, and release the run now if the
    guard's lock is free. Never waits for the lock: the thread that holds it may be the
    one this runs in (a collection inside a locked section)."""
    guard = guard_ref()
    if guard is None:
        return
    guard._gone.put((run, token))
    if guard._lock.acquire(blocking=False):
        try:
            guard._release_gone()
        finally:
            guard._lock.release()


class _Run:
    """What `for_run` keeps for one registration of a run: its agents' guards, the token
    its lifetime's finalizer reports, and that finalizer (detached when the run ends
    first)."""

    __slots__ = ("agents", "finalizer", "token")

    def __init__(self, token: int, finalizer: weakref.finalize[Any, Any] | None) -> None:
        self.agents: dict[str | None, Guard] = {}
        self.token = token
        self.finalizer = finalizer

    def detach(self) -> None:
        if self.finalizer is not None:
            self.finalizer.detach()


class Guard:
    """One agent's guard. See the module docstring.

    `monitor` is used as given; otherwise `config` or keyword arguments build one
    (`Guard(profile="attended", stop=True)`, as for `Monitor`); `LOOPWATCH_MODE` in
    `env` (default: this process's environment) then overrides the mode. `keys` maps a
    tool name to a function of its input returning what identifies the call.
    """

    def __init__(
        self,
        monitor: Monitor | None = None,
        *,
        config: Config | None = None,
        clock: Callable[[], float] | None = time.monotonic,
        keys: Mapping[str, Callable[[Any], Any]] | None = None,
        on_warning: Callable[[Verdict], object] | None = None,
        env: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        if monitor is None:
            # Built here from keyword arguments: `LOOPWATCH_MODE` applies, as to the CLI
            # and the hook (the core itself reads no environment).
            if config is None:
                config = apply_env(Config.make(**kwargs), env)
            monitor = monitor_for(None, config, on_warning=on_warning)  # a harness of any host: no host's rules
            self._config: Config | None = config
        elif config is not None or kwargs:
            raise TypeError("Guard: pass a monitor or its configuration, not both")
        else:
            self._config = None  # a monitor of the caller's own: this guard cannot make more
        self._on_warning = on_warning
        self.monitor = monitor
        self.clock = clock
        self.keys = dict(keys or {})
        self._session = GuardSession(monitor)
        self._lock = threading.Lock()
        self._runs: OrderedDict[Hashable, _Run] = OrderedDict()
        self._tokens = itertools.count()
        # Runs whose lifetime went, as (run, token): filled by finalizers, which may run
        # inside `_lock` (a collection there), so a queue that takes no lock of ours
        # (SimpleQueue.put may be called from a finalizer); drained under `_lock`.
        self._gone: queue.SimpleQueue[tuple[Hashable, int]] = queue.SimpleQueue()

    @property
    def stopped(self) -> str | None:
        """The stop's reason, once stopped (for a person); None after the user writes."""
        return self._session.stopped

    # -- runs -------------------------------------------------------------------------------

    @property
    def serves_runs(self) -> bool:
        """Whether `for_run` can make per-run guards (not for a guard around a given monitor)."""
        return self._config is not None

    def for_run(self, run: Hashable, agent: str | None = None, *, lifetime: object | None = None) -> Guard:
        """The guard of one run (and of one `agent` within it, each agent being watched
        on its own): this guard's settings, a monitor of its own, made on first use.
        It is released by `end_run(run)`, or when `lifetime` (an object the framework
        keeps exactly as long as the run, such as its run context) is collected: the
        `lifetime` given when the run's guard is made. A `lifetime` must be weakly
        referenceable (TypeError otherwise, before anything is kept)."""
        if self._config is None:
            self.fresh()  # raises, saying why
        if lifetime is not None:
            _check_weakly_referenceable(lifetime)
        with self._lock:
            self._release_gone()
            entry = self._runs.get(run)
            if entry is None:
                token = next(self._tokens)
                finalizer = None
                if lifetime is not None:
                    # The callback holds this guard weakly: a run's context does not keep it alive.
                    finalizer = weakref.finalize(lifetime, _lifetime_gone, weakref.ref(self), run, token)
                    finalizer.atexit = False
                entry = self._runs[run] = _Run(token, finalizer)
                while len(self._runs) > _MAX_RUNS:
                    self._runs.popitem(last=False)[1].detach()
            else:
                self._runs.move_to_end(run)
            guard = entry.agents.get(agent)
            if guard is None:
                guard = entry.agents[agent] = self.fresh()
            self._release_gone()  # what a collection in here reported
            return guard

    def fresh(self) -> Guard:
        """A new guard with this one's settings and a monitor of its own (nothing of
        this guard's calls, streaks or stop)."""
        if self._config is None:
            raise TypeError(
                "Guard(monitor): a guard around one monitor watches one run; build it from a "
                "configuration (Guard(config=...) or keyword arguments) to serve several runs"
            )
        return Guard(config=self._config, clock=self.clock, keys=self.keys, on_warning=self._on_warning)

    def end_run(self, run: Hashable) -> None:
        """Forget `run`'s guards (its calls, streaks and stop): the run is over."""
        with self._lock:
            self._release_gone()
            entry = self._runs.pop(run, None)
            if entry is not None:
                entry.detach()

    @property
    def live_runs(self) -> int:
        """How many runs `for_run` holds now (each released when its run ends)."""
        with self._lock:
            self._release_gone()
            return len(self._runs)

    def _release_gone(self) -> None:
        """Release the runs whose lifetime went (under `_lock`): each only if it is still
        the registration that lifetime was given for."""
        while True:
            try:
                run, token = self._gone.get_nowait()
            except queue.Empty:
                return
            entry = self._runs.get(run)
            if entry is not None and entry.token == token:
                del self._runs[run]

    # -- tool calls -------------------------------------------------------------------------

    def before_call(
        self, name: str, input: Any = None, *, call_id: str | None = None, at: float | None = None
    ) -> Decision:
        """Should this call run? ALLOW, BLOCK or STOP; for the last two, do not run it
        and give the model `decision.tool_result` as its result."""
        key = self._key(name, input)
        with self._lock:
            return self._session.before_call(Attempt(name, key, at=self._at(at), call_id=call_id))

    def after_call(
        self,
        name: str,
        input: Any = None,
        result: Any = None,
        *,
        error: bool = False,
        call_id: str | None = None,
        changed: tuple[str, ...] | list[str] = (),
        at: float | None = None,
    ) -> Decision:
        """The call ran and returned `result` (`error`: it failed). ALLOW, NUDGE (add
        `decision.message` to what the model reads next) or STOP (end the run).
        A call this guard blocked is recognised and not counted."""
        key = self._key(name, input)
        with self._lock:
            return self._session.after_call(
                ToolCall(name, key, result, error=bool(error), changed=tuple(changed), at=self._at(at), call_id=call_id)
            )

    # -- the rest of the conversation ---------------------------------------------------------

    def text(self, text: str, *, chunk: bool = False, at: float | None = None) -> Decision:
        """Text the model wrote (a whole message, or a streamed chunk)."""
        with self._lock:
            return self._session.observe(ModelText(text, at=self._at(at), chunk=chunk))

    def turn(self, *, tokens: int | None = None, cost: float | None = None, at: float | None = None) -> Decision:
        """A model request was answered."""
        with self._lock:
            return self._session.observe(Turn(at=self._at(at), tokens=tokens, cost=cost))

    def retry(self, reason: str | None = None, *, at: float | None = None) -> Decision:
        """The harness retried a model request (rate limit, overload, timeout)."""
        with self._lock:
            return self._session.observe(Retry(at=self._at(at), reason=reason))

    def user(self, *, at: float | None = None) -> Decision:
        """The user wrote: every streak starts again, and a stop is lifted."""
        with self._lock:
            return self._session.user(UserMessage(at=self._at(at)))

    def stop(self, reason: str) -> None:
        """Stop the run for a reason found outside its monitor (a sub-agent it ran was
        stopped): every later call is refused with `reason` until the user writes. A
        run already stopped keeps its first reason."""
        with self._lock:
            self._session.stop(reason)

    def record(self) -> dict[str, Any]:
        """The monitor's JSON record (names, counts and times only)."""
        return self.monitor.record()

    # -- internals ----------------------------------------------------------------------------

    def _key(self, name: str, value: Any) -> Any:
        key = self.keys.get(name)
        if key is None:
            return value
        try:
            return key(value)
        except Exception:  # noqa: BLE001 - the input is the model's: a bad one must not disarm the guard
            return value

    def _at(self, at: float | None) -> float | None:
        if at is not None or self.clock is None:
            return at
        return self.clock()
