"""Shared memory over HTTP under load: 32 clients, 80 % search / 20 % add, 60 s, one replica and two.

A store is seeded with short memories (two SciFact sentences each; generated sentences when SciFact is
absent), then `zapomni serve --http` replicas are started on it: every replica opens the same data
directory, so they share its one FalkorDB, as replicas behind a load balancer share one database
server. Each client holds its own SDK Streamable HTTP session (protocol 2026-07-28, sessionless) on
one replica, chosen round-robin as a balancer without sticky sessions would; all use one write token.

Measured in one run, per replica count:
- requests/s, p50/p95/p99 per tool, errors (must be 0), peak RSS of each replica and of the database;
- search p95 with no other load (one client, the same queries), the figure the loaded p95 is held to;
and once: the per-request overhead of HTTP against stdio, the same searches one at a time through a
stdio `zapomni serve` and through HTTP on the same store.

Run: `.venv/bin/python -m bench.http_load [--seconds 60 --clients 32]`; results in
bench/results/http_load.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.common import (
    DATA_DIR,
    ZAPOMNI,
    commit,
    free_port,
    in_scratch_dir,
    memory_texts,
    queries,
    sentences,
    serve_http,
    summary_ms,
    write_results,
)
from bench.scale import database_pid, peak_rss_mb

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SEARCH_SHARE = 0.8


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "ZAPOMNI_DATA_DIR": str(data_dir),
        "LOG_LEVEL": "WARNING",
        # The bench measures capacity, not the limiter (0: no rate limit): one token carries every client.
        "ZAPOMNI_HTTP_RATE": "0",
        **extra,
    }


@dataclass
class Replica:
    process: subprocess.Popen[bytes]
    url: str

    @property
    def pid(self) -> int:
        return self.process.pid


@contextmanager
def replicas(data_dir: Path, count: int, log_dir: Path) -> Iterator[list[Replica]]:
    """`count` HTTP servers on the store in `data_dir`, each logging to a file of its own; stopped with SIGTERM."""
    started: list[Replica] = []
    with contextlib.ExitStack() as logs:
        try:
            for index in range(count):
                port = free_port()
                log = logs.enter_context((log_dir / f"replica-{count}-{index}.log").open("wb"))
                process = serve_http(server_env(data_dir), port, stderr=log)
                started.append(Replica(process, f"http://127.0.0.1:{port}/mcp"))
            yield started
        finally:
            for replica in started:
                replica.process.send_signal(signal.SIGTERM)
            for replica in started:
                try:
                    replica.process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    replica.process.kill()


def create_token(data_dir: Path) -> str:
    done = subprocess.run(
        [ZAPOMNI, "token", "create", "--name", "bench", "--all", "--role", "write", "--json"],
        env=server_env(data_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    token: str = json.loads(done.stdout)["token"]
    return token


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60, read=300))
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.discover()
        yield session


@asynccontextmanager
async def stdio_session(data_dir: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=server_env(data_dir))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def seed(data_dir: Path, texts: list[str]) -> None:
    """The store the replicas share, filled through one stdio server (the CLI would index one by one)."""
    async with stdio_session(data_dir) as session:
        for text in texts:
            result = await session.call_tool("add_memory", {"text": text})
            if result.is_error:
                raise RuntimeError(f"seeding failed: {result.content}")


async def timed_call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> tuple[float, str | None]:
    """The round trip in ms, and the error text if the call failed (a refusal or a transport failure)."""
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, arguments)
    except Exception as exc:  # a transport failure is an error to count, not a reason to stop the load
        return (time.perf_counter() - started) * 1000, f"{type(exc).__name__}: {exc}"
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, (str(getattr(result.content[0], "text", result.content))[:200] if result.is_error else None)


async def sequential_searches(session: ClientSession, asked: list[str]) -> list[float]:
    samples = []
    for query in asked:
        elapsed, error = await timed_call(session, "search_memory", {"query": query, "limit": 10})
        if error:
            raise RuntimeError(f"search failed: {error}")
        samples.append(elapsed)
    return samples


@dataclass
class Load:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)


async def client_loop(
    url: str, token: str, asked: list[str], pool: list[str], until: float, seed_value: int, load: Load
) -> None:
    rng = random.Random(seed_value)
    async with http_session(url, token) as session:
        while time.monotonic() < until:
            if rng.random() < SEARCH_SHARE:
                tool, arguments = "search_memory", {"query": rng.choice(asked), "limit": 10}
            else:
                text = f"{rng.choice(pool)} {rng.choice(pool)} (load {seed_value}-{rng.getrandbits(40):x})"
                tool, arguments = "add_memory", {"text": text}
            elapsed, error = await timed_call(session, tool, arguments)
            load.latencies[tool].append(elapsed)
            if error:
                load.errors.append(f"{tool}: {error}")


async def run_load(
    group: list[Replica], token: str, asked: list[str], pool: list[str], clients: int, seconds: float
) -> dict[str, Any]:
    load = Load()
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(
        *(client_loop(group[i % len(group)].url, token, asked, pool, until, i, load) for i in range(clients))
    )
    elapsed = time.monotonic() - started
    load_average = os.getloadavg()[0]
    requests = sum(len(samples) for samples in load.latencies.values())
    return {
        "replicas": len(group),
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests": requests,
        "requests_per_s": round(requests / elapsed, 1),
        "per_tool_ms": {tool: {"count": len(s), **summary_ms(s)} for tool, s in load.latencies.items()},
        "errors": len(load.errors),
        "error_samples": load.errors[:5],
        "load_average_1m_after": round(load_average, 2),
        "peak_rss_mb": {f"replica {i}": peak_rss_mb(replica.pid) for i, replica in enumerate(group)},
    }


def server_side(replica: Replica, token: str) -> dict[str, float]:
    """Where a replica's time went, from its own /metrics: mean search and embedding durations (ms)."""
    text = httpx.get(replica.url.removesuffix("/mcp") + "/metrics", headers={"Authorization": f"Bearer {token}"}).text
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)

    def mean_ms(metric: str, labels: str = "") -> float:
        count = values.get(f"{metric}_count{labels}", 0.0)
        return round(values.get(f"{metric}_sum{labels}", 0.0) / count * 1000, 2) if count else 0.0

    embedding = "zapomni_embedding_latency_seconds"
    return {
        "search_mean_ms": mean_ms("zapomni_search_latency_seconds"),
        "query_embedding_mean_ms": mean_ms(embedding, '{kind="query"}'),
        "document_embedding_mean_ms": mean_ms(embedding, '{kind="document"}'),
    }


