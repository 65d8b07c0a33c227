"""MCP: a stdio server that stands in front of another one and guards its tools.

    loopwatch mcp-proxy -- npx -y @modelcontextprotocol/server-filesystem ~/src

In an MCP client (Claude Desktop, Cursor, ...) configure `loopwatch` as the command
and `["mcp-proxy", "--", <the server's command and arguments>]` as its arguments.

The proxy starts the wrapped server as its child, over stdio, with the official `mcp`
SDK, and forwards every tool it lists (and its resources and prompts, when it has
them). Each tool call goes through one `Guard`:

- block: the call is not forwarded; the client gets `CallToolResult(isError=True)`
  with the reason, a valid answer to its request;
- nudge: the wrapped server's result, with one more text block saying what the model
  is circling;
- stop: MCP has no way to end a client's run, so from then on every tool call is
  answered `isError=True` with the stop reason, until the client restarts the server.

Each finding is also one `loopwatch: ...` line on stderr (MCP clients keep a server's
stderr in their logs), naming the tool and counts, never arguments or results.
Errors of the wrapped server (an unknown tool, a bad argument) reach the client as
they were raised.

Everything else passes through unjudged: the wrapped server's notifications (progress
of a tool call, log messages, list and resource changes), resources and their
subscriptions, prompts, completions and the logging level; a request the client
cancels is cancelled upstream too (its task, and so the SDK's request, is cancelled).
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

try:
    from mcp import ClientSession, StdioServerParameters, stdio_client, types
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.stdio import stdio_server
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("loopwatch.adapters.mcp_proxy needs the MCP SDK: pip install 'loopwatch[mcp]'") from exc

from .._core.verdict import Action
from .._guard import Decision, Guard

__all__ = ["make_server", "serve"]


def _text(result: types.CallToolResult) -> Any:
    """What identifies a result: its text blocks, and its structured content if any."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    others = [block.type for block in result.content if not isinstance(block, types.TextContent)]
    return {"text": texts, "other": others, "structured": result.structured_content}


def _refusal(decision: Decision) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=decision.tool_result or "")], is_error=True
    )


class Relay:
    """Hands the wrapped server's notifications to the client (the `message_handler` of
    the upstream session). The client's session is known from its first request; a
    notification before any (a list change at start-up) has no one to go to yet."""

    def __init__(self) -> None:
        self.client: Any = None

    def seen(self, ctx: Any) -> None:
        self.client = getattr(ctx, "session", None) or self.client

    async def __call__(self, message: Any) -> None:
        if self.client is None or isinstance(message, Exception):
            return  # a transport fault of the upstream connection: the session reports it
        if isinstance(message, types.ProgressNotification):
            return  # a request's progress goes with its request (`call_tool`)
        await self.client.send_notification(message)


