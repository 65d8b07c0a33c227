"""`loopwatch mcp-proxy`: a real MCP client session (the official SDK) over stdio to the
real CLI, wrapping a real MCP server (`mcp_tiny_server.py`, the SDK's `MCPServer`)."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "mcp_tiny_server.py")]
FAILED = "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("LOOPWATCH_MODE", None)
    return env


@asynccontextmanager
async def session(command, errlog, heard=None):
    """A client session; `heard` (a list) collects every notification the server sends."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env(), cwd=str(ROOT))
    options = {}
    if heard is not None:

        async def hear(message):
            if not isinstance(message, Exception):
                heard.append(message)

        async def quiet(params):
            pass

        options = {"message_handler": hear, "logging_callback": quiet}
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write, **options) as client:
        await client.initialize()
        yield client


def proxy(*options: str) -> list[str]:
    # Only the repeat signal, at the threshold this file depends on (3).
    return [sys.executable, "-m", "loopwatch", "mcp-proxy", *options, "--", *SERVER]


def texts(result) -> list[str]:
    return [block.text for block in result.content]


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "loopwatch.toml"
    others = "cycle", "echo", "same_error"
    off = "\n".join(
        f"[signals.{name}]\n{'repeats' if name == 'cycle' else 'turns' if name == 'echo' else 'threshold'} = 0"
        for name in others
    )
    path.write_text(f"[signals.repeat]\nthreshold = 3\n{off}\n")
    return str(path)


def run(coroutine_function, *args):
    return anyio.run(coroutine_function, *args)


def logged(tmp_path, main):
    """Run `main(log)` with the proxy's stderr going to proxy.log."""
    with open(tmp_path / "proxy.log", "w") as log:
        return anyio.run(main, log)


def test_tools_resources_and_prompts_are_forwarded(tmp_path, config):
    async def main(direct_log, log):
        async with session(SERVER, direct_log) as direct:
            want_tools = (await direct.list_tools()).tools
            want_resource = await direct.read_resource("notes://readme")
            want_prompt = await direct.get_prompt("fix", {"test": "test_total"})
            want_failed = await direct.call_tool("explode", {})
        async with session(proxy("--config", config), log) as guarded:
            got_tools = (await guarded.list_tools()).tools
            assert [t.model_dump() for t in got_tools] == [t.model_dump() for t in want_tools]
            got = await guarded.read_resource("notes://readme")
            assert got.contents == want_resource.contents
            assert (await guarded.get_prompt("fix", {"test": "test_total"})).messages == want_prompt.messages
            failed = await guarded.call_tool("explode", {})
            assert failed.is_error and texts(failed) == texts(want_failed)  # the server's own error result

    with open(tmp_path / "direct.log", "w") as direct_log, open(tmp_path / "proxy.log", "w") as log:
        run(main, direct_log, log)


def test_the_client_hears_through_the_proxy_what_it_hears_directly(tmp_path, config):
    """Progress and log notifications, and completions, pass through."""
    from mcp.types import PromptReference

    async def exchange(client, heard):
        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        built = await client.call_tool("build", {"target": "cart"}, progress_callback=on_progress)
        completed = await client.complete(
            PromptReference(type="ref/prompt", name="fix"), {"name": "test", "value": "test_t"}
        )
        logs = [m.params.model_dump() for m in heard if m.method == "notifications/message"]
        return texts(built), progress, completed.completion.values, logs

    async def main(direct_log, log):
        heard_direct, heard_proxied = [], []
        async with session(SERVER, direct_log, heard_direct) as direct:
            want = await exchange(direct, heard_direct)
        async with session(proxy("--config", config), log, heard_proxied) as guarded:
            got = await exchange(guarded, heard_proxied)
        return want, got

    with open(tmp_path / "direct.log", "w") as direct_log, open(tmp_path / "proxy.log", "w") as log:
        want, got = run(main, direct_log, log)
    built, progress, completions, logs = want
    assert built == ["built cart"] and len(progress) == 3 and completions == ["test_total", "test_tax"]
    assert [entry["data"] for entry in logs] == [f"built part {i} of cart" for i in (1, 2, 3)]
    assert got == want


