"""A tiny MCP server (the official SDK's `MCPServer`) for the mcp-proxy tests to wrap.

Run as a script it serves on stdio. Its tools: `run_tests` fails the same way every
time, `read_file` echoes a path, `poll` answers with a counter that moves, `explode`
raises, `build` reports its progress and logs as it goes, `grow` adds a tool and
says its lists changed, `wait` runs until it is cancelled and `was_cancelled` says
whether it was, `level` says the logging level the client set and `touch` says a
subscribed resource was updated. It also has one resource (with subscriptions), one
prompt and completions of the prompt's argument, to check they are forwarded.
"""

from __future__ import annotations

import itertools

import anyio

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    Completion,
    EmptyResult,
    PromptReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

server = MCPServer("tiny-project", instructions="A project with failing tests.")
_ticks = itertools.count(1)
_cancelled: list[str] = []  # the `wait` calls that were cancelled
_level: list[str] = []  # the logging levels the client set
_subscribed: set[str] = set()  # the resources the client subscribed to


@server.tool()
def run_tests(path: str) -> str:
    """Run the test suite under `path`."""
    return "FAILED tests/test_cart.py::test_total - AssertionError: 10 != 12"


@server.tool()
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@server.tool()
def poll(job: str) -> str:
    """How far a job has got."""
    return f"job {job}: {next(_ticks) * 10}% done"


@server.tool()
def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool blew up")


@server.tool()
async def build(target: str, ctx: Context) -> str:
    """Build `target`, saying how far it has got."""
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"step {step} of 3")
        await ctx.info(f"built part {step} of {target}")
    return f"built {target}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool, and tell the client that its lists changed."""
    server.add_tool(lambda: "new", name="grown", description="Added by grow.")
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_resource_list_changed()
    await ctx.session.send_prompt_list_changed()
    return "grown"


@server.tool()
async def wait(job: str, ctx: Context) -> str:
    """Run until cancelled (saying once, as progress, that it has started)."""
    try:
        await ctx.report_progress(0, 1, "started")
        await anyio.sleep(600)
    except anyio.get_cancelled_exc_class():
        _cancelled.append(job)
        raise
    return f"{job} finished"


@server.tool()
async def was_cancelled(job: str) -> str:
    """Whether a `wait` for `job` was cancelled (waiting a while for the news)."""
    with anyio.move_on_after(20):
        while job not in _cancelled:
            await anyio.sleep(0.05)
    return f"{job} cancelled" if job in _cancelled else f"{job} not cancelled"


@server.tool()
def level() -> str:
    """The logging level the client set last."""
    return _level[-1] if _level else "unset"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Say that the resource `uri` changed, if the client subscribed to it."""
    if uri not in _subscribed:
        return f"{uri} not subscribed"
    await ctx.session.send_resource_updated(uri)
    return f"{uri} updated"


async def set_level(ctx, params: SetLevelRequestParams) -> EmptyResult:
    _level.append(params.level)
    return EmptyResult()


async def subscribe(ctx, params: SubscribeRequestParams) -> EmptyResult:
    _subscribed.add(str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx, params: UnsubscribeRequestParams) -> EmptyResult:
    _subscribed.discard(str(params.uri))
    return EmptyResult()


# MCPServer serves none of these (both are deprecated as of the 2026-07-28 protocol), but
# clients of the 2025 protocol still use them: register them on its low-level server.
server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
server._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
server._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


@server.completion()
async def complete(ref, argument, context):
    if isinstance(ref, PromptReference) and argument.name == "test":
        names = ["test_total", "test_discount", "test_tax"]
        return Completion(values=[n for n in names if n.startswith(argument.value)])
    return None


@server.resource("notes://readme")
def readme() -> str:
    """The project's notes."""
    return "Run the tests with run_tests."


@server.prompt()
def fix(test: str) -> str:
    """Ask for a fix."""
    return f"Please fix {test}."


if __name__ == "__main__":
    server.run()
