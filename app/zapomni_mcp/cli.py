"""The `zapomni` command: serve | add | search | stats on the engine, plus the operator commands of `zapomni_ops`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.table import Table

from zapomni_core import Settings, ZapomniError, open_core
from zapomni_core.logs import configure_logging
from zapomni_core.models import AddMemoryRequest, SearchRequest, SearchResult, Stats
from zapomni_mcp.errors import describe_validation_error
from zapomni_ops.cli import register as register_operator_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zapomni", description="Local-first long-term memory for AI agents.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the MCP server on stdin/stdout")

    add = commands.add_parser("add", help="store a memory")
    add.add_argument("text", nargs="?", help="the text; '-' or nothing reads stdin")
    add.add_argument("--file", type=Path, help="read the text from a file")
    add.add_argument("--tag", action="append", dest="tags", default=[], help="a tag (repeatable)")
    add.add_argument("--source", help="where the text came from")
    add.add_argument("--date", help="ISO 8601 date the memory is about")
    add.add_argument("--json", action="store_true", help="print JSON")

    search = commands.add_parser("search", help="search memories")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--tag", action="append", dest="tags", help="match any of these tags (repeatable)")
    search.add_argument("--source")
    search.add_argument("--date-from")
    search.add_argument("--date-to")
    search.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default="hybrid")
    search.add_argument("--min-score", type=float, help="drop results below this similarity (0-1)")
    search.add_argument("--all-chunks", action="store_true", help="every matching chunk, not the best per memory")
    search.add_argument("--json", action="store_true", help="print JSON")

    stats = commands.add_parser("stats", help="show store statistics")
    stats.add_argument("--json", action="store_true", help="print JSON")
    register_operator_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        sys.exit(f"zapomni: invalid configuration in the environment:\n{exc}")
    if hasattr(args, "run"):  # an operator command: it logs at the configured level, on stderr
        configure_logging(settings.log_level)
        try:
            sys.exit(args.run(args, settings))
        except ZapomniError as exc:
            sys.exit(f"zapomni {args.command}: {exc}")
    configure_logging(settings.log_level if args.command == "serve" else "WARNING")
    if args.command == "serve":
        from zapomni_mcp.serve import serve

        try:
            asyncio.run(serve(settings))
        except KeyboardInterrupt:
            pass
        except ZapomniError as exc:
            sys.exit(f"zapomni: {exc}")
        return
    try:
        request = _request(args)
    except ValidationError as exc:
        sys.exit(describe_validation_error(args.command, _model_for(args), exc))
    try:
        result = asyncio.run(_run(settings, args.command, request))
    except ZapomniError as exc:
        sys.exit(f"zapomni: {exc}")
    _print(result, as_json=args.json)


def _model_for(args: argparse.Namespace) -> type[BaseModel]:
    return AddMemoryRequest if args.command == "add" else SearchRequest


def _request(args: argparse.Namespace) -> BaseModel | None:
    if args.command == "add":
        text = args.file.read_text() if args.file else args.text
        if text in (None, "-"):
            text = sys.stdin.read()
        metadata: dict[str, Any] = {"tags": args.tags}
        if args.source:
            metadata["source"] = args.source
        if args.date:
            metadata["date"] = args.date
        return AddMemoryRequest.model_validate({"text": text, "metadata": metadata})
    if args.command == "search":
        filters = {
            key: value
            for key, value in {
                "tags": args.tags,
                "source": args.source,
                "date_from": args.date_from,
                "date_to": args.date_to,
            }.items()
            if value
        }
        return SearchRequest.model_validate(
            {
                "query": args.query,
                "limit": args.limit,
                "filters": filters or None,
                "mode": args.mode,
                "min_score": args.min_score,
                "all_chunks": args.all_chunks,
            }
        )
    return None


async def _run(settings: Settings, command: str, request: BaseModel | None) -> BaseModel:
    async with open_core(settings) as (core, _info):
        if isinstance(request, AddMemoryRequest):
            return await core.add_memory(request)
        if isinstance(request, SearchRequest):
            return await core.search(request)
        return await core.stats()


def _print(result: BaseModel, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return
    console = Console()
    if isinstance(result, SearchResult):
        table = Table("#", "similarity", "found by", "text", "tags", "source", "memory")
        for rank, hit in enumerate(result.results, start=1):
            text = hit.text if len(hit.text) <= 160 else hit.text[:159] + "…"
            table.add_row(
                str(rank),
                f"{hit.similarity_score:.3f}",
                "+".join(hit.matched_by),
                text,
                ", ".join(hit.tags),
                hit.source or "",
                hit.memory_id[:8],
            )
        console.print(table if result.results else "No memories matched.")
    elif isinstance(result, Stats):
        table = Table("statistic", "value")
        for key, value in result.model_dump().items():
            table.add_row(key, "—" if value is None else str(value))
        console.print(table)
    else:
        table = Table("field", "value")
        for key, value in result.model_dump().items():
            table.add_row(key, str(value))
        console.print(table)
