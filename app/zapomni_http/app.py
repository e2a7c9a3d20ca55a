"""The ASGI app: the SDK's stateless Streamable HTTP app with our token verifier, guard, health and metrics.

Outside in: CORS (browser origins, when configured) → Host/Origin check → the SDK's Starlette app
(bearer authentication on every route; /mcp requires it, then our guard, then the SDK transport;
/healthz and /readyz need none; /metrics a token for every workspace; every other path is the web
console, which signs its users in with the same tokens and shares the guard's rate and body limits).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from zapomni_console import Limits, console_app
from zapomni_core import Settings, ZapomniCore
from zapomni_http.auth import CoreTokenVerifier, auth_settings, issuer_of
from zapomni_http.binding import public_url, uses_tls
from zapomni_http.guard import MB, Guard, grant_of, unchecked_refusal
from zapomni_http.health import health_routes
from zapomni_http.limits import TokenBuckets, sign_in_limit
from zapomni_http.metrics import Metrics
from zapomni_http.oauth_routes import authorization_routes, resource_metadata
from zapomni_http.replies import FORBIDDEN, refusal
from zapomni_http.security import OriginCheck, transport_security, with_cors
from zapomni_mcp.handlers import build_server
from zapomni_mcp.opening import Opening
from zapomni_mcp.tools import build_registry

MCP_PATH = "/mcp"
OPEN_PATHS = ("/healthz", "/readyz")


def build_app(core: ZapomniCore, settings: Settings) -> ASGIApp:
    url = public_url(settings)
    registry = build_registry(core)
    metrics = Metrics(core)
    server = build_server(Opening.of(core, registry), local=False, observer=metrics.observe_call)
    security = transport_security(settings, url)
    auth = auth_settings(url)
    assert auth.resource_server_url is not None
    metadata_url = build_resource_metadata_url(auth.resource_server_url)
    buckets = TokenBuckets(settings.http_rate, settings.http_burst)
    console = console_app(
        core,
        secure_cookies=uses_tls(settings),
        limits=Limits(max_body=int(settings.http_max_body_mb * MB), wait=buckets.take, sign_in=sign_in_limit()),
    )
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        # A second line behind the guard's limit, which it enforces first: the request the guard hands on is
        # re-encoded, up to 6 times longer where a lone surrogate must stay escaped.
        max_request_body_size=6 * int(settings.http_max_body_mb * MB),
        max_sessions=settings.http_max_connections,
        transport_security=security,
        host=settings.http_host,
        auth=auth,
        token_verifier=CoreTokenVerifier(core, metrics),
        custom_starlette_routes=[
            *health_routes(core),
            Route("/metrics", RequireAuthMiddleware(_metrics_endpoint(metrics), [], metadata_url), methods=["GET"]),
        ],
    )
    # Last (the SDK types its custom routes as plain Routes, so the mount is added here): every path the routes
    # above do not take. The console checks the Origin again, more strictly: exactly its own origin, where the
    # check outside lets any loopback port through.
    app.router.routes.append(Mount("/", app=console))
    _serve_authorization(app, core, settings, buckets, url)
    _guard_mcp(app, lambda inner: Guard(inner, registry=registry, settings=settings, buckets=buckets, metrics=metrics))
    return with_cors(OriginCheck(app, security, OPEN_PATHS), settings.http_cors_origins)


def _serve_authorization(
    app: Starlette, core: ZapomniCore, settings: Settings, buckets: TokenBuckets, url: str
) -> None:
    """The authorization server's routes when ZAPOMNI_OAUTH is on, and the protected-resource metadata in place of
    the SDK's, which names an authorization server even when there is none."""
    metadata_path = urlsplit(str(build_resource_metadata_url(AnyHttpUrl(url)))).path
    # As the SDK writes it in the server's metadata (a trailing slash): clients compare the two exactly.
    issuer = str(AnyHttpUrl(issuer_of(url))) if settings.oauth else None
    routes = [resource_metadata(metadata_path, url, issuer)]
    if issuer is not None:
        routes += authorization_routes(core, url, issuer, buckets)
    kept = [r for r in app.router.routes if not (isinstance(r, Route) and r.path == metadata_path)]
    app.router.routes[:] = routes + kept


def _guard_mcp(app: Starlette, wrap: Callable[[ASGIApp], ASGIApp]) -> None:
    """Put the guard behind the SDK's authentication of /mcp and in front of its transport (the SDK builds both)."""
    for route in app.routes:
        if isinstance(route, Route) and route.path == MCP_PATH and isinstance(route.app, RequireAuthMiddleware):
            route.app.app = wrap(route.app.app)
            return
    raise RuntimeError(f"the SDK's Streamable HTTP app has no authenticated {MCP_PATH} route to guard")


def _metrics_endpoint(metrics: Metrics) -> ASGIApp:
    """Metrics name every workspace and count across them: a token for all workspaces may read them."""

    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        grant = grant_of(scope)
        if grant is None:
            await unchecked_refusal()(scope, receive, send)
            return
        reason = grant.refusal("read", None)
        if reason is None and grant.workspaces is not None:
            reason = f"token {grant.name!r} is limited to some workspaces; metrics cover all of them"
        if reason is not None:
            headers = {"WWW-Authenticate": 'Bearer error="insufficient_scope"'}
            response: Response = refusal(
                403, FORBIDDEN, f"Forbidden: /metrics needs a token for all workspaces: {reason}", headers=headers
            )
        else:
            response = Response(await metrics.render(), media_type=CONTENT_TYPE_LATEST)
        await response(scope, receive, send)

    return endpoint
