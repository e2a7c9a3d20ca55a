"""`zapomni console`: the local store's console alone, on the loopback only; it prints its address and opens
nothing remotely (`zapomni serve --http` is the way to serve a network, the console included).

The engine starts and stops as under every transport (zapomni_mcp.serve): signals, the grace for writes in
flight, one-line errors.
"""

from __future__ import annotations

import math
import socket
import sys

import structlog
import uvicorn

from zapomni_console import Limits, console_app
from zapomni_core import RuntimeInfo, Settings, ZapomniCore, route_stdlib_logs
from zapomni_http import binding
from zapomni_http.guard import MB
from zapomni_http.limits import TokenBuckets, sign_in_limit
from zapomni_http.security import OriginCheck, transport_security
from zapomni_http.serve import UVICORN_LOGGERS, QuietUvicorn, connection_guard, forwarded_for
from zapomni_mcp.serve import Stop
from zapomni_mcp.serve import run as run_server

log = structlog.get_logger(__name__)
HOST = "127.0.0.1"


def run(settings: Settings, port: int) -> int:
    try:
        listener = binding.bind(HOST, port)
    except OSError as exc:
        print(f"zapomni console: cannot listen on {HOST}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    route_stdlib_logs(UVICORN_LOGGERS, settings.log_level)
    with listener:
        return run_server(settings, ConsoleTransport(settings, listener))


class ConsoleTransport:
    def __init__(self, settings: Settings, listener: socket.socket) -> None:
        self.settings = settings
        self.listener = listener

    async def __call__(self, core: ZapomniCore, info: RuntimeInfo, stop: Stop) -> None:
        settings = self.settings.model_copy(update={"http_host": HOST})
        address = f"http://{HOST}:{self.listener.getsockname()[1]}/"
        # What `serve --http` puts in front of its console: Host and Origin checks (DNS rebinding), the per-token
        # rate and the body limit.
        buckets = TokenBuckets(settings.http_rate, settings.http_burst)
        limits = Limits(max_body=int(settings.http_max_body_mb * MB), wait=buckets.take, sign_in=sign_in_limit())
        app = OriginCheck(console_app(core, limits=limits), transport_security(settings, address), open_paths=())
        # An open job stream (server-sent events) never ends by itself: shutdown waits for it 3 s at most.
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=3,
            timeout_keep_alive=math.ceil(settings.http_idle_timeout_s),
            http=connection_guard(settings).protocol(),
            **forwarded_for(settings),
        )
        server = QuietUvicorn(config)
        stop.stop_serving = server.request_exit
        # stdout carries the address alone, so a script (or a test) can read it; the rest is logged.
        print(address, flush=True)
        log.info("console.started", url=address, embedder=info.embedder, startup_s=round(info.startup_s, 2))
        await server.serve(sockets=[self.listener])
