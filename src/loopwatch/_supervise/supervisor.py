"""The supervisor loop: run a command, watch what it prints, end it when it circles.

One thread. Each turn of the loop waits for output (or a signal, or the next
deadline), writes it through, feeds it to the monitor as events, and acts on the
verdict; it reads what the agent added to its transcript, if it keeps one
(`transcript`); then it checks the limits. On a stop (enforce mode), an idle or runtime
limit, or a second Ctrl-C, the whole process group gets SIGTERM, then SIGKILL after
the grace period. When the child has exited, any process it left in its group is
ended the same way, so nothing outlives the run.

What it deliberately does not do: reach the model. A nudge has nowhere to go in a
process with no hook point, so it is printed for the person instead; the next
continuation of the streak is a stop (unattended profile).

Evidence: when the agent keeps a transcript loopwatch can follow, its tool calls and
results are judged by a monitor of their own, which may end the run; the console's
lines are still watched, but while the transcript is followed or looked for, a loop
seen only in them is a warning (the console of a working agent repeats itself:
spinners, logs, tables). A structured stdout stream (`claude -p --output-format
stream-json`) is tool calls, not lines: it may end the run either way. Without a
transcript to look for, the console is the evidence, as it always was.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from .._core.config import Config
from .._core.events import Attempt, Event, Output
from .._core.monitor import Monitor
from .._core.verdict import Action, Verdict
from .._hosts.monitors import monitor_for
from .group import ChildGroup
from .pty import Terminal
from .pump import Pump
from .record import Outcome
from .streams import EventSource
from .transcript import Follower
from .watchdog import Watchdog

#: Set for the supervised command: a loopwatch hook inside it (Codex's) then leaves the
#: stop to `run`, which can end the run where the hook can only block a call (the
#: hook's blocked calls never reach `codex exec --json`, so `run` would not see them).
SUPERVISED = "LOOPWATCH_SUPERVISED"

__all__ = ["Limits", "Supervisor"]

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Passed on as they are, and loopwatch goes on: by default each would end loopwatch alone
# and leave the agent running unsupervised; the agent does with them what it does.
_PASSED = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGQUIT)
_TICK = 0.5  # longest wait between looks at the clock, seconds
_DRAIN = 0.5  # after the group is gone, how long pipes held by escaped processes are read
_HOOK_STOP = "loopwatch's hook in the agent ended it (terminal_reason hook_stopped); see `loopwatch status`"
# ... at most, once loopwatch has ended the run itself: a daemon (setsid) that keeps the
# pipe open and prints for ever must not keep a run it ended going.
_DRAIN_ENDED = 1.0
# A stop decided on a Claude Code call before it ran (its tool_use in the stream) is
# what loopwatch's own hook in the agent decides at that call too, and the hook ends the
# run cleanly (no further model turn, exit 0, `hook_stopped`), where a SIGTERM would race
# it. So `run` waits this long for the agent to end itself, then ends it (no hook there).
_HOOK_GRACE = 3.0


@dataclass(frozen=True)
class Limits:
    """`idle`: seconds with no output on either stream (None: no limit).
    `max_runtime`: seconds since start (None: no limit). `grace`: seconds between
    SIGTERM and SIGKILL (default 5). The limits apply in every mode: they were asked for."""

    idle: float | None = None
    max_runtime: float | None = None
    grace: float = 5.0

    def __post_init__(self) -> None:
        # NaN passes `<= 0` and is never reached as a deadline: refuse it, and infinity.
        for name, value in (("idle", self.idle), ("max_runtime", self.max_runtime), ("grace", self.grace)):
            if value is not None and not 0 < value < math.inf:
                raise ValueError(f"{name}: {value} is not a finite number of seconds above 0")

    def as_dict(self) -> dict[str, float | None]:
        return {"idle": self.idle, "max_runtime": self.max_runtime, "grace": self.grace}


def _host(events: str, argv: Sequence[str]) -> str | None:
    """The agent CLI being run, as `monitor_for` names it, when the stream format or
    the command says which (None: any other command)."""
    command = os.path.basename(argv[0]) if argv else ""
    if events == "codex-json" or command.startswith("codex"):
        return "codex"
    if events == "claude-stream" or command == "claude":
        return "claude-code"
    return None


class Supervisor:
    """Runs `argv` under a monitor built from `config`. `run()` returns the `Outcome`.

    `events` is one of `streams.FORMATS`. Output is written through to `stdout` and
    `stderr` (file descriptors); loopwatch's own lines go to `stderr`, prefixed.
    `transcript`: `off` (the default here; the CLI's is `auto`), `auto` or a path,
    see `transcript.Follower`. `pty`: run the child on a pseudo-terminal (`pty.Terminal`;
    our stdin, fd 0, is forwarded to it)."""

    def __init__(
        self,
        argv: Sequence[str],
        config: Config,
        limits: Limits = Limits(),
        events: str = "auto",
        *,
        stdout: int = 1,
        stderr: int = 2,
        clock: Callable[[], float] = time.monotonic,
        transcript: str = "off",
        pty: bool = False,
    ) -> None:
        self.argv = list(argv)
        self.config = config
        self.limits = limits
        self.source = EventSource(events)
        self.stdout, self.stderr = stdout, stderr
        self.clock = clock
        self.host = _host(events, self.argv)
        self.monitor = monitor_for(self.host, config, on_warning=self._warned)  # the console's
        self.transcript = Follower(transcript, self.argv)
        self.transcript_monitor: Monitor | None = None  # once a transcript is followed: its own agent's
        self._agent_monitors: dict[str | None, Monitor] = {}  # the transcript's, one per agent
        self._console_unheeded: set[str] = set()  # console stops passed over, by signal
        self._problem_told = False
        self.pty = pty
        self._terminal: Terminal | None = None
        self._pump: Pump | None = None
        self._signals: list[int] = []
        self._ended_by: str | None = None
        self._stop: Verdict | None = None
        self._stop_due: float | None = None  # a stop left to the agent's hook until then
        self._t0 = 0.0
        self._last_output = 0.0

    # -- public ---------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Start the command and supervise it to the end. Raises OSError (e.g.
        FileNotFoundError) when the command cannot be started."""
        started, t0 = datetime.now(UTC), self.clock()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        # Handlers first: a Ctrl-C from here on is forwarded, never lost with an orphan.
        saved = self._install_handlers(wake_w)
        child: ChildGroup | None = None
        watchdog: Watchdog | None = None
        try:
            self.transcript.start()
            env = {**os.environ, SUPERVISED: "1"}
            if self.pty:
                self._terminal = Terminal(0, self.stdout, self.stderr)
                child = ChildGroup(self.argv, self.limits.grace, env=env, terminal=self._terminal)
                watchdog = Watchdog(child.pid)  # before the terminal's thread starts: it forks
                self._terminal.started()
                sources = {self._terminal.master: ("stdout", self.stdout)}
            else:
                child = ChildGroup(self.argv, self.limits.grace, env=env)
                watchdog = Watchdog(child.pid)
                sources = {child.stdout: ("stdout", self.stdout), child.stderr: ("stderr", self.stderr)}
            self._pump = Pump(sources, wakeup=wake_r)
            self._t0 = self._last_output = t0
            self._watch(child, t0)
            leftovers = self._end_leftovers(child)
            self._drain(child)
            for event in self.source.finish(self.clock()):
                self.monitor.observe(event)
            for event in self.transcript.finish():
                self._judge(child, event, self.clock())
            if self.transcript.problem is not None and not self._problem_told:
                self._problem_told = True
                self.say(f"cannot follow the transcript: {self.transcript.problem}; watching the console")
            if self._ended_by is None and self._stop_due is not None:
                self._ended_by = "loop"  # it ended while the stop was left to its hook
            if (self._ended_by is None or self._stop_due is not None) and self.source.stopped_by_hook():
                # Claude Code ended itself at loopwatch's hook's stop: a loop stop, not a
                # success, whatever its own exit status says.
                self._ended_by = "loop"
                self._stop = Verdict(Action.STOP, signal="hook", description=_HOOK_STOP)
                self.say(f"the run was stopped: {_HOOK_STOP}")
        finally:
            if self._terminal is not None:
                self._terminal.close()  # our terminal as it was, on every way out
            self._restore_handlers(saved)
            if self._pump is not None:
                self._pump.close()
            if child is not None:
                child.close()
            if watchdog is not None:
                watchdog.done()
            os.close(wake_r)
            os.close(wake_w)
        return Outcome(
            command=self.argv,
            started=started,
            ended=datetime.now(UTC),
            duration=self.clock() - t0,
            ended_by=self._ended_by or "exit",
            returncode=child.returncode,
            events_format=self.source.format or "lines",
            monitor=self._deciding_monitor(),
            limits=self.limits.as_dict(),
            stop=self._stop,
            signals_sent=child.signals_sent,
            leftovers=leftovers,
            output_bytes=dict(self._pump.counts),
            evidence=self._evidence(),
        )

    def _deciding_monitor(self) -> Monitor:
        """The monitor the record reports: the one that stopped the run (the stream on
        stdout and the transcript may both be judged, and either may stop first), else
        the transcript's when one was followed, else the console's."""
        for monitor in (*self._agent_monitors.values(), self.monitor):
            if self._stop is not None and monitor.stop == self._stop._replace(message=None):
                return monitor  # (a console's stop passed over for a transcript is not it)
        return self.transcript_monitor or self.monitor

    def say(self, text: str) -> None:
        """One line of ours on stderr, `loopwatch: ` first, always at a line start; what
        it quotes from the agent (a tool name) made visible, never raw on the terminal."""
        from .._encode import visible

        text = visible(text)
        pump = self._pump
        # under --pty the child writes to stdout only, and both are often one terminal
        at_start = pump is None or (
            pump.at_line_start(self.stderr) and (self._terminal is None or pump.at_line_start(self.stdout))
        )
        line = (b"" if at_start else b"\n") + b"loopwatch: " + text.encode("utf-8", "replace") + b"\n"
        if self._terminal is not None and self._terminal.raw:
            line = line.replace(b"\n", b"\r\n")  # our terminal is raw: no newline translation
        if pump is not None:
            pump.write(self.stderr, line)
        else:
            os.write(self.stderr, line)

    # -- the loop -------------------------------------------------------------------------

    def _watch(self, child: ChildGroup, t0: float) -> None:
        """Pump output until the child has exited."""
        pump = self._pump
        assert pump is not None
        while child.poll() is None:
            now = self.clock()
            self._take_signals(child, now)
            self._check_limits(child, now)
            if self._stop_due is not None and now >= self._stop_due and self._ended_by is None:
                self._end(child, now, "loop")  # the agent did not end itself: no hook in it
            last_output = self._last_output
            child.tick(now)
            if self.transcript.due(now) and self._read_transcript(child, now):
                self._last_output = last_output = now  # the agent is at work: it is writing its transcript
            deadlines = [now + _TICK, child.deadline(), self.transcript.deadline(), self._stop_due]
            if self._ended_by is None:
                if self.limits.max_runtime is not None:
                    deadlines.append(t0 + self.limits.max_runtime)
                if self.limits.idle is not None:
                    deadlines.append(last_output + self.limits.idle)
            timeout = max(0.0, min(d for d in deadlines if d is not None) - now)
            if not pump.open:
                time.sleep(min(timeout, 0.05))  # both pipes closed, child still running
                continue
            for chunk in pump.wait(timeout):
                if chunk.data:
                    self._last_output = self.clock()
                    self._observe(child, chunk.data, chunk.stream, self._last_output)
            self._pass_on_closed_sinks(child, self.clock())

    def _pass_on_closed_sinks(self, child: ChildGroup, now: float) -> None:
        """Our stdout (or stderr) closed by its reader (`| head -3`): the child meets it
        as it would without loopwatch. Its pipe is closed, so its next write there gets
        SIGPIPE; on a terminal (--pty) there is no pipe of its own to close, so the group
        gets SIGPIPE, and then the usual ending."""
        pump = self._pump
        assert pump is not None
        for fd in pump.broken:
            pump.drop(fd)
            if self._terminal is not None:
                if self._ended_by is None:
                    self._ended_by = "interrupted"
                child.end(now, first=signal.SIGPIPE)
            else:
                child.close_pipe(fd)

    def _check_limits(self, child: ChildGroup, now: float) -> None:
        if self._ended_by is None:
            limits = self.limits
            if limits.max_runtime is not None and now - self._t0 >= limits.max_runtime:
                self._end(child, now, "max_runtime")
            elif limits.idle is not None and now - self._last_output >= limits.idle:
                self._end(child, now, "idle")

    def _observe(self, child: ChildGroup, data: bytes, stream: str, at: float) -> None:
        for event in self.source.feed(data, stream, at):
            verdict = self.monitor.observe(event)
            if verdict.action.rank > Action.WARN.rank and type(event) is Output and self.transcript.wanted:
                self._unheeded(verdict)  # the console's lines, while there is a transcript
            else:
                hook_first = type(event) is Attempt and self.source.format == "claude-stream"
                self._act(child, verdict, at, hook_first)

    def _read_transcript(self, child: ChildGroup, now: float) -> bool:
        """Judge what the agent added to its transcript; True if it added anything."""
        lines = self.transcript.lines
        for event in self.transcript.poll(now):
            self._judge(child, event, now)
        if self.transcript.problem is not None and not self._problem_told:
            self._problem_told = True
            self.say(f"cannot follow the transcript: {self.transcript.problem}; watching the console")
        return self.transcript.lines > lines

    def _judge(self, child: ChildGroup, event: Event, at: float) -> None:
        """One event from the transcript, to the monitor that may end the run."""
        agent = getattr(event, "agent", None)  # a sub-agent's streaks are its own, as in the hook
        monitor = self._agent_monitors.get(agent)
        if monitor is None:
            monitor = self._agent_monitors[agent] = monitor_for(self.host, self.config, on_warning=self._warned)
            if self.transcript_monitor is None:
                self.transcript_monitor = monitor
        verdict = monitor.observe(event)
        # A transcript holds an Attempt only for a call loopwatch's own hook refused (the
        # readers' rule): that hook is ending the run itself, so it is given a moment.
        self._act(child, verdict, at, hook_first=type(event) is Attempt)

    def _unheeded(self, verdict: Verdict) -> None:
        """A loop seen in the console's lines while the agent's transcript is the
        evidence (followed, or looked for): a warning, said once a signal."""
        signal_name = verdict.signal or verdict.action.value
        if signal_name not in self._console_unheeded:
            self._console_unheeded.add(signal_name)
            whose = (
                "the transcript shows the tool calls"
                if self.transcript.following
                else "waiting for the agent's transcript"
            )
            self.say(f"warning (console only; {whose}): {verdict.description}")

    def _act(self, child: ChildGroup, verdict: Verdict, at: float, hook_first: bool = False) -> None:
        if verdict.action is Action.ALLOW or verdict.action is Action.WARN:
            return  # warnings were printed by the monitor's callback
        if verdict.action is Action.STOP:
            # Also when the child has exited and the loop is in what is still read
            # from its pipes (its last output, or a process that escaped its group):
            # a run whose monitor stopped ends as stopped, and its record says so.
            if self._ended_by is None and self._stop_due is None:
                self._stop = verdict
                self.say(f"stopping the run: {verdict.description}")
                if hook_first and child.returncode is None:
                    self._stop_due = at + _HOOK_GRACE
                else:
                    self._end(child, at, "loop")
        else:  # a nudge or a block: no way to reach the model, tell the person
            self.say(f"{verdict.action.value} (not delivered, no hook into the agent): {verdict.description}")

    def _evidence(self) -> dict[str, object]:
        """For the record: which evidence judged the run, and the transcript's figures."""
        if self.transcript_monitor is not None:
            source = "transcript"
        elif self.source.format in ("claude-stream", "codex-json"):
            source = "stream"  # tool calls printed on stdout
        else:
            source = "console"
        evidence: dict[str, object] = {"source": source}
        followed = self.transcript.record()
        if followed is not None:
            evidence["transcript"] = followed
        if self.transcript_monitor is not None:
            evidence["console"] = {"loop": self.monitor.record(), "unheeded": sorted(self._console_unheeded)}
        return evidence

    def _end(self, child: ChildGroup, now: float, why: str) -> None:
        if self._ended_by is None:
            self._ended_by = why
        child.end(now)

    def _end_leftovers(self, child: ChildGroup) -> bool:
        """End what the child left running in its group; True if anything was left."""
        if not child.group_alive():
            return False
        child.end(self.clock())  # a no-op when already ending: the ladder goes on
        while child.group_alive():
            now = self.clock()
            self._take_signals(child, now)
            child.tick(now)
            if child.killed_at is not None and now - child.killed_at > 1.0:
                self.say(f"processes of group {child.pid} are still there after SIGKILL")
                break
            self._pump_a_little(child, 0.05)
        return True

    def _drain(self, child: ChildGroup) -> None:
        """Read what is left in the pipes; stop when they close or stay quiet, or (a
        process outside the group holding them open) once the run is ended: by
        loopwatch before the drain (at most `_DRAIN_ENDED` more), or by a limit or a
        loop met during it. The group is gone by now, so nothing waits on it."""
        pump = self._pump
        assert pump is not None
        start = quiet_since = self.clock()
        ended_before = self._ended_by is not None
        while pump.open and self.clock() - quiet_since < _DRAIN:
            now = self.clock()
            self._check_limits(child, now)
            if (ended_before and now - start >= _DRAIN_ENDED) or (not ended_before and self._ended_by is not None):
                self.say(
                    "not waiting for the output pipe: a process outside the command's group "
                    "(started with setsid?) still holds it open"
                )
                return
            if self._pump_a_little(child, 0.05):
                quiet_since = self._last_output = self.clock()

    def _pump_a_little(self, child: ChildGroup, timeout: float) -> bool:
        got = False
        assert self._pump is not None
        for chunk in self._pump.wait(timeout):
            if chunk.data:
                got = True
                self._observe(child, chunk.data, chunk.stream, self.clock())
        return got

    # -- signals --------------------------------------------------------------------------

    def _install_handlers(self, wake_w: int) -> dict[int, object]:
        saved: dict[int, object] = {signal.SIGCHLD: signal.signal(signal.SIGCHLD, lambda *_: None)}
        for sig in _FORWARDED + _PASSED:
            saved[sig] = signal.signal(sig, lambda sig, _frame: self._signals.append(sig))
        saved[-1] = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        return saved

    def _restore_handlers(self, saved: dict[int, object]) -> None:
        signal.set_wakeup_fd(saved.pop(-1))  # type: ignore[arg-type]
        for sig, handler in saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def _take_signals(self, child: ChildGroup, now: float) -> None:
        """Forward SIGINT/SIGTERM/SIGHUP to the group (then SIGTERM and SIGKILL, each
        after the grace, if it does not end); a second signal, or one while loopwatch is
        already ending the run, kills the group at once. `_PASSED` signals are only
        passed on."""
        while self._signals:
            sig = self._signals.pop(0)
            if sig in _PASSED:
                child.send(sig)
            elif not child.ending:
                self._ended_by = "interrupted"
                child.end(now, first=sig)
            else:
                child.force(now)

    # -- the monitor's warnings -------------------------------------------------------------

    def _warned(self, verdict: Verdict) -> None:
        self.say(f"warning: {verdict.description}")
