"""The working folder's fingerprint (`_hook/tree.py`) and what the hook does with it:
equal digests only for a folder nothing visibly changed in, None past any bound or
doubt, never a file opened; a write the folder cannot show is unknown to the monitor."""

from __future__ import annotations

import builtins
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest
from hook_support import Agent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwatch._hook import tree
from loopwatch._hook.guard import _seen_tree, _tree
from loopwatch._hosts.base import Call

OLD = 1_000_000_000_000_000_000  # 2001: an mtime long past


def settled(folder: Path) -> str:
    """The folder's digest once its entries are old enough to promise one (a fresh
    ctime is racy for `_RACY_FINE_NS`, or two seconds on a file system of whole seconds)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = tree.fingerprint(str(folder), max_seconds=30)
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{folder}: no fingerprint")


def make(folder: Path, files: dict[str, bytes]) -> None:
    for rel, body in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        os.utime(path, ns=(OLD, OLD))


def test_the_same_folder_twice_is_the_same_digest_and_a_touch_changes_it(tmp_path):
    make(tmp_path, {"a.py": b"x = 1\n", "pkg/b.py": b"y = 2\n"})
    first = settled(tmp_path)
    assert first == settled(tmp_path) and len(first) == 32
    os.utime(tmp_path / "pkg" / "b.py", ns=(OLD, OLD + 1))  # one nanosecond later: another state
    assert settled(tmp_path) != first


def test_a_same_size_edit_that_puts_the_old_mtime_back_still_shows(tmp_path):
    make(tmp_path, {"a.py": b"x = 1\n"})
    first = settled(tmp_path)
    (tmp_path / "a.py").write_bytes(b"x = 2\n")
    os.utime(tmp_path / "a.py", ns=(OLD, OLD))  # size and mtime as before: ctime moved
    assert settled(tmp_path) != first


def test_past_the_entry_bound_or_the_time_bound_it_is_unknown(tmp_path):
    make(tmp_path, {f"f{i}.txt": b"" for i in range(30)})
    settled(tmp_path)
    assert tree.fingerprint(str(tmp_path), max_entries=29, max_seconds=30) is None
    assert tree.fingerprint(str(tmp_path), max_entries=30, max_seconds=30) is not None
    assert tree.fingerprint(str(tmp_path), max_seconds=0.0) is None


def test_a_folder_past_the_entry_bound_is_remembered_and_not_walked_again_for_a_while(tmp_path, monkeypatch):
    work, state = tmp_path / "work", tmp_path / "state"
    state.mkdir()
    make(work, {f"f{i}.txt": b"" for i in range(30)})
    expected = settled(work)
    monkeypatch.setattr(tree, "MAX_SECONDS", 30.0)  # only the entry bound decides here
    monkeypatch.setattr(tree, "MAX_ENTRIES", 29)
    assert _tree(str(work), str(state)) is None
    (memo,) = state.iterdir()  # the marker: named by a digest of the folder, never its path
    assert memo.name.startswith("large-") and "work" not in memo.name
    assert stat.S_IMODE(memo.stat().st_mode) == 0o600
    walked: list[str] = []
    scandir = tree.os.scandir
    monkeypatch.setattr(tree.os, "scandir", lambda path: walked.append(path) or scandir(path))
    monkeypatch.setattr(tree, "MAX_ENTRIES", 10_000)
    assert _tree(str(work), str(state)) is None and walked == []  # remembered: not walked
    long_ago = time.time() - tree.LARGE_SECONDS - 1
    os.utime(memo, (long_ago, long_ago))
    assert _tree(str(work), str(state)) == expected and walked  # forgotten: walked again
    walked.clear()
    future = time.time() + 10 * tree.LARGE_SECONDS
    os.utime(memo, (future, future))
    assert _tree(str(work), str(state)) == expected and walked  # a stamp from the future remembers nothing
    memo.unlink()
    monkeypatch.setattr(tree, "MAX_SECONDS", 0.0)
    assert _tree(str(work), str(state)) is None and not memo.exists()  # a slow walk is not remembered


def test_a_stamp_a_later_write_could_repeat_makes_it_unknown(tmp_path):
    make(tmp_path, {"a.py": b"x = 1\n"})
    settled(tmp_path)
    soon = time.time_ns() + 3_600 * 10**9  # ahead of the walk, whatever the machine's pace
    os.utime(tmp_path / "a.py", ns=(soon, soon))
    assert tree.fingerprint(str(tmp_path), max_seconds=30) is None
    assert tree._racy(OLD, OLD + 3 * 10**9) is False  # whole seconds, three seconds old
    assert tree._racy(OLD, OLD + 10**9) is True  # whole seconds, one second old: same tick possible
    assert tree._racy(OLD + 1, OLD + 10**8) is False and tree._racy(OLD + 1, OLD + 10**7) is True


def test_a_symlink_loop_is_an_entry_never_followed(tmp_path):
    make(tmp_path, {"a.py": b"x\n"})
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "self").symlink_to("self")
    outside = Path(tempfile.mkdtemp())
    try:
        (tmp_path / "out").symlink_to(outside)
        began = time.monotonic()
        first = settled(tmp_path)
        assert time.monotonic() - began < 5
        make(outside, {"far.py": b"z\n"})  # behind a link: not walked
        assert settled(tmp_path) == first
    finally:
        shutil.rmtree(outside)


def test_the_folder_itself_may_be_named_through_a_link(tmp_path):
    make(tmp_path / "work", {"a.py": b"x\n"})
    (tmp_path / "here").symlink_to(tmp_path / "work")
    assert settled(tmp_path / "here") == settled(tmp_path / "work")
    (tmp_path / "file").write_text("x")
    assert tree.fingerprint(str(tmp_path / "file")) is None  # not a folder


def test_an_unreadable_folder_makes_it_unknown(tmp_path, monkeypatch):
    make(tmp_path, {"a.py": b"x\n", "locked/b.py": b"y\n"})
    settled(tmp_path)
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        (tmp_path / "locked").chmod(0)
        try:
            assert tree.fingerprint(str(tmp_path), max_seconds=30) is None
        finally:
            (tmp_path / "locked").chmod(0o700)
    real = os.scandir  # root reads any folder: refuse this one as the kernel would anyone else

    def scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(tree.os, "scandir", scandir)
    assert tree.fingerprint(str(tmp_path), max_seconds=30) is None
    assert tree.fingerprint(str(tmp_path / "nowhere"), max_seconds=30) is None


def test_no_file_is_ever_opened(tmp_path, monkeypatch):
    make(tmp_path, {"a.py": b"x\n", "b/c.py": b"y\n"})
    os.mkfifo(tmp_path / "pipe")  # opening it would block the walk
    settled(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError(f"opened {args[:1]}")

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(os, "open", refuse)
    assert tree.fingerprint(str(tmp_path), max_seconds=30) is not None


def test_caches_and_git_objects_are_skipped_but_a_commit_shows(tmp_path):
    make(tmp_path, {"a.py": b"x\n", "__pycache__/a.pyc": b"\0", ".git/HEAD": b"ref: refs/heads/main\n"})
    make(tmp_path, {".git/objects/ab/cdef": b"blob", ".git/refs/heads/main": b"1" * 40 + b"\n"})
    first = settled(tmp_path)
    make(tmp_path, {"__pycache__/a.pyc": b"\0\0", "sub/.pytest_cache/v": b"{}"})
    shutil.rmtree(tmp_path / "sub")
    make(tmp_path, {".git/objects/12/3456": b"blob"})
    os.utime(tmp_path / ".git" / "objects", ns=(OLD, OLD))
    assert settled(tmp_path) == first
    make(tmp_path, {".git/refs/heads/main": b"2" * 40 + b"\n"})  # a commit moves a ref
    assert settled(tmp_path) != first


def test_covers_says_which_writes_the_fingerprint_can_show(tmp_path):
    folder = str(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "away").symlink_to("/etc")
    assert tree.covers(folder, "a.py") and tree.covers(folder, str(tmp_path / "sub" / "b.py"))
    assert tree.covers(folder, ".git/HEAD") and tree.covers(folder, ".git/objects")
    assert not tree.covers(folder, "/etc/passwd")
    assert not tree.covers(folder, "../elsewhere.py")
    assert not tree.covers(folder, "away/hosts")  # a write through a link lands outside
    assert not tree.covers(folder, "__pycache__/a.pyc") and not tree.covers(folder, "pkg/.mypy_cache/x")
    assert not tree.covers(folder, ".git/objects/ab/cd")
    assert not tree.covers(folder, folder)


# Random folders, then one change of any kind: the digest must move; no change: it must not.
_NAMES = st.text("abcxyz_.", min_size=1, max_size=6).filter(lambda n: n not in (".", "..") and n not in tree.SKIPPED)
_FILES = st.dictionaries(
    st.lists(_NAMES, min_size=1, max_size=3).map("/".join), st.binary(max_size=8), min_size=1, max_size=12
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=_FILES,
    change=st.sampled_from(["none", "touch", "rewrite", "add", "remove", "rename"]),
    pick=st.integers(0, 99),
)
def test_any_change_moves_the_digest_and_none_keeps_it(files, change, pick):
    with tempfile.TemporaryDirectory() as where:
        folder = Path(where) / "t"
        folder.mkdir()
        try:
            make(folder, files)
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            return  # a name both a file and a folder: not a tree
        paths = sorted(p for p in folder.rglob("*") if p.is_file())
        target = paths[pick % len(paths)]
        before = settled(folder)
        if change == "touch":
            os.utime(target, ns=(OLD, OLD + 7))
        elif change == "rewrite":
            target.write_bytes(target.read_bytes())  # the same bytes, written again
        elif change == "add":
            make(folder, {"zz_new": b""})
        elif change == "remove":
            target.unlink()
        elif change == "rename":
            target.rename(target.with_name(target.name + "_r"))
        after = settled(folder)
        assert (after == before) == (change == "none")


# -- the hook ------------------------------------------------------------------------------------


def test_a_write_the_folder_cannot_show_is_unknown(tmp_path):
    cwd = str(tmp_path)
    digest = "f" * 32
    inside = Call("Edit", {"file_path": str(tmp_path / "a.py"), "old_string": "a", "new_string": "b"})
    outside = Call("Edit", {"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"})
    cache = Call("Write", {"file_path": "node/__pycache__/x.pyc", "content": ""})
    patch = Call("apply_patch", {"input": "*** Begin Patch"})
    configured = Call("restyle", {"file_path": "a.css"})
    assert _seen_tree(digest, cwd, inside, "writer", "claude-code") == digest
    assert _seen_tree(digest, cwd, Call("Bash", {"command": "ls"}), "", "claude-code") == digest
    for call in (outside, cache, patch, configured):
        assert _seen_tree(digest, cwd, call, "writer", "claude-code") is None
    # a host's own writer, by its own field
    qwen = Call("edit", {"file_path": "/tmp/elsewhere.py"})
    assert _seen_tree(digest, cwd, qwen, "writer", "qwen-code") is None
    assert _seen_tree(digest, cwd, Call("edit", {"file_path": "a.py"}), "writer", "qwen-code") == digest
    assert _seen_tree(None, cwd, inside, "writer", "claude-code") is None


def _check_and_failed_edits(agent: Agent, rounds: int, change=None) -> list:
    """A check, then `rounds` of: an Edit that does not apply (or, with `change`, that
    change made to a file as a real edit would), the same check. The answers to the checks."""
    check = {"command": "python3 check.py", "description": "Run the check"}
    answers = [agent.run("Bash", check, response={"stdout": "add(2, 3) = -1", "stderr": "", "interrupted": False})]
    for i in range(rounds):
        edit = {"file_path": str(agent.cwd / "calc.py"), "old_string": f"a - b  # {i}", "new_string": "a + b"}
        if change is None:
            agent.run("Edit", edit, error="String to replace not found in file.")
        else:
            change(i)
            agent.run("Edit", edit, response={"filePath": edit["file_path"], "oldString": "x", "newString": "y"})
        answers.append(
            agent.run("Bash", check, response={"stdout": "add(2, 3) = -1", "stderr": "", "interrupted": False})
        )
    return answers


@pytest.mark.slow
def test_the_hook_stops_edits_that_never_land_and_only_nudges_edits_that_do(tmp_path):
    work = tmp_path / "work"
    make(work, {"calc.py": b"def add(a, b):\n    return a - b\n", "check.py": b"print('add')\n"})
    settled(work)
    agent = Agent(tmp_path / "state", work, env={"LOOPWATCH_PROFILE": "unattended"})
    answers = _check_and_failed_edits(agent, 6)
    after = [a[1] for a in answers]
    assert not any(a.stopped for a in after[:5])
    assert "no file changed" in (after[4].context or "")  # the nudge, at today's 5th run
    assert after[5].stopped
    # what the state keeps of the folder: its digest, never a path or a name in it
    import sqlite3

    db = sqlite3.connect(tmp_path / "state" / "state.db")
    try:
        kept = b" ".join(bytes(row[0]) for row in db.execute("SELECT state FROM sessions"))
    finally:
        db.close()
    assert tree.fingerprint(str(work), max_seconds=30).encode() in kept
    assert str(work).encode() not in kept and b"calc.py" not in kept and b"check.py" not in kept

    # the same rounds, each edit landing: today's nudge at most
    work2 = tmp_path / "work2"
    make(work2, {"calc.py": b"def add(a, b):\n    return a - b\n", "check.py": b"print('add')\n"})
    settled(work2)
    agent2 = Agent(tmp_path / "state2", work2, env={"LOOPWATCH_PROFILE": "unattended"})

    def land(i: int) -> None:
        (work2 / "calc.py").write_text(f"def add(a, b):\n    return a - b  # {i}\n")

    after2 = [a[1] for a in _check_and_failed_edits(agent2, 8, land)]
    assert not any(a.stopped for a in after2)
    assert "your edits are not changing" in (after2[4].context or "")
