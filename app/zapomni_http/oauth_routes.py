"""The authorization server's routes (the SDK's, with Zapomni's provider), its two metadata documents, and the
protected-resource metadata that names it only when it is on.

RFC 8414 puts the metadata at `/.well-known/oauth-authorization-server`, OpenID discovery at
`/.well-known/openid-configuration`; the MCP specification has clients try both. Every route here is limited per
client address (registration more strictly: a flood of registrations is refused before the cap is reached).
"""

from __future__ import annotations

import json
import math

from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from zapomni_core import ROLES, ZapomniCore
from zapomni_http.limits import TokenBuckets
from zapomni_http.oauth_provider import ZapomniAuthorizationServer

REGISTRATION_PATH = "/register"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
OPENID_METADATA_PATH = "/.well-known/openid-configuration"
# Registrations per client address: 10 at once, then one a minute.
REGISTER_BURST = 10
REGISTER_RATE = 1 / 60


def authorization_routes(core: ZapomniCore, resource: str, issuer: str, buckets: TokenBuckets) -> list[Route]:
    """The SDK's authorization server routes over `core.oauth`, rate-limited, and OpenID discovery beside RFC 8414's."""
    provider = ZapomniAuthorizationServer(core, resource)
    sdk_routes = create_auth_routes(
        provider=provider,
        issuer_url=AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(ROLES)),
        revocation_options=RevocationOptions(enabled=True),
    )
    registrations = TokenBuckets(REGISTER_RATE, REGISTER_BURST)
    routes = []
    for route in sdk_routes:
        limits = registrations if route.path == REGISTRATION_PATH else buckets
        routes.append(Route(route.path, PerAddressLimit(route.app, limits), methods=route.methods))
        if route.path == AS_METADATA_PATH:
            routes.append(Route(OPENID_METADATA_PATH, PerAddressLimit(route.app, buckets), methods=route.methods))
    return routes


def resource_metadata(path: str, resource: str, issuer: str | None) -> Route:
    """RFC 9728's document for /mcp at `path`; it names the authorization server only when there is one (the SDK's
    model requires one: a server whose tokens only `zapomni token create` makes answers with this one instead)."""
    document: dict[str, object] = {"resource": resource, "bearer_methods_supported": ["header"]}
    if issuer is not None:
        document["authorization_servers"] = [issuer]
        document["scopes_supported"] = list(ROLES)
    body = json.dumps(document)

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type="application/json", headers={"Cache-Control": "public, max-age=3600"})

    return Route(path, endpoint, methods=["GET"])


class PerAddressLimit:
    """Refuses a client address over its rate with 429 and an RFC 6749 style error, before the handler runs."""

    def __init__(self, app: ASGIApp, buckets: TokenBuckets) -> None:
        self.app = app
        self.buckets = buckets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        wait = self.buckets.take(f"oauth:{client[0] if client else '?'}:{scope.get('path')}")
        if wait:
            retry = math.ceil(wait)
            response = JSONResponse(
                {"error": "temporarily_unavailable", "error_description": f"too many requests: retry in {retry} s"},
                status_code=429,
                headers={"Retry-After": str(retry), "Cache-Control": "no-store"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
