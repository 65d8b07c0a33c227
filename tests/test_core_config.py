"""Configuration: keyword arguments, TOML files, validation with clear errors."""

from __future__ import annotations

import pytest

from loopwatch import Config, ConfigError, Monitor, ToolRule, load_config
from loopwatch._configfile import apply_env
from loopwatch._core.signals import SIGNALS

from core_support import OFF, bash, feed, only, strongest
from loopwatch import Action


def test_every_signal_can_be_turned_off_and_each_alone_on():
    assert set(OFF) == set(SIGNALS)
    assert Monitor(signals=OFF)._signals == []
    for name in SIGNALS:
        assert [s.name for s in only(name)._signals] == [name]


def test_defaults():
    config = Config.make()
    assert (config.mode, config.profile, config.stop) == ("enforce", "unattended", False)
    assert set(config.signals) == set(SIGNALS)
    assert config.rule("Read") == ToolRule()
    # Claude Code's Bash: what it runs identifies a call, not what it says about it.
    assert config.rule("Bash") == ToolRule(ignore=frozenset({"description", "timeout", "run_in_background"}))


def test_keyword_thresholds_merge_with_the_defaults():
    config = Config.make({"signals": {"repeat": {"threshold": 5}}}, signals={"cycle": {"repeats": 4}})
    assert config.params("repeat").threshold == 5
    assert config.params("cycle").repeats == 4
    assert config.params("cycle").max_period == SIGNALS["cycle"].Params().max_period


def test_keywords_override_the_mapping():
    config = Config.make(
        {"mode": "warn", "signals": {"repeat": {"threshold": 5}}}, mode="enforce", signals={"repeat": {"threshold": 7}}
    )
    assert config.mode == "enforce" and config.params("repeat").threshold == 7


@pytest.mark.parametrize(
    "signal, key",
    [
        ("repeat", "threshold"),
        ("same_error", "threshold"),
        ("correction", "threshold"),
        ("apology", "threshold"),
        ("cycle", "repeats"),
        ("repeated_lines", "repeats"),
        ("chanting", "repeats"),
        ("retry_storm", "retries"),
        ("echo", "turns"),
        ("stagnation", "replays"),
    ],
)
def test_a_threshold_of_one_is_refused(signal, key):
    with pytest.raises(ConfigError, match=rf"signals\.{signal}\.{key}"):
        Config.make(signals={signal: {key: 1}})


@pytest.mark.parametrize("signal, key", [("repeat", "threshold"), ("cycle", "repeats"), ("echo", "turns")])
def test_a_negative_threshold_is_refused(signal, key):
    with pytest.raises(ConfigError, match=rf"signals\.{signal}\.{key}"):
        Config.make(signals={signal: {key: -2}})


def test_zero_turns_a_signal_off():
    m = Monitor(signals={"repeat": {"threshold": 0}, **{k: v for k, v in OFF.items() if k != "repeat"}})
    assert not m.config.params("repeat").enabled
    assert strongest(feed(m, [bash("ls", "a") for _ in range(30)])) is Action.ALLOW


@pytest.mark.parametrize("value", [1.01, 2, 0.0, -0.5])
def test_a_similarity_outside_zero_to_one_is_refused(value):
    with pytest.raises(ConfigError, match=r"signals\.echo\.similarity"):
        Config.make(signals={"echo": {"similarity": value}})


def test_a_similarity_of_one_is_accepted():
    assert Config.make(signals={"echo": {"similarity": 1}}).params("echo").similarity == 1.0


@pytest.mark.parametrize(
    "data, where, nearest",
    [
        ({"mdoe": "warn"}, "unknown key 'mdoe'", "mode"),
        ({"profiel": "attended"}, "unknown key 'profiel'", "profile"),
        ({"signals": {"repeats": {}}}, "signals: unknown key 'repeats'", "repeat"),
        ({"signals": {"repeat": {"treshold": 3}}}, "signals.repeat: unknown key 'treshold'", "threshold"),
        ({"signals": {"cycle": {"max_periods": 3}}}, "signals.cycle: unknown key 'max_periods'", "max_period"),
        ({"tools": {"Bash": {"identiy": ["command"]}}}, "tools.Bash: unknown key 'identiy'", "identity"),
    ],
)
def test_an_unknown_key_is_refused_with_the_nearest_valid_name(data, where, nearest):
    with pytest.raises(ConfigError) as info:
        Config.make(data)
    assert where in str(info.value)
    assert f"did you mean {nearest!r}" in str(info.value)