def test_list_changes_reach_the_client_through_the_proxy(tmp_path, config):
    """The server's tools, resources and prompts list_changed notifications pass through."""
    changed = {"notifications/tools/list_changed", "notifications/resources/list_changed"}
    changed.add("notifications/prompts/list_changed")

    async def exchange(client, heard):
        grown = await client.call_tool("grow", {})
        with anyio.move_on_after(20):  # notifications are handled apart from the call's answer
            while not changed <= {m.method for m in heard}:
                await anyio.sleep(0.05)
        names = [tool.name for tool in (await client.list_tools()).tools]
        return texts(grown), sorted(m.method for m in heard if m.method in changed), "grown" in names

    async def main(direct_log, log):
        heard_direct, heard_proxied = [], []
        async with session(SERVER, direct_log, heard_direct) as direct:
            want = await exchange(direct, heard_direct)
        async with session(proxy("--config", config), log, heard_proxied) as guarded:
            got = await exchange(guarded, heard_proxied)
        return want, got

    with open(tmp_path / "direct.log", "w") as direct_log, open(tmp_path / "proxy.log", "w") as log:
        want, got = run(main, direct_log, log)
    assert want == (["grown"], sorted(changed), True)
    assert got == want


def test_a_cancelled_call_is_cancelled_in_the_wrapped_server(tmp_path, config):
    """The client abandons a running call (the SDK then sends notifications/cancelled):
    the wrapped server's tool is cancelled, through the proxy as directly."""

    async def exchange(client, job):
        started = anyio.Event()

        async def on_progress(done, total, message):
            started.set()

        async with anyio.create_task_group() as tasks:

            async def call():
                await client.call_tool("wait", {"job": job}, progress_callback=on_progress)

            tasks.start_soon(call)
            with anyio.fail_after(60):
                await started.wait()
            tasks.cancel_scope.cancel()
        return texts(await client.call_tool("was_cancelled", {"job": job}))

    async def main(direct_log, log):
        async with session(SERVER, direct_log) as direct:
            want = await exchange(direct, "direct")
        async with session(proxy("--config", config), log) as guarded:
            got = await exchange(guarded, "proxied")
        return want, got

    with open(tmp_path / "direct.log", "w") as direct_log, open(tmp_path / "proxy.log", "w") as log:
        want, got = run(main, direct_log, log)
    assert want == ["direct cancelled"]
    assert got == ["proxied cancelled"]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the 2025 protocol's ways
def test_logging_level_and_resource_subscriptions_reach_the_wrapped_server(tmp_path, config):
    """logging/setLevel and resources/(un)subscribe are forwarded, and the server's
    notifications/resources/updated comes back, through the proxy as directly."""

    async def exchange(client, heard):
        capabilities = client.server_capabilities
        await client.set_logging_level("warning")
        level = texts(await client.call_tool("level", {}))
        await client.subscribe_resource("notes://readme")
        touched = texts(await client.call_tool("touch", {"uri": "notes://readme"}))
        with anyio.move_on_after(20):  # notifications are handled apart from the call's answer
            while not any(m.method == "notifications/resources/updated" for m in heard):
                await anyio.sleep(0.05)
        updated = [str(m.params.uri) for m in heard if m.method == "notifications/resources/updated"]
        await client.unsubscribe_resource("notes://readme")
        touched += texts(await client.call_tool("touch", {"uri": "notes://readme"}))
        offered = capabilities.logging is not None, capabilities.resources.subscribe
        return offered, level, touched, updated

    async def main(direct_log, log):
        heard_direct, heard_proxied = [], []
        async with session(SERVER, direct_log, heard_direct) as direct:
            want = await exchange(direct, heard_direct)
        async with session(proxy("--config", config), log, heard_proxied) as guarded:
            got = await exchange(guarded, heard_proxied)
        return want, got

    with open(tmp_path / "direct.log", "w") as direct_log, open(tmp_path / "proxy.log", "w") as log:
        want, got = run(main, direct_log, log)
    touched = ["notes://readme updated", "notes://readme not subscribed"]
    assert want == ((True, True), ["warning"], touched, ["notes://readme"])
    assert got == want


