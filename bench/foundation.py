"""Foundation figures: server cold start, add/search latency through MCP and through the core.

Measures, on the embedded defaults:
- cold start: spawn `zapomni serve`, initialize, first answered `tools/list` (fresh data
  directory, which also starts FalkorDB, and an existing one);
- add_memory and search_memory latency with a few hundred memories, through the official MCP
  stdio client and directly through `ZapomniCore`, so the protocol's share is visible;
- the size of the installed virtualenv.

Memories are SciFact abstracts when `../shared/data/scifact` exists (realistic lengths), else
generated paragraphs. Run: `.venv/bin/python bench/foundation.py [--memories 300]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import summary_ms, timed_ms
from zapomni_core import Settings, open_core
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
ZAPOMNI = str(Path(sys.executable).parent / "zapomni")


def load_texts(count: int) -> tuple[list[str], list[str], str]:
    """(memories, queries, where they came from)."""
    corpus, queries = SCIFACT / "corpus.jsonl", SCIFACT / "queries.jsonl"
    if corpus.exists() and queries.exists():
        with corpus.open() as handle:
            docs = [json.loads(line) for _, line in zip(range(count), handle, strict=False)]
        with queries.open() as handle:
            claims = [json.loads(line)["text"] for _, line in zip(range(100), handle, strict=False)]
        return [f"{d['title']}. {d['text']}" for d in docs], claims, "SciFact abstracts"
    print(f"note: {SCIFACT} not found, using generated paragraphs", file=sys.stderr)
    texts = [
        " ".join(f"Record {i} sentence {j} describes an observation about subject {i % 17}." for j in range(8))
        for i in range(count)
    ]
    return texts, [f"observation about subject {i % 17}" for i in range(100)], "generated paragraphs"


def server_params(data_dir: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=ZAPOMNI, args=["serve"], env={"ZAPOMNI_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING"}
    )


async def cold_start_ms(data_dir: Path) -> float:
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(server_params(data_dir), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            elapsed = (time.perf_counter() - started) * 1000
    return elapsed


async def through_mcp(data_dir: Path, memories: list[str], queries: list[str]) -> dict[str, dict[str, float]]:
    adds, searches = [], []
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(server_params(data_dir), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for text in memories:
                adds.append(await timed_ms(partial(session.call_tool, "add_memory", {"text": text})))
            for query in queries:
                searches.append(await timed_ms(partial(session.call_tool, "search_memory", {"query": query})))
            stats = (await session.call_tool("get_stats", {})).structured_content
    assert stats["total_memories"] == len(memories), stats
    return {"add_memory": summary_ms(adds), "search_memory": summary_ms(searches)}


async def through_core(data_dir: Path, memories: list[str], queries: list[str]) -> dict[str, dict[str, float]]:
    adds, searches = [], []
    async with open_core(Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING")) as (core, _info):
        for text in memories:
            adds.append(await timed_ms(partial(core.memories.add, AddMemoryRequest(text=text))))
        for query in queries:
            searches.append(await timed_ms(partial(core.memories.search, SearchRequest(query=query))))
    return {"add_memory": summary_ms(adds), "search_memory": summary_ms(searches)}


def venv_size_mb() -> float | None:
    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix):
        return None
    out = subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True, check=False).stdout
    return float(out.split()[0]) if out else None


async def run(count: int, starts: int) -> dict[str, object]:
    memories, queries, origin = load_texts(count)
    scratch = Path(tempfile.mkdtemp(prefix="zb-", dir="/tmp"))
    try:
        fresh = [await cold_start_ms(scratch / f"fresh-{i}") for i in range(starts)]
        warm_dir = scratch / "warm"
        await cold_start_ms(warm_dir)
        warm = [await cold_start_ms(warm_dir) for _ in range(starts)]
        mcp = await through_mcp(scratch / "mcp", memories, queries)
        core = await through_core(scratch / "core", memories, queries)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "memories": f"{len(memories)} {origin}",
        "queries": len(queries),
        "cold_start_ms": {
            "fresh_data_dir": summary_ms(fresh),
            "existing_data_dir": summary_ms(warm),
        },
        "mcp": mcp,
        "core": core,
        "venv_mb": venv_size_mb(),
    }


def render(result: dict[str, Any]) -> str:
    cold = result["cold_start_ms"]
    mcp, core = result["mcp"], result["core"]
    lines = [
        "# Foundation figures",
        "",
        f"- date: {result['date']}; CPUs: {result['cpus']}; memories: {result['memories']}; "
        f"queries: {result['queries']}",
        f"- installed virtualenv: {result['venv_mb']} MB",
        "",
        "| measure | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|",
        _row("cold start → first tools/list, fresh data dir (starts FalkorDB)", cold["fresh_data_dir"]),
        _row("cold start → first tools/list, existing data dir", cold["existing_data_dir"]),
    ]
    for tool in ("add_memory", "search_memory"):
        for path, figures in (("MCP stdio", mcp), ("core direct", core)):
            lines.append(_row(f"{tool} via {path}", figures[tool]))
    lines.append("")
    lines.append("Produced by `bench/foundation.py`.")
    return "\n".join(lines) + "\n"


def _row(label: str, figures: dict[str, float]) -> str:
    return f"| {label} | {figures['p50']} | {figures['p95']} | {figures['mean']} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=300, help="memories to add (default 300)")
    parser.add_argument("--starts", type=int, default=5, help="cold starts to time per case (default 5)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "foundation.md")
    args = parser.parse_args()
    configure_logging("WARNING")
    result = asyncio.run(run(args.memories, args.starts))
    report = render(result)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    print(report)


if __name__ == "__main__":
    main()
