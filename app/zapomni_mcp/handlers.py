"""The MCP request handlers: tools and resources behind the SDK's low-level server, with errors mapped for the wire."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
import structlog
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from zapomni_core import Progress, ProgressSink, RequestContext, for_remote, package_version
from zapomni_mcp import resources
from zapomni_mcp.access import current_grant
from zapomni_mcp.errors import INVALID_ARGUMENTS, describe_validation_error, error_kind, failure_message
from zapomni_mcp.opening import Opening
from zapomni_mcp.registry import Tool

log = structlog.get_logger(__name__)

# How long a progress notification may wait for the client to take it.
PROGRESS_SEND_TIMEOUT_S = 10.0

# Told of every finished tool call: (tool, the kind of error it answered or None, seconds). The HTTP
# server counts calls with it; stdio has no one listening.
CallObserver = Callable[[str, str | None, float], None]

INSTRUCTIONS = (
    "Zapomni is your long-term memory on this machine. Use add_memory to keep facts, decisions and "
    "context worth recalling later; use search_memory before answering questions that may depend on "
    "earlier conversations. list_memories and get_memory show what is stored; update_memory corrects "
    "a memory and delete_memory forgets it. Pass workspace to keep projects apart (list_workspaces)."
)


def build_server(opening: Opening, *, local: bool, observer: CallObserver | None = None) -> Server[Any]:
    """`opening`: the engine, perhaps still opening (then requests wait for it, unless it can answer early).
    `local`: the transport's client runs on this machine (stdio), so error messages may name server paths."""
    catalog = opening.catalog

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=catalog.definitions())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = catalog.get(params.name)
        if tool is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Unknown tool {params.name!r}; available tools: {', '.join(catalog.names())}",
            )
        request_id = str(ctx.request_id)
        with structlog.contextvars.bound_contextvars(request_id=request_id, tool=tool.name):
            started = time.perf_counter()
            context = RequestContext(request_id=request_id, progress_sink=_progress_sink(ctx), client=_client(ctx))
            result, error = await _run(opening, tool, params.arguments or {}, context, local=local)
            elapsed = time.perf_counter() - started
            log.info("tool.called", ok=error is None, duration_ms=round(elapsed * 1000, 2))
            if observer is not None:
                observer(tool.name, error, elapsed)
            return result

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        core, _ = await opening.engine()
        return await resources.list_page(core, params.cursor if params else None)

    async def list_resource_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return resources.templates()

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        core, _ = await opening.engine()
        return await resources.read(core, str(params.uri), local=local)

    return Server(
        "zapomni",
        version=package_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        get_tool_input_schema=catalog.input_schema,
    )


async def _run(
    opening: Opening, tool: type[Tool[Any, Any]], arguments: dict[str, Any], ctx: RequestContext, *, local: bool
) -> tuple[types.CallToolResult, str | None]:
    """The call's result, and the kind of error it reports (None: it succeeded)."""
    try:
        validated = tool.input_model.model_validate(arguments)
    except ValidationError as exc:
        return error_result(describe_validation_error(tool.name, tool.input_model, exc)), INVALID_ARGUMENTS
    try:
        output = await opening.early(tool.name, validated)
        if output is None:
            output = await (await opening.tool(tool.name)).execute(validated, ctx)
    except Exception as exc:
        return error_result(failure_message(tool.name, exc, ctx.request_id, local=local)), error_kind(exc)
    if not local:  # as an error reply does: no server paths or hosts for a client on another machine
        output = for_remote(output)
    result = types.CallToolResult(
        content=[types.TextContent(text=tool.render(output))],
        structured_content=output.model_dump(mode="json"),
    )
    return result, None


def _client(ctx: Any) -> str:
    """Who is calling, for telling one client's conversation from another's: over stdio the one
    process is the one client; over HTTP its token, and its MCP session when it keeps one."""
    grant = current_grant()
    if grant is None:
        return "local"
    headers = getattr(ctx.request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return f"token {grant.token_id}" + (f" session {session}" if session else "")


def _progress_sink(ctx: Any) -> ProgressSink:
    """Progress as `notifications/progress` (sent only when the request carried a progressToken).

    A report that cannot be delivered in time is dropped rather than hold the work up: over HTTP a
    cancelled request's stream has no reader left, and a write past the point of no return runs
    shielded to its end (zapomni_core.context.until_committed), so it would wait for ever."""

    async def send(progress: Progress) -> None:
        with anyio.move_on_after(PROGRESS_SEND_TIMEOUT_S):
            await ctx.session.report_progress(progress.done, progress.total, progress.describe())

    return send


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
