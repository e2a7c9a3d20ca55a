"""`zapomni console`: the local store's console on the loopback only; it prints its address and opens
nothing remotely."""

from __future__ import annotations

import asyncio
import socket
import sys

import structlog
import uvicorn

from zapomni_console.app import console_app
from zapomni_console.limits import MB, Limits
from zapomni_core import Settings, open_core

log = structlog.get_logger(__name__)
HOST = "127.0.0.1"  # never another interface: `zapomni serve --http` is the way to serve a network


def run(settings: Settings, port: int) -> int:
    return asyncio.run(_serve(settings, port))


async def _serve(settings: Settings, port: int) -> int:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
    except OSError as exc:
        print(f"zapomni console: cannot listen on {HOST}:{port}: {exc.strerror}", file=sys.stderr)
        return 1
    async with open_core(settings) as (core, info):
        # An open job stream (server-sent events) never ends by itself: shutdown waits for it 3 s at most.
        config = uvicorn.Config(
            console_app(core, limits=Limits(max_body=int(settings.http_max_body_mb * MB))),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=3,
        )
        server = uvicorn.Server(config)
        address = f"http://{HOST}:{listener.getsockname()[1]}/"
        # stdout carries the address alone, so a script (or a test) can read it; the rest is logged.
        print(address, flush=True)
        log.info("console.started", url=address, embedder=info.embedder, startup_s=round(info.startup_s, 2))
        await server.serve(sockets=[listener])
    return 0
