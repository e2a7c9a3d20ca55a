"""The first answer after a cold start on an existing store, and where its time went (issue 40, part 3).

Each start finds the embedded database stopped: a fresh `zapomni serve` (official MCP client over stdio) starts
it, FalkorDB loads the store and answers, and its indexes are built afterwards (decision 0036). Measured from
spawning the server: the first hybrid search answered (client side), and from the logs where it went — FalkorDB's
own load (`DB loaded from append only file` in its log: the floor), the server ready (`server.ready`), the first
search in the server (`memory.searched`), which legs answered and why one did not. Then `--searches` more hybrid
searches while the indexes build (p50), each waiting for the last. Between starts the last server's database
saves and stops (its build unfinished: the next load builds again).

`--prepare` first opens the store in this process until its keyword index is current (a store grown by an older
format is made again) and its append-only file compacted, so that the starts measure a start and not those;
`--latency N` then opens it again, waits until the database has built its indexes, and measures N searches per
mode as `bench.scale` does at each size (p50/p95/p99, with the query embedding and with it cached).

Run: `.venv/bin/python -m bench.first_answer --store DIR [--starts 3]` (a store another bench grew and stopped,
e.g. `bench.list_pages --store` or `bench.scale --store`); results in bench/results/first_answer.{md,json}. Without
arguments (`make bench-1m`) the store is `$BENCH_STORE`, prepared, and the latencies measured (200 searches).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from bench.common import DATA_DIR, call, commit, queries, sentences
from bench.scale import load_now, search_latency, spawned_server
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.logs import configure_logging
from zapomni_db import rewrite_append_only_file
from zapomni_db.embedded_layout import EmbeddedPaths, probe

RESULTS = Path(__file__).resolve().parent / "results"
T = TypeVar("T")
_LOADED = re.compile(r"^\d+:M (\d+ \w+ \d+ [\d:.]+) \* DB loaded from append only file: ([\d.]+) seconds")


async def one_start(store: Path, log_path: Path, searches: list[str]) -> dict[str, Any]:
    paths = EmbeddedPaths(store)
    while probe(paths.socket) != "down":  # the last server's database saves and stops
        await asyncio.sleep(1.0)
    load = load_now()
    redis_log = paths.db_dir / "redis.log"
    seen = redis_log.read_text().count("\n") if redis_log.exists() else 0
    async with spawned_server(store, log_path) as (session, first_ms, first):
        more = [(await call(session, "search_memory", {"query": q, "mode": "hybrid"}))[1] for q in searches]
        await _ready(log_path)  # an answer before the load: the load's own figures come once it ends
    server = _server_log(log_path)
    lines = redis_log.read_text().splitlines()[seen:] if redis_log.exists() else []
    decoded = [float(m.group(2)) for line in lines if (m := _LOADED.match(line))]
    return {
        "load": load,
        "first_search_ms": first_ms,
        "database_load_s": decoded[0] if decoded else None,
        "server_ready_ms": server["ready_ms"],
        "first_search_in_server_ms": server["search_ms"],
        "before_load": server["early"],
        "legs": first.get("legs"),
        "note": first.get("note"),
        "results": first.get("count"),
        "more_searches_p50_ms": round(statistics.median(more), 1) if more else None,
        "more_searches_legs": server["later_legs"],
    }


async def _ready(log_path: Path, within_s: float = 300.0) -> None:
    deadline = time.monotonic() + within_s
    while '"server.ready"' not in log_path.read_text() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)


def _server_log(log_path: Path) -> dict[str, Any]:
    ready = search = None
    early = False
    later: list[str] = []
    for line in log_path.read_text().splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        name = event.get("event")
        if name == "server.ready" and ready is None:
            ready = round(event["startup_s"] * 1000, 1)
        elif name in ("memory.searched", "memory.searched_early"):
            before_load = name == "memory.searched_early"  # from the keyword index alone (decision 0045)
            if search is None:
                search, early = event.get("duration_ms"), before_load
            else:
                later.append("before the load" if before_load else ",".join(sorted(event.get("unavailable", {}))))
    return {"ready_ms": ready, "search_ms": search, "early": early, "later_legs": [leg or "both" for leg in later]}


async def opened(store: Path, work: Callable[[ZapomniCore], Awaitable[T]]) -> T:
    """`work(core)` on the store opened in this process (the database started here, stopped after)."""
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=store, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO="false")
    async with open_core(settings) as (core, _info):
        return await work(core)


async def prepare(core: ZapomniCore) -> float:
    """Wait until the default workspace's keyword index is current, then have the database compact its append-only
    file (a store grown through the stores' writes leaves it long: each start would replay it); seconds taken."""
    started = time.perf_counter()
    workspace = await core.workspaces.registry.get(None, create=False)
    assert workspace is not None, "the store has no default workspace"
    while workspace.keyword_index.building:
        await asyncio.sleep(1.0)
    assert await rewrite_append_only_file(workspace.stores.client, wait_s=1800), "the AOF was not compacted"
    return round(time.perf_counter() - started, 1)


async def latency(core: ZapomniCore, texts: list[str]) -> dict[str, Any]:
    """Search latency per mode once the database has built the store's indexes (writes resumed)."""
    started = time.perf_counter()
    while core.workspaces.registry.held_writes(None):
        await asyncio.sleep(5.0)
    built_s = round(time.perf_counter() - started, 1)
    return {"waited_for_indexes_s": built_s, "load": load_now(), "search_ms": await search_latency(core, texts, "1m")}


def _logged(figure: float | None) -> str:
    return "–" if figure is None else f"{figure:,}"


def render(results: dict[str, Any]) -> str:
    lines = [
        "# The first answer after a cold start (database stopped)",
        "",
        f"- date: {results['date']}; commit {results['commit']}; store {results['store']} ({results['chunks']}); "
        "produced by `python -m bench.first_answer`. Times from spawning `zapomni serve` (official MCP client, "
        "stdio); FalkorDB's load from its own log; the engine's start-up (`server.ready`'s `startup_s`: from opening "
        "the engine, which `zapomni serve` does after starting the database) and the searches' times from the "
        "server's log.",
        "- later searches: hybrid, one after another, while the database builds its indexes; which legs "
        "did not answer in each.",
        "",
        "- before the load: the first search was answered from the keyword index alone, the database still loading "
        "the store (decision 0045); later searches 'before the load' were too.",
        "",
        "| start | load (1 min) | first search answered, ms | FalkorDB's load, s | engine start-up, ms | first search "
        "in the server, ms | before the load | legs | results | later searches p50, ms | later: legs that did not "
        "answer |",
        "|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|",
    ]
    for i, run in enumerate(results["runs"], start=1):
        lines.append(
            f"| {i} | {run['load'][0]} | {run['first_search_ms']:,} | {_logged(run['database_load_s'])} | "
            f"{_logged(run['server_ready_ms'])} | {run['first_search_in_server_ms']} | "
            f"{'yes' if run.get('before_load') else 'no'} | {', '.join(run['legs'] or [])} | "
            f"{run['results']} | {run['more_searches_p50_ms']} | {', '.join(run['more_searches_legs']) or '–'} |"
        )
    notes = {run["note"] for run in results["runs"] if run["note"]}
    lines += ["", *(f"- the reply's note: {note}" for note in sorted(notes)), ""]
    if any(run["server_ready_ms"] is None for run in results["runs"]):
        lines += ["- –: not in the log, the server was stopped (after its searches) before the load ended.", ""]
    if "latency" in results:
        found = results["latency"]
        lines += [
            f"Search latency once the indexes were built ({found['waited_for_indexes_s']:,} s after opening the store"
            f" in process; load {found['load'][0]}), ms through `ZapomniCore.search`, limit 10:",
            "",
            "| mode | p50 | p95 | p99 | p50 cached embedding | p95 cached | p99 cached |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for mode, figures in found["search_ms"].items():
            cold, warm = figures["with_embedding"], figures["cached_embedding"]
            lines.append(
                f"| {mode} | {cold['p50']} | {cold['p95']} | {cold['p99']} | {warm['p50']} | {warm['p95']} | "
                f"{warm['p99']} |"
            )
        lines.append("")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    pool = sentences(DATA_DIR)
    searches = queries(DATA_DIR, pool, args.searches)
    logs = args.store.parent / f"{args.store.name}-logs"
    logs.mkdir(exist_ok=True)
    results: dict[str, Any] = {
        "commit": commit(),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "store": str(args.store),
        "chunks": args.chunks,
        "runs": [],
    }
    if args.prepare:
        results["prepared_s"] = await opened(args.store, prepare)
    for i in range(args.starts):
        started = time.perf_counter()
        results["runs"].append(await one_start(args.store, logs / f"first-answer-{i}.log", searches))
        print(json.dumps(results["runs"][-1]), f"({time.perf_counter() - started:.0f} s)", flush=True)
    if args.latency:
        texts = queries(DATA_DIR, pool, args.latency)
        results["latency"] = await opened(args.store, lambda core: latency(core, texts))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="an embedded data directory, its database stopped")
    parser.add_argument("--chunks", default="", help="what the store holds, for the report (e.g. '1,000,000 chunks')")
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--searches", type=int, default=5, help="hybrid searches after the first, at each start")
    parser.add_argument("--prepare", action="store_true", help="first bring the store's keyword index up to date")
    parser.add_argument("--latency", type=int, default=0, help="then this many searches per mode, indexes built")
    parser.add_argument("--output", type=Path, default=RESULTS / "first_answer.md")
    args = parser.parse_args()
    if args.store is None:  # `make bench-1m`: the store bench.scale grew and kept
        if not os.environ.get("BENCH_STORE"):
            parser.error("--store is required (or BENCH_STORE in the environment)")
        args.store, args.prepare, args.latency = Path(os.environ["BENCH_STORE"]), True, args.latency or 200
        args.chunks = args.chunks or "1,000,000 chunks"
    configure_logging("WARNING")
    results = asyncio.run(main_async(args))
    args.output.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")  # first: an hour's runs
    args.output.write_text(render(results))
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
