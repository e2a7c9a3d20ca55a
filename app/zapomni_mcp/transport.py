"""The SDK's stdio transport with two gaps closed (docs/decisions/0004-stdio-transport.md).

1. A line the SDK cannot parse reaches the session as an exception and is dropped silently, so
   the client waits forever; a request whose id is not a string or integer is taken for a
   notification and never answered; a second initialize renegotiates a live session. Here lines
   are read and parsed before the SDK's session sees them: those get Parse error (-32700) or
   Invalid Request (-32600) as JSON-RPC 2.0 requires, with the request's id wherever it can be
   found; everything else passes through.
2. stdin is read on a daemon thread, so a signal can stop the server while it waits for input.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = structlog.get_logger(__name__)

# The client that starts a stdio server runs on this machine as this user: error messages may name
# server paths (the data directory, allowed roots). An HTTP transport's clients are remote.
STDIO_IS_LOCAL = True


# The JSON reader the SDK parses with (pydantic's) stops at this nesting depth.
MAX_JSON_DEPTH = 200
# How far into a refused line its id is looked for (the scan is Python, and only refused lines pay for it).
MAX_ID_SCAN = 1024 * 1024


def read_line(line: str, initialized: bool) -> types.JSONRPCMessage | types.JSONRPCError | None:
    """A stdin line as the message to hand to the session, or the error owed to its sender; None: ignore it."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return error_for_unreadable(exc, line)
    if isinstance(message, types.JSONRPCNotification) and '"id"' in line:
        # The SDK reads a request whose id is not a string or integer as a notification, and never answers.
        raw = _loads(line)
        if isinstance(raw, dict) and "id" in raw:
            kind = type(raw["id"]).__name__.replace("NoneType", "null").replace("dict", "object")
            return _error(
                None, types.INVALID_REQUEST, f"Invalid Request: id must be a string or an integer (got {kind})"
            )
    if isinstance(message, types.JSONRPCRequest) and (problem := tool_call_problem(message.method, message.params)):
        return _error(message.id, types.INVALID_PARAMS, f"Invalid params: {problem}")
    if isinstance(message, types.JSONRPCRequest) and message.method == "initialize" and initialized:
        # The SDK would negotiate again and replace the live session's version and client details.
        return _error(
            message.id,
            types.INVALID_REQUEST,
            "Invalid Request: the session is already initialized; initialize is sent once, as the first request",
        )
    return message


def tool_call_problem(method: str, params: Any) -> str | None:
    """What is wrong with a tools/call's params, said plainly (the SDK answers -32602 with nothing in it)."""
    if method != "tools/call":
        return None
    if not isinstance(params, dict):
        return "tools/call needs params: an object with name (the tool to call) and arguments (an object)"
    if not isinstance(params.get("name"), str):
        return "params.name must be the name of a tool (a string); tools/list names them"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(arguments), "a number")
        return f"params.arguments must be an object of the tool's arguments by name (got {kind})"
    return None


def error_for_unreadable(exc: Exception, line: str = "") -> types.JSONRPCError | None:
    """The reply owed to a line that is not a JSON-RPC message; None for a blank line."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    if errors and errors[0]["type"] == "json_invalid":
        if not str(errors[0].get("input", "")).strip():
            return None
        return _error(_readable_id(line), types.PARSE_ERROR, f"Parse error: {_why_unparsed(errors[0], line)}")
    received: Any = errors[0].get("input") if errors else None
    request_id = received.get("id") if isinstance(received, dict) else None
    return _error(
        _valid_id(request_id),
        types.INVALID_REQUEST,
        "Invalid Request: expected a JSON-RPC 2.0 object with jsonrpc, method and (for requests) id",
    )


def _why_unparsed(error: Any, line: str) -> str:
    # pydantic's reader refuses two kinds of valid JSON: deep nesting and lone surrogate escapes.
    if "recursion limit" in str(error.get("msg", "")):
        return f"the JSON is nested too deeply (this server reads at most {MAX_JSON_DEPTH} levels)"
    if _has_lone_surrogate(_loads(line)):
        return "a string holds a lone surrogate escape (\\ud800 to \\udfff without its pair), which is not Unicode text"
    return "the line is not valid JSON"


def _readable_id(line: str) -> str | int | None:
    """The id of a line our reader refused, when Python's own JSON reader can still find it."""
    raw = _loads(line)
    if isinstance(raw, dict):
        return _valid_id(raw.get("id"))
    return _top_level_id(line) if raw is None else None


