"""What stands between the SDK's bearer authentication and its transport, cheapest check first.

1. the token's rate limit (429 with Retry-After);
2. the body, read whole up to the limit (413), and parsed (a JSON-RPC POST is small);
3. authorisation of the call it makes against the token's grant (403, `insufficient_scope`);
   a method other than POST gets 405 before any of it;
4. the SDK's transport, fed exactly the request that was checked, within the request timeout.

Authorisation happens here, at the HTTP layer, because the answer must be an HTTP 403 that
nothing has acted on: inside a handler the SDK only lets a call fail with a JSON-RPC error at
status 200 (docs/decisions/0019-http-transport.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import anyio
import structlog
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, REQUEST_TIMEOUT, RequestId
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zapomni_core import Grant, Settings, ZapomniError
from zapomni_http.auth import RETRY_AFTER_S, UNAVAILABLE_MESSAGE, UncheckedToken
from zapomni_http.authorise import refusal
from zapomni_http.limits import BodyTooLarge, ClientGone, TokenBuckets, read_body
from zapomni_http.metrics import Metrics
from zapomni_http.replies import FORBIDDEN, RATE_LIMITED, TOO_LARGE, UNAVAILABLE, error_body
from zapomni_http.replies import refusal as refusal_response
from zapomni_mcp.access import GrantToken
from zapomni_mcp.errors import public_message
from zapomni_mcp.registry import ToolRegistry
from zapomni_mcp.transport import tool_call_problem

log = structlog.get_logger(__name__)

MB = 1024 * 1024
NOT_POST = (
    "Method Not Allowed: this server is stateless; send each JSON-RPC message as a POST to this URL "
    "(it offers no GET stream and has no session to DELETE)"
)


class Guard:
    def __init__(
        self, app: ASGIApp, *, registry: ToolRegistry, settings: Settings, buckets: TokenBuckets, metrics: Metrics
    ) -> None:
        self.app = app
        self.registry = registry
        self.buckets = buckets
        self.metrics = metrics
        self.default_workspace = settings.workspace
        self.max_body = int(settings.http_max_body_mb * MB)
        self.timeout_s = settings.http_request_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        grant = grant_of(scope)
        if grant is None:  # already counted by the verifier; the log has why
            await unchecked_refusal()(scope, receive, send)
            return
        with structlog.contextvars.bound_contextvars(token=grant.name):
            await self._guarded(grant, scope, receive, send)

    async def _guarded(self, grant: Grant, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            # Stateless: there is no session to DELETE, and a GET stream would never carry a message (clients
            # ask for one and take 405 as "none", as the spec allows). Not logged: every client session asks.
            await refusal_response(405, INVALID_REQUEST, NOT_POST, headers={"Allow": "POST"})(scope, receive, send)
            return
        wait = self.buckets.take(grant.token_id)
        if wait:
            retry = math.ceil(wait)
            message = (
                f"Too many requests: token {grant.name!r} may make {self.buckets.rate:g} per second "
                f"(bursts of {self.buckets.burst:g}); retry in {retry} s"
            )
            await self._refuse(
                "RateLimited", 429, RATE_LIMITED, message, scope, receive, send, {"Retry-After": str(retry)}
            )
            return
        try:
            body = await read_body(scope, receive, self.max_body)
        except ClientGone:
            return
        except BodyTooLarge as exc:
            message = (
                f"Request body too large: {exc.size} bytes, and this server accepts at most {self.max_body} "
                f"(ZAPOMNI_HTTP_MAX_BODY_MB). add_memory takes texts up to 10 MB; larger documents go through "
                "ingest_path from a directory the server can read"
            )
            await self._refuse("BodyTooLarge", 413, TOO_LARGE, message, scope, receive, send)
            return
        try:
            request = json.loads(body, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            # Never handed on unchecked: a reader that took another of two duplicate keys would run another call.
            await self._refuse("ParseError", 400, PARSE_ERROR, f"Parse error: {exc}", scope, receive, send)
            return
        if isinstance(request, list):  # what a batch would call is not authorised one by one: refused whole
            message = "Invalid Request: JSON-RPC batches are not accepted; send one request per POST"
            await self._refuse("InvalidRequest", 400, INVALID_REQUEST, message, scope, receive, send)
            return
        request_id = _request_id(request)
        if isinstance(request, dict) and (
            problem := tool_call_problem(request.get("method", ""), request.get("params"))
        ):  # 200: the client session hands it on as an error
            message = f"Invalid params: {problem}"
            await self._refuse(
                "InvalidParams", 200, INVALID_PARAMS, message, scope, receive, send, request_id=request_id
            )
            return
        if isinstance(request, dict):
            try:
                reason = await refusal(grant, request, self.registry, self.default_workspace)
            except ZapomniError as exc:
                message = f"Could not check this token's access: {public_message(exc, local=False)}"
                await self._refuse(
                    "Unavailable", 503, UNAVAILABLE, message, scope, receive, send, request_id=request_id
                )
                return
            if reason is not None:
                headers = {
                    "WWW-Authenticate": f'Bearer error="insufficient_scope", error_description="{_quoted(reason)}"'
                }
                message = f"Forbidden: {reason}. Nothing was done."
                await self._refuse("Forbidden", 403, FORBIDDEN, message, scope, receive, send, headers, request_id)
                return
        # The transport parses again: it gets the very request that was authorised, re-encoded.
        await self._within_timeout(scope, _replay(_encoded(request), receive), send, request_id)

    async def _refuse(
        self,
        kind: str,
        status: int,
        code: int,
        message: str,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: Mapping[str, str] | None = None,
        request_id: RequestId | None = None,
    ) -> None:
        log.warning("http.refused", status=status, error=kind, reason=message)
        self.metrics.refused(kind)
        await refusal_response(status, code, message, request_id=request_id, headers=headers)(scope, receive, send)

    async def _within_timeout(self, scope: Scope, receive: Receive, send: Send, request_id: RequestId | None) -> None:
        """The SDK app, cancelled after the request timeout; the client then gets an answer, not silence."""
        state = _Response(send)
        with anyio.move_on_after(self.timeout_s) as deadline:
            await self.app(scope, receive, state.send)
        if not deadline.cancelled_caught or state.finished:
            return
        message = (
            f"Request timed out after {self.timeout_s:g} s (ZAPOMNI_HTTP_REQUEST_TIMEOUT_S) and was cancelled; "
            "work that takes longer belongs in a background job (job_status follows one)"
        )
        log.warning("http.request_timeout", timeout_s=self.timeout_s)
        self.metrics.refused("Timeout")
        await state.finish_with_error(request_id, REQUEST_TIMEOUT, message)


class _Response:
    """Watches what the app sends, so that a cancelled request can still be answered properly."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.finished = False
        self.event_stream = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            self.event_stream = any(
                name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                for name, value in message.get("headers", [])
            )
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self._send(message)

    async def finish_with_error(self, request_id: RequestId | None, code: int, message: str) -> None:
        body = error_body(request_id, code, message)
        if not self.started:
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await self._send({"type": "http.response.start", "status": 504, "headers": headers})
            await self._send({"type": "http.response.body", "body": body})
        elif self.event_stream:
            event = b"event: message\r\ndata: " + body + b"\r\n\r\n"
            await self._send({"type": "http.response.body", "body": event, "more_body": False})
        else:  # a JSON body half sent: end it; the client sees a broken reply rather than waiting forever
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def grant_of(scope: Scope) -> Grant | None:
    """The grant of the request's verified token; None when the database could not check the token."""
    user = scope.get("user")
    token = user.access_token if isinstance(user, AuthenticatedUser) else None
    if isinstance(token, UncheckedToken):
        return None
    if not isinstance(token, GrantToken):  # the SDK's RequireAuthMiddleware lets no other request through
        raise RuntimeError("the guard must run behind the SDK's bearer authentication")
    return token.grant


def unchecked_refusal() -> Response:
    """503, not 401: the token may well be good, and a client told it is not would drop it."""
    return refusal_response(503, UNAVAILABLE, UNAVAILABLE_MESSAGE, headers={"Retry-After": str(RETRY_AFTER_S)})


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        duplicated = next(key for key in keys if keys.count(key) > 1)
        raise ValueError(f"the key {duplicated[:100]!r} appears twice in one object")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    # Python's reader takes NaN and Infinity, which JSON has not: an id of NaN made a request a notification.
    raise ValueError(f"{name} is not a JSON value")


def _request_id(request: Any) -> RequestId | None:
    value = request.get("id") if isinstance(request, dict) else None
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _encoded(request: Any) -> bytes:
    """Compact UTF-8, no larger than the body it came from (escaped only where a lone surrogate forces it)."""
    try:
        return json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(request, separators=(",", ":")).encode()


def _quoted(text: str) -> str:
    """Fit for a quoted header parameter: ASCII, no quotes or backslashes, one short line."""
    return " ".join(text.encode("ascii", "replace").decode().replace('"', "'").replace("\\", "/").split())[:300]


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over `body` once, then whatever the connection says next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again
