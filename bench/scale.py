"""Speed and scale on the embedded defaults, 10K to 1M chunks: every figure that matters at each size, one run.

A synthetic corpus of short memories (two SciFact sentences each, one chunk of ~50 tokens; plain
generated sentences when SciFact is absent) is ingested through `ZapomniCore.add_memory` up to
`--embed-upto` chunks, then grown without the model (real texts, perturbed copies of stored vectors,
through the stores' writes) to each size of `--sizes` (default 10K, 100K, 300K; add 1000000 for 1M).
At each size, with the machine's load average beside each group of figures:
- search latency p50/p95/p99 per mode through `ZapomniCore.search`, with the query embedding (new
  queries) and without it (the same queries again: the embedding cache answers);
- a `list_memories` page (newest, oldest), delete of 1 and of 1,000 memories, `get_related` depth 2
  (over a graph extracted from the first 300 memories), one `add_memory` with the model;
- RSS of the database, of a freshly started server after 50 searches, and of this bench's engine;
  the data directory: snapshot and AOF, running and after the last client's SHUTDOWN SAVE;
- cold start to the first answered search (existing store, fresh `zapomni serve`, official MCP
  client): once with the database stopped (it loads the snapshot and rebuilds its vector index) and
  once with it running (Zapomni's own start-up); each server's log says what the keyword index took;
- catching up: this process writes `--catch-up` chunks while the second server runs; its next
  keyword search reads them into its index.
At the first size the MCP stdio round trip is compared with the direct core call.

Run: `.venv/bin/python -m bench.scale [--sizes 10000 100000 300000 1000000]`; results in
bench/results/scale.{md,json,png} (the plot: matplotlib, pinned in constraints.txt, the `bench` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import (
    DATA_DIR,
    ZAPOMNI,
    call,
    commit,
    memory_texts,
    progress,
    queries,
    sentences,
    summary_ms,
    timed_ms,
)
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.graph.requests import BuildGraphRequest, GetRelatedRequest, GraphOverviewRequest, GraphStatusRequest
from zapomni_core.kernel.writing import content_hash
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import (
    MAX_PAGE,
    AddMemoryRequest,
    DeleteMemoryRequest,
    ListMemoriesRequest,
    SearchRequest,
)
from zapomni_core.search.types import SearchMode
from zapomni_db import (
    ChunkRow,
    Connection,
    DatabaseTarget,
    GraphClient,
    MemoryRecord,
    MemoryWrites,
    connect,
    indexes_building,
)
from zapomni_db.embedded_layout import EmbeddedPaths, probe

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MODES: tuple[SearchMode, ...] = ("vector", "keyword", "hybrid")
CONCURRENCY = 8
QUERIES = 200
MCP_QUERIES = 100
RAW_SAMPLE = 2000
DELETE_BATCH = 1000  # the largest delete one call takes (MAX_DELETE_IDS)
GROW_BATCH = 100  # memories per write while growing without the model (one query each, like an import)
GRAPH_MEMORIES = 300  # memories whose entities and relations get_related walks at every size
SEARCHES_WHILE_BUILDING = 5  # hybrid searches timed while the database builds its indexes after a cold start
START_TIMEOUT_S = 3600.0  # a server's first answers on a store it must load (1M vectors: ~10 min quiet)


def peak_rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def connect_embedded(data_dir: Path) -> Connection:
    """A connection to the embedded database serving `data_dir` (already running)."""
    return connect(DatabaseTarget(str(data_dir), "zapomni", socket=EmbeddedPaths(data_dir).socket))


async def database_pid(data_dir: Path) -> int:
    connection = connect_embedded(data_dir)
    try:
        info = await connection.command("INFO", "server")
    finally:
        await connection.close()
    return int(info["process_id"])


async def ingest(core: ZapomniCore, texts: list[str], label: str) -> tuple[float, list[str]]:
    """Add `texts` through the engine, `CONCURRENCY` at a time: the seconds it took and the memories' ids."""
    pending = list(reversed(texts))
    ids: list[str] = []
    bar = progress(len(pending), label)
    started = time.perf_counter()

    async def worker() -> None:
        while pending:
            ids.append((await core.memories.add(AddMemoryRequest(text=pending.pop()))).memory_id)
            if bar is not None:
                bar.update(1)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    if bar is not None:
        bar.close()
    return time.perf_counter() - started, ids


async def search_latency(core: ZapomniCore, texts: list[str], tag: str) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    await core.memories.search(SearchRequest(query="warm up the keyword index", mode="keyword"))  # catch up untimed
    for mode in MODES:
        # New text per mode and size, so the first pass always pays for the query embedding.
        fresh = [f"{t} ({mode} {tag})" for t in texts]
        requests = [SearchRequest(query=q[:1000], mode=mode) for q in fresh]
        cold = [await timed_ms(partial(core.memories.search, r)) for r in requests]
        warm = [await timed_ms(partial(core.memories.search, r)) for r in requests]
        out[mode] = {"with_embedding": summary_ms(cold), "cached_embedding": summary_ms(warm)}
    return out


