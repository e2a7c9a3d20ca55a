"""Refusals at the HTTP layer, as JSON-RPC errors with the HTTP status that says what happened.

The SDK's client surfaces a JSON-RPC error body at any status as the call's error, so an agent
reads the message; the status is for everything else on the way (proxies, metrics, people).
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp_types import ErrorData, JSONRPCError, RequestId
from starlette.responses import Response

# JSON-RPC leaves -32000 to -32099 to the server; these mirror the HTTP status each comes with.
FORBIDDEN = -32003
TOO_LARGE = -32013
RATE_LIMITED = -32029
UNAVAILABLE = -32053


def error_body(request_id: RequestId | None, code: int, message: str) -> bytes:
    error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode()


def refusal(
    status: int,
    code: int,
    message: str,
    *,
    request_id: RequestId | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    return Response(
        error_body(request_id, code, message),
        status_code=status,
        media_type="application/json",
        headers=dict(headers or {}),
    )
