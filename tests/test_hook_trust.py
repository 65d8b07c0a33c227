"""Trust boundaries: private files whatever the umask, no planted symlink followed,
no folder of someone else's used, no project file that switches the guard off,
and any payload answered without a traceback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hook_support import Agent, bash, state_actions, user_config

pytestmark = pytest.mark.slow


@pytest.fixture
def agent(tmp_path):
    return Agent(tmp_path / "state", tmp_path / "project")


@pytest.fixture(autouse=True)
def _project(tmp_path):
    (tmp_path / "project").mkdir()


def loop(agent: Agent, times: int = 4):
    """The same failing call `times` times; returns the last PreToolUse answer."""
    before = None
    for _ in range(times):
        before, _ = agent.run("Bash", bash("make"), error="make: *** No rule to make target 'all'")
    return before


def log_text(agent: Agent) -> str:
    path = agent.state / "hook.log"
    return path.read_text() if path.exists() else ""


# -- private files ----------------------------------------------------------------------------


def test_state_is_private_under_umask_000(agent):
    def umask0():
        os.umask(0)

    for i in range(3):
        payload = {
            **agent.base("PostToolUse"),
            "tool_name": "Bash",
            "tool_input": bash("ls"),
            "tool_response": {"stdout": "a"},
            "tool_use_id": f"t{i}",
        }
        subprocess.run(
            [sys.executable, "-m", "loopwatch", "hook"],
            input=json.dumps(payload).encode(),
            env=agent.env(),
            preexec_fn=umask0,
            check=True,
            capture_output=True,
        )
    agent.send(agent.base("Notification"))  # an unknown event: one line in hook.log
    assert stat.S_IMODE(agent.state.stat().st_mode) == 0o700
    names = sorted(p.name for p in agent.state.iterdir() if p.name != "home")
    assert {"state.db", "hook.log", "state.lock"} <= set(names)
    for path in agent.state.iterdir():
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_a_planted_hook_log_symlink_is_not_followed(agent, tmp_path):
    agent.state.mkdir(mode=0o700)
    target = tmp_path / "victim.txt"
    target.write_text("precious\n")
    (agent.state / "hook.log").symlink_to(target)
    result = agent.send(agent.base("Notification"))
    assert result.code == 0
    assert target.read_text() == "precious\n"
    assert "unknown event" in result.err and "hook.log not written" in result.err  # the line went to stderr


def test_a_planted_state_db_symlink_is_not_followed(agent, tmp_path):
    agent.state.mkdir(mode=0o700)
    target = tmp_path / "elsewhere.db"
    (agent.state / "state.db").symlink_to(target)
    before, after = agent.run("Bash", bash("ls"), response={"stdout": "a"})
    assert (before.code, after.code) == (0, 0)
    assert not target.exists()
    assert "symlink" in log_text(agent)


def test_a_folder_others_can_write_is_made_private_not_used_as_it_is(agent):
    # Refusing it kept the guard off for good (issue 24): one chmod by the agent did it.
    agent.state.mkdir()
    os.chmod(agent.state, 0o777)
    user_config(agent, '[hook]\nfail = "closed"\n')
    result = agent.pre("Bash", bash("ls"))
    assert not result.denied
    assert stat.S_IMODE(agent.state.stat().st_mode) == 0o700
    assert "made private" in log_text(agent) and (agent.state / "state.db").exists()


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder owned by another user needs root")
def test_a_folder_owned_by_another_user_is_refused(agent):
    agent.state.mkdir(mode=0o700)
    os.chown(agent.state, 4242, 4242)
    result = agent.pre("Bash", bash("ls"))
    assert (result.code, result.out) == (0, None)
    assert "belongs to another user" in result.err
    assert not (agent.state / "state.db").exists()


def test_a_readable_folder_is_made_private(agent):
    agent.state.mkdir(mode=0o755)
    os.chmod(agent.state, 0o755)
    agent.run("Bash", bash("ls"), response={"stdout": "a"})
    assert stat.S_IMODE(agent.state.stat().st_mode) == 0o700
    assert state_actions(agent.state, agent.session) == 1


# -- which configuration the hook trusts --------------------------------------------------------

SWITCH_OFF = (
    'mode = "off"\nprofile = "attended"\n[signals.repeat]\nthreshold = 0\n[signals.same_error]\nthreshold = 0\n'
    '[signals.echo]\nthreshold = 0\n[tools.Bash]\nrole = "exempt"\n[hook]\nfail = "open"\n'
)


def test_a_project_file_cannot_switch_the_guard_off(agent):
    (agent.cwd / "loopwatch.toml").write_text(SWITCH_OFF)
    assert loop(agent).denied


def test_a_pyproject_cannot_switch_the_guard_off(agent):
    (agent.cwd / "pyproject.toml").write_text("[tool.loopwatch]\n" + SWITCH_OFF.replace("[", "[tool.loopwatch."))
    assert loop(agent).denied


def test_a_broken_project_file_is_ignored_not_a_way_out(agent):
    (agent.cwd / "loopwatch.toml").write_bytes(b'mode = "off\n\xff\xfe')
    assert loop(agent).denied
    assert "project configuration ignored" in log_text(agent)


def test_the_user_can_trust_the_project(agent):
    user_config(agent, "[hook]\ntrust_project = true\n")
    (agent.cwd / "loopwatch.toml").write_text(SWITCH_OFF)
    assert not loop(agent).denied  # the same loop: the trusted project file did switch it off


def test_a_project_file_may_tighten(agent):
    user_config(agent, 'mode = "warn"\n')
    assert not loop(agent).denied  # the user's own warn mode never blocks
    other = Agent(agent.state, agent.cwd, session="sess-0002")
    (agent.cwd / "loopwatch.toml").write_text('mode = "enforce"\n')
    assert loop(other).denied


def test_the_project_cannot_opt_itself_in(agent):
    (agent.cwd / "loopwatch.toml").write_text(SWITCH_OFF + "trust_project = true\n")
    assert loop(agent).denied


def status(agent: Agent, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loopwatch", "status", *args],
        env=agent.env(),
        capture_output=True,
        text=True,
        cwd=agent.cwd,
        timeout=60,
        check=False,
    )


def test_status_says_which_file_set_the_mode(agent):
    config = user_config(agent, 'mode = "enforce"\n')
    (agent.cwd / "loopwatch.toml").write_text('mode = "off"\n')
    loop(agent, 1)
    shown = status(agent, agent.session)
    assert shown.returncode == 0, shown.stderr
    assert f"mode: {config}" in shown.stdout and "not trusted" in shown.stdout


@pytest.mark.parametrize("damage", ["corrupt", "directory", "unreadable"])
def test_status_on_a_damaged_database_is_one_line_and_exit_2(agent, damage):
    loop(agent, 1)
    db = agent.state / "state.db"
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    if damage == "corrupt":
        db.write_bytes(b"garbage" * 1000)
    elif damage == "directory":
        db.unlink()
        db.mkdir()
    else:
        if os.getuid() == 0:
            pytest.skip("root reads any file")
        os.chmod(db, 0)
    shown = status(agent)
    assert shown.returncode == 2
    assert "Traceback" not in shown.stderr and len(shown.stderr.strip().splitlines()) == 1, shown.stderr
    assert "state" in shown.stderr


def test_status_on_a_read_only_folder_still_reports(tmp_path):
    agent = Agent(tmp_path / "ro", tmp_path / "project")
    if os.getuid() == 0 and not _mount_tmpfs(agent.state, "size=4m,mode=0700"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        loop(agent, 2)
        if os.getuid() == 0:
            subprocess.run(["mount", "-o", "remount,ro", str(agent.state)], check=True)
        else:
            os.chmod(agent.state / "state.db", 0o444)
            os.chmod(agent.state, 0o500)
        shown = status(agent)
        assert "Traceback" not in shown.stderr
        if shown.returncode == 2:
            assert len(shown.stderr.strip().splitlines()) == 1, shown.stderr
        else:
            assert shown.returncode == 0 and agent.session in shown.stdout
    finally:
        if os.getuid() == 0:
            subprocess.run(["umount", str(agent.state)], capture_output=True, check=False)
        else:
            os.chmod(agent.state, 0o700)


# -- payloads no text can hold ------------------------------------------------------------------


def test_a_lone_surrogate_is_checked_like_any_other_id(agent):
    body = json.dumps(
        {
            **agent.base("PostToolUse"),
            "tool_name": "Bash",
            "tool_input": {"command": "ls \udcff"},
            "tool_response": "x\ud800",
            "tool_use_id": "t\udfff",
        }
    ).replace(json.dumps(agent.session), '"s\\ud800"')
    assert "\\ud800" in body
    result = agent.send(body.encode())
    assert (result.code, result.err) == (0, "")
    assert "Traceback" not in result.err
    assert state_actions(agent.state, "s\\ud800") == 1
    assert log_text(agent) == ""


@pytest.mark.parametrize(
    "data",
    [
        b'{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash\xff\xfe", "tool_input": {}}',
        b'{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "\\ud800',
    ],
)
def test_an_undecodable_pre_tool_use_fails_closed_when_asked(agent, data):
    user_config(agent, '[hook]\nfail = "closed"\n')
    result = agent.send(data)
    assert result.denied and "fail closed" in result.denied
    assert "Traceback" not in result.err
    assert "PayloadError" in log_text(agent) and "denied (fail = closed)" in log_text(agent)
    other = Agent(agent.state, agent.cwd)
    user_config(other, "")
    assert other.send(data).out is None  # fail open by default


# -- a folder that cannot be written --------------------------------------------------------------


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, check=False
        ).returncode
        == 0
    )


@pytest.mark.parametrize("fault", ["read-only", "full"])
def test_a_folder_that_cannot_be_written_leaves_a_trace_and_honours_fail(tmp_path, fault):
    state = tmp_path / "mnt"
    if os.getuid() == 0:
        if not _mount_tmpfs(state, "size=64k,mode=0700" if fault == "full" else "size=1m,mode=0700"):
            pytest.skip("cannot mount a tmpfs here")
    elif fault == "read-only":
        state.mkdir(mode=0o700)
    else:
        pytest.skip("filling a disk needs a small tmpfs, which needs root")
    try:
        agent = Agent(state, tmp_path)
        user_config(Agent(tmp_path / "conf", tmp_path), '[hook]\nfail = "closed"\n')
        agent.extra_env["XDG_CONFIG_HOME"] = str(tmp_path / "conf" / "home" / ".config")
        if fault == "full":
            with open(state / "filler", "wb") as fh:
                try:
                    fh.write(b"\0" * (1 << 20))
                except OSError:
                    pass
        else:
            (state / "state.db").touch()
            if os.getuid() == 0:
                subprocess.run(["mount", "-o", "remount,ro", str(state)], check=True)
            else:
                os.chmod(state, 0o500)
        result = agent.pre("Bash", bash("ls"))
        assert result.denied and "fail closed" in result.denied
        assert "loopwatch hook:" in result.err and "hook.log not written" in result.err
        agent.extra_env.pop("XDG_CONFIG_HOME")
        post = agent.post("Bash", bash("ls"), {"stdout": "a"})
        assert post.code == 0 and "hook.log not written" in post.err
    finally:
        if os.getuid() == 0:
            subprocess.run(["umount", str(state)], capture_output=True, check=False)
        else:
            os.chmod(state, 0o700)