async def mcp_overhead(core: ZapomniCore, data_dir: Path, texts: list[str]) -> dict[str, float]:
    """Median MCP round trip minus median direct call, same queries, embeddings cached on both sides."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "zapomni"),
        args=["serve"],
        env=server_env(data_dir) | {"LOG_LEVEL": "WARNING"},  # this checkout's code, as the cold starts run
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for q in texts:  # warm both embedding caches
                await session.call_tool("search_memory", {"query": q})
                await core.memories.search(SearchRequest(query=q))
            # Interleaved, so a change in machine load hits both sides alike.
            via_mcp, direct, stats_mcp, stats_direct = [], [], [], []
            for q in texts:
                via_mcp.append(await timed_ms(partial(session.call_tool, "search_memory", {"query": q})))
                direct.append(await timed_ms(partial(core.memories.search, SearchRequest(query=q))))
                stats_mcp.append(await timed_ms(lambda: session.call_tool("get_stats", {})))
                stats_direct.append(await timed_ms(core.workspaces.stats))
    return {
        "search_mcp_p50": round(statistics.median(via_mcp), 2),
        "search_direct_p50": round(statistics.median(direct), 2),
        "search_overhead_ms": round(statistics.median(via_mcp) - statistics.median(direct), 2),
        "stats_mcp_p50": round(statistics.median(stats_mcp), 2),
        "stats_direct_p50": round(statistics.median(stats_direct), 2),
        "stats_overhead_ms": round(statistics.median(stats_mcp) - statistics.median(stats_direct), 2),
    }


def raw_embedder_rate(texts: list[str]) -> float:
    embedder = OnnxMiniLMEmbedder()
    sample = texts[:RAW_SAMPLE]
    started = time.perf_counter()
    embedder.embed_sync(sample)
    return len(sample) / (time.perf_counter() - started)


def borrowed_vectors(base: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` unit vectors near stored ones: a realistic neighbourhood without running the model."""
    vectors = base[rng.integers(0, len(base), count)] + rng.normal(0, 0.02, (count, base.shape[1]))
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def single_chunk_memory(text: str, vector: np.ndarray, **fields: Any) -> tuple[MemoryRecord, list[ChunkRow]]:
    """A memory of one chunk as the write path stores it, its vector given: what `MemoryWrites.insert` takes."""
    now = time.time()
    memory = MemoryRecord(
        id=str(uuid.uuid4()), text=text, created_at=now, content_hash=content_hash(text), date_ts=now, **fields
    )
    chunk = ChunkRow(str(uuid.uuid4()), 0, text, vector.tolist())
    return memory, [chunk]


async def grow(workdir: Path, texts: list[str], seed: int) -> list[str]:
    """Add single-chunk memories through the stores' writes with vectors borrowed from stored chunks.

    Embedding 100K chunks takes this machine ~21 minutes (80 chunks/s); search latency at that size does
    not depend on the vectors matching their text, so the store grows with real texts (real BM25
    statistics) and perturbed copies of real vectors (a realistic HNSW neighbourhood structure).
    """
    connection = connect_embedded(workdir)
    client = GraphClient(connection, "zapomni")
    writes, rng = MemoryWrites(client), np.random.default_rng(seed)
    rows = await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 5000")
    base = np.asarray([row[0] for row in rows], dtype=np.float32)
    bar = progress(len(texts), f"growing by {len(texts):,} chunks (no embedding)")
    ids: list[str] = []
    try:
        for start in range(0, len(texts), 500):
            batch = texts[start : start + 500]
            made = [
                single_chunk_memory(text, vector)
                for text, vector in zip(batch, borrowed_vectors(base, len(batch), rng), strict=True)
            ]
            for start_at in range(0, len(made), GROW_BATCH):
                await writes.insert_many(made[start_at : start_at + GROW_BATCH])
            ids += [memory.id for memory, _ in made]
            if bar is not None:
                bar.update(len(batch))
    finally:
        await connection.close()
        if bar is not None:
            bar.close()
    return ids


def load_now() -> list[float]:
    """The machine's 1/5/15-minute load averages: other engineers share these 2 cores."""
    return [round(x, 2) for x in os.getloadavg()]


def rss_mb(pid: int | str = "self") -> dict[str, float]:
    """Current and peak resident memory of a process, MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            fields[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return {"now": fields.get("VmRSS", float("nan")), "peak": fields.get("VmHWM", float("nan"))}


def disk_mb(workdir: Path) -> dict[str, float]:
    """The database's files: the snapshot (dump.rdb) and the append-only files (appendonlydir/)."""
    db = EmbeddedPaths(workdir).db_dir
    rdb = db / "dump.rdb"
    aof = db / "appendonlydir"
    aof_bytes = sum(f.stat().st_size for f in aof.iterdir()) if aof.is_dir() else 0
    return {
        "rdb": round(rdb.stat().st_size / 2**20, 1) if rdb.is_file() else 0.0,
        "aof": round(aof_bytes / 2**20, 1),
        "data_dir": round(sum(f.stat().st_size for f in workdir.rglob("*") if f.is_file()) / 2**20, 1),
    }


