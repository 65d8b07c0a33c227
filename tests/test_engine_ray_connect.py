"""Joining a Ray cluster (`--engine ray --address`): an address where nothing listens is
refused at once, a join is abandoned at its deadline, and Ctrl-C or SIGTERM end the wait
with one line.

The joins go to a port where nothing listens, to a server that accepts and never
answers, and to a one-node cluster started apart, all on 127.0.0.1. Skipped when Ray
is not installed."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray")

from loopwatch._analysis import ray_engine
from loopwatch._analysis.ray_engine import RayUnavailable

from conftest import jsonl, looping_events

pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port bound and never listening: a connection to it is refused, and no other
    process can take it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


class SilentServer:
    """Accepts every connection on 127.0.0.1 and never says a word."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            with self.changed:
                self.accepted.append(conn)
                self.changed.notify_all()

    def wait_for(self, connections: int, timeout: float) -> bool:
        """Whether `connections` were accepted (the timeout only bounds a broken run)."""
        with self.changed:
            return self.changed.wait_for(lambda: len(self.accepted) >= connections, timeout)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def no_join(monkeypatch):
    """`ray.init` replaced: the calls it got, and an event that, until set, keeps each
    call waiting (as Ray's own retries keep a join that nothing answers)."""
    import ray

    calls: list[dict] = []
    release = threading.Event()

    def init(*args, **kwargs):
        calls.append(kwargs)
        release.wait()

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    yield calls, release
    release.set()


def test_an_address_where_nothing_listens_is_refused_without_a_join(refused_port, no_join):
    calls, release = no_join
    release.set()  # a join, if one were tried, would return at once
    with pytest.raises(RayUnavailable) as raised:
        ray_engine.connect(f"127.0.0.1:{refused_port}")
    assert str(raised.value) == f"cannot reach Ray at 127.0.0.1:{refused_port}: connection refused"
    assert calls == []


def test_a_join_nothing_answers_is_abandoned_at_its_deadline(silent_server, no_join):
    calls, _ = no_join
    with pytest.raises(RayUnavailable) as raised:
        ray_engine.connect(f"127.0.0.1:{silent_server.port}", timeout=0.5)
    assert str(raised.value) == (
        f"cannot reach Ray at 127.0.0.1:{silent_server.port}: it accepted the connection, "
        "but no Ray answered within 0.5 s"
    )
    assert len(calls) == 1  # the join was tried, and left to itself


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"])
def test_a_signal_ends_the_wait_for_ray_with_one_line(tmp_path, silent_server, signum, code):
    session = tmp_path / "task.jsonl"
    session.write_text(jsonl(looping_events()))
    address = f"127.0.0.1:{silent_server.port}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    args = ["scan", "--no-progress", "--engine", "ray", "--address", address, str(session)]
    child = subprocess.Popen(
        [sys.executable, "-m", "loopwatch", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # Our own connection that found something listening, then Ray's: the join is under way.
        assert silent_server.wait_for(2, timeout=300), "the join never reached the server"
        child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=300)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == code, stderr
    assert stdout == "" and "Traceback" not in stderr
    assert stderr.splitlines()[-1] == f"loopwatch scan: interrupted while connecting to Ray at {address}"


@pytest.fixture
def ray_head() -> Iterator[str]:
    """A one-node Ray cluster started apart (`ray start --head --block`), on loopback
    only; its address. Stopped, with every process it started, at the end."""
    from _ray_local import family_of

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="lw-ray-", dir="/tmp")  # Ray's socket paths must stay short
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="disabled")
    ray_cli = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]
    head = subprocess.Popen(
        [*ray_cli, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=1"]
        + ["--include-dashboard=false", "--dashboard-host=127.0.0.1", f"--temp-dir={temp}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    family: list[int] = []
    try:
        seen = []
        for line in head.stdout:  # it says so once its processes are up
            seen.append(line)
            if "Ray runtime started" in line:
                break
        else:
            pytest.fail("ray start ended without starting: " + "".join(seen[-20:]))
        family = family_of(head.pid)
        threading.Thread(target=head.stdout.read, daemon=True).start()  # keep its pipe drained
        yield f"127.0.0.1:{port}"
    finally:
        family = family or family_of(head.pid)
        for pid in reversed(family):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)


def test_a_cluster_started_apart_is_joined_by_its_address(tmp_path, ray_head):
    session = tmp_path / "task.jsonl"
    session.write_text(jsonl(looping_events()))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_AUTH_MODE"] = "disabled"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)

    def scan(*engine: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "loopwatch", "scan", "--no-progress", "--json", *engine, str(session)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    joined = scan("--engine", "ray", "--address", ray_head)
    local = scan()
    assert joined.returncode == local.returncode == 1, joined.stderr[-2000:]
    assert joined.stdout == local.stdout


def test_the_deadlines_are_the_ones_the_user_is_told():
    from click.testing import CliRunner

    from loopwatch._cli import cli

    page = (Path(__file__).resolve().parents[1] / "docs" / "scale.md").read_text()
    told = (
        f"accept a connection within {ray_engine.CONNECT_SECONDS:g} s",
        f"answer within {ray_engine.JOIN_SECONDS:g} s",
    )
    help_text = " ".join(CliRunner().invoke(cli, ["scan", "--help"]).output.split())
    for words in told:
        assert words in " ".join(page.split()), words
        assert words in help_text, words