async def measure(workdir: Path, clients: int, seconds: float, memories: int, searches: int) -> dict[str, Any]:
    data_dir = workdir / "store"
    pool = sentences(DATA_DIR)
    asked = queries(DATA_DIR, pool, 200)
    print(f"seeding {memories} memories ...", file=sys.stderr)
    await seed(data_dir, memory_texts(pool, memories, seed=5))
    token = create_token(data_dir)
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "seed_memories": memories,
        "runs": [],
    }

    # The transports one request at a time on the same store: what HTTP adds to each call.
    overhead_queries = asked[:searches]
    async with stdio_session(data_dir) as session:
        await sequential_searches(session, overhead_queries)  # warm: model, caches, keyword index
        stdio_ms = await sequential_searches(session, overhead_queries)
    with replicas(data_dir, 1, workdir) as group:
        async with http_session(group[0].url, token) as session:
            await sequential_searches(session, overhead_queries)
            http_ms = await sequential_searches(session, overhead_queries)
    results["overhead"] = {
        "searches": len(overhead_queries),
        "stdio_ms": summary_ms(stdio_ms),
        "http_ms": summary_ms(http_ms),
        "http_minus_stdio_median_ms": round(statistics.median(http_ms) - statistics.median(stdio_ms), 2),
    }

    for count in (1, 2):
        with replicas(data_dir, count, workdir) as group:
            async with http_session(group[0].url, token) as session:
                await sequential_searches(session, asked[:20])  # warm
                idle = summary_ms(await sequential_searches(session, asked[-searches:]))
            print(f"load: {clients} clients on {count} replica(s) for {seconds:g} s ...", file=sys.stderr)
            run = await run_load(group, token, asked, pool, clients, seconds)
            run["idle_search_ms"] = idle
            # Idle searches are in the counters too; the load's thousands outweigh them.
            run["server_side"] = [server_side(replica, token) for replica in group]
            run["database_peak_rss_mb"] = peak_rss_mb(await database_pid(data_dir))
            loaded_p95 = run["per_tool_ms"].get("search_memory", {}).get("p95")
            run["search_p95_over_idle"] = round(loaded_p95 / idle["p95"], 2) if loaded_p95 else None
            results["runs"].append(run)
    return results