def server_env(workdir: Path) -> dict[str, str]:
    env = {
        "ZAPOMNI_DATA_DIR": str(workdir),
        "LOG_LEVEL": "INFO",
        "ZAPOMNI_GRAPH_AUTO": "false",
        "PATH": os.environ.get("PATH", ""),
    }
    if "PYTHONPATH" in os.environ:  # a checkout other than the one installed (a worktree)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def child_server_pids() -> list[int]:
    """This process's `zapomni serve` children (the stdio servers it spawned), oldest first."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"serve" in cmdline:
            found.append(int(stat.parent.name))
    return sorted(found)


def log_timings(log_path: Path) -> dict[str, float | None]:
    """Where a server's start-up went, from its own log (LOG_LEVEL=INFO)."""
    events: dict[str, dict[str, Any]] = {}
    for line in log_path.read_text().splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                events.setdefault(str(event.get("event", "")), event)
    ready, opened, synced, loaded = (
        events.get("server.ready"),
        events.get("workspace.opened"),
        events.get("keyword_index.synced"),
        events.get("keyword_index.opened"),  # the index the last server left beside the data (decision 0044)
    )
    return {
        "server_ready_ms": round(ready["startup_s"] * 1000, 1) if ready and "startup_s" in ready else None,
        "workspace_open_ms": opened.get("duration_ms") if opened else None,
        "keyword_sync_ms": synced.get("duration_ms") if synced else None,
        "keyword_load_ms": loaded.get("duration_ms") if loaded else None,
    }


@contextlib.asynccontextmanager
async def spawned_server(workdir: Path, log_path: Path) -> AsyncIterator[tuple[ClientSession, float, dict[str, Any]]]:
    """A fresh `zapomni serve` (stdio, official client), the ms from spawning it to its first answered search, and
    that search's reply."""
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=server_env(workdir))
    with log_path.open("w") as errlog:
        started = time.perf_counter()
        # The database may take minutes to load a large store: the client waits (the SDK's default is 60 s).
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=START_TIMEOUT_S) as session,
        ):
            await session.initialize()
            first, _ = await call(session, "search_memory", {"query": "first search after a cold start"})
            yield session, round((time.perf_counter() - started) * 1000, 1), first


async def timed_samples(make: Callable[[int], Awaitable[Any]], count: int) -> dict[str, float] | None:
    if count == 0:
        return None
    return summary_ms([await timed_ms(partial(make, i)) for i in range(count)])


async def wait_for_job(core: ZapomniCore, job_id: str) -> str:
    while True:
        status = await core.graph.status(GraphStatusRequest(job_id=job_id, wait_s=5))
        if status.job is not None and status.job.state not in ("pending", "running"):
            return str(status.job.state)


async def build_graph(core: ZapomniCore, memory_ids: list[str]) -> dict[str, Any]:
    """Entities and relations of `memory_ids` (spaCy), for `get_related` to walk at every size."""
    started = time.perf_counter()
    job = await core.graph.build(BuildGraphRequest(memory_ids=memory_ids))
    state = await wait_for_job(core, job.job_id) if job.job_id else "nothing to do"
    overview = await core.graph.overview(GraphOverviewRequest(limit=1))
    counts = (await core.graph.status(GraphStatusRequest())).graph
    return {
        "memories": len(memory_ids),
        "state": state,
        "seconds": round(time.perf_counter() - started, 1),
        "entities": counts.entities,
        "relations": counts.relations,
        "entity": overview.entities[0].name if overview.entities else None,
    }


async def operations(
    core: ZapomniCore, doomed: list[str], fresh_texts: list[str], entity: str | None, samples: int, batch: int
) -> dict[str, Any]:
    """A page, deletes of 1 and of 1,000, get_related depth 2 and an add, each timed through ZapomniCore."""
    out: dict[str, Any] = {"load": load_now()}
    for order in ("newest", "oldest"):
        page = ListMemoriesRequest(limit=20, order=order)
        # Awaited before the loop moves on: the lambda never sees a later `page`.
        out[f"list_page_{order}_ms"] = await timed_samples(lambda _i: core.memories.page(page), samples)  # noqa: B023
    singles, batches = doomed[:samples], doomed[samples:]
    out["delete_1_ms"] = await timed_samples(
        lambda i: core.memories.delete(DeleteMemoryRequest(memory_ids=[singles[i]])), len(singles)
    )
    runs = []
    for start in range(0, len(batches) - batch + 1, batch):
        doomed_batch = DeleteMemoryRequest(memory_ids=batches[start : start + batch])
        runs.append(round(await timed_ms(partial(core.memories.delete, doomed_batch)), 1))
    out["delete_1000_runs_ms"] = runs
    if entity is not None:
        related = GetRelatedRequest(entity=entity, depth=2)
        out["get_related_depth2_ms"] = await timed_samples(lambda _i: core.graph.related(related), samples)
    out["add_ms"] = await timed_samples(
        lambda i: core.memories.add(AddMemoryRequest(text=fresh_texts[i])), min(samples, len(fresh_texts))
    )
    return out


