"""`zapomni doctor [--json] [--wait SECONDS] [--no-start]`: the readiness checks of /readyz, run here and printed.

Exits 0 when every check passes and 1 when one does not, so scripts (`make health`, an
entrypoint waiting for its dependencies with --wait) can act on it.

The embedded database runs only while some Zapomni process uses it. When it is not running, the
doctor starts it the way `zapomni serve` would (the engine opened once: database, schema,
embedder), runs the checks against it and stops it again, so a new install is checked end to end
instead of reported "not ready". `--no-start` only observes, as the health endpoint always does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass, replace

from rich.console import Console
from rich.table import Table
from rich.text import Text

from zapomni_core import Report, Settings, ZapomniError, database_target, open_core, open_health_checker, sanitise
from zapomni_ops.arguments import seconds

STARTED = "was not running; started for this check and stopped after"
STOPPED_NOTE = (
    "The embedded FalkorDB was not running (it runs while `zapomni serve` or another zapomni command uses it): "
    "the doctor started it for these checks and stopped it again."
)
NOT_STARTED_NOTE = (
    "The embedded FalkorDB is not running; it runs while `zapomni serve` does. "
    "`zapomni doctor` without --no-start starts it briefly to check it."
)


@dataclass(frozen=True)
class Diagnosis:
    report: Report
    note: str | None = None  # printed under the table; the JSON carries it in the falkordb detail


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "doctor",
        help="run the readiness checks and print them (exit 0 when ready)",
        description="Check FalkorDB, the schema, Redis, the embedder and Ollama's models, as GET /readyz does. "
        "A stopped embedded database is started for the checks and stopped again (unless --no-start).",
    )
    parser.add_argument("--json", action="store_true", help="print the /readyz JSON body")
    parser.add_argument(
        "--wait", type=seconds, default=0.0, metavar="SECONDS", help="repeat the checks until ready, up to SECONDS"
    )
    parser.add_argument(
        "--no-start", action="store_true", help="never start the embedded database: report it as not running"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    diagnosis = asyncio.run(diagnose(settings, args.wait, start=not args.no_start))
    if args.json:
        from zapomni_ops.health_server import readiness_body

        print(json.dumps(readiness_body(diagnosis.report).model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        _print_table(diagnosis)
    return 0 if diagnosis.report.ok else 1


async def diagnose(settings: Settings, wait_s: float, *, start: bool) -> Diagnosis:
    if not _embedded_and_stopped(settings):
        return Diagnosis(await _readiness(settings, wait_s))
    if not start:
        return Diagnosis(await _readiness(settings, wait_s), NOT_STARTED_NOTE)
    try:
        async with open_core(settings, background_jobs=False):
            report = await _readiness(settings, wait_s)
    except ZapomniError as exc:
        # Whatever stopped the engine (a database that will not start, a store of another
        # embedder) is the answer; the other checks still run, against the stopped database.
        report = await _readiness(settings, 0.0)
        return Diagnosis(_with_database_detail(report, False, f"not running, and starting it failed: {exc}"))
    return Diagnosis(_with_database_detail(report, None, STARTED), STOPPED_NOTE)


def _embedded_and_stopped(settings: Settings) -> bool:
    socket = database_target(settings).socket
    return settings.db_mode == "embedded" and socket is not None and not socket.exists()


def _with_database_detail(report: Report, ok: bool | None, detail: str) -> Report:
    """`report` with the falkordb check's detail prefixed by `detail` (and its verdict set to `ok`)."""
    checks = []
    for check in report.checks:
        if check.name == "falkordb":
            verdict = check.ok if ok is None else ok
            text = f"{detail}: {check.detail}" if ok is None else detail
            check = replace(check, ok=verdict, detail=sanitise(text))
        checks.append(check)
    return Report(ok=all(check.ok for check in checks), checks=tuple(checks))


async def _readiness(settings: Settings, wait_s: float) -> Report:
    async with open_health_checker(settings) as checker:
        return await checker.wait_ready(wait_s)


def _print_table(diagnosis: Diagnosis) -> None:
    report = diagnosis.report
    table = Table("check", "ok", "latency", "detail")
    for check in report.checks:
        ok = Text("yes", style="green") if check.ok else Text("NO", style="red")
        # Text, not markup: details quote error messages such as "[Errno 111] ...".
        table.add_row(check.name, ok, f"{check.latency_ms:.1f} ms", Text(check.detail))
    console = Console()
    console.print(table)
    if diagnosis.note:
        console.print(Text(diagnosis.note))
    if report.ok:
        console.print(Text("ready", style="green"))
    else:
        console.print(Text(f"not ready: {', '.join(report.failing)}", style="red"))
