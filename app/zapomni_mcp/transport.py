"""The SDK's stdio transport with two gaps closed (docs/decisions/0004-stdio-transport.md).

1. A line the SDK cannot parse reaches the session as an exception and is dropped silently, so
   the client waits forever. Here it is answered with Parse error (-32700) or Invalid Request
   (-32600), as JSON-RPC 2.0 requires; everything else passes through.
2. stdin is read on a daemon thread, so a signal can stop the server while it waits for input.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
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


class _StdinLines:
    """stdin lines, read by a daemon thread and handed to the event loop.

    The SDK reads stdin through `anyio.wrap_file`, a blocking read that neither a cancellation
    nor interpreter exit can interrupt: after SIGTERM the server would wait for the client to
    send another line or close the pipe. A daemon thread is simply left behind at exit.
    """

    def __init__(self) -> None:
        self._lines: asyncio.Queue[str] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(loop,), name="stdin-reader", daemon=True).start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        # Our own descriptor: at exit the interpreter locks sys.stdin's buffer, which this
        # thread may be blocked inside, and aborts ("could not acquire lock ... daemon threads").
        stream = open(os.dup(sys.stdin.fileno()), encoding="utf-8", errors="replace")  # noqa: SIM115
        try:
            for line in stream:
                loop.call_soon_threadsafe(self._lines.put_nowait, line)
            loop.call_soon_threadsafe(self._lines.put_nowait, "")
        except RuntimeError:  # the loop closed while we were reading: the server is gone
            return

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if not line:
            raise StopAsyncIteration
        return line


@asynccontextmanager
async def stdio_transport(
    on_eof: Callable[[], None] | None = None,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    async with stdio_server(stdin=_StdinLines()) as (read_stream, write_stream):  # type: ignore[arg-type]
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
            if on_eof is not None:  # the client closed stdin: tell the engine before the SDK cancels
                on_eof()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            yield receive, write_stream
            tasks.cancel_scope.cancel()