async def while_building(workdir: Path, session: ClientSession, searches: list[str], first_ms: float) -> dict[str, Any]:
    """After a cold start the database builds its indexes in the background (decision 0036): hybrid searches
    answered meanwhile, and when the build ended (ms from the server's spawn), which is when writes go through."""
    connection = connect_embedded(workdir)
    client, started = GraphClient(connection, "zapomni"), time.perf_counter()
    try:
        building = await indexes_building(client)
        answered = [(await call(session, "search_memory", {"query": q}))[1] for q in searches] if building else []
        while await indexes_building(client):
            await asyncio.sleep(1.0)
    finally:
        await connection.close()
    return {
        "building_at_first_answer": [str(build) for build in building],
        "search_ms": summary_ms(answered) if answered else None,
        "indexes_built_ms": round(first_ms + (time.perf_counter() - started) * 1000, 1),
    }


async def cold_start_and_catch_up(
    workdir: Path, texts: list[str], seed: int, logs: Path, searches: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """Two fresh servers on the stored data, then 10K chunks written by another process: what each costs.

    The first server finds the database stopped (it starts it: the snapshot is loaded and its vector index
    rebuilt); the second finds it running (only Zapomni's own start-up: the keyword index built from the
    stored counts). Then this process attaches and writes `texts` as new memories, and the second server's
    next keyword search catches its index up with them.
    """
    out: dict[str, Any] = {"load_before": load_now()}
    async with spawned_server(workdir, logs / "first.log") as (first, first_ms, _reply):
        out["database_stopped_ms"] = first_ms
        out["while_building"] = await while_building(workdir, first, searches[:SEARCHES_WHILE_BUILDING], first_ms)
        out["database_stopped_log"] = log_timings(logs / "first.log")
        async with spawned_server(workdir, logs / "second.log") as (second, second_ms, _reply):
            out["database_running_ms"] = second_ms
            out["database_running_log"] = log_timings(logs / "second.log")
            for q in searches:  # a working set, so the RSS is that of a server in use
                await call(second, "search_memory", {"query": q})
            stats, _ = await call(second, "get_stats", {})
            out["chunks"] = stats["total_chunks"]
            pids = child_server_pids()
            out["server_rss_mb"] = rss_mb(pids[-1]) if pids else None
            out["database_rss_mb"] = rss_mb(await database_pid(workdir))
            out["load_after_start"] = load_now()
            grown = await grow(workdir, texts, seed)
            _, catch_up_ms = await call(second, "search_memory", {"query": searches[0], "mode": "keyword"})
            _, after_ms = await call(second, "search_memory", {"query": searches[1], "mode": "keyword"})
            out["catch_up"] = {"chunks": len(grown), "first_search_ms": round(catch_up_ms, 1),
                               "next_search_ms": round(after_ms, 1), "load": load_now()}  # fmt: skip
    return out, grown


async def run(
    data_dir: Path,
    sizes: list[int],
    workdir: Path,
    query_count: int,
    save: Callable[[dict[str, Any]], None],
    embed_upto: int,
    catch_up: int,
    samples: int,
    delete_batch: int = DELETE_BATCH,
    earlier: dict[str, Any] | None = None,
) -> dict[str, Any]:
    started_run = time.perf_counter()
    pool = sentences(data_dir)
    sizes = sorted(sizes)
    extra = len(sizes) * (catch_up + samples)
    all_texts = memory_texts(pool, sizes[-1] + extra, seed=1)
    fresh = iter(all_texts[sizes[-1] :])  # texts never stored before, for adds and catch-ups
    query_texts = queries(data_dir, pool, query_count)
    if earlier is None:
        results: dict[str, Any] = {
            "commit": commit(),
            "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            "raw_embedder_chunks_per_s": round(raw_embedder_rate(all_texts), 1),
            "sizes": {},
        }
    else:  # the sizes measured already are kept; the texts their adds and catch-ups took are not taken again
        results = earlier
        done = [size for size in sizes if str(size) in results["sizes"]]
        sizes = [size for size in sizes if str(size) not in results["sizes"]]
        for _ in range(len(done) * (catch_up + samples)):
            next(fresh)
        results.setdefault("notes", []).append(
            f"sizes {', '.join(f'{size:,}' for size in sizes)} measured later, on the same store: "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit()}"
        )
    before_s = results.get("duration_s", 0)  # an earlier part's, when resumed
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False)
    stored, next_text, entity = 0, 0, None
    grown_ids: list[str] = []  # memories the deletes may take (those the graph was built from are kept)
    logs = workdir.parent / f"{workdir.name}-logs"
    logs.mkdir(exist_ok=True)
    for size in sizes:
        entry: dict[str, Any] = {"load_start": load_now()}
        opened = time.perf_counter()
        async with open_core(settings) as (core, _info):
            entry["open_core_ms"] = round((time.perf_counter() - opened) * 1000, 1)  # the database loading, if stopped
            stored = (await core.workspaces.stats()).total_chunks
            if stored and entity is None:  # a store kept from an earlier run (--store): its graph, new texts
                top = (await core.graph.overview(GraphOverviewRequest(limit=1))).entities
                entity, next_text = (top[0].name if top else None), stored
                # What the deletes may take: the newest, never the oldest (the graph was built from the first).
                protected = min([GRAPH_MEMORIES, *(int(size) for size in results["sizes"])])
                deletable = min(stored - protected, len(sizes) * (samples + 2 * delete_batch))
                grown_ids += await newest_ids(core, max(deletable, 0))
            if stored == 0:
                wanted = all_texts[next_text : next_text + min(size, embed_upto)]
                next_text += len(wanted)
                seconds, embedded_ids = await ingest(core, wanted, f"ingesting to {len(wanted):,} chunks")
                entry["ingest_chunks_per_s"] = round(len(wanted) / seconds, 1)
                entry["ingest_docs_per_min"] = round(len(wanted) / seconds * 60)
                results["graph"] = await build_graph(core, embedded_ids[:GRAPH_MEMORIES])
                entity = results["graph"]["entity"]
                grown_ids += embedded_ids[GRAPH_MEMORIES:]  # deletable; the graph's memories stay
                stored = len(wanted)
            if stored < size:
                entry["grown_without_embedding"] = size - stored
                started = time.perf_counter()
                grown_ids += await grow(workdir, all_texts[next_text : next_text + size - stored], seed=size)
                entry["grow_chunks_per_s"] = round((size - stored) / (time.perf_counter() - started), 1)
                next_text += size - stored
            entry["chunks"] = (await core.workspaces.stats()).total_chunks
            entry["search_ms"] = await search_latency(core, query_texts, tag=str(size))
            entry["search_load"] = load_now()
            if size == sizes[0]:
                entry["mcp"] = await mcp_overhead(core, workdir, query_texts[:MCP_QUERIES])
            adds = [next(fresh) for _ in range(samples)]
            # Random memories, not the newest: a delete at 1M must not find its targets in a warm corner.
            random.Random(size).shuffle(grown_ids)
            doomed = [grown_ids.pop() for _ in range(min(len(grown_ids), samples + 2 * delete_batch))]
            entry["ops"] = await operations(core, doomed, adds, entity, samples, delete_batch)
            entry["rss_mb"] = {"bench_engine": rss_mb(), "database": rss_mb(await database_pid(workdir))}
            entry["disk_mb_running"] = disk_mb(workdir)
        entry["disk_mb_stopped"] = disk_mb(workdir)  # after the last client's SHUTDOWN SAVE
        results["sizes"][str(size)] = entry
        save(results)
        new_texts = [next(fresh) for _ in range(catch_up)]
        entry["start"], more = await cold_start_and_catch_up(workdir, new_texts, size + 1, logs, query_texts[:50])
        grown_ids += more
        results["duration_s"] = round(time.perf_counter() - started_run) + before_s  # so far: all, once it ends
        results["sizes"][str(size)] = entry
        save(results)  # each size is reported as soon as it is measured
    shutil.rmtree(logs, ignore_errors=True)
    return results


