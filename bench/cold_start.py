"""Cold start: from spawning `zapomni serve` to the first answered `tools/list`, through the official MCP client.

Two stores, each started `--starts` times (default 5) and reported by the median and the slowest:
- a fresh data directory for every start (the server also creates the store and starts FalkorDB);
- one store of `--chunks` chunks (default 10,000): a few hundred memories embedded for real, then grown
  without the model as `bench.scale` grows its stores (real texts, perturbed copies of stored vectors,
  through the repository's write path), so the keyword index has real term statistics to load.

Beside the client's clock, each start's own log (LOG_LEVEL=INFO on stderr) gives where the time went:
`server.ready` (the process's start-up as the engine measures it), `workspace.opened` (opening the
default workspace: schema checks, vector index repair, the keyword index built from the stored term
counts) and `keyword_index.synced` (that build alone, logged above 1,000 chunks). Python's own imports
are the rest. Run: `.venv/bin/python -m bench.cold_start [--starts 5] [--chunks 10000]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import DATA_DIR, commit, in_scratch_dir, memory_texts, sentences, write_results
from bench.scale import grow
from zapomni_core import Settings, open_core
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest

ROOT = Path(__file__).resolve().parent.parent
ZAPOMNI = str(Path(sys.executable).parent / "zapomni")
RESULTS = ROOT / "bench" / "results"
# Memories embedded for real before the store is grown: the vectors the grown chunks borrow from.
EMBEDDED = 300


def server_env(data_dir: Path) -> dict[str, str]:
    env = {"ZAPOMNI_DATA_DIR": str(data_dir), "LOG_LEVEL": "INFO", "PATH": os.environ.get("PATH", "")}
    if "PYTHONPATH" in os.environ:  # a checkout other than the one installed (a worktree)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


async def one_start(data_dir: Path, log_path: Path) -> dict[str, float | None]:
    """Spawn, initialize, list the tools; the client's milliseconds and the server's own timings."""
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=server_env(data_dir))
    with log_path.open("w") as errlog:
        started = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            elapsed_ms = (time.perf_counter() - started) * 1000
    assert tools, "the server listed no tools"
    return {"tools_list_ms": round(elapsed_ms, 1), **server_timings(log_path)}


def server_timings(log_path: Path) -> dict[str, float | None]:
    events: dict[str, dict[str, Any]] = {}
    for line in log_path.read_text().splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("workspace", "default") == "default":
                events.setdefault(event.get("event", ""), event)
    ready, opened, synced = (
        events.get("server.ready"),
        events.get("workspace.opened"),
        events.get("keyword_index.synced"),
    )
    return {
        "startup_ms": round(ready["startup_s"] * 1000, 1) if ready else None,
        "workspace_open_ms": opened["duration_ms"] if opened else None,
        "keyword_sync_ms": synced["duration_ms"] if synced else None,
        "keyword_chunks": synced["total"] if synced else None,
    }


async def fill(data_dir: Path, chunks: int) -> int:
    """A store of `chunks` one-chunk memories; returns how many chunks it holds."""
    pool = sentences(DATA_DIR)
    texts = memory_texts(pool, chunks, seed=11)
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False)
    async with open_core(settings) as (core, _info):
        embedded = min(EMBEDDED, chunks // 2)
        for text in texts[:embedded]:
            await core.memories.add(AddMemoryRequest(text=text))
        await grow(data_dir, texts[embedded:], seed=11)
        return (await core.workspaces.stats()).total_chunks


def summarise(starts: list[dict[str, float | None]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"starts": starts}
    for key in ("tools_list_ms", "startup_ms", "workspace_open_ms", "keyword_sync_ms"):
        values = [value for s in starts if (value := s[key]) is not None]
        summary[key] = {"median": round(statistics.median(values), 1), "max": round(max(values), 1)} if values else None
    return summary


async def run(workdir: Path, starts: int, chunks: int) -> dict[str, Any]:
    fresh = [await one_start(workdir / f"fresh-{i}", workdir / f"fresh-{i}.log") for i in range(starts)]
    store = workdir / "store"
    stored = await fill(store, chunks)
    filled = [await one_start(store, workdir / f"store-{i}.log") for i in range(starts)]
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in LOAD_BEFORE],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "fresh": summarise(fresh),
        "store": {"chunks": stored, **summarise(filled)},
    }


def render(result: dict[str, Any]) -> str:
    def cell(figures: dict[str, float] | None) -> str:
        return f"{figures['median']:,.0f} (max {figures['max']:,.0f})" if figures else "–"

    rows = [
        ("fresh data directory (creates the store, starts FalkorDB)", result["fresh"]),
        (f"store of {result['store']['chunks']:,} chunks", result["store"]),
    ]
    lines = [
        "# Cold start — process start to the first answered tools/list",
        "",
        f"- date: {result['date']}; commit {result['commit']}; CPUs: {result['cpus']}; load average before "
        f"{result['load_average_before']}, after {result['load_average_after']}",
        f"- {len(result['fresh']['starts'])} starts per store, official MCP client over stdio, embedded defaults; "
        "produced by `python -m bench.cold_start` (`make bench`).",
        "- server's own timings from its log: start-up (`server.ready`), opening the default workspace "
        "(`workspace.opened`), of which building the keyword index from stored term counts (`keyword_index.synced`, "
        "logged above 1,000 chunks).",
        "",
        "| store | tools/list answered, ms median | server start-up ms | workspace opened ms | keyword index sync ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, figures in rows:
        lines.append(
            f"| {label} | {cell(figures['tools_list_ms'])} | {cell(figures['startup_ms'])} | "
            f"{cell(figures['workspace_open_ms'])} | {cell(figures['keyword_sync_ms'])} |"
        )
    return "\n".join(lines) + "\n"


LOAD_BEFORE = os.getloadavg()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--starts", type=int, default=5, help="starts per store (default 5)")
    parser.add_argument("--chunks", type=int, default=10_000, help="chunks in the filled store (default 10,000)")
    parser.add_argument("--output", type=Path, default=RESULTS / "cold_start.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "cold_start.json")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    result = in_scratch_dir("zc-", lambda workdir: run(workdir, args.starts, args.chunks))
    write_results(render(result), result, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
