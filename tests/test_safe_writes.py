"""Running loopwatch in an untrusted checkout: every file it writes is written by
`loopwatch._safefile` (no planted link followed, unique temporary names, modes kept or
tightened, a linked settings file edited where it points), `install --project` writes
no path of this machine, and `doctor` runs nothing a repository holds."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwatch import _safefile as safefile
from loopwatch._cli.install import install

pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parent.parent / "src")


def in_project(project: Path, *args: str, env: dict | None = None):
    old = os.getcwd()
    os.chdir(project)
    try:
        return CliRunner().invoke(install, list(args), catch_exceptions=False, env=env)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "repo"
    (folder / ".claude").mkdir(parents=True)
    return folder


# -- install --------------------------------------------------------------------------------------


@pytest.mark.parametrize("planted", [".loopwatch.tmp", ".loopwatch.bak"])
def test_install_never_writes_through_a_link_planted_beside_the_settings(project, tmp_path, planted):
    victim = tmp_path / "outside.txt"
    victim.write_text("precious\n")
    settings = project / ".claude" / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    (project / ".claude" / f"settings.json{planted}").symlink_to(victim)
    done = in_project(project, "claude-code", "--project")
    assert done.exit_code == 0, done.output
    assert victim.read_text() == "precious\n"
    assert "loopwatch hook" in settings.read_text()


def test_install_keeps_a_private_settings_file_private(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    os.chmod(settings, 0o600)
    old = os.umask(0o022)
    try:
        done = CliRunner().invoke(install, ["claude-code", "--settings", str(settings)], catch_exceptions=False)
    finally:
        os.umask(old)
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    backup = tmp_path / "settings.json.loopwatch.bak"
    assert backup.read_text() == '{"model": "opus"}\n' and stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_a_new_settings_file_is_private(tmp_path):
    settings = tmp_path / "new" / "settings.json"
    old = os.umask(0)
    try:
        done = CliRunner().invoke(install, ["claude-code", "--settings", str(settings)], catch_exceptions=False)
    finally:
        os.umask(old)
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


def test_a_linked_settings_file_is_edited_where_it_points(tmp_path):
    dotfiles = tmp_path / "dotfiles" / "claude.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}\n')
    link = tmp_path / "home" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    done = CliRunner().invoke(install, ["claude-code", "--settings", str(link)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert link.is_symlink() and "loopwatch hook" in dotfiles.read_text()


def test_a_project_settings_link_out_of_the_project_is_refused(project, tmp_path):
    outside = tmp_path / "users-own.json"
    outside.write_text('{"model": "opus"}\n')
    (project / ".claude" / "settings.json").symlink_to(outside)
    done = in_project(project, "claude-code", "--project")
    assert done.exit_code == 2 and "links out of" in done.output and "Traceback" not in done.output
    assert outside.read_text() == '{"model": "opus"}\n'


def test_concurrent_installs_leave_valid_settings_and_no_traceback(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    env = {**os.environ, "PYTHONPATH": SRC}
    argv = [sys.executable, "-m", "loopwatch", "install", "claude-code", "--settings", str(settings)]
    results: list[subprocess.CompletedProcess] = []

    def one() -> None:
        results.append(subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.returncode == 0 and "Traceback" not in r.stderr for r in results), [r.stderr for r in results]
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and len(data["hooks"]["PreToolUse"]) == 1
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_install_project_writes_no_path_of_this_machine(project):
    done = in_project(project, "claude-code", "--project")
    assert done.exit_code == 0, done.output
    text = (project / ".claude" / "settings.json").read_text()
    commands = {h["command"] for groups in json.loads(text)["hooks"].values() for g in groups for h in g["hooks"]}
    assert commands == {"loopwatch hook claude-code"}
    assert sys.executable not in text and str(project) not in text


def test_install_local_keeps_this_machines_interpreter(project):
    done = in_project(project, "claude-code", "--local")
    assert done.exit_code == 0, done.output
    assert sys.executable in (project / ".claude" / "settings.local.json").read_text()


# -- run --record -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["symlink", "device", "fifo"])
def test_run_record_never_replaces_a_link_or_a_device(tmp_path, kind):
    # Never the real /dev/null: a regression would replace it for the whole machine.
    target = tmp_path / "record.json"
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    if kind == "symlink":
        target.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        if os.getuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "run", "--record", str(target), "--", sys.executable, "-c", "pass"],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    if kind == "symlink":
        assert target.is_symlink() and victim.read_text() == "precious\n"
    else:
        kept = os.lstat(target).st_mode
        assert stat.S_ISCHR(kept) if kind == "device" else stat.S_ISFIFO(kept)


def test_run_record_keeps_an_existing_records_mode(tmp_path):
    target = tmp_path / "record.json"
    target.write_text("{}\n")
    os.chmod(target, 0o600)
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "run", "--record", str(target), "--", sys.executable, "-c", "pass"],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text())["ended_by"] == "exit"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


# -- the helper itself ------------------------------------------------------------------------------


def test_the_helper_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(safefile.UnsafeWrite, match="not a regular file"):
        safefile.write(fifo, "x")


def test_the_helper_leaves_no_temporary_file_when_it_fails(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "target").mkdir()
    with pytest.raises(safefile.UnsafeWrite):
        safefile.write(folder / "target", "x")
    assert sorted(p.name for p in folder.iterdir()) == ["target"]


# -- doctor ----------------------------------------------------------------------------------------


def doctor(cwd: Path, home: Path, *hosts: str, path: str = "/usr/bin:/bin") -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "doctor", *hosts, "--json"],
        cwd=cwd,
        env={"PATH": path, "HOME": str(home), "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_doctor_runs_no_command_from_the_repository(project, tmp_path):
    marker = tmp_path / "PWNED"
    command = f"touch {marker}; loopwatch hook claude-code"
    hooks = {
        event: [{"hooks": [{"type": "command", "command": command}]}]
        for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch")
    }
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    home = tmp_path / "home"
    home.mkdir()
    lines = doctor(project, home, "claude-code")
    assert not marker.exists()
    assert any("was not run" in line["text"] for line in lines), lines


def test_doctor_says_a_project_environment_is_not_trusted(project, tmp_path):
    (project / ".claude" / "settings.json").write_text(json.dumps({"env": {"LOOPWATCH_MODE": "off"}}))
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "loopwatch", "doctor", "claude-code", "--json"],
        cwd=project,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": SRC, "LOOPWATCH_MODE": "off"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    texts = [json.loads(line)["text"] for line in done.stdout.splitlines()]
    assert any("LOOPWATCH_MODE=off is set by" in t and "does not trust it" in t for t in texts), texts


@pytest.mark.parametrize("host,binary", [("claude-code", "claude"), ("codex", "codex")])
def test_doctor_treats_a_missing_cli_the_same_for_both_hosts(tmp_path, host, binary):
    home = tmp_path / "home"
    home.mkdir()
    empty = tmp_path / "bin"
    empty.mkdir()
    lines = doctor(tmp_path, home, host, path=str(empty))
    missing = [line for line in lines if f"`{binary}` not found on PATH" in line["text"]]
    assert [line["status"] for line in missing] == ["problem"], lines
