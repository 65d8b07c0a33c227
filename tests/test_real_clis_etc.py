"""`real_clis.etc_written`, which every test that writes an agent CLI's settings in /etc
goes through: while it is held no other run of that CLI's tests can start (the lock), and
afterwards the folder is exactly as it was, or the test fails. Checked here on a folder of
the test's own, never /etc."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
import real_clis


def _taken_elsewhere(name: str) -> bool:
    """Would another process have to wait for a shared hold of `name`'s /etc lock?"""
    code = (
        "import fcntl, os, sys, tempfile\n"
        f"fd = os.open(os.path.join(tempfile.gettempdir(), 'loopwatch-tests-{name}-etc.lock'), os.O_RDWR | os.O_CREAT)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(3)\n"
    )
    env = {**os.environ, "TMPDIR": tempfile.gettempdir()}
    return subprocess.run([sys.executable, "-c", code], env=env, timeout=60).returncode == 3


@pytest.fixture
def name(tmp_path, monkeypatch):
    """A CLI name of this test's own, its lock file in the test's folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return "selftest"


def test_what_the_test_did_is_undone(tmp_path, name):
    folder = tmp_path / "etc" / "agent"
    folder.mkdir(parents=True)
    (folder / "kept.json").write_text("{}")
    (folder / "changed.json").write_text('{"theirs": 1}')
    (folder / "changed.json").chmod(0o640)
    (folder / "removed.toml").write_text("[a]\n")
    (folder / "link").symlink_to("kept.json")
    before = real_clis._tree(folder)
    with real_clis.etc_written(name, folder):
        assert _taken_elsewhere(name)
        with real_clis.etc_lock(name, exclusive=False):  # a run it starts: no wait on itself
            pass
        (folder / "changed.json").write_text('{"ours": 1}')
        (folder / "changed.json").chmod(0o644)
        (folder / "removed.toml").unlink()
        (folder / "link").unlink()
        (folder / "link").symlink_to("changed.json")
        (folder / "new.d").mkdir()
        (folder / "new.d" / "loopwatch.json").write_text("{}")
        (folder / "changed.json.loopwatch.bak").write_text("{}")
    assert not _taken_elsewhere(name)
    assert real_clis._tree(folder) == before


def test_a_folder_that_was_not_there_is_not_there_after(tmp_path, name):
    folder = tmp_path / "etc" / "agent"
    with real_clis.etc_written(name, folder):
        folder.mkdir(parents=True)
        (folder / "managed-settings.json").write_text("{}")
    assert not folder.exists()


def test_a_folder_not_put_back_fails_the_test(tmp_path, name, monkeypatch):
    folder = tmp_path / "agent"
    folder.mkdir()
    monkeypatch.setattr(real_clis, "_put_back", lambda folder, tree: None)
    with pytest.raises(AssertionError, match="was not left as found"):
        with real_clis.etc_written(name, folder):
            (folder / "managed-settings.json").write_text("{}")


def test_runs_wait_while_a_test_writes(tmp_path, name):
    """A shared hold (a run of the CLI) in another process is refused while the exclusive
    one is held, and granted once it is released."""
    assert not _taken_elsewhere(name)
    with real_clis.etc_lock(name, exclusive=True):
        assert _taken_elsewhere(name)
    assert not _taken_elsewhere(name)