async def newest_ids(core: ZapomniCore, count: int) -> list[str]:
    """The ids of the `count` newest memories, page by page."""
    ids: list[str] = []
    cursor = None
    while len(ids) < count:
        page = await core.memories.page(ListMemoriesRequest(limit=MAX_PAGE, cursor=cursor))
        ids += [memory.memory_id for memory in page.memories]
        cursor = page.next_cursor
        if cursor is None:
            break
    return ids[:count]


def _p(figures: dict[str, float] | None, key: str = "p50") -> str:
    return "–" if not figures else f"{figures[key]:,}"


def _pair(rss: dict[str, float] | None) -> str:
    return f"{rss['now']:,} / {rss['peak']:,}" if rss else "–"


def _runs(runs: list[float]) -> str:
    return "–" if not runs else f"{round(statistics.median(runs), 2):,} ({', '.join(f'{r:,}' for r in runs)})"


def _building(s: dict[str, Any]) -> str:
    """Hybrid search p50 while the indexes were built after the load, and when the build ended (writes resume)."""
    b = s.get("while_building")
    if not b:
        return "– | –"
    searched = f"{b['search_ms']['p50']:,}" if b["search_ms"] else "– (built at the first answer)"
    return f"{searched} | {b['indexes_built_ms']:,}"


def _opening(log: dict[str, Any]) -> str:
    """A server's workspace opening, and whether its keyword index was built from the store or read from its file."""
    opened, built, read = log.get("workspace_open_ms"), log.get("keyword_sync_ms"), log.get("keyword_load_ms")
    how = f" (built {built:,})" if built else f" (read {read:,})" if read else ""
    return f"{opened:,}{how}" if opened is not None else "–"