def report(results: dict[str, Any]) -> str:
    lines = [
        "# HTTP under load (bench/http_load.py)",
        "",
        f"{results['date']}, commit {results['commit']}, {os.cpu_count()} cores. "
        f"Store seeded with {results['seed_memories']} memories; "
        "80 % search_memory (limit 10) / 20 % add_memory, each client one SDK Streamable HTTP session.",
        "",
        "| replicas | clients | requests/s | errors | search p50 / p95 / p99 ms | add p50 / p95 / p99 ms "
        "| idle search p95 ms | loaded/idle p95 | peak RSS per replica MB | database MB |",
        "|---:|---:|---:|---:|---|---|---:|---:|---|---:|",
    ]
    for run in results["runs"]:
        search = run["per_tool_ms"].get("search_memory", {})
        add = run["per_tool_ms"].get("add_memory", {})
        rss = ", ".join(f"{mb:.0f}" for mb in run["peak_rss_mb"].values())
        lines.append(
            f"| {run['replicas']} | {run['clients']} | {run['requests_per_s']} | {run['errors']} "
            f"| {search.get('p50')} / {search.get('p95')} / {search.get('p99')} "
            f"| {add.get('p50')} / {add.get('p95')} / {add.get('p99')} "
            f"| {run['idle_search_ms']['p95']} | {run['search_p95_over_idle']} | {rss} "
            f"| {run['database_peak_rss_mb']} |"
        )
    lines += ["", "Where the time went, from each replica's /metrics (means, ms; the idle searches included):", ""]
    for run in results["runs"]:
        for index, side in enumerate(run["server_side"]):
            client_mean = run["per_tool_ms"].get("search_memory", {}).get("mean")
            lines.append(
                f"- {run['replicas']} replica(s), replica {index}: search in the server {side['search_mean_ms']} "
                f"(client round trip {client_mean}), of which query embedding {side['query_embedding_mean_ms']}; "
                f"document embedding per add {side['document_embedding_mean_ms']}"
            )
    overhead = results["overhead"]
    lines += [
        "",
        f"Per-request overhead, {overhead['searches']} searches one at a time on the same store: stdio median "
        f"{overhead['stdio_ms']['p50']} ms, HTTP median {overhead['http_ms']['p50']} ms: HTTP adds "
        f"{overhead['http_minus_stdio_median_ms']} ms.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--memories", type=int, default=2000, help="memories stored before the load")
    parser.add_argument("--searches", type=int, default=100, help="one-at-a-time searches per idle/overhead figure")
    parser.add_argument("--output", type=Path, default=RESULTS / "http_load.md")
    args = parser.parse_args()
    results = in_scratch_dir(
        "zhl-", lambda workdir: measure(workdir, args.clients, args.seconds, args.memories, args.searches)
    )
    write_results(report(results), results, args.output, args.output.with_suffix(".json"))


if __name__ == "__main__":
    main()
