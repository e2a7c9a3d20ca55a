"""`zapomni health-server [--host H] [--port P]`: serve /healthz and /readyz until SIGTERM."""

from __future__ import annotations

import argparse

from zapomni_core import Settings
from zapomni_ops.arguments import port


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "health-server",
        help="serve GET /healthz (liveness) and GET /readyz (readiness) over HTTP",
        description="Serve the liveness and readiness endpoints until SIGTERM or Ctrl-C.",
    )
    parser.add_argument("--host", help="address to listen on (default: ZAPOMNI_HEALTH_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=port, help="port to listen on (default: ZAPOMNI_HEALTH_PORT, 8090)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from zapomni_ops.health_server import serve  # uvicorn and starlette load only for this command

    return serve(settings, host=args.host or settings.health_host, port=args.port or settings.health_port)