def make_server(
    upstream: ClientSession,
    init: types.InitializeResult,
    guard: Guard,
    log: TextIO | None = None,
    relay: Relay | None = None,
) -> Server:
    """The proxy's MCP server, forwarding to `upstream` (an initialized session whose
    `message_handler` is `relay`)."""

    def say(line: str) -> None:
        if log is not None:
            print(f"loopwatch: {line}", file=log, flush=True)

    relay = relay if relay is not None else Relay()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        relay.seen(ctx)
        return await upstream.list_tools(params=params)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        relay.seen(ctx)
        name, arguments = params.name, params.arguments
        before = guard.before_call(name, arguments)
        if before.blocks:
            say(f"{before.action.value} {name}: {guard.stopped or before.reason}")
            return _refusal(before)
        meta: Any = params.meta or getattr(ctx, "meta", None) or {}
        token = meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) else None
        progress: Any = None  # the SDK's ProgressFnT, when the client asked for progress
        if token is not None:
            session, request = ctx.session, ctx.request_id

            async def progress(done: float, total: float | None, message: str | None) -> None:
                await session.send_progress_notification(token, done, total, message, related_request_id=request)

        try:
            result = await upstream.call_tool(name, arguments, progress_callback=progress)
        except Exception as exc:
            guard.after_call(name, arguments, str(exc), error=True)
            raise
        after = guard.after_call(name, arguments, _text(result), error=bool(result.is_error))
        if after.verdict.action is Action.WARN:  # warn mode, or a streak half-way: the person only
            say(f"warning {name}: {after.reason}")
        if after.action is Action.NUDGE or after.action is Action.STOP:
            say(f"{after.action.value} {name}: {after.reason}")
            if after.message:
                extra = types.TextContent(type="text", text=after.message)
                result = result.model_copy(update={"content": [*result.content, extra]})
        return result

    handlers: dict[str, Any] = {"on_list_tools": list_tools, "on_call_tool": call_tool}
    capabilities = init.capabilities
    if capabilities.resources is not None:

        async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
            relay.seen(ctx)
            return await upstream.list_resources(params=params)

        async def list_templates(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListResourceTemplatesResult:
            relay.seen(ctx)
            return await upstream.list_resource_templates(params=params)

        async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            relay.seen(ctx)
            return await upstream.read_resource(params.uri)

        handlers.update(
            on_list_resources=list_resources, on_list_resource_templates=list_templates, on_read_resource=read_resource
        )
        if capabilities.resources.subscribe:

            async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
                relay.seen(ctx)
                return await upstream.subscribe_resource(str(params.uri))

            async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
                relay.seen(ctx)
                return await upstream.unsubscribe_resource(str(params.uri))

            handlers.update(on_subscribe_resource=subscribe, on_unsubscribe_resource=unsubscribe)
    if capabilities.prompts is not None:

        async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
            relay.seen(ctx)
            return await upstream.list_prompts(params=params)

        async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
            relay.seen(ctx)
            return await upstream.get_prompt(params.name, params.arguments)

        handlers.update(on_list_prompts=list_prompts, on_get_prompt=get_prompt)
    if capabilities.completions is not None:

        async def complete(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
            relay.seen(ctx)
            context = params.context.arguments if params.context is not None else None
            argument = {"name": params.argument.name, "value": params.argument.value}
            return await upstream.complete(params.ref, argument, context)

        handlers.update(on_completion=complete)
    if capabilities.logging is not None:

        async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
            relay.seen(ctx)
            return await upstream.set_logging_level(params.level)

        handlers.update(on_set_logging_level=set_level)
    info = init.server_info
    return Server(info.name, version=info.version or "", instructions=init.instructions, **handlers)


async def _ignore(params: Any) -> None:
    """The wrapped server's log messages are the client's to read: `relay` passes them on."""


async def serve(command: list[str], guard: Guard, *, log: TextIO | None = sys.stderr, cwd: str | None = None) -> None:
    """Run the wrapped server `command` and serve its tools, guarded, on stdio until
    the client goes away. Raises OSError if the command cannot be started."""
    # The whole environment: a wrapped server needs what its client configured for it
    # (API keys, paths), not the SDK's safe default subset.
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ), cwd=cwd)
    relay = Relay()
    async with (
        stdio_client(params, errlog=log or sys.stderr) as (read, write),
        ClientSession(read, write, message_handler=relay, logging_callback=_ignore) as upstream,
    ):
        init = await upstream.initialize()
        server = make_server(upstream, init, guard, log, relay)
        offered = init.capabilities
        changes = NotificationOptions(  # the wrapped server's list changes reach the client: say so as it does
            prompts_changed=bool(offered.prompts and offered.prompts.list_changed),
            resources_changed=bool(offered.resources and offered.resources.list_changed),
            tools_changed=bool(offered.tools and offered.tools.list_changed),
        )
        async with stdio_server() as (client_read, client_write):
            await server.run(client_read, client_write, server.create_initialization_options(changes))
