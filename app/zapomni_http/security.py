"""Host and Origin checks (DNS-rebinding protection) and CORS for browser clients.

The SDK's `TransportSecuritySettings` validator does the checking; here it runs in front of
everything but the health probes, so a foreign page's request is refused before any token it
carries is looked at, with a message that names the setting to change.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from zapomni_core import Settings
from zapomni_http.binding import WILDCARDS
from zapomni_http.replies import FORBIDDEN, refusal

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
# The headers a browser client sends and must be allowed to read (MCP Streamable HTTP and bearer auth).
CORS_REQUEST_HEADERS = [
    "Authorization",
    "Content-Type",
    "Accept",
    "Last-Event-ID",
    "Mcp-Protocol-Version",
    "Mcp-Session-Id",
    "Mcp-Method",
    "Mcp-Name",
]
CORS_EXPOSED_HEADERS = ["Mcp-Session-Id", "Mcp-Protocol-Version", "WWW-Authenticate", "Retry-After"]


def transport_security(settings: Settings, url: str) -> TransportSecuritySettings:
    public = urlsplit(url)
    hosts = list(settings.http_allowed_hosts) or _default_hosts(settings.http_host, public.netloc)
    origins = [f"{scheme}://{host}" for scheme in ("http", "https") for host in LOOPBACK_HOSTS]
    origins += [f"{public.scheme}://{public.netloc}", *settings.http_allowed_origins, *settings.http_cors_origins]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=_any_port(hosts),
        allowed_origins=_any_port(origins),
    )


def _default_hosts(bind_host: str, public_netloc: str) -> list[str]:
    hosts = [*LOOPBACK_HOSTS, public_netloc]
    if bind_host in WILDCARDS:  # clients reach every interface: this machine's names at least
        hosts += [socket.gethostname(), socket.getfqdn()]
    else:
        hosts.append(f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host)
    return hosts


def _any_port(values: Iterable[str]) -> list[str]:
    """Each value as given and, when it names no port, with any port (the SDK's `:*`)."""
    out: list[str] = []
    for value in values:
        for variant in (value, value if _has_port(value) else f"{value}:*"):
            if variant not in out:
                out.append(variant)
    return out


def _has_port(value: str) -> bool:
    tail = value.rsplit("]", 1)[-1].rsplit("/", 1)[-1]
    return ":" in tail and tail.rsplit(":", 1)[1].isdigit()


class OriginCheck:
    """Refuses a request whose Host or Origin is not allowed, on every path but `open_paths`."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings, open_paths: Iterable[str]) -> None:
        self.app = app
        self.validator = TransportSecurityMiddleware(security)
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in self.open_paths:
            request = Request(scope)
            refused = await self.validator.validate_request(request, is_post=False)
            if refused is not None:
                header, setting = (
                    ("Origin", "ZAPOMNI_HTTP_ALLOWED_ORIGINS or ZAPOMNI_HTTP_CORS_ORIGINS")
                    if refused.status_code == 403
                    else ("Host", "ZAPOMNI_HTTP_ALLOWED_HOSTS")
                )
                value = request.headers.get(header.lower(), "")[:200]
                message = f"Forbidden: {header} {value!r} is not allowed here (add it to {setting} to allow it)"
                code = FORBIDDEN if refused.status_code == 403 else INVALID_REQUEST
                await refusal(refused.status_code, code, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def with_cors(app: ASGIApp, origins: Iterable[str]) -> ASGIApp:
    """CORS for the listed browser origins; none: no CORS headers at all (browsers then refuse cross-origin)."""
    allowed = list(origins)
    if not allowed:
        return app
    return CORSMiddleware(
        app,
        allow_origins=allowed,
        allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
        allow_headers=CORS_REQUEST_HEADERS,
        expose_headers=CORS_EXPOSED_HEADERS,
        max_age=600,
    )
