"""A tiny MCP server (the official SDK's `MCPServer`) for the mcp-proxy tests to wrap.

Run as a script it serves on stdio. Its tools: `run_tests` fails the same way every
time, `read_file` echoes a path, `poll` answers with a counter that moves, `explode`
raises. It also has one resource and one prompt, to check they are forwarded.
"""

from __future__ import annotations

import itertools

from mcp.server.mcpserver import MCPServer

server = MCPServer("tiny-project", instructions="A project with failing tests.")
_ticks = itertools.count(1)


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