def test_looping_client_is_nudged_then_blocked_then_stopped(tmp_path, config):
    async def main(log):
        async with session(proxy("--config", config, "--stop"), log) as client:
            results = [await client.call_tool("run_tests", {"path": "tests"}) for _ in range(5)]
            after = await client.call_tool("read_file", {"path": "cart.py"})
        return results, after

    results, after = logged(tmp_path, main)
    assert [r.is_error for r in results] == [False, False, False, True, True]
    assert texts(results[0]) == [FAILED]
    assert texts(results[2])[0] == FAILED and texts(results[2])[1].startswith(
        "loopwatch: you appear to be going in circles"
    )
    assert texts(results[3])[0].startswith("loopwatch blocked this call")
    assert texts(results[4])[0].startswith("loopwatch stopped the run")
    assert after.is_error and texts(after)[0].startswith("loopwatch stopped the run")  # refused once stopped
    log = (tmp_path / "proxy.log").read_text()
    assert "loopwatch: nudge run_tests: the same run_tests call" in log
    assert "loopwatch: block run_tests" in log and "loopwatch: stop run_tests" in log
    assert '"path"' not in log and "AssertionError" not in log  # names and counts only


def test_after_a_block_the_session_goes_on(tmp_path, config):
    async def main(log):
        async with session(proxy("--config", config), log) as client:  # attended, no --stop
            looped = [await client.call_tool("run_tests", {"path": "tests"}) for _ in range(5)]
            other = await client.call_tool("read_file", {"path": "cart.py"})
            narrower = await client.call_tool("run_tests", {"path": "tests/test_cart.py"})
        return looped, other, narrower

    looped, other, narrower = logged(tmp_path, main)
    assert [r.is_error for r in looped] == [False, False, False, True, True]  # blocked, never stopped
    assert texts(other) == ["contents of cart.py"] and not other.is_error
    assert texts(narrower) == [FAILED] and not narrower.is_error


def test_healthy_session_is_untouched(tmp_path, config):
    calls = [
        ("read_file", {"path": "a.py"}),
        ("run_tests", {"path": "tests"}),
        ("read_file", {"path": "b.py"}),
        ("run_tests", {"path": "tests"}),
    ] + [("poll", {"job": "build"})] * 6

    async def main(log):
        async with session(proxy("--config", config, "--profile", "unattended"), log) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    results = logged(tmp_path, main)
    assert not any(r.is_error for r in results)
    assert all(len(r.content) == 1 and "loopwatch" not in r.content[0].text for r in results)
    assert texts(results[-1]) == ["job build: 60% done"]
    assert "loopwatch:" not in (tmp_path / "proxy.log").read_text()


def test_cli_errors_are_one_line_and_exit_2_or_127(tmp_path):
    import subprocess

    cmd = [sys.executable, "-m", "loopwatch", "mcp-proxy"]
    missing = subprocess.run(cmd, check=False, capture_output=True, text=True, env=_env(), stdin=subprocess.DEVNULL)
    assert missing.returncode == 2 and "Missing argument" in missing.stderr
    absent = subprocess.run(
        [*cmd, "--", "no-such-mcp-server-xyz"],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert absent.returncode == 127
    assert absent.stderr.strip() == "loopwatch mcp-proxy: cannot run no-such-mcp-server-xyz: No such file or directory"
    bad = tmp_path / "bad.toml"
    bad.write_text("mode = 'sometimes'\n")
    config = subprocess.run(
        [*cmd, "--config", str(bad), "--", "true"],
        check=False,
        capture_output=True,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
    )
    assert config.returncode == 2 and "Traceback" not in config.stderr