def test_an_unknown_key_far_from_any_name_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="valid: .*mode.*profile"):
        Config.make({"zzzzzz": 1})


@pytest.mark.parametrize(
    "data, match",
    [
        ({"mode": "loud"}, "mode: 'loud' is not one of off, warn, enforce"),
        ({"profile": "cron"}, "profile: 'cron' is not one of unattended, attended"),
        ({"stop": "yes"}, "stop: expected true or false"),
        ({"warn_every": -1}, "warn_every"),
        ({"signals": {"repeat": {"threshold": "3"}}}, r"signals\.repeat\.threshold: expected int"),
        ({"signals": {"repeat": {"threshold": True}}}, r"signals\.repeat\.threshold: expected int"),
        ({"signals": {"repeat": 3}}, r"signals\.repeat: expected a table"),
        ({"tools": {"Bash": {"role": "reader"}}}, r"tools\.Bash\.role: 'reader'"),
        ({"tools": {"Bash": {"identity": "command"}}}, r"tools\.Bash\.identity: expected a list"),
        ({"tools": {"Bash": "writer"}}, r"tools\.Bash: expected a table"),
    ],
)
def test_bad_values_are_refused_clearly(data, match):
    with pytest.raises(ConfigError, match=match):
        Config.make(data)


def test_loopwatch_mode_off_in_the_environment_disables_everything():
    assert apply_env(Config.make(mode="enforce"), {"LOOPWATCH_MODE": "off"}).mode == "off"
    assert apply_env(Config.make(), {"LOOPWATCH_MODE": " Warn "}).mode == "warn"
    assert apply_env(Config.make(mode="warn"), {"LOOPWATCH_MODE": ""}).mode == "warn"
    assert load_config(mode="enforce", env={"LOOPWATCH_MODE": "off"}).mode == "off"


def test_a_bad_loopwatch_mode_is_refused():
    with pytest.raises(ConfigError, match="LOOPWATCH_MODE='disabled'"):
        apply_env(Config.make(), {"LOOPWATCH_MODE": "disabled"})


def test_the_core_reads_no_environment(monkeypatch):
    # the pure core: only loopwatch._configfile (the CLI, the hook, Guard) applies it
    monkeypatch.setenv("LOOPWATCH_MODE", "off")
    assert Config.make(mode="enforce").mode == "enforce"
    assert Monitor(mode="warn").config.mode == "warn"
    assert apply_env(Config.make(mode="enforce")).mode == "off"  # this process's environment


def test_tool_rules():
    config = Config.make(
        tools={
            "Bash": {"identity": ["command"]},
            "Write": {"role": "writer"},
            "BashOutput": {"role": "poller"},
            "TodoWrite": {"role": "exempt"},
        }
    )
    assert config.rule("Bash") == ToolRule(identity=("command",))
    assert config.rule("Write").role == "writer"
    assert config.rule("BashOutput").role == "poller"
    assert config.rule("TodoWrite").role == "exempt"
    assert config.rule("Read") == ToolRule()


# -- files ------------------------------------------------------------------------------

TOML = """
mode = "warn"
profile = "attended"
stop = true

[signals.repeat]
threshold = 5

[signals.echo]
similarity = 0.95

[tools.Bash]
identity = ["command"]

[tools.Write]
role = "writer"
"""


def check_loaded(config: Config) -> None:
    assert (config.mode, config.profile, config.stop) == ("warn", "attended", True)
    assert config.params("repeat").threshold == 5
    assert config.params("echo").similarity == 0.95
    assert config.rule("Bash").identity == ("command",)
    assert config.rule("Write").role == "writer"


def test_loads_loopwatch_toml(tmp_path):
    (tmp_path / "loopwatch.toml").write_text(TOML)
    check_loaded(load_config(start=tmp_path))
    check_loaded(load_config(tmp_path / "loopwatch.toml"))


