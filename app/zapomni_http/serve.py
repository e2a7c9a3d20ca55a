"""`zapomni serve --http`: the engine's one start-up and shutdown (zapomni_mcp.serve), served by uvicorn in-process.

The address is checked and bound before the engine opens, so a refused or taken address costs
nothing. On SIGTERM or SIGINT uvicorn stops accepting, lets the requests in flight finish within
the grace period, and the engine finishes its writes the same way as under stdio.
"""

from __future__ import annotations

import contextlib
import math
import socket
import sys
from collections.abc import Iterator
from typing import Any

import structlog
import uvicorn

from zapomni_core import RuntimeInfo, Settings, ZapomniCore, route_stdlib_logs
from zapomni_http import binding
from zapomni_http.app import build_app
from zapomni_http.connections import ConnectionGuard
from zapomni_mcp.serve import Stop, ready_fields
from zapomni_mcp.serve import run as run_server

log = structlog.get_logger(__name__)

# uvicorn's own logs, as JSON lines on stderr; its access log stays off (the tool calls are logged instead).
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.asgi")


def run(settings: Settings) -> int:
    """Serve over HTTP until a signal; 1 when the address is refused or cannot be bound, or the engine cannot start."""
    refused = binding.refusal(settings)
    if refused is not None:
        print(f"zapomni serve --http: {refused}", file=sys.stderr)
        return 1
    try:
        listener = binding.bind(settings.http_host, settings.http_port)
    except OSError as exc:
        print(
            f"zapomni serve --http: cannot listen on {settings.http_host}:{settings.http_port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    route_stdlib_logs(UVICORN_LOGGERS, settings.log_level)
    route_stdlib_logs(("mcp",), "WARNING" if settings.log_level in ("DEBUG", "INFO") else settings.log_level)
    with listener:
        return run_server(settings, HttpTransport(settings, listener))


class HttpTransport:
    def __init__(self, settings: Settings, listener: socket.socket) -> None:
        self.settings = settings
        self.listener = listener

    async def __call__(self, core: ZapomniCore, info: RuntimeInfo, stop: Stop) -> None:
        settings = self.settings
        config = uvicorn.Config(
            build_app(core, settings),
            log_config=None,
            access_log=False,
            lifespan="on",
            server_header=False,
            timeout_keep_alive=math.ceil(settings.http_idle_timeout_s),
            limit_concurrency=settings.http_max_connections,
            http=connection_guard(settings).protocol(),
            **forwarded_for(settings),
            timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_s),
            ssl_certfile=str(settings.tls_cert) if settings.tls_cert else None,
            ssl_keyfile=str(settings.tls_key) if settings.tls_key else None,
        )
        server = QuietUvicorn(config)
        stop.stop_serving = server.request_exit
        announce(info, settings)
        await server.serve(sockets=[self.listener])


def forwarded_for(settings: Settings) -> dict[str, Any]:
    """uvicorn's reading of X-Forwarded-For, from the trusted proxies only. uvicorn trusts the loopback's by
    default, which let any local client choose the address its limits are counted by."""
    trusted = settings.http_trusted_proxies
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": list(trusted) or None}


def connection_guard(settings: Settings) -> ConnectionGuard:
    return ConnectionGuard(
        idle_timeout_s=settings.http_idle_timeout_s, per_client=settings.http_max_connections_per_client
    )


class QuietUvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: zapomni_mcp.serve watches the signals and asks it to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def request_exit(self) -> None:
        self.should_exit = True


def announce(info: RuntimeInfo, settings: Settings) -> None:
    url = binding.public_url(settings)
    tls = binding.uses_tls(settings)
    log.info("server.ready", **ready_fields(info), transport="http", url=url, tls=tls, host=settings.http_host)
    if settings.http_insecure and not tls and not binding.is_loopback(settings.http_host):
        log.warning(
            "http.insecure",
            host=settings.http_host,
            reason="listening beyond the loopback without TLS (--insecure): tokens cross the network in clear "
            "unless a proxy in front terminates TLS",
        )
    if sys.stderr.isatty():
        print(
            f"\nZapomni is serving MCP at {url} (every request needs a token).\n"
            "  token:     zapomni token create --name laptop --all --role write\n"
            f'  connect:   claude mcp add --transport http zapomni {url} --header "Authorization: Bearer <token>"\n'
            "  stop:      Ctrl-C\n",
            file=sys.stderr,
            flush=True,
        )