def _top_level_id(line: str) -> str | int | None:
    """The top-level object's id, read without parsing the rest: a line nested deeper than any reader goes (a
    thousand levels and more) still names the request it belongs to. Strings are skipped whole, so brackets
    and quotes inside them do not count."""
    decoder = json.JSONDecoder()
    depth = 0
    key_next = False
    position = 0
    while position < min(len(line), MAX_ID_SCAN):
        char = line[position]
        if char == '"':
            try:
                text, end = decoder.raw_decode(line, position)
            except ValueError:
                return None
            colon = _after_space(line, end)
            if depth == 1 and key_next and text == "id" and line.startswith(":", colon):
                try:
                    value, _ = decoder.raw_decode(line, _after_space(line, colon + 1))
                except (ValueError, RecursionError):
                    return None
                return _valid_id(value)
            position, key_next = end, False
            continue
        if not char.isspace():
            depth += 1 if char in "{[" else -1 if char in "}]" else 0
            key_next = char in "{," and depth == 1
        position += 1
    return None


def _after_space(line: str, position: int) -> int:
    return len(line) - len(line[position:].lstrip())


def _valid_id(request_id: Any) -> str | int | None:
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    if isinstance(request_id, str) and _has_lone_surrogate(request_id):
        return None  # it could not be written back
    return request_id


def _loads(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(key) or _has_lone_surrogate(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


class _StdinLines:
    """stdin lines, read by a daemon thread and handed to the event loop.

    The SDK reads stdin through `anyio.wrap_file`, a blocking read that neither a cancellation
    nor interpreter exit can interrupt: after SIGTERM the server would wait for the client to
    send another line or close the pipe. A daemon thread is simply left behind at exit.
    """

    def __init__(self) -> None:
        self._lines: asyncio.Queue[str | Undecodable] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(loop,), name="stdin-reader", daemon=True).start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        # Our own descriptor: at exit the interpreter locks sys.stdin's buffer, which this
        # thread may be blocked inside, and aborts ("could not acquire lock ... daemon threads").
        stream = open(os.dup(sys.stdin.fileno()), "rb")  # noqa: SIM115
        try:
            for raw in stream:
                loop.call_soon_threadsafe(self._lines.put_nowait, _decoded(raw))
            loop.call_soon_threadsafe(self._lines.put_nowait, "")
        except RuntimeError:  # the loop closed while we were reading: the server is gone
            return

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str | Undecodable:
        line = await self._lines.get()
        if not line:
            raise StopAsyncIteration
        return line


@dataclass(frozen=True)
class Undecodable:
    """A line that is not UTF-8: refused, never stored with its bytes replaced."""

    offset: int  # of the first byte that is not UTF-8
    text: str  # the line with such bytes replaced, only to find the request's id in

    def error(self) -> types.JSONRPCError:
        message = f"Parse error: the line is not UTF-8 (byte offset {self.offset}); JSON-RPC messages are UTF-8 text"
        return _error(_readable_id(self.text), types.PARSE_ERROR, message)


def _decoded(raw: bytes) -> str | Undecodable:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Undecodable(exc.start, raw.decode("utf-8", errors="replace"))


class _NoLines:
    """stdin as the SDK's reader sees it: we read the real one (`_StdinLines`) and parse it ourselves."""

    def __aiter__(self) -> _NoLines:
        return self

    async def __anext__(self) -> str:
        raise StopAsyncIteration


@asynccontextmanager
async def stdio_transport(
    on_eof: Callable[[], None] | None = None,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    # The SDK writes stdout; lines are read and parsed here, where the raw line is still at hand
    # (a bad id or a refused line's id can only be found in it). The SDK annotates stdin as
    # anyio.AsyncFile[str] but only iterates its lines, which _NoLines does (it has none).
    async with stdio_server(stdin=_NoLines()) as (_, write_stream):  # type: ignore[arg-type]
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            initialized = False
            async with send:
                async for line in _StdinLines():
                    if isinstance(line, Undecodable):
                        item: types.JSONRPCMessage | types.JSONRPCError | None = line.error()
                    elif not line.strip():
                        continue
                    else:
                        item = read_line(line, initialized)
                    if isinstance(item, types.JSONRPCError):
                        log.warning("protocol.unreadable_line", code=item.error.code, reason=item.error.message)
                        await write_stream.send(SessionMessage(item))
                    elif item is not None:
                        initialized = initialized or _initializes(item)
                        await send.send(SessionMessage(item))
            if on_eof is not None:  # the client closed stdin: tell the engine before the SDK cancels
                on_eof()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pump)
            yield receive, write_stream
            tasks.cancel_scope.cancel()


def _initializes(message: types.JSONRPCMessage) -> bool:
    """An initialize request the SDK will accept (it validates the params the same way)."""
    if not isinstance(message, types.JSONRPCRequest) or message.method != "initialize":
        return False
    try:
        types.InitializeRequestParams.model_validate(message.params or {}, by_name=False)
    except ValidationError:
        return False
    return True
