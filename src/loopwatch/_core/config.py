"""Configuration: mode, profile, each signal's thresholds, and per-tool rules.

A table of settings (as read from TOML) and keyword arguments, validated with a clear
message: an unknown key is refused with the nearest valid name, a repeat threshold of 1
is refused (0 turns a signal off), a similarity above 1 is refused. This module reads
no file and no environment: `loopwatch._configfile` finds and reads `loopwatch.toml` or
`[tool.loopwatch]` in `pyproject.toml`, and applies `LOOPWATCH_MODE`.

Example::

    mode = "enforce"          # off | warn | enforce
    profile = "unattended"    # unattended (stop) | attended (nudge and block)

    [signals.repeat]
    threshold = 3

    [tools.Bash]
    identity = ["command"]    # only these input fields identify a call
    [tools.exec_command]
    ignore = ["yield_time_ms"]  # or: all input fields but these (default: `identity.IGNORED`)
    [tools.Write]
    role = "writer"           # its success is progress
    [tools.BashOutput]
    role = "poller"           # same call, changing result: waiting, not looping

    [evidence]                # when suspicion (see `finding.SUSPICION`) may stop
    confirm = 3               # rounds past the nudge, with no new success between
    second_signal = true      # or another signal conclusive during the streak

    calibration = "auto"      # auto: a recorded source's built-in calibration; none

Evidence settings: a source loopwatch has a calibration for (`calibrations.py`:
measured per transcript format) gets that calibration's thresholds and evidence rule
for every key the configuration does not set itself (`Config.for_source`); anything
else (a live hook, an unknown format) gets the careful defaults: suspicion only nudges
(`confirm = 0`, `second_signal = false`). `loopwatch calibrate --write FILE` writes such
a file from a team's own runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, TypeVar

from .identity import IGNORED

__all__ = ["MODES", "PROFILES", "WRITERS", "Config", "ConfigError", "ToolRule", "check_keys", "params_with"]

MODES = ("off", "warn", "enforce")
PROFILES = ("unattended", "attended")
ROLES = ("", "writer", "poller", "exempt")

#: The ladder each profile climbs for a conclusive streak, one rung per continuation.
#: Unattended (benchmarks, CI, cron): nobody is watching, so after one ignored nudge
#: the run is stopped; a block would only cost another model turn. Attended: a person
#: is watching, so nudge then block, and stop only when `stop = true` is set.
LADDERS = {
    "unattended": ("nudge", "stop"),
    "attended": ("nudge", "block"),
    "attended+stop": ("nudge", "block", "stop"),
}


class ConfigError(ValueError):
    """Bad configuration: the message says which key and why."""


class ToolRule(NamedTuple):
    """How one tool's calls are identified and judged.

    `identity`: the only input fields that identify a call (None: see `ignore`).
    `role`: "writer" (its success is progress), "poller" (same call, changing result
    is waiting), "exempt" (never counted), or "" (ordinary).
    `ignore`: without `identity`, the input fields that do not identify a call (None:
    the tool's default from `identity.IGNORED`; empty: the whole input identifies it)."""

    identity: tuple[str, ...] | None = None
    role: str = ""
    ignore: frozenset[str] | None = None


class Config(NamedTuple):
    """A validated configuration. Build with `Config.make(...)` or `loopwatch.load_config`."""

    mode: str = "enforce"
    profile: str = "unattended"
    stop: bool = False  # attended profile only: allow stopping the run
    warn_every: float = 120.0  # seconds of event time between warnings
    signals: Mapping[str, Any] = MappingProxyType({})
    tools: Mapping[str, ToolRule] = MappingProxyType({})
    #: Conclusive rounds past its nudge after which a suspicion streak may climb
    #: (0: never by rounds). 0 by default: with no calibration suspicion only nudges
    #: (on the shared corpus that alone gives 48% recall and 3 stops on successful
    #: sessions, all by proof). The measured sources' calibrations set 1, chosen by
    #: every fold of `loopwatch evaluate --labels ../shared/corpus/labels.tsv --outcomes
    #: ../shared/corpus/MANIFEST.tsv --folds 5 --margin 0` (76% recall out of fold, no
    #: more stops on successful sessions; BENCHMARKS.md).
    confirm: int = 0
    #: A second signal conclusive during a suspicion streak corroborates it. False by
    #: default; out of fold 3 folds of 5 chose true, to no effect once `confirm = 1`.
    second_signal: bool = False
    #: "auto" (apply a source's built-in calibration) or "none".
    calibration: str = "auto"
    #: The calibration in force: a source's name, or "" for none.
    calibrated: str = ""
    #: Dotted keys the configuration set itself (`signals.repeat.threshold`,
    #: `evidence.confirm`): a calibration never overrides them.
    given: frozenset[str] = frozenset()

    @property
    def ladder(self) -> tuple[str, ...]:
        if self.profile == "attended":
            return LADDERS["attended+stop" if self.stop else "attended"]
        return LADDERS["unattended"]

    def params(self, signal: str) -> Any:
        given = self.signals.get(signal)
        if given is None:  # a signal registered after this configuration was made
            from .signals import SIGNALS

            return SIGNALS[signal].Params()
        return given

    def rule(self, tool: str) -> ToolRule:
        """The rule for `tool`'s calls: the configuration's, with the tool's default
        identity (`identity.IGNORED`) where it sets none; a writer by default (`WRITERS`)."""
        given = self.tools.get(tool)
        if given is None:
            return _DEFAULT_RULES.get(tool, _DEFAULT_RULE)
        if given.identity is None and given.ignore is None and tool in IGNORED:
            return given._replace(ignore=IGNORED[tool])
        return given

    def for_source(self, source: str | None) -> Config:
        """This configuration with the built-in calibration of `source` (a reader's
        format name) applied to every key it does not set itself; unchanged when there
        is none, or with `calibration = "none"`."""
        if not source or self.calibration == "none":
            return self
        from .calibrations import CALIBRATIONS

        profile = CALIBRATIONS.get(source)
        if profile is None:
            return self
        return self.with_calibration(profile, source)

    def with_calibration(self, profile: Mapping[str, Any], name: str) -> Config:
        """Apply a calibration (`{"signals": {...}, "evidence": {...}}`) to the keys
        this configuration does not set itself."""
        given = self.given
        signals = dict(self.signals)
        for signal, values in profile.get("signals", {}).items():
            if signal not in signals:
                continue
            keep = {k: v for k, v in values.items() if f"signals.{signal}.{k}" not in given}
            if keep:
                signals[signal] = signals[signal]._replace(**keep)
        evidence = {k: v for k, v in profile.get("evidence", {}).items() if f"evidence.{k}" not in given}
        return self._replace(signals=signals, calibrated=name, **evidence)

    @classmethod
    def make(cls, data: Mapping[str, Any] | None = None, **kwargs: Any) -> Config:
        """Validate a mapping (as read from TOML) merged with keyword arguments.

        Signal thresholds may be given as `signals={"repeat": {"threshold": 4}}`. The
        environment is not read (`loopwatch._configfile.apply_env` applies it)."""
        if data is not None and not isinstance(data, Mapping):
            raise ConfigError(f"expected a table of settings, got {type(data).__name__}")
        merged: dict[str, Any] = dict(data or {})
        for key, value in kwargs.items():
            if key in ("signals", "tools") and isinstance(value, Mapping):
                inner = {k: dict(v) if isinstance(v, Mapping) else v for k, v in dict(merged.get(key, {})).items()}
                for name, sub in value.items():
                    if isinstance(sub, Mapping) and isinstance(inner.get(name), Mapping):
                        inner[name] = {**inner[name], **sub}
                    else:
                        inner[name] = sub
                merged[key] = inner
            else:
                merged[key] = value
        return _validate(merged)


_DEFAULT_RULE = ToolRule()

#: Tools that write files under the names agents and frameworks commonly give them:
#: writers unless `[tools.X]` says otherwise, so an edit between two failing test runs
#: is progress (an edit/test loop is not "the same error" repeated). Claude Code's
#: editing tools, Codex's patch tool, the SWE-agent/OpenHands and Anthropic text
#: editors, Gemini CLI's, and the usual framework spellings. (A host whose writing tools
#: have names too common to be writers everywhere says so itself: `hosts.monitors`.)
WRITERS = frozenset(
    {
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "apply_patch",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "write_file",
        "replace",
        "edit_file",
        "create_file",
    }
)
_DEFAULT_RULES = {
    tool: ToolRule(role="writer" if tool in WRITERS else "", ignore=IGNORED.get(tool))
    for tool in IGNORED.keys() | WRITERS
}

#: Largest count or number of seconds a setting may hold. A threshold past a million
#: calls, lines or seconds (11 days) never fires in any session recorded so far (the
#: longest corpus session has under 2,000 actions), and values near 2**63 overflow the
#: C-sized containers they size (`cycle.repeats = 9223372036854775807` raised
#: OverflowError on the first call). One rule for every numeric setting; each signal's
#: own `check()` then says what is meaningful for it.
MAX_NUMBER = 1_000_000


def _number_problem(value: Any) -> str | None:
    """What makes a number unusable as any setting: NaN, infinity, or past MAX_NUMBER."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if abs(value) > MAX_NUMBER:
        return f"{value!r} is out of range (at most {MAX_NUMBER:,})"
    return None


def _nearest(key: str, valid: list[str]) -> str:
    import difflib  # only on an error

    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join(sorted(valid))})"


def check_keys(where: str, given: Mapping[str, Any], valid: list[str]) -> None:
    """Refuse a key of `given` not in `valid`, naming the nearest valid one."""
    for key in given:
        if key not in valid:
            raise ConfigError(f"{where}unknown key {key!r}{_nearest(str(key), valid)}")


def _validate(data: Mapping[str, Any]) -> Config:
    from .signals import SIGNALS  # the registry; imported here to keep config light

    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a table of settings, got {type(data).__name__}")
    top = ["mode", "profile", "stop", "warn_every", "signals", "tools", "hook", "evidence", "calibration"]
    check_keys("", data, top)
    # `[hook]` holds the settings of `loopwatch hook` (fail open or closed, limits);
    # the hook validates them itself, the core only accepts the table.
    if not isinstance(data.get("hook", {}), Mapping):
        raise ConfigError("hook: expected a table of hook settings")
    mode = data.get("mode", "enforce")
    if mode not in MODES:
        raise ConfigError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
    profile = data.get("profile", "unattended")
    if profile not in PROFILES:
        raise ConfigError(f"profile: {profile!r} is not one of {', '.join(PROFILES)}")
    stop = data.get("stop", False)
    if not isinstance(stop, bool):
        raise ConfigError(f"stop: expected true or false, got {stop!r}")
    warn_every = data.get("warn_every", 120.0)
    if isinstance(warn_every, bool) or not isinstance(warn_every, (int, float)) or not warn_every >= 0:
        raise ConfigError(f"warn_every: expected seconds >= 0, got {warn_every!r}")
    if problem := _number_problem(warn_every):
        raise ConfigError(f"warn_every: {problem}")

    raw_signals = data.get("signals", {})
    if not isinstance(raw_signals, Mapping):
        raise ConfigError("signals: expected a table of signal names")
    check_keys("signals: ", raw_signals, list(SIGNALS))
    signals: dict[str, _Params] = {}
    for name, cls in SIGNALS.items():
        given = raw_signals.get(name, {})
        if not isinstance(given, Mapping):
            raise ConfigError(f"signals.{name}: expected a table of thresholds")
        signals[name] = _make_params(f"signals.{name}", cls.Params, given)

    evidence = data.get("evidence", {})
    if not isinstance(evidence, Mapping):
        raise ConfigError("evidence: expected a table with confirm and/or second_signal")
    check_keys("evidence: ", evidence, ["confirm", "second_signal"])
    confirm = evidence.get("confirm", 0)
    if isinstance(confirm, bool) or not isinstance(confirm, int) or confirm < 0:
        raise ConfigError(
            f"evidence.confirm: expected rounds >= 0 (0: suspicion never stops by rounds), got {confirm!r}"
        )
    second = evidence.get("second_signal", False)
    if not isinstance(second, bool):
        raise ConfigError(f"evidence.second_signal: expected true or false, got {second!r}")
    calibration = data.get("calibration", "auto")
    if calibration not in ("auto", "none"):
        raise ConfigError(f"calibration: {calibration!r} is not one of auto, none")
    given = {f"evidence.{k}" for k in evidence}
    given.update(f"signals.{name}.{k}" for name, values in raw_signals.items() for k in values)

    raw_tools = data.get("tools", {})
    if not isinstance(raw_tools, Mapping):
        raise ConfigError("tools: expected a table of tool names")
    tools = {}
    for tool, rule in raw_tools.items():
        if not isinstance(rule, Mapping):
            raise ConfigError(f"tools.{tool}: expected a table with identity, ignore and/or role")
        check_keys(f"tools.{tool}: ", rule, ["identity", "ignore", "role"])
        if "identity" in rule and "ignore" in rule:
            raise ConfigError(f"tools.{tool}: set identity (only these fields) or ignore (all but these), not both")
        identity = rule.get("identity")
        if identity is not None:
            identity = _field_names(f"tools.{tool}.identity", identity)
            if not identity:
                raise ConfigError(
                    f"tools.{tool}.identity: expected at least one input field name (none would make every call the same)"
                )
        ignore = rule.get("ignore")
        if ignore is not None:
            ignore = frozenset(_field_names(f"tools.{tool}.ignore", ignore))
        role = rule.get("role", "writer" if tool in WRITERS else "")  # a writer stays one unless told
        if role not in ROLES:
            raise ConfigError(f"tools.{tool}.role: {role!r} is not one of writer, poller, exempt")
        tools[str(tool)] = ToolRule(identity=identity, role=role, ignore=ignore)
    return Config(
        mode=mode,
        profile=profile,
        stop=stop,
        warn_every=float(warn_every),
        signals=signals,
        tools=tools,
        confirm=confirm,
        second_signal=second,
        calibration=calibration,
        given=frozenset(given),
    )


def _field_names(where: str, value: Any) -> tuple[str, ...]:
    """A list of distinct, non-empty input field names, as given."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) and x for x in value):
        raise ConfigError(f"{where}: expected a list of input field names, got {value!r}")
    for name in value:
        if value.count(name) > 1:
            raise ConfigError(f"{where}: {name!r} is listed twice")
    return tuple(value)


class _Params(Protocol):
    """What a signal's `Params` is to the loader: a NamedTuple of thresholds, built from
    keyword arguments (every field has a default), maybe with a `check()` that names a
    problem."""

    @property
    def _fields(self) -> tuple[str, ...]: ...


_P = TypeVar("_P", bound=_Params)


def _make_params(where: str, params_cls: type[_P], given: Mapping[str, Any]) -> _P:
    return params_with(where, params_cls(), given)


def params_with(where: str, params: _P, given: Mapping[str, Any]) -> _P:
    """`params` with the fields in `given` changed, each checked as a value read from a
    configuration file is (its type, the range every number keeps, the signal's own
    rules): a ConfigError naming `where`.field otherwise. For settings a command derives
    from its options, so that an option's bad value is refused as one, before any
    monitor is made."""
    names = list(params._fields)
    check_keys(f"{where}: ", given, names)
    values: dict[str, Any] = {name: getattr(params, name) for name in names}
    for name in names:
        if name not in given:
            continue
        value = given[name]
        expected = type(getattr(params, name))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not expected:
            raise ConfigError(f"{where}.{name}: expected {expected.__name__}, got {value!r}")
        if expected in (int, float) and (problem := _number_problem(value)):
            raise ConfigError(f"{where}.{name}: {problem}")
        values[name] = value
    params = type(params)(**values)
    check = getattr(params, "check", None)
    if check is not None:
        problem = check()
        if problem:
            raise ConfigError(f"{where}.{problem}")
    return params
