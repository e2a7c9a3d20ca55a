"""`zapomni serve`: one start-up and shutdown for every transport; stdio here, HTTP in zapomni_http.

The engine is opened once, the signals watched, and then a transport serves until it ends (stdin
closed) or a signal stops it: stdio is cancelled, HTTP stops accepting and lets its requests finish.
Either way the engine refuses new writes and lets those in flight finish within the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import structlog
from mcp.server.lowlevel import Server

from zapomni_core import EarlySearch, RuntimeInfo, Settings, ZapomniCore, ZapomniError, open_core, package_version
from zapomni_mcp.handlers import build_server
from zapomni_mcp.opening import Opening
from zapomni_mcp.transport import STDIO_IS_LOCAL, stdio_transport

log = structlog.get_logger(__name__)


def run(settings: Settings, transport: Transport | None = None) -> int:
    """Serve until the client goes away or a signal arrives; the exit status (1: could not start).

    `transport`: what serves the engine once it is open (default: stdio, which serves while it opens)."""
    try:
        asyncio.run(serve(settings, transport))
    except KeyboardInterrupt:
        pass
    except (ZapomniError, BaseExceptionGroup) as exc:
        error = _zapomni_error(exc)
        if error is None:
            raise
        print(f"zapomni serve: {error}", file=sys.stderr)
        return 1
    return 0


def _zapomni_error(exc: BaseException) -> ZapomniError | None:
    """The ZapomniError that ended the server, out of the task groups it crossed (the signal watch's)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, ZapomniError) else None


async def serve(settings: Settings, transport: Transport | None = None) -> None:
    """Serve with `transport` once the engine is open; None: over stdio, from the start (`_serve_stdio`)."""
    log.info("server.config", **settings.masked())
    # Signals are ours until the process ends, not only while serving: a client that finds the stop slow
    # (the SDK waits 2 s after closing stdin, e.g. while spaCy is still loading for a job) signals the whole
    # process group, and a SIGTERM landing in the teardown would kill us half way (and make `make -s run`
    # report "make: *** [run] Terminated"). A signal while already stopping is noted; the stop goes on.
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        stop = Stop()
        async with anyio.create_task_group() as watch:
            watch.start_soon(_stop_on_signals, signals, stop)
            try:
                if transport is None:
                    await _serve_stdio(settings, stop)
                else:
                    await _serve(settings, stop, transport)
            finally:
                watch.cancel_scope.cancel()
    log.info("server.stopped")


class Stop:
    """What a signal stops: the start-up until the server runs, then the server (the engine winds down).

    A transport that winds itself down (HTTP: stop accepting, finish the requests in flight) sets
    `stop_serving`; any other is cancelled."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()  # start-up, then serving
        self.begin_shutdown: Callable[[], None] = lambda: None
        self.stop_serving: Callable[[], None] | None = None
        self.requested = False

    def __call__(self, reason: str) -> None:
        if self.requested:
            log.info("server.already_stopping", reason=reason)
            return
        self.requested = True
        log.info("server.stopping", reason=reason)
        self.begin_shutdown()
        if self.stop_serving is not None:
            self.stop_serving()
        else:
            self.scope.cancel()


# Serves the open engine until the transport ends or `Stop` ends it.
Transport = Callable[[ZapomniCore, RuntimeInfo, Stop], Awaitable[None]]


async def _serve(settings: Settings, stop: Stop, transport: Transport) -> None:
    async with contextlib.AsyncExitStack() as stack:
        with stop.scope:
            core, info = await stack.enter_async_context(open_core(settings))
        if stop.requested:  # a signal during start-up: the engine winds down as it leaves the stack
            return
        stop.begin_shutdown = lambda: core.begin_shutdown(settings.shutdown_grace_s)
        async with anyio.create_task_group() as tasks:
            stop.scope = tasks.cancel_scope
            if stop.requested:
                return
            await transport(core, info, stop)
        # In-flight writes finished (or were abandoned at the grace deadline) before the task
        # group closed; leaving open_core closes the embedder and pool and releases the database.


async def _serve_stdio(settings: Settings, stop: Stop) -> None:
    """Serve stdio while the engine opens, from when the database has started: a request waits for the engine,
    except a search the keyword index answers alone before the database has loaded (decision 0045). A signal during
    the start-up ends it as it ends the serving; stdin closed ends the serving once the engine is open."""
    opening = Opening(EarlySearch.for_settings(settings))
    server = build_server(opening, local=STDIO_IS_LOCAL)
    async with contextlib.AsyncExitStack() as stack, anyio.create_task_group() as tasks:
        stop.scope = tasks.cancel_scope
        tasks.start_soon(_stdio, server, opening, stop)
        core, info = await stack.enter_async_context(open_core(settings))
        stop.begin_shutdown = lambda: core.begin_shutdown(settings.shutdown_grace_s)
        if stop.requested:  # during the start-up: the engine winds down as it leaves the stack
            return
        opening.open(core)
        announce(info)
    # The task group ended with the serving (stdin closed, or a signal); in-flight writes finished (or were
    # abandoned at the grace deadline) before it closed. Leaving the stack closes the engine and releases the database.


async def _stdio(server: Server[Any], opening: Opening, stop: Stop) -> None:
    await opening.started()
    async with stdio_transport(on_eof=lambda: stop.begin_shutdown()) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
    # A start-up is not cut short by a client that leaves (as it was not before serving began): the engine opens,
    # then closes in order, which a start-up cancelled half way (a signal's) cannot promise of every step.
    await opening.engine()
    stop("stdin closed")


async def _stop_on_signals(signals: AsyncIterator[int], stop: Stop) -> None:
    async for signum in signals:
        stop(signal.Signals(signum).name)


def server_command() -> str:
    """The absolute command a client should run to start this server."""
    script = Path(sys.executable).parent / "zapomni"
    return f"{script} serve" if script.exists() else f"{sys.executable} -m zapomni_mcp"


def ready_fields(info: RuntimeInfo) -> dict[str, Any]:
    """What the `server.ready` log line says of the engine, whatever the transport."""
    return {
        "version": package_version(),
        "data": info.data_location,
        "embedder": info.embedder,
        "dimension": info.dimension,
        "started_database": info.started_database,
        "startup_s": info.startup_s,
    }


def announce(info: RuntimeInfo) -> None:
    fields = ready_fields(info)
    log.info("server.ready", **fields)
    if sys.stdin.isatty():
        print(
            f"\nZapomni {fields['version']} is ready and waiting for an MCP client on stdin.\n"
            f"  data:      {info.data_location}\n"
            f"  embedder:  {info.embedder} ({info.dimension}-d)\n"
            "  connect:   add this server to your client, e.g. for Claude Code:\n"
            f"             claude mcp add zapomni -- {server_command()}\n"
            "             (Claude Desktop: see README, 'Connect a client')\n"
            "  stop:      Ctrl-C or Ctrl-D\n",
            file=sys.stderr,
            flush=True,
        )
