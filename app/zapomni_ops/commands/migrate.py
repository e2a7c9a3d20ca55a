"""`zapomni migrate status | apply [--dry-run] | reembed`: schema migrations and moving to another embedder.

These commands open the database directly, not through the engine: the engine refuses a graph
built with another embedder, which is the very situation `reembed` repairs. Command output goes
to stdout; logs and the progress bar go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import structlog
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as ProgressBar

from zapomni_core import (
    DEFAULT_BATCH_SIZE,
    EmbedderUnavailable,
    Migration,
    Progress,
    ReembedPlan,
    SchemaStatus,
    Settings,
    StorageUnavailable,
    apply_migrations,
    build_embedder,
    configured_embedder,
    open_database,
    plan_reembed,
    reembed,
    schema_status,
)
from zapomni_ops.arguments import positive_int

log = structlog.get_logger(__name__)

# Without a terminal on stderr, progress is logged at most this often.
_LOG_EVERY_S = 5.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("migrate", help="schema migrations and re-embedding with another embedder")
    actions = parser.add_subparsers(dest="action", required=True)

    status = actions.add_parser("status", help="schema version, pending migrations, stored vs configured embedder")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(run=run_status)

    apply = actions.add_parser("apply", help="apply the pending schema migrations")
    apply.add_argument("--dry-run", action="store_true", help="list the pending migrations, change nothing")
    apply.add_argument("--json", action="store_true", help="print JSON")
    apply.set_defaults(run=run_apply)

    again = actions.add_parser(
        "reembed",
        help="recompute every chunk's vector with the configured embedder (resumes an interrupted run)",
        description="Stop every Zapomni server using this store first. Interrupting is safe: run it again to resume.",
    )
    again.add_argument(
        "--batch-size", type=positive_int, default=DEFAULT_BATCH_SIZE, help="chunks embedded and written per step"
    )
    again.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    again.set_defaults(run=run_reembed)


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    status = asyncio.run(_status(settings))
    if args.json:
        print(json.dumps(status.as_dict(), indent=2))
    else:
        print(_describe_status(status))
    return 0


def run_apply(args: argparse.Namespace, settings: Settings) -> int:
    applied, status = asyncio.run(_apply(settings, dry_run=args.dry_run))
    listed = [{"version": m.version, "description": m.description} for m in applied]
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, "migrations": listed, "version": status.version}, indent=2))
        return 0
    if not applied:
        print(f"the schema is up to date (version {status.version})")
    else:
        verb = "would apply" if args.dry_run else "applied"
        for m in listed:
            print(f"{verb} migration {m['version']}: {m['description']}")
        print(f"schema version: {status.version} (latest {status.latest_version})")
    if status.reembed_needed:
        print("the stored vectors are not the configured embedder's: run `zapomni migrate reembed`", file=sys.stderr)
    return 0


def run_reembed(args: argparse.Namespace, settings: Settings) -> int:
    try:
        return asyncio.run(_reembed(settings, batch_size=args.batch_size, assume_yes=args.yes))
    except KeyboardInterrupt:
        print("\ninterrupted: run `zapomni migrate reembed` again to resume", file=sys.stderr)
        return 130


async def _status(settings: Settings) -> SchemaStatus:
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        return await schema_status(database.client, settings)


async def _apply(settings: Settings, *, dry_run: bool) -> tuple[list[Migration], SchemaStatus]:
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)

        async def dimension() -> int:
            # Only an empty, unclaimed graph needs it: everything else keeps the dimension it has.
            configured = await configured_embedder(settings)
            if configured.dimension is None:
                raise EmbedderUnavailable(configured.error or "the configured embedder is unavailable")
            return configured.dimension

        applied = await apply_migrations(database.client, settings, dimension, dry_run=dry_run)
        return applied, await schema_status(database.client, settings)


async def _reembed(settings: Settings, *, batch_size: int, assume_yes: bool) -> int:
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        embedder = await build_embedder(settings)
        stack.push_async_callback(embedder.aclose)
        plan = await plan_reembed(database.client, embedder)
        if not plan.needed:
            print(f"nothing to re-embed: the stored vectors are already {plan.model}'s ({plan.dimension}-d)")
            return 0
        print(_describe_plan(plan, database.location), file=sys.stderr)
        if not assume_yes and not _confirm():
            print("nothing changed", file=sys.stderr)
            return 1
        with _ProgressDisplay() as progress:
            try:
                report = await reembed(database, embedder, settings, batch_size=batch_size, progress=progress)
            except (EmbedderUnavailable, StorageUnavailable) as exc:  # a refusal is not a stop: it propagates
                print(f"the re-embed stopped ({exc}); run `zapomni migrate reembed` again to resume", file=sys.stderr)
                return 1
    earlier = f"; {report.skipped} were done by an earlier run" if report.skipped else ""
    print(
        f"re-embedded {report.embedded} chunks with {report.model} ({report.dimension}-d) in {report.seconds:.1f} s "
        f"({report.chunks_per_s} chunks/s){earlier}"
    )
    if report.truncated:
        print(
            f"note: {report.truncated} chunks are longer than {report.model} reads; only their beginning is embedded",
            file=sys.stderr,
        )
    return 0


def _describe_status(status: SchemaStatus) -> str:
    lines = [f"schema version:      {status.version} (latest {status.latest_version})"]
    if status.pending:
        lines.append("pending migrations:")
        lines += [f"  {m.version}  {m.description}" for m in status.pending]
    else:
        lines.append("pending migrations:  none")
    stored = status.stored_embedder
    lines.append(f"stored embedder:     {f'{stored.model} ({stored.dimension}-d)' if stored else 'none recorded'}")
    configured = status.configured_embedder
    lines.append(
        f"configured embedder: {configured.model} ({configured.dimension}-d)"
        if configured.model
        else f"configured embedder: unavailable ({configured.error})"
    )
    index = status.vector_index_dimension
    lines.append(f"vector index:        {f'{index}-d' if index else 'none'}; {status.chunks} chunks")
    state = status.reembed_in_progress
    if state is not None:
        started = datetime.fromtimestamp(state.started_at, UTC).isoformat(timespec="seconds")
        lines.append(
            f"re-embed:            IN PROGRESS to {state.model} ({state.dimension}-d) since {started}, "
            f"{status.chunks_reembedded}/{status.chunks} chunks done: run `zapomni migrate reembed` to finish"
        )
    elif status.reembed_needed:
        lines.append("re-embed:            needed: run `zapomni migrate reembed`")
    elif status.reembed_needed is None:
        lines.append("re-embed:            unknown (the configured embedder is unavailable)")
    else:
        lines.append("re-embed:            not needed")
    return "\n".join(lines)


def _describe_plan(plan: ReembedPlan, location: str) -> str:
    source = f"{plan.stored.model} ({plan.stored.dimension}-d)" if plan.stored else "the stored vectors"
    resumed = f", resuming: {plan.done} already done" if plan.in_progress is not None and plan.done else ""
    return (
        f"re-embedding {plan.chunks} chunks in {location} from {source} to {plan.model} ({plan.dimension}-d)"
        f"{resumed}.\nThe vector index is rebuilt at the end; no Zapomni server may use this store until then."
    )


def _confirm() -> bool:
    if not sys.stdin.isatty():
        print("refusing without confirmation: pass --yes", file=sys.stderr)
        return False
    print("continue? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


class _ProgressDisplay:
    """A progress bar on a terminal's stderr; otherwise a log line every few seconds and at the end."""

    def __init__(self) -> None:
        self._bar: ProgressBar | None = None
        self._task: Any = None
        self._last_log = 0.0

    def __enter__(self) -> _ProgressDisplay:
        if sys.stderr.isatty():
            self._bar = ProgressBar(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._bar.start()
        return self

    def __call__(self, progress: Progress) -> None:
        # One workspace at a time: the counts start again with each, and the message names it.
        done, total, what = progress.done, progress.total, progress.message or "re-embedding"
        if self._bar is not None:
            if self._task is None:
                self._task = self._bar.add_task(what, total=total, completed=done)
            self._bar.update(self._task, description=what, total=total, completed=done)
            return
        now = time.monotonic()
        if now - self._last_log >= _LOG_EVERY_S or (total is not None and done >= total):
            self._last_log = now
            log.info("reembed.progress", done=done, total=total, unit=progress.unit, message=progress.message)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
