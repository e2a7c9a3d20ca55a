"""The health endpoint: `GET /healthz` (liveness) and `GET /readyz` (readiness) over HTTP.

Starlette on uvicorn, both already installed with the MCP SDK: an ASGI app gets request
routing, graceful shutdown on SIGTERM and concurrent requests for free, and the readiness checks
are async code that wants to run on the server's own event loop. The stdlib `http.server`
would need a thread per request plus a loop of its own for the checks.

The checker (and with it the embedder) is built once, in the app's lifespan, and closed on the
way out. Logs are JSON lines on stderr, uvicorn's own included; the access log is off because
a probe every few seconds would drown everything else, and readiness changes are logged instead.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import FrameType
from typing import Literal

import structlog
import uvicorn
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from zapomni_core import HealthChecker, Report, Settings, open_health_checker, route_stdlib_logs

log = structlog.get_logger(__name__)

_NO_CACHE = {"Cache-Control": "no-store"}
# In-flight probes get this long to finish once a stop is requested.
_GRACEFUL_SHUTDOWN_S = 5


class CheckBody(BaseModel):
    name: str
    ok: bool
    latency_ms: float
    detail: str


class ReadinessBody(BaseModel):
    """The body of /readyz, and of `zapomni doctor --json`."""

    status: Literal["ready", "not_ready"]
    checks: list[CheckBody]
    failing: list[str]


def readiness_body(report: Report) -> ReadinessBody:
    return ReadinessBody(
        status="ready" if report.ok else "not_ready",
        checks=[CheckBody(name=c.name, ok=c.ok, latency_ms=c.latency_ms, detail=c.detail) for c in report.checks],
        failing=report.failing,
    )


class _Transitions:
    """Logs readiness when it changes, not on every probe."""

    def __init__(self) -> None:
        self._last: bool | None = None

    def observe(self, report: Report) -> None:
        if report.ok == self._last:
            return
        self._last = report.ok
        if report.ok:
            log.info("health.ready", checks=[c.name for c in report.checks])
        else:
            failing = {c.name: c.detail for c in report.checks if not c.ok}
            log.warning("health.not_ready", failing=failing)


def create_app(settings: Settings) -> Starlette:
    transitions = _Transitions()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with open_health_checker(settings) as checker:
            app.state.checker = checker
            log.info("health.server.started", db_mode=settings.db_mode, embedder=settings.embedder)
            yield
            log.info("health.server.stopping")

    async def healthz(request: Request) -> JSONResponse:
        checker: HealthChecker = request.app.state.checker
        alive = checker.liveness().ok
        return JSONResponse({"status": "alive"}, status_code=200 if alive else 503, headers=_NO_CACHE)

    async def readyz(request: Request) -> JSONResponse:
        checker: HealthChecker = request.app.state.checker
        report = await checker.readiness()
        transitions.observe(report)
        body = readiness_body(report).model_dump(mode="json")
        return JSONResponse(body, status_code=200 if report.ok else 503, headers=_NO_CACHE)

    routes = [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lifespan)


def serve(settings: Settings, host: str, port: int) -> int:
    """Serve until SIGTERM or SIGINT; 0 after a clean stop, 1 when the address cannot be bound."""
    route_stdlib_logs(("uvicorn", "uvicorn.error", "uvicorn.asgi"), settings.log_level)
    # uvicorn re-raises the stop signal after its graceful shutdown, to the handler that was in
    # place before it started. This one makes that a clean exit (status 0, which supervisord and
    # Docker read as a normal stop), and also covers a signal that arrives before uvicorn is up.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit_cleanly)
    try:
        listener = _bind(host, port)
    except OSError as exc:
        log.error("health.server.bind_failed", host=host, port=port, error=str(exc))
        return 1
    log.info("health.server.listening", host=host, port=port)
    config = uvicorn.Config(
        create_app(settings),
        log_config=None,
        access_log=False,
        lifespan="on",
        server_header=False,
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
    )
    with listener:
        uvicorn.Server(config).run(sockets=[listener])
    return 0


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _bind(host: str, port: int) -> socket.socket:
    # Bound before anything is built: a taken port is reported at once, with nothing to undo.
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    listener = socket.create_server((host, port), family=family)
    # Accepted connections inherit it; without it each answer waits ~40 ms for the client's delayed ACK.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listener
