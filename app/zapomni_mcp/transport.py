"""stdio transport that answers unreadable lines as JSON-RPC 2.0 requires.

The SDK's stdio transport hands a line it cannot parse to the session as an exception, and the
session drops it silently. A client that sent it then waits forever, so this wrapper replies
with Parse error (-32700) or Invalid Request (-32600) and passes everything else through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = structlog.get_logger(__name__)


def error_for_unreadable(exc: Exception) -> types.JSONRPCError | None:
    """The reply owed to a line that is not a JSON-RPC message; None for a blank line."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    if errors and errors[0]["type"] == "json_invalid":
        if not str(errors[0].get("input", "")).strip():
            return None
        return _error(None, types.PARSE_ERROR, "Parse error: the line is not valid JSON")
    received: Any = errors[0].get("input") if errors else None
    request_id = received.get("id") if isinstance(received, dict) else None
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    return _error(
        request_id,
        types.INVALID_REQUEST,
        "Invalid Request: expected a JSON-RPC 2.0 object with jsonrpc, method and (for requests) id",
    )


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


@asynccontextmanager
async def stdio_transport() -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            async with send:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await send.send(item)
                        continue
                    reply = error_for_unreadable(item)
                    if reply is not None:
                        log.warning("protocol.unreadable_line", code=reply.error.code)
                        await write_stream.send(SessionMessage(reply))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            yield receive, write_stream
            tasks.cancel_scope.cancel()
