"""The `Monitor`: feed it events, get a `Verdict` back.

    from loopwatch import Monitor, ToolCall, Attempt

    monitor = Monitor(profile="unattended")
    verdict = monitor.check(Attempt("Bash", {"command": "pytest -x"}, at=t))
    if verdict.action is Action.BLOCK:
        hand_model(verdict.tool_result)          # instead of running the tool
    ...
    verdict = monitor.observe(ToolCall("Bash", {"command": "pytest -x"}, result, at=t))
    if verdict.action is Action.NUDGE:
        add_to_context(verdict.message)
    elif verdict.action is Action.STOP:
        end_run(verdict.description)

The monitor is pure and clock-free: it reads times from the events. It keeps digests,
names, counts and times only, and its memory is bounded however long the run.
It is safe to share between threads (one lock around each call).
It does not split a session by sub-agent: give each agent its own monitor.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import messages
from .config import Config
from .events import (
    Attempt,
    Correction,
    Event,
    ModelText,
    Output,
    Retry,
    ToolCall,
    Turn,
    UserMessage,
)
from .finding import Finding
from .fingerprint import digest, digest_call, normalize, text_of
from .identity import identifying
from .lines import LineCutter
from .policy import Policy
from .signals import SIGNALS
from .signals.base import Signal
from .step import Step, make_step
from .text import PassageCutter, is_apology, names_invented_tool
from .verdict import ALLOW, Action, Verdict, for_model

__all__ = ["Monitor"]

#: A `Finding`'s fields before `source_ref` and `grade`, its last two (which `_feed` fills).
_FILLED = Finding._fields.index("source_ref")

MAX_INTERVENTIONS = 100  # kept in order; later ones are only counted (a stop ends a run)
#: Successful results remembered to tell a new success from a replayed one, the least
#: recently seen forgotten first. A loop replays recent results (cycles of up to 10
#: steps): 64 is six times that, and fills early, so memory stays flat.
_MAX_SEEN = 64


class Monitor:
    """Watches one agent session. See the module docstring.

    `config` is a `Config` (`loopwatch.load_config`); or the settings, by keyword, build
    one as a loopwatch.toml would (`Monitor(mode="warn", signals={"repeat": {"threshold":
    4}})`): `mode` (enforce, warn, off), `profile` (unattended, attended), `stop` (may
    the attended profile stop), `warn_every` (seconds between warnings), `signals`
    (thresholds, by signal), `tools` (rules, by tool name), `evidence` (`confirm`,
    `second_signal`), `calibration` (auto, none). A setting left out keeps its default;
    a mistaken one is a `ConfigError` naming the nearest valid key.
    `on_warning` is called with each WARN verdict; if it raises it is not called again.
    `extra_signals` are signals of your own (instances of `Signal` subclasses, with
    their params): consulted after the built-in ones, under the same policy. Their
    params come with them, not from the configuration, and the hook's stored state
    holds only the built-in signals, so they serve in-process monitors.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        on_warning: Callable[[Verdict], object] | None = None,
        extra_signals: Iterable[Signal[Any]] = (),
        mode: str | None = None,
        profile: str | None = None,
        stop: bool | None = None,
        warn_every: float | None = None,
        signals: Mapping[str, Any] | None = None,
        tools: Mapping[str, Any] | None = None,
        evidence: Mapping[str, Any] | None = None,
        calibration: str | None = None,
    ) -> None:
        given: dict[str, Any] = {
            key: value
            for key, value in (
                ("mode", mode),
                ("profile", profile),
                ("stop", stop),
                ("warn_every", warn_every),
                ("signals", signals),
                ("tools", tools),
                ("evidence", evidence),
                ("calibration", calibration),
            )
            if value is not None
        }
        if config is not None and given:
            raise TypeError(f"Monitor: give a config or settings ({', '.join(given)}), not both")
        self.config = config if config is not None else Config.make(**given)
        self._signals: list[Signal[Any]] = []
        for name, cls in SIGNALS.items():
            params = self.config.params(name)
            if params.enabled:
                self._signals.append(cls(params))
        for extra in extra_signals:
            if not isinstance(extra, Signal):
                raise TypeError(f"extra_signals: expected Signal instances, got {type(extra).__name__}")
            if not extra.name or extra.name in SIGNALS or any(s.name == extra.name for s in self._signals):
                raise ValueError(f"extra_signals: {type(extra).__name__} needs a name of its own, not {extra.name!r}")
            self._signals.append(extra)
        self._by_hook: dict[str, list[Signal[Any]]] = {
            hook: [s for s in self._signals if getattr(type(s), hook) is not getattr(Signal, hook)]
            for hook in (
                "on_step",
                "on_text",
                "on_passage",
                "on_line",
                "on_retry",
                "on_turn",
                "on_correction",
                "on_user",
            )
        }
        self._policy = Policy(self.config, on_warning)
        # signals whose streaks a user message does not end: the policy keeps their rungs
        self._spanning = frozenset(s.name for s in self._signals if s.spans_user)
        self._lock = threading.Lock()
        self._lines = LineCutter()
        self._passages = PassageCutter()
        self._apology = False  # the response being streamed has apologised
        self.events = 0
        self.actions = 0  # completed tool calls
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.interventions: list[Verdict] = []
        self.interventions_total = 0
        self.stop: Verdict | None = None  # the first stop
        self.strongest: dict[str, Finding] = {}  # per signal, the strongest finding seen
        self._seen: dict[bytes, None] = {}  # shapes (tool name and result) of successes seen

    # -- public ---------------------------------------------------------------------------

    @property
    def warnings(self) -> int:
        return self._policy.warnings

    def observe(self, event: Event) -> Verdict:
        """Take one event; return what to do now."""
        with self._lock:
            at = self._clock(getattr(event, "at", None))
            match event:
                case ToolCall():
                    return self._tool_call(event, at)
                case Attempt():
                    return self._check(event, at)
                case ModelText():
                    return self._text(event, at)
                case Output():
                    return self._output(event, at)
                case Retry():
                    return self._feed("on_retry", at, (at, self.actions), event)
                case Turn():
                    ended = self._end_response(at, event)
                    return _stronger(ended, self._feed("on_turn", at, (at, self.actions), event))
                case Correction():
                    key = digest(normalize(event.message))
                    invented = names_invented_tool(event.message)
                    return self._feed("on_correction", at, (key, at, self.actions, invented), event)
                case UserMessage():
                    self._end_response(at, event)  # the user speaks: whatever it found is moot
                    for signal in self._signals:
                        signal.reset()
                    self._policy.reset(keep=self._spanning)
                    return self._feed("on_user", at, (at, self.actions), event)
                case _:
                    raise TypeError(f"not a loopwatch event: {event!r}")

    def check(self, attempt: Attempt) -> Verdict:
        """The pre-dispatch guard: should this call run? Never raises for a bad input;
        a BLOCK verdict carries `tool_result`, to hand the model instead of running."""
        return self.observe(attempt)

    def calibration(self) -> dict[str, Any]:
        """Figures for choosing thresholds, kept in every mode (`off` included)."""
        with self._lock:
            figures: dict[str, Any] = {}
            for signal in self._signals:
                figures.update(signal.calibration())
            return figures

    def record(self) -> dict[str, Any]:
        """The JSON record of the run so far: names, counts and times only."""
        from .record import make_record

        return make_record(self)

    # -- internals ------------------------------------------------------------------------

    def _clock(self, at: float | None) -> float:
        if at is None:
            at = 0.0 if self.last_at is None else self.last_at + 1.0
        at = float(at)
        if self.first_at is None:
            self.first_at = at
        if self.last_at is not None and at < self.last_at:
            at = self.last_at  # events never go back in time
        self.last_at = at
        self.events += 1
        return at

    def _tool_call(self, call: ToolCall, at: float) -> Verdict:
        ended = self._end_response(at, call)
        rule = self.config.rule(call.name)
        if rule.role == "exempt":
            return ended
        self.actions += 1
        step = self._digest(call, rule, at)
        if self._new_success(step):
            self._policy.progress(step.index)
        verdict = _stronger(ended, self._feed("on_step", at, (step,), call, call))
        if call.error and self._by_hook["on_correction"] and names_invented_tool(text_head(call.result)):
            # A call to a tool that does not exist, refused in its result (Claude Code):
            # the harness correcting the model, as a correction event would.
            key = digest(call.name + "\x00invented")
            verdict = _stronger(verdict, self._feed("on_correction", at, (key, at, self.actions, True), call, call))
        return verdict

    def _digest(self, call: ToolCall, rule: Any, at: float) -> Step:
        """The call as a `Step` (a seam: evaluation replays one session under many
        configurations and digests each call once)."""
        return make_step(
            self.actions,
            call.name,
            call.input,
            call.result,
            call.error,
            tuple(call.changed or ()),
            at,
            rule.role,
            rule.identity,
            call.source_ref,
            rule.ignore or frozenset(),
            call.tree,
        )

    def _new_success(self, step: Step) -> bool:
        """Did this call succeed with something new (a write, or a non-empty result
        the run had not seen from that tool)? Such a call breaks suspicion's
        corroboration by rounds. A result that is only the echo of what was typed
        (`Step.stuck`) is nothing new: the terminal ran nothing."""
        if step.failure is not None or step.stuck:
            return False
        if step.wrote:
            return True
        if step.empty:
            return False
        seen = self._seen
        if step.shape in seen:
            del seen[step.shape]
            seen[step.shape] = None  # most recently seen last
            return False
        seen[step.shape] = None
        if len(seen) > _MAX_SEEN:
            del seen[next(iter(seen))]
        return True

    def _check(self, attempt: Attempt, at: float) -> Verdict:
        if self.config.mode != "enforce":
            return ALLOW
        rule = self.config.rule(attempt.name)
        if rule.role == "exempt":
            return ALLOW
        call = digest_call(attempt.name, identifying(attempt.input, rule.identity, rule.ignore or frozenset()))
        best: tuple[int, Finding, Action] | None = None
        for signal in self._signals:
            finding = signal.predict(call)
            if finding is None:
                continue
            if not finding.grade:
                finding = finding._replace(grade=signal.grade)
            action = self._policy.next_action(finding)
            if action is None or action.rank < Action.BLOCK.rank:
                continue
            if best is None or action.rank > best[0]:
                best = (action.rank, finding, action)
        if best is None:
            return ALLOW
        _, finding, action = best
        self._policy.climb((finding.signal, finding.key))
        label = messages.label(attempt.name, attempt.input)
        verdict = Verdict(
            action,
            signal=finding.signal,
            message=for_model(finding, action, label),
            description=finding.description,
            finding=finding,
            at=at,
            index=self.actions + 1,
            source_ref=attempt.source_ref,
        )
        return self._note(verdict)

    def _text(self, text: ModelText, at: float) -> Verdict:
        verdict = ALLOW
        # Whole chunks are searched for apologies (one regex pass, not one per passage);
        # an apology split across two chunks is missed.
        self._apology = self._apology or is_apology(text.text)
        for passage in self._passages.feed(text.text):
            verdict = _stronger(
                verdict, self._feed("on_passage", at, (_passage_digest(passage), at, self.actions), text)
            )
        if not text.chunk:
            verdict = _stronger(verdict, self._end_response(at, text))
        return verdict

    def _end_response(self, at: float, event: Any = None) -> Verdict:
        verdict = ALLOW
        rest = self._passages.flush()
        if rest is None:
            return verdict
        for passage in rest:
            verdict = _stronger(
                verdict, self._feed("on_passage", at, (_passage_digest(passage), at, self.actions), event)
            )
        apology, self._apology = self._apology, False
        verdict = _stronger(verdict, self._feed("on_text", at, (apology, at, self.actions), event))
        for signal in self._by_hook["on_passage"]:
            signal.reset_response()
        return verdict

    def _output(self, output: Output, at: float) -> Verdict:
        verdict = ALLOW
        for line in self._lines.lines(output.data, output.stream):
            verdict = _stronger(verdict, self._feed("on_line", at, (line, at, self.actions), output))
        return verdict

    def _feed(self, hook: str, at: float, args: tuple[Any, ...], event: Any, call: ToolCall | None = None) -> Verdict:
        """Feed one observation to the signals that take it. `call`, the tool call it
        came from, labels the model's message (worded only when there is one)."""
        findings = []
        for signal in self._by_hook[hook]:
            finding = getattr(signal, hook)(*args)
            if finding is not None:
                # The signal's grade and the event's ref, where the finding has none: the
                # two last fields, set in one new tuple (`_replace` is the costly part of a
                # finding).
                grade = finding.grade or signal.grade
                ref = finding.source_ref
                if ref is None and event is not None:
                    ref = getattr(event, "source_ref", None)
                if grade is not finding.grade or ref is not finding.source_ref:
                    finding = finding._make((*finding[:_FILLED], ref, grade))
                findings.append(finding)
                best = self.strongest.get(signal.name)
                if best is None or finding.severity > best.severity:
                    self.strongest[signal.name] = finding
        if not findings:
            return ALLOW
        verdict = self._policy.decide(
            findings, at, lambda f, a: for_model(f, a, messages.label(call.name, call.input) if call else "")
        )
        return self._note(verdict)

    def _note(self, verdict: Verdict) -> Verdict:
        if verdict.action.rank >= Action.NUDGE.rank:
            # Kept without the message: it may quote the call, which is the model's to
            # read now, never the monitor's to keep.
            kept = verdict._replace(message=None)
            self.interventions_total += 1
            if len(self.interventions) < MAX_INTERVENTIONS:
                self.interventions.append(kept)
            if verdict.action is Action.STOP and self.stop is None:
                self.stop = kept
        return verdict


def text_head(result: Any) -> str:
    """The first 300 characters of a tool result's text."""
    if isinstance(result, str):
        return result[:300]
    return text_of(result)[:300]


def _passage_digest(passage: str) -> bytes:
    # Passages are compared as written, whitespace folded: a model chanting repeats
    # itself verbatim, and full normalization here cost a quarter of a scan.
    return digest(" ".join(passage.split()).lower())


def _stronger(a: Verdict, b: Verdict) -> Verdict:
    if b is ALLOW:  # most events: no need to rank the two
        return a
    return b if b.action.rank > a.action.rank else a