def test_loads_tool_loopwatch_from_pyproject(tmp_path):
    body = TOML.replace("[signals.", "[tool.loopwatch.signals.").replace("[tools.", "[tool.loopwatch.tools.")
    head, _, rest = body.partition("[tool.loopwatch.signals.repeat]")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.loopwatch]\n' + head + "[tool.loopwatch.signals.repeat]" + rest
    )
    check_loaded(load_config(start=tmp_path))


def test_finds_the_file_in_a_parent_folder(tmp_path):
    (tmp_path / "loopwatch.toml").write_text(TOML)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    check_loaded(load_config(start=deep))


def test_a_pyproject_without_loopwatch_is_skipped(tmp_path):
    (tmp_path / "loopwatch.toml").write_text('mode = "off"\n')
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_config(start=inner).mode == "off"


def test_no_file_gives_the_defaults(tmp_path):
    assert load_config(start=tmp_path) == Config.make()


def test_keywords_override_the_file(tmp_path):
    (tmp_path / "loopwatch.toml").write_text(TOML)
    config = load_config(start=tmp_path, mode="enforce", signals={"repeat": {"threshold": 9}})
    assert config.mode == "enforce" and config.params("repeat").threshold == 9
    assert config.params("echo").similarity == 0.95


def test_the_environment_overrides_the_file(tmp_path):
    (tmp_path / "loopwatch.toml").write_text(TOML)
    assert load_config(start=tmp_path, env={"LOOPWATCH_MODE": "off"}).mode == "off"


