"""One convention for every command, held by walking the command line itself: `-h` and
`--help` in click's form with the command's rows of the one exit-status table, `-o/--out`
for every file written, `-j/--jobs` validated once, `--format` wherever recordings are
read, one set of mode names, `-V/--version`, and click's error style (one `Error:` line,
exit 2) for bad input everywhere, the hook's included (which still answers 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from loopwatch import _exits as exits
from loopwatch._cli import COMMANDS, cli
from loopwatch._core.config import MODES
from loopwatch._readers import FORMATS

from conftest import jsonl, looping_events

SRC = Path(__file__).resolve().parent.parent / "src"

#: The commands that write files the person names, and those that read recordings.
WRITERS = ("scan", "evaluate", "report", "calibrate", "run")
READERS = ("scan", "evaluate", "report", "calibrate")
#: Spellings of an output no command shows any more (kept hidden, with a warning).
OLD_OUTPUTS = ("--report", "--output", "--write", "--write-profile", "--record")


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None, name
    return found


def options(name: str) -> dict[str, click.Option]:
    """A command's visible options, by each of their spellings."""
    found: dict[str, click.Option] = {}
    for param in command(name).params:
        if isinstance(param, click.Option) and not param.hidden:
            for spelling in (*param.opts, *param.secondary_opts):
                found[spelling] = param
    return found


def loopwatch(*args: str | Path, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=300,
        check=False,
    )


def invoke(*args: str | Path):
    return CliRunner().invoke(cli, [*map(str, args)])


