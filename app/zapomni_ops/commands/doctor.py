"""`zapomni doctor [--json] [--wait SECONDS]`: the readiness checks of /readyz, run here and printed.

Exits 0 when every check passes and 1 when one does not, so scripts (`make health`, an
entrypoint waiting for its dependencies with --wait) can act on it.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from zapomni_core.health import Report, open_health_checker
from zapomni_core.settings import Settings
from zapomni_ops.arguments import seconds


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "doctor",
        help="run the readiness checks and print them (exit 0 when ready)",
        description="Check FalkorDB, the schema, Redis, the embedder and Ollama's models, as GET /readyz does.",
    )
    parser.add_argument("--json", action="store_true", help="print the /readyz JSON body")
    parser.add_argument(
        "--wait", type=seconds, default=0.0, metavar="SECONDS", help="repeat the checks until ready, up to SECONDS"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    report = asyncio.run(_readiness(settings, args.wait))
    if args.json:
        from zapomni_ops.health_server import readiness_body

        print(json.dumps(readiness_body(report).model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        _print_table(report)
    return 0 if report.ok else 1


async def _readiness(settings: Settings, wait_s: float) -> Report:
    async with open_health_checker(settings) as checker:
        return await checker.wait_ready(wait_s)


def _print_table(report: Report) -> None:
    table = Table("check", "ok", "latency", "detail")
    for check in report.checks:
        ok = Text("yes", style="green") if check.ok else Text("NO", style="red")
        # Text, not markup: details quote error messages such as "[Errno 111] ...".
        table.add_row(check.name, ok, f"{check.latency_ms:.1f} ms", Text(check.detail))
    console = Console()
    console.print(table)
    if report.ok:
        console.print(Text("ready", style="green"))
    else:
        console.print(Text(f"not ready: {', '.join(report.failing)}", style="red"))
