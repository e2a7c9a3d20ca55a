"""`zapomni serve`: the stdio MCP server with graceful shutdown on EOF, SIGINT and SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import structlog

from zapomni_core import RuntimeInfo, Settings, ZapomniError, open_core, package_version
from zapomni_mcp.handlers import build_server
from zapomni_mcp.tools import build_registry
from zapomni_mcp.transport import STDIO_IS_LOCAL, stdio_transport

log = structlog.get_logger(__name__)


def run(settings: Settings) -> int:
    """Serve until the client goes away or a signal arrives; the exit status (1: could not start)."""
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        pass
    except ZapomniError as exc:
        print(f"zapomni serve: {exc}", file=sys.stderr)
        return 1
    return 0


async def serve(settings: Settings) -> None:
    log.info("server.config", **settings.masked())
    async with open_core(settings) as (core, info):
        server = build_server(core, build_registry(core), local=STDIO_IS_LOCAL)

        def begin_shutdown() -> None:
            core.begin_shutdown(settings.shutdown_grace_s)

        async with anyio.create_task_group() as tasks:
            # Listening for signals before saying "ready": a Ctrl-C right after the greeting must stop us.
            await tasks.start(_stop_on_signal, tasks.cancel_scope, begin_shutdown)
            announce(info)
            async with stdio_transport(on_eof=begin_shutdown) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            log.info("server.stopping", reason="stdin closed")
            tasks.cancel_scope.cancel()
        # In-flight writes finished (or were abandoned at the grace deadline) before the task
        # group closed; leaving open_core closes the embedder and pool and releases the database.
    log.info("server.stopped")


async def _stop_on_signal(
    scope: anyio.CancelScope,
    begin_shutdown: Callable[[], None],
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            log.info("server.stopping", reason=signal.Signals(signum).name)
            begin_shutdown()
            scope.cancel()
            return


def server_command() -> str:
    """The absolute command a client should run to start this server."""
    script = Path(sys.executable).parent / "zapomni"
    return f"{script} serve" if script.exists() else f"{sys.executable} -m zapomni_mcp"


def announce(info: RuntimeInfo) -> None:
    fields: dict[str, Any] = {
        "version": package_version(),
        "data": info.data_location,
        "embedder": info.embedder,
        "dimension": info.dimension,
        "started_database": info.started_database,
        "startup_s": info.startup_s,
    }
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
