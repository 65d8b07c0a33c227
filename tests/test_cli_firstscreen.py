"""What a new user meets first, held to what it should be: output that pipes (plain lines
within 100 columns, no escape, no box drawing, names whole), on a terminal no colour
inside a path, one harm vocabulary, `doctor` as a check, `install` saying what it
wrote, the report's summary and `--open`, and the small words."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopwatch import Monitor
from loopwatch._analysis.evaluation import HARM, TERMS
from loopwatch._core.messages import RecurringError

from conftest import EXAMPLES, healthy_events, jsonl, looping_events
from terminal_support import ESCAPE, in_terminal, shown

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
FIXTURES = ROOT / "tests" / "fixtures"
WIDTH = 100
BOX = re.compile("[\u2500-\u257f]")  # box drawing: what rich's tables are made of


def loopwatch(*args, env=None, cwd=None) -> subprocess.CompletedProcess[str]:
    """`loopwatch ARGS` with stdout and stderr piped, as `| cat` sees them. A process of its
    own reads the machine's settings in /etc (`install`, `doctor`): it holds the locks a
    real-CLI test that writes there takes (`real_clis.etc_lock`), so it never sees theirs."""
    from real_clis import etc_lock

    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "NO_COLOR")}
    with etc_lock("claude-code", exclusive=False), etc_lock("codex", exclusive=False):
        return subprocess.run(
            [sys.executable, "-m", "loopwatch", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=cwd,
            env={**base, "PYTHONPATH": str(SRC), **(env or {})},
            timeout=300,
            check=False,
            stdin=subprocess.DEVNULL,
        )


def assert_plain(text: str) -> None:
    """Lines within 100 columns, no escape sequence and no box drawing."""
    assert ESCAPE not in text
    assert not BOX.search(text), BOX.search(text)
    too_long = [line for line in text.splitlines() if len(line) > WIDTH]
    assert too_long == []


def bundled() -> list[Path]:
    """Every bundled example: each transcript of examples/ and each folder of tests/fixtures."""
    from loopwatch._cli.paths import is_transcript_name

    found = sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and is_transcript_name(p.name))
    found += sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    return found


# -- output that pipes -------------------------------------------------------------------


@pytest.mark.parametrize("path", bundled(), ids=lambda p: str(p.relative_to(ROOT)))
def test_scan_of_every_bundled_example_piped_is_plain_lines_within_100_columns(path):
    done = loopwatch("scan", "--no-progress", path)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.strip()
    assert_plain(done.stdout)
    assert ESCAPE not in done.stderr


def test_scan_of_everything_bundled_at_once_is_plain(tmp_path):
    done = loopwatch("scan", "--no-progress", EXAMPLES, FIXTURES)
    assert "Scanned" in done.stdout
    assert_plain(done.stdout)


def test_scan_names_long_paths_whole_once_the_fold_is_undone(tmp_path):
    deep = tmp_path / ("a-folder-with-a-long-name-" * 3) / ("another-one-" * 4)
    deep.mkdir(parents=True)
    loop = deep / "the-session-that-went-round-and-round-for-ever-and-ever.jsonl"
    loop.write_text(jsonl(looping_events()))
    done = loopwatch("scan", "--no-progress", loop)
    assert done.returncode == 1
    assert_plain(done.stdout)
    assert str(loop) in "".join(line.strip() for line in done.stdout.splitlines())  # folded, never cut


@pytest.mark.parametrize("extra", [(), ("--labels", "{labels}")])
def test_calibrate_piped_is_plain_and_tells_long_names_apart(tmp_path, extra):
    runs = tmp_path / "runs"
    runs.mkdir()
    names = [f"swe-task-{'x' * 30}-{n}-attempt-{'y' * 20}-{n}.jsonl" for n in (1, 2)]
    for name in names:
        (runs / name).write_text(jsonl(looping_events()))
    labels = tmp_path / "labels.tsv"
    labels.write_text("local_path\tlabel\tonset_step\tend_step\n" + "".join(f"{n}\tyes\t1\t6\n" for n in names))
    args = [a.format(labels=labels) for a in extra]
    done = loopwatch("calibrate", "--no-progress", *args, *(["--corpus", "runs"] if extra else ["runs"]), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_plain(done.stdout)
    for name in names:  # whole: a name cut at both ends cannot be told from the other
        assert name in done.stdout


def test_evaluate_piped_is_plain_and_defines_its_words(tmp_path):
    labels = tmp_path / "labels.tsv"
    labels.write_text("local_path\tlabel\tonset_step\tend_step\nrunaway.jsonl\tyes\t5\t47\nhealthy.jsonl\tno\t\t\n")
    done = loopwatch("evaluate", "--no-progress", "--labels", labels, "--corpus", EXAMPLES)
    assert done.returncode == 0, done.stderr
    assert_plain(done.stdout)
    flat = " ".join(done.stdout.split())
    for key in ("false", *HARM, "early"):  # the yardstick's words, each with its meaning
        assert f"{TERMS[key].name}: {' '.join(TERMS[key].meaning.split())}" in flat, key


def test_on_a_terminal_evaluate_colours_nothing_inside_a_path(tmp_path):
    runs = tmp_path / "run-2026-01-07" / "batch-42"
    runs.mkdir(parents=True)
    (runs / "loop-1234.jsonl").write_text(jsonl(looping_events()))
    outcomes = runs / "outcomes.tsv"
    outcomes.write_text("path\tresolved\nloop-1234.jsonl\tyes\n")  # solved: its stop is listed by path
    status, text = in_terminal("evaluate", "--no-progress", "--outcomes", outcomes, str(runs), columns=200)
    assert status == 0, text
    path = str(runs / "loop-1234.jsonl")
    assert path in shown(text)
    assert path in text  # sent as it is shown: no style switched on and off inside it


def test_on_a_terminal_the_scan_table_fits_the_terminal(tmp_path):
    (tmp_path / "loop.jsonl").write_text(jsonl(looping_events()))
    for columns in (80, 120):
        status, text = in_terminal("scan", "--no-progress", "loop.jsonl", columns=columns, cwd=tmp_path)
        assert status == 1
        assert max(map(len, shown(text).splitlines())) <= columns


# -- one vocabulary ------------------------------------------------------------------------


def test_the_yardstick_words_are_defined_once_and_every_harm_is_in_the_total():
    assert set(HARM) == {"no", "brief", "before_onset"}
    assert "not harm" in TERMS["early"].meaning and "worst" in TERMS["succeeded"].meaning
    names = [term.name for term in TERMS.values()]
    assert len(names) == len(set(names))


def test_evaluate_calibrate_and_the_report_count_a_stop_on_brief_alike(tmp_path):
    pytest.importorskip("jinja2")
    (tmp_path / "loop.jsonl").write_text(jsonl(looping_events()))
    (tmp_path / "calm.jsonl").write_text(jsonl(healthy_events()))
    labels = tmp_path / "labels.tsv"
    labels.write_text("local_path\tlabel\tonset_step\tend_step\nloop.jsonl\tbrief\t1\t6\ncalm.jsonl\tno\t\t\n")
    done = loopwatch("evaluate", "--no-progress", "--json", "--labels", labels)
    assert done.returncode == 0, done.stderr
    evaluated = json.loads(done.stdout)
    stop = evaluated["detectors"]["all"]["stop"]
    assert stop[TERMS["brief"].key] == 1 and stop[TERMS["false"].key] == 1  # a stop on brief is harm
    page = tmp_path / "page.html"
    done = loopwatch("report", "--no-progress", "--labels", labels, "-o", page)
    assert done.returncode == 0, done.stderr
    assert f"{TERMS['false'].name}: 1 (0 on no, 1 on brief, 0 before the onset)" in done.stderr
    calibrated = loopwatch("calibrate", "--no-progress", "--labels", labels)
    assert TERMS["false"].name in calibrated.stdout and TERMS["brief"].name in calibrated.stdout


# -- doctor as a check; install says what it wrote ----------------------------------------------


def _home(tmp_path: Path) -> tuple[dict[str, str], Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    bin_ = tmp_path / "bin"  # this Python, and nothing else: no agent CLI on PATH
    bin_.mkdir()
    env = {"HOME": str(home), "PATH": f"{bin_}:/usr/bin:/bin", "XDG_CONFIG_HOME": str(home / ".config")}
    env = {**env, "LOOPWATCH_STATE_DIR": str(tmp_path / "state")}
    return env, project


def test_doctor_with_nothing_installed_is_a_problem_exit_1(tmp_path):
    env, project = _home(tmp_path)
    done = loopwatch("doctor", env=env, cwd=project)
    assert done.returncode == 1, done.stdout
    assert "doctor: problem: no agent CLI is set up here, so nothing is guarded" in done.stdout
    assert "`loopwatch install`" in done.stdout


def test_doctor_finds_a_project_install_and_says_what_to_do(tmp_path):
    env, project = _home(tmp_path)
    installed = loopwatch("install", "claude-code", "--project", env=env, cwd=project)
    assert installed.returncode == 0, installed.stderr
    assert "loopwatch doctor claude-code" in installed.stdout
    done = loopwatch("doctor", env=env, cwd=project)
    lines = done.stdout.splitlines()
    ours = [line for line in lines if line.startswith("claude-code: ")]
    assert f"claude-code: ok: hook installed for 7 events in {project / '.claude' / 'settings.json'}" in ours
    assert not any("not set up here" in line for line in ours)
    problems = [line for line in lines if ": problem: " in line]
    assert done.returncode == 1 and problems  # `claude` is not on PATH here
    missing = next(line for line in problems if "`claude` not found on PATH" in line)
    assert "install it (`npm install -g @anthropic-ai/claude-code`), or put it on PATH" in missing


def test_install_says_the_interpreter_it_wrote_and_suggests_doctor(tmp_path):
    env, project = _home(tmp_path)
    done = loopwatch("install", "claude-code", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    settings = Path(env["HOME"]) / ".claude" / "settings.json"
    assert f"installed into {settings}" in done.stdout
    said = "Claude Code now runs, around every tool call: "
    (ran,) = [line for line in done.stdout.splitlines() if line.startswith(said)]
    assert ran.startswith(f"{said}{sys.executable} ") and "loopwatch" in ran, ran  # this interpreter, named
    assert "this Python's path is written there" in done.stdout
    assert "Check that it works: loopwatch doctor claude-code" in done.stdout
    assert sys.executable in settings.read_text()


# -- the report: its summary and --open ------------------------------------------------------------


def test_report_says_what_the_page_holds(tmp_path):
    pytest.importorskip("jinja2")
    page = tmp_path / "page.html"
    done = loopwatch("report", "--no-progress", EXAMPLES / "runaway.jsonl", EXAMPLES / "healthy.jsonl", "-o", page)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert said[0] == f"wrote {page}: 2 sessions; paths relative to {EXAMPLES}"
    assert said[1] == "  1 stopped, 0 nudged only"
    assert "each row opens its session's timeline" in said[-1] and "#session=" in said[-1]


def test_report_open_says_so_when_no_browser_starts(tmp_path):
    pytest.importorskip("jinja2")
    page = tmp_path / "page.html"
    done = loopwatch("report", "--no-progress", EXAMPLES, "-o", page, "--open", env={"BROWSER": "false"})
    assert done.returncode == 0, done.stderr
    assert f"could not open a web browser here; open {page.resolve().as_uri()} in one" in done.stderr


def test_the_page_names_calibration_figures_in_words(tmp_path):
    pytest.importorskip("jinja2")
    from loopwatch._analysis.figures import FIGURES

    page = tmp_path / "page.html"
    assert loopwatch("report", "--no-progress", EXAMPLES, "-o", page).returncode == 0
    (blob,) = re.findall(rb'<script type="application/json" id="report-data">(.*?)</script>', page.read_bytes(), re.S)
    data = json.loads(blob)
    assert data["figures"] and set(data["figures"]) <= set(FIGURES)
    for key, figure in data["figures"].items():
        assert figure["name"] and figure["meaning"] and figure["name"] != key
    assert data["terms"]["brief"]["name"] == TERMS["brief"].name


# -- small words ---------------------------------------------------------------------------------


def test_a_labels_file_mistake_is_one_error_line_with_no_usage_block(tmp_path):
    labels = tmp_path / "labels.tsv"
    labels.write_text("local_path\tlabel\tonset_step\tend_step\nloop.jsonl\tbrief\t\t\n")
    for args in (("evaluate",), ("report", "-o", tmp_path / "page.html"), ("calibrate",)):
        done = loopwatch(*args, "--no-progress", "--labels", labels)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.splitlines() == [f"Error: {labels}: line 2: a brief label needs onset_step and end_step"]


def test_an_error_from_one_call_is_said_so():
    one = RecurringError("Bash", count=3, calls=1, capped=False).text()
    assert "came back 3 times from one call" in one and "different" not in one
    many = RecurringError("Bash", count=3, calls=3, capped=True).text()
    assert "from 3 or more different calls" in many


def test_the_nudge_and_the_stop_of_one_cycle_name_it_alike():
    from loopwatch import Action, ToolCall

    monitor = Monitor(mode="enforce")
    said = []
    at = 0.0
    for _ in range(10):
        for name, command in (("Read", "cat a.py"), ("Bash", "pytest"), ("Grep", "grep x")):
            at += 20.0
            verdict = monitor.observe(ToolCall(name=name, input={"command": command}, result="same", at=at))
            if verdict.action in (Action.NUDGE, Action.STOP) and verdict.finding.signal == "cycle":
                said.append(re.search(r"cycle \(([^)]*)\)", verdict.finding.description).group(1))
    assert len(said) >= 2, said
    assert len(set(said)) == 1, said


def test_status_counts_in_words_and_says_what_the_default_mode_is(tmp_path):
    from hook_support import Agent

    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    agent = Agent(state, work)
    for _ in range(4):
        agent.run("Bash", {"command": "pytest -x"}, error="E   ImportError")
    env = {**agent.env(), "PATH": os.environ["PATH"]}
    done = loopwatch("status", env=env)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert re.search(r"\b1 nudge\b", text) and "1 nudges" not in text, text
    assert "mode: default" not in text
    assert "mode: enforce (the default: no loopwatch.toml sets a mode)" in text


def test_help_on_monitor_names_its_settings():
    parameters = inspect.signature(Monitor).parameters
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    for name in ("mode", "profile", "stop", "warn_every", "signals", "tools", "evidence", "calibration"):
        assert name in parameters and name in (Monitor.__doc__ or "")