def render(results: dict[str, Any]) -> str:
    raw = results["raw_embedder_chunks_per_s"]
    sizes = results["sizes"]
    lines = [
        "# Speed and scale — embedded defaults, 10K to 1M chunks",
        "",
        f"- date: {results.get('date')}; commit {results.get('commit')}; CPUs: {os.cpu_count()} (shared with other "
        "engineers: the load average is given beside each measurement); memories of one ~50-token chunk (two "
        f"SciFact sentences); {CONCURRENCY} concurrent `add_memory` calls; `appendfsync always`; produced by "
        "`python -m bench.scale` (`make bench`; `make bench-1m` adds 1M).",
        f"- bare embedder on the same texts (the ceiling): **{raw} chunks/s**",
        *([f"- the run took {results['duration_s']:,} s"] if "duration_s" in results else []),
        *(f"- {note}" for note in results.get("notes", [])),
    ]
    graph = results.get("graph")
    if graph:
        lines.append(
            f"- graph for `get_related`: {graph['memories']} memories extracted ({graph['entities']} entities, "
            f"{graph['relations']} relations, {graph['seconds']} s); depth 2 from the most connected entity, "
            f"{graph['entity']!r}. The graph stays that size; the chunks around it grow."
        )
    lines += [
        "- past the first size the store grows through the stores' writes with real texts and perturbed copies of "
        "stored vectors (the model alone would need hours at these sizes); searches use real query embeddings.",
        "",
        "## Memory and disk",
        "",
        "| chunks | load (1 min) | server RSS MB (now / peak)¹ | FalkorDB RSS MB (now / peak) | bench engine peak MB "
        "| snapshot MB | AOF MB | data dir MB, running → stopped |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in sizes.values():
        start, rss, running, stopped = e.get("start", {}), e["rss_mb"], e["disk_mb_running"], e["disk_mb_stopped"]
        server = start.get("server_rss_mb")
        db = start.get("database_rss_mb") or rss["database"]
        lines.append(
            f"| {e['chunks']:,} | {e['search_load'][0]} | "
            f"{_pair(server)} | {_pair(db)} | "
            f"{rss['bench_engine']['peak']:,} | {stopped['rdb']:,} | {stopped['aof']:,} | "
            f"{running['data_dir']:,} → {stopped['data_dir']:,} |"
        )
    lines += [
        "",
        "¹ a freshly started `zapomni serve` after 50 searches (the bench's own engine also holds the texts it "
        "writes). Snapshot and AOF after the last client's `SHUTDOWN SAVE`.",
        "",
        "## Cold start (existing store, fresh process, official MCP client) and catching up",
        "",
        "| chunks | load | first search answered, database stopped, ms | of which opening the workspace ms "
        "(keyword index built / read from its file) | hybrid search p50 while the indexes build, ms | indexes "
        "built (writes go through), ms after the start | database running, ms | of which opening the workspace ms | "
        "catch-up of another process's writes: chunks, first keyword search ms, next ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in sizes.values():
        s = e.get("start")
        if not s:
            continue
        c = s["catch_up"]
        lines.append(
            f"| {e['chunks']:,} | {s['load_before'][0]} | {s['database_stopped_ms']:,} | "
            f"{_opening(s['database_stopped_log'])} | {_building(s)} | {s['database_running_ms']:,} | "
            f"{_opening(s['database_running_log'])} | {c['chunks']:,}: {c['first_search_ms']:,} "
            f"/ {c['next_search_ms']:,} |"
        )
    lines += [
        "",
        "## Search latency (ms, through `ZapomniCore.search`, limit 10)",
        "",
        "| chunks | load | mode | p50 | p95 | p99 | p50 cached embedding | p95 cached | p99 cached |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for e in sizes.values():
        for mode, m in e["search_ms"].items():
            w, c = m["with_embedding"], m["cached_embedding"]
            cells = [w["p50"], w["p95"], w["p99"], c["p50"], c["p95"], c["p99"]]
            lines.append(f"| {e['chunks']:,} | {e['search_load'][0]} | {mode} | " + " | ".join(map(str, cells)) + " |")
    lines += [
        "",
        "## Operations (ms through `ZapomniCore`, p50 / p95)",
        "",
        "| chunks | load | list page of 20, newest | oldest | delete 1 | delete 1,000: median (runs) "
        "| get_related depth 2 | add one memory |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for e in sizes.values():
        o = e["ops"]
        cells = [
            f"{_p(o.get('list_page_newest_ms'))} / {_p(o.get('list_page_newest_ms'), 'p95')}",
            f"{_p(o.get('list_page_oldest_ms'))} / {_p(o.get('list_page_oldest_ms'), 'p95')}",
            f"{_p(o.get('delete_1_ms'))} / {_p(o.get('delete_1_ms'), 'p95')}",
            _runs(o.get("delete_1000_runs_ms", [])),
            f"{_p(o.get('get_related_depth2_ms'))} / {_p(o.get('get_related_depth2_ms'), 'p95')}",
            f"{_p(o.get('add_ms'))} / {_p(o.get('add_ms'), 'p95')}",
        ]
        lines.append(f"| {e['chunks']:,} | {o['load'][0]} | " + " | ".join(cells) + " |")
    lines += ["", "## Ingestion", "", "| chunks | how | chunks/s |", "|---:|---|---:|"]
    for size, e in sizes.items():
        if "ingest_chunks_per_s" in e:
            lines.append(f"| {int(size):,} | `add_memory` with the model ({e['ingest_docs_per_min']:,} docs/min) "
                         f"| {e['ingest_chunks_per_s']} |")  # fmt: skip
        if "grow_chunks_per_s" in e:
            lines.append(f"| {int(size):,} | grown without the model | {e['grow_chunks_per_s']} |")
    for size, e in sizes.items():
        if "mcp" in e:
            m = e["mcp"]
            lines += [
                "",
                f"## MCP stdio overhead ({int(size):,} chunks, official client, medians)",
                "",
                f"- `search_memory`: {m['search_mcp_p50']} ms via MCP vs {m['search_direct_p50']} ms direct "
                f"→ **{m['search_overhead_ms']} ms** per request",
                f"- `get_stats`: {m['stats_mcp_p50']} ms via MCP vs {m['stats_direct_p50']} ms direct "
                f"→ **{m['stats_overhead_ms']} ms** per request",
            ]
    lines += ["", "![every figure against size](scale.png)", "", "Produced by `bench/scale.py`."]
    return "\n".join(lines) + "\n"


def _figures(e: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Each plotted panel: its series at one size (None where not measured)."""
    o, s = e["ops"], e.get("start", {})
    server = s.get("server_rss_mb")
    db = s.get("database_rss_mb") or e["rss_mb"]["database"]

    def get(figures: dict[str, float] | None, key: str = "p50") -> float | None:
        return figures[key] if figures else None

    panels: dict[str, dict[str, float | None]] = {
        f"search p95 ms ({kind})": {mode: e["search_ms"][mode][kind]["p95"] for mode in MODES}
        for kind in ("with_embedding", "cached_embedding")
    }
    panels["resident memory MB"] = {"server": server["now"] if server else None, "FalkorDB": db["now"]}
    panels["disk MB (stopped)"] = {"snapshot": e["disk_mb_stopped"]["rdb"], "AOF": e["disk_mb_stopped"]["aof"]}
    panels["cold start to first search, ms"] = {
        "database stopped": s.get("database_stopped_ms"),
        "database stopped, indexes built": (s.get("while_building") or {}).get("indexes_built_ms"),
        "database running": s.get("database_running_ms"),
    }
    panels["list page / delete 1 p50 ms"] = {
        "list newest": get(o.get("list_page_newest_ms")),
        "list oldest": get(o.get("list_page_oldest_ms")),
        "delete 1": get(o.get("delete_1_ms")),
    }
    runs = o.get("delete_1000_runs_ms") or []
    panels["delete 1,000 ms (median)"] = {"delete 1,000": statistics.median(runs) if runs else None}
    panels["get_related / add p50 ms"] = {
        "get_related depth 2": get(o.get("get_related_depth2_ms")),
        "add": get(o.get("add_ms")),
    }
    catch = s.get("catch_up")
    panels["catch-up of 10K chunks, ms"] = {"first keyword search": catch["first_search_ms"] if catch else None}
    return panels


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = list(results["sizes"].values())
    chunks = [e["chunks"] for e in entries]
    panels = [_figures(e) for e in entries]
    names = list(panels[0])
    fig, axes = plt.subplots(3, 3, figsize=(15, 12))
    for ax, name in zip(axes.flat, names, strict=False):
        for series in panels[0][name]:
            points = [(c, p[name][series]) for c, p in zip(chunks, panels, strict=True) if p[name][series] is not None]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=series)
        ax.set_xscale("log")
        ax.set_xlabel("chunks")
        ax.set_title(name)
        if name.startswith("cold start"):  # seconds to answer beside minutes to build: one scale hides the answers
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        if ax.lines:  # a panel with nothing measured at these sizes has no legend to draw
            ax.legend(fontsize=8)
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def render_start(results: dict[str, Any]) -> str:
    """The `--existing` report: one store's cold starts, memory and catch-up."""
    s, c = results["start"], results["start"]["catch_up"]
    return "\n".join(
        [
            "# Cold start and memory on an existing store",
            "",
            f"- date: {results['date']}; commit {results['commit']}; store {results['store']}; produced by "
            "`python -m bench.scale --existing <store>` (the store a `--store` run grew; its cold starts as in "
            "`scale.md`, measured again after a change).",
            *(f"- {note}" for note in results.get("notes", [])),
            "",
            "| chunks | load | first search answered, database stopped, ms | of which opening the workspace ms "
            "(keyword index built / read from its file) | hybrid search p50 while the indexes build, ms | indexes "
            "built (writes go through), ms after the start | database running, ms | of which opening the workspace "
            "ms | server RSS MB (now / peak) | FalkorDB RSS MB (now / peak) | catch-up: chunks, first keyword search "
            "ms, next ms |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {s['chunks']:,} | {s['load_before'][0]} | {s['database_stopped_ms']:,} | "
            f"{_opening(s['database_stopped_log'])} | {_building(s)} | {s['database_running_ms']:,} | "
            f"{_opening(s['database_running_log'])} | {_pair(s['server_rss_mb'])} | {_pair(s['database_rss_mb'])} "
            f"| {c['chunks']:,}: {c['first_search_ms']:,} / {c['next_search_ms']:,} |",
            "",
            *_more_starts(results.get("more_starts")),
        ]
    )


def _more_starts(starts: dict[str, Any] | None) -> list[str]:
    if not starts or not starts["runs"]:
        return []
    lines = [
        f"More cold starts with the database stopped ({starts['date']}, commit {starts['commit']}; `--more-starts`, "
        "or `--starts-only` after an earlier run), each to its first answered hybrid search (the database builds "
        "its indexes after answering; each start waits until the last one's database has saved and stopped):",
        "",
        "| start | load | first search answered, ms | server ready, ms | of which opening the workspace ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for i, s in enumerate(starts["runs"], start=2):
        ready = s["log"].get("server_ready_ms")
        lines.append(
            f"| {i} | {s['load'][0]} | {s['first_search_ms']:,} | {f'{ready:,}' if ready else '–'} | "
            f"{_opening(s['log'])} |"
        )
    return [*lines, ""]


async def existing(store: Path, data_dir: Path, catch_up: int, count: int) -> dict[str, Any]:
    """Cold starts (database stopped, then running), RSS and a catch-up on a store grown before; nothing else.
    `count` more cold starts with the database stopped follow, each to its first answer only."""
    pool = sentences(data_dir)
    logs = store.parent / f"{store.name}-logs"
    logs.mkdir(exist_ok=True)
    # Texts past any the store holds (a million-chunk store took the first ~1M and their catch-ups).
    texts = memory_texts(pool, catch_up, seed=int(time.time()))
    results: dict[str, Any] = {
        "commit": commit(),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "store": str(store),
    }
    results["start"], _ = await cold_start_and_catch_up(store, texts, 7, logs, queries(data_dir, pool, 50))
    results["more_starts"] = await more_starts(store, count)
    return results


async def more_starts(store: Path, count: int) -> dict[str, Any]:
    logs = store.parent / f"{store.name}-logs"
    logs.mkdir(exist_ok=True)
    started = {"commit": commit(), "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"}
    return {**started, "runs": [await first_answer(store, logs / f"start-{i}.log") for i in range(count)]}


async def first_answer(store: Path, log_path: Path) -> dict[str, Any]:
    """One more cold start with the database stopped: spawn to the first answered search, and where it went."""
    paths = EmbeddedPaths(store)
    while probe(paths.socket) != "down":  # the last server's database saves and stops (its build may still run)
        await asyncio.sleep(1.0)
    load = load_now()
    async with spawned_server(store, log_path) as (_session, first_ms, _reply):
        pass
    return {"first_search_ms": first_ms, "load": load, "log": log_timings(log_path)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000])
    parser.add_argument("--queries", type=int, default=QUERIES, help="search queries per mode and size")
    parser.add_argument(
        "--embed-upto",
        type=int,
        default=10_000,
        help="ingest through add_memory up to this size, then grow without the model",
    )
    parser.add_argument("--catch-up", type=int, default=10_000, help="chunks another process writes at each size")
    parser.add_argument("--samples", type=int, default=20, help="timed calls per operation and size")
    parser.add_argument("--delete-batch", type=int, default=DELETE_BATCH, help="memories per large delete (2 runs)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument(
        "--output", type=Path, default=None, help="default: scale.md, or scale_start_1m.md with --existing"
    )
    parser.add_argument("--store", type=Path, default=None, help="grow the store here (kept) instead of a temp dir")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --store: measure only the sizes the report (--output's .json) lacks, on that run's store "
        "(a run to 1M takes longer than one sitting: `--sizes 10000 100000 300000` first, then the whole list again)",
    )
    parser.add_argument(
        "--existing", type=Path, default=None, help="only cold starts, RSS and a catch-up on this store (stopped)"
    )
    parser.add_argument(
        "--more-starts", type=int, default=2, help="with --existing: more cold starts, each to its first answer"
    )
    parser.add_argument(
        "--starts-only", action="store_true", help="with --existing: only the more starts, added to its report"
    )
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    args.output = args.output or RESULTS / ("scale_start_1m.md" if args.existing is not None else "scale.md")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    if args.existing is not None:
        if args.starts_only:  # added to the report of an earlier `--existing` run on the same store
            found = json.loads(args.output.with_suffix(".json").read_text())
            found["more_starts"] = asyncio.run(more_starts(args.existing, args.more_starts))
        else:
            found = asyncio.run(existing(args.existing, args.data_dir, args.catch_up, args.more_starts))
        args.output.write_text(render_start(found))
        args.output.with_suffix(".json").write_text(json.dumps(found, indent=2) + "\n")
        print(render_start(found))
        return 0

    def save(results: dict[str, Any]) -> None:  # the chart is drawn once, at the end: ~3 s a drawing
        args.output.write_text(render(results))
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")

    if args.resume and args.store is None:
        parser.error("--resume needs the --store of the run it continues")
    earlier = json.loads(args.output.with_suffix(".json").read_text()) if args.resume else None
    workdir = args.store or Path(tempfile.mkdtemp(prefix="zs-", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        results = asyncio.run(
            run(
                args.data_dir,
                args.sizes,
                workdir,
                args.queries,
                save,
                args.embed_upto,
                args.catch_up,
                args.samples,
                args.delete_batch,
                earlier,
            )
        )
    finally:
        if args.store is None:
            shutil.rmtree(workdir, ignore_errors=True)
    chart(results, args.output.with_suffix(".png"))
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