def test_errors_in_a_file_name_the_file(tmp_path):
    path = tmp_path / "loopwatch.toml"
    path.write_text("[signals.repeat]\ntreshold = 3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value) and "did you mean 'threshold'" in str(info.value)


def test_invalid_toml_is_refused(tmp_path):
    path = tmp_path / "loopwatch.toml"
    path.write_text("mode = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.toml")


# -- one rule for every numeric setting, and files that are not what they should be ----

_PROBES = (-1, 0, 1, 2, 3, 15, 16, 17, 10**6, 10**6 + 1, 2**63 - 1, float("nan"), float("inf"), -float("inf"))


def _numeric_params():
    for name, cls in SIGNALS.items():
        defaults = cls.Params()
        for field in cls.Params._fields:
            kind = type(getattr(defaults, field))
            if kind in (int, float):
                yield name, field, kind


@pytest.mark.parametrize("signal,key,kind", list(_numeric_params()))
def test_every_numeric_setting_is_refused_clearly_or_works(signal, key, kind):
    """Every value is either refused with a ConfigError naming the key, or gives a
    monitor that runs; a message that says `between A and B` means what it says."""
    import math
    import re

    for value in _PROBES:
        if kind is int and isinstance(value, float):
            continue
        try:
            monitor = Monitor(signals={signal: {key: value}})
        except ConfigError as exc:
            assert f"signals.{signal}." in str(exc)  # this key, or one it must agree with
            bounds = re.search(r"between (\d+) and (\d+)", str(exc)) if f".{key}:" in str(exc) else None
            if bounds:
                low, high = map(int, bounds.groups())
                off = "0 turns it off" in str(exc)
                assert not low <= value <= high, f"{value} is within the bounds the message gives: {exc}"
                for inside in (low, high):
                    Monitor(signals={signal: {key: inside}})  # must be accepted
                if low - 1 >= 0 and not (off and low - 1 == 0):
                    with pytest.raises(ConfigError):
                        Monitor(signals={signal: {key: low - 1}})
            continue
        assert not (isinstance(value, float) and not math.isfinite(value)), f"{value} was accepted"
        feed(monitor, [bash("pytest", "E fail", error=True) for _ in range(6)])


def test_warn_every_must_be_finite():
    for value in (float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="warn_every"):
            Config.make({"warn_every": value})


def test_the_huge_repeats_of_the_issue_are_refused_not_an_overflow():
    with pytest.raises(ConfigError, match=r"signals\.cycle\.repeats: .*out of range"):
        Config.make({"signals": {"cycle": {"repeats": 9223372036854775807}}})


def test_cycle_max_period_1_is_refused_as_the_message_says():
    with pytest.raises(ConfigError, match="between 2 and 16"):
        Config.make({"signals": {"cycle": {"max_period": 1}}})


@pytest.mark.parametrize(
    "name,content,match",
    [
        ("loopwatch.toml", b'mode = "warn"\n# caf\xe9\n', "not UTF-8"),
        ("pyproject.toml", b"tool = 5\n", "tool: expected a table"),
        ("pyproject.toml", b"[tool]\nloopwatch = [1]\n", "tool.loopwatch: expected a table"),
        ("loopwatch.toml", b"[signals.cycle]\nrepeats = 9223372036854775807\n", "out of range"),
        ("loopwatch.toml", b"warn_every = nan\n", "warn_every"),
    ],
)
def test_broken_files_are_one_clear_config_error(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    for source in (path, None):  # named, and found from the folder
        with pytest.raises(ConfigError, match=match) as info:
            load_config(source, start=tmp_path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "content",
    [
        b'mode = "warn"\n# caf\xe9\n',
        b"tool = 5\n",
        b"[tool]\nloopwatch = [1]\n",
        b"[signals.cycle]\nrepeats = 9223372036854775807\n",
    ],
)
@pytest.mark.parametrize("command", ["scan", "evaluate", "calibrate", "run"])
def test_every_command_answers_a_broken_config_with_one_line_and_2(tmp_path, content, command):
    import subprocess
    import sys
    from pathlib import Path

    name = "pyproject.toml" if content.startswith((b"tool", b"[tool]")) else "loopwatch.toml"
    (tmp_path / name).write_bytes(content)
    (tmp_path / "s.jsonl").write_text('{"type": "tool", "name": "Bash", "input": {"command": "ls"}, "result": ""}\n')
    (tmp_path / "labels.tsv").write_text("local_path\tlabel\tonset_step\tend_step\ns.jsonl\tno\t\t\n")
    args = {
        "run": ["run", "--", "true"],
        "scan": ["scan", "s.jsonl"],
        "evaluate": ["evaluate", "--labels", "labels.tsv"],
        "calibrate": ["calibrate", "s.jsonl"],
    }[command]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    ran = subprocess.run(
        [sys.executable, "-m", "loopwatch", *args], cwd=tmp_path, env=env, capture_output=True, timeout=60
    )
    assert ran.returncode == 2, ran.stderr
    assert b"Traceback" not in ran.stderr
    assert b"toml" in ran.stderr  # the error names the file, not a usage problem


def test_common_editing_tools_are_writers_by_default():
    from loopwatch._core.config import WRITERS

    config = Config.make()
    for name in ("Edit", "Write", "MultiEdit", "str_replace_editor", "apply_patch", "write_file", "replace"):
        assert name in WRITERS and config.rule(name).role == "writer", name
    assert config.rule("Bash").role == "" and config.rule("read_file").role == ""
    # Saying how an editor's calls are identified keeps it a writer; saying its role wins.
    config = Config.make(tools={"Edit": {"identity": ["file_path"]}, "replace": {"role": ""}})
    assert config.rule("Edit") == ToolRule(identity=("file_path",), role="writer")
    assert config.rule("replace").role == ""


def test_an_edit_between_failing_test_runs_is_progress():
    """pytest fails, Edit, pytest fails, Edit, ...: a test-driven loop, not the same error.
    While the edits change what the test says, nothing is said; when eight edits leave the
    identical failure, only `unchanged` may say so, and only as a nudge."""
    from loopwatch import Monitor, ToolCall

    for moving in (True, False):
        monitor = Monitor(profile="unattended")
        verdicts = []
        for i in range(8):
            name = ("total", "tax", "discount", "coupon", "refund", "shipping", "currency", "rounding")[
                i if moving else 0
            ]
            failing = f"FAILED tests/test_cart.py::test_{name} - AssertionError\n1 failed in 0.1s"
            verdicts.append(
                monitor.observe(ToolCall("Bash", {"command": "pytest -x"}, failing, error=True, at=2.0 * i))
            )
            verdicts.append(
                monitor.observe(ToolCall("Edit", {"file_path": "cart.py", "old_string": f"v{i}"}, "ok", at=2.0 * i + 1))
            )
        said = [(v.action.value, v.signal) for v in verdicts if v.action.value != "allow"]
        if moving:
            assert said == []
        else:
            assert said and {signal for _, signal in said} == {"unchanged"}, said
            assert {action for action, _ in said} <= {"warn", "nudge"}, said