def error_line(stderr: str) -> str:
    """The `Error: ...` line click ends an error with; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("Error: "), stderr
    return lines[-1]


# -- --help, -h, the exit-status table ------------------------------------------------------


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_every_command_has_help_in_clicks_form_with_its_exit_statuses(name, flag):
    done = loopwatch(name, flag)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = done.stdout
    assert text.startswith(f"Usage: loopwatch {name} ")
    assert "Exit status:" in text
    rows = exits.rows(name)
    assert rows, name
    for status, _, meaning in rows:
        flat = " ".join(text.split())
        assert f"{status} {meaning.split(':')[0]}" in flat, (status, meaning)
    assert max(map(len, text.splitlines())) <= 100, max(text.splitlines(), key=len)  # as any piped output


def test_the_top_help_holds_the_whole_table_and_the_conventions():
    done = loopwatch("--help")
    assert done.returncode == 0
    flat = " ".join(done.stdout.split())
    for status, _, meaning in exits.ROWS:
        assert f"{status} " in flat and " ".join(meaning.split())[:40] in flat, meaning
    for words in ("-o/--out", "-j/--jobs", "--format", "--mode off|warn|enforce", "-V"):
        assert words in flat


def test_every_command_is_in_the_table_and_every_row_names_a_command():
    named = {who for _, whos, _ in exits.ROWS for who in whos.replace(",", " ").split()}
    assert named - {"*", *COMMANDS, *(f"-{c}" for c in COMMANDS)} == set()
    for name in COMMANDS:
        statuses = [status for status, _, _ in exits.rows(name)]
        assert len(statuses) == len(set(statuses)), (name, statuses)  # one meaning per status
        # `run` ends with its command's own status (N), 0 included
        assert ("0" in statuses or name == "run") and (name == "hook" or "2" in statuses), (name, statuses)


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version(flag):
    from importlib.metadata import version

    done = loopwatch(flag)
    assert done.returncode == 0 and done.stdout.strip() == f"loopwatch, version {version('loopwatch')}"


# -- the options -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", WRITERS)
def test_every_file_written_is_named_by_o_out(name):
    shown = options(name)
    assert shown["-o"] is shown["--out"]
    assert isinstance(shown["-o"].type, click.Path) and not shown["-o"].type.dir_okay
    assert not set(OLD_OUTPUTS) & set(shown), name


@pytest.mark.parametrize("name", [n for n in COMMANDS if n not in WRITERS and n != "hook"])
def test_no_other_command_names_an_output_another_way(name):
    assert not set(OLD_OUTPUTS) & set(options(name))


@pytest.mark.parametrize("name", READERS)
def test_every_command_that_reads_recordings_takes_format_and_jobs(name):
    shown = options(name)
    assert isinstance(shown["--format"].type, click.Choice)
    assert list(shown["--format"].type.choices) == list(FORMATS)
    assert shown["-j"] is shown["--jobs"]


def _with_jobs() -> list[str]:
    return [n for n in COMMANDS if n != "hook" and "--jobs" in options(n)]


def test_the_commands_with_jobs_are_those_that_replay():
    assert sorted(_with_jobs()) == sorted(READERS)


@pytest.mark.parametrize("jobs", ["0", "-3", "x"])
@pytest.mark.parametrize("name", READERS)
def test_jobs_is_validated_once_for_every_command(tmp_path, name, jobs):
    session = tmp_path / "loop.jsonl"
    session.write_text(jsonl(looping_events()))
    extra = ["-o", tmp_path / "page.html"] if name == "report" else []
    done = invoke(name, "--no-progress", "-j", jobs, *extra, session)
    assert done.exit_code == 2, done.output
    line = error_line(done.stderr)
    assert line.startswith("Error: Invalid value for '-j' / '--jobs'"), line
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "hook" and "--mode" in options(n)])
def test_every_mode_option_takes_the_one_set_of_names(name):
    mode = options(name)["--mode"]
    assert isinstance(mode.type, click.Choice) and list(mode.type.choices) == list(MODES)
    assert list(MODES) == ["off", "warn", "enforce"]


def test_every_command_that_takes_a_configuration_takes_mode():
    for name in COMMANDS:
        if name != "hook" and "--config" in options(name):
            assert "--mode" in options(name), name


# -- bad input: click's style, exit 2 ------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "hook"])
def test_an_unknown_option_is_a_usage_error_exit_2(name):
    done = loopwatch(name, "--no-such-option", "x")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"Usage: loopwatch {name} ")
    assert error_line(done.stderr).startswith("Error: No such option")


def test_the_hook_words_bad_usage_as_click_does_and_still_allows():
    done = loopwatch("hook", "no-such-host", stdin="{}")
    assert done.returncode == 0  # an agent CLI takes any other status for a refused call
    assert done.stderr.startswith("Usage: loopwatch hook ")
    assert error_line(done.stderr).startswith("Error: expected HOST [EVENT]")


@pytest.mark.parametrize(
    "args",
    [
        ("scan", "--no-progress", "{s}"),
        ("calibrate", "--no-progress", "{s}"),
        ("evaluate", "--no-progress", "--outcomes", "{o}", "{s}"),
        ("report", "--no-progress", "{s}", "-o", "{t}/page.html"),
        ("run", "--", sys.executable, "-c", "pass"),
        ("mcp-proxy", "--", sys.executable, "-c", "pass"),
    ],
)
def test_a_broken_configuration_is_one_error_line_exit_2_with_no_usage_block(tmp_path, args):
    session = tmp_path / "loop.jsonl"
    session.write_text(jsonl(looping_events()))
    outcomes = tmp_path / "outcomes.tsv"
    outcomes.write_text("path\tresolved\nloop.jsonl\tyes\n")
    config = tmp_path / "loopwatch.toml"
    config.write_text("[signals.repeat]\nthresold = 3\n")
    filled = [a.format(s=session, o=outcomes, t=tmp_path) for a in args]
    done = loopwatch(filled[0], "--config", config, *filled[1:])
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.splitlines() == [error_line(done.stderr)]
    assert "did you mean 'threshold'?" in done.stderr and "Usage:" not in done.stderr
    assert not (tmp_path / "page.html").exists()


def test_install_into_an_invalid_settings_file_is_exit_2_not_1(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text("{ not json")
    done = invoke("install", "claude-code", "--settings", settings)
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines() == [error_line(done.stderr)]
    assert settings.read_text() == "{ not json"


@pytest.mark.parametrize(
    "args, status",
    [
        (("scan", "--no-progress", "{t}/nothere.jsonl"), 2),
        (("calibrate", "--no-progress", "{t}/empty"), 2),
        (("report", "--no-progress", "{t}/empty", "-o", "{t}/page.html"), 2),
        (("evaluate", "--no-progress", "--labels", "{t}/nothere.tsv"), 2),
        (("status", "--limit", "0"), 2),
        (("doctor", "no-such-host"), 2),
        (("install", "no-such-host"), 2),
        (("uninstall", "no-such-host"), 2),
        (("run",), 2),
        (("mcp-proxy",), 2),
    ],
)
def test_bad_input_is_exit_2_for_every_command(tmp_path, args, status):
    (tmp_path / "empty").mkdir()
    done = loopwatch(*[a.format(t=tmp_path) for a in args])
    assert done.returncode == status, (done.stdout, done.stderr)
    error_line(done.stderr)
    assert not (tmp_path / "page.html").exists()


def test_run_exits_with_a_command_it_cannot_start_as_a_shell_does(tmp_path):
    done = loopwatch("run", "--", str(tmp_path / "no-such-program"))
    assert done.returncode == 127, (done.stdout, done.stderr)
    assert 127 in [int(s) for status, _, _ in exits.rows("run") for s in status.split(", ") if s.isdigit()]


def test_scan_exit_statuses_match_the_table(tmp_path):
    from conftest import healthy_events

    loop, calm = tmp_path / "loop.jsonl", tmp_path / "calm.jsonl"
    loop.write_text(jsonl(looping_events()))
    calm.write_text(jsonl(healthy_events()))
    assert invoke("scan", "--no-progress", calm).exit_code == exits.OK
    assert invoke("scan", "--no-progress", loop).exit_code == exits.FOUND
    assert invoke("scan", "--no-progress", tmp_path / "nothere").exit_code == exits.BAD_INPUT


# -- old spellings: hidden, working as the new one, and saying so ---------------------------


@pytest.mark.parametrize(
    "args, written",
    [
        (("scan", "--no-progress", "{s}", "--report", "{t}/page.html"), "page.html"),
        (("report", "--no-progress", "{s}", "--output", "{t}/page.html"), "page.html"),
        (("evaluate", "--no-progress", "--outcomes", "{o}", "{s}", "--report", "{t}/page.html"), "page.html"),
    ],
)
def test_an_old_spelling_still_works_and_says_what_replaces_it(tmp_path, args, written):
    pytest.importorskip("jinja2")
    session = tmp_path / "loop.jsonl"
    session.write_text(jsonl(looping_events()))
    outcomes = tmp_path / "outcomes.tsv"
    outcomes.write_text("path\tresolved\nloop.jsonl\tyes\n")
    done = invoke(*[a.format(s=session, o=outcomes, t=tmp_path) for a in args])
    assert done.exit_code in (0, 1), done.output
    assert (tmp_path / written).read_text().lower().startswith("<!doctype html>")
    assert "is deprecated and will be removed in a later release; use -o/--out" in done.stderr


def test_an_old_spelling_and_the_new_one_together_are_refused(tmp_path):
    session = tmp_path / "loop.jsonl"
    session.write_text(jsonl(looping_events()))
    done = invoke("report", "--no-progress", session, "-o", tmp_path / "a.html", "--output", tmp_path / "b.html")
    assert done.exit_code == 2
    assert not (tmp_path / "a.html").exists() and not (tmp_path / "b.html").exists()
