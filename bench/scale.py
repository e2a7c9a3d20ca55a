"""Speed and scale on the embedded defaults: ingestion, search latency, MCP overhead, memory.

A synthetic corpus of short memories (two SciFact sentences each, one chunk of ~50 tokens; plain
generated sentences when SciFact is absent) is ingested through `ZapomniCore.add_memory` to 10K
and then 100K chunks. At each size:
- ingestion throughput (chunks/s, documents/min) beside the bare embedder's throughput on the
  same texts, the ceiling;
- search latency p50/p95/p99 per mode through `ZapomniCore.search`: with query embedding (new
  queries) and without it (the same queries again: the embedding cache answers);
- peak RSS of this process (the engine) and of the database process.
At 10K, the MCP stdio round trip is measured with the official client against a `zapomni serve`
attached to the same database, and compared with the direct core call on the same queries.

Run: `.venv/bin/python -m bench.scale [--sizes 10000 100000]`; results in bench/results/scale.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import DATA_DIR, progress, read_jsonl, summary_ms, timed_ms
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.memories.writing import content_hash
from zapomni_core.search.analyzer import Analyzer
from zapomni_db import ChunkRow, Connection, DatabaseTarget, GraphClient, MemoryRecord, MemoryWrites, connect
from zapomni_db.embedded import EmbeddedPaths

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MODES = ("vector", "keyword", "hybrid")
CONCURRENCY = 8
QUERIES = 200
MCP_QUERIES = 100
RAW_SAMPLE = 2000
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(data_dir: Path, seed: int = 7) -> list[str]:
    corpus = data_dir / "corpus.jsonl"
    if corpus.is_file():
        found = [s for doc in read_jsonl(corpus) for s in _SENTENCE.split(doc.get("text", "")) if len(s) > 40]
    else:
        print(f"note: {corpus} not found, generating sentences", file=sys.stderr)
        rng = random.Random(seed)
        words = [f"term{i}" for i in range(5000)]
        found = [" ".join(rng.choices(words, k=12)) + "." for _ in range(50_000)]
    return found


def memory_texts(pool: list[str], count: int, seed: int) -> list[str]:
    """`count` distinct texts of two sentences each (the same text twice would be stored once)."""
    rng = random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < count:
        texts[f"{rng.choice(pool)} {rng.choice(pool)}"] = None
    return list(texts)


def queries(data_dir: Path, pool: list[str], count: int) -> list[str]:
    path = data_dir / "queries.jsonl"
    claims = [str(q["text"]) for q in read_jsonl(path)] if path.is_file() else []
    rng = random.Random(11)
    claims += [" ".join(rng.choice(pool).split()[:8]) for _ in range(max(0, count - len(claims)))]
    return claims[:count]


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


async def ingest(core: ZapomniCore, texts: list[str], label: str) -> float:
    pending = list(texts)
    bar = progress(len(pending), label)
    started = time.perf_counter()

    async def worker() -> None:
        while pending:
            await core.memories.add(AddMemoryRequest(text=pending.pop()))
            if bar is not None:
                bar.update(1)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    if bar is not None:
        bar.close()
    return time.perf_counter() - started


async def search_latency(core: ZapomniCore, texts: list[str], tag: str) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    await core.memories.search(SearchRequest(query="warm up the keyword index", mode="keyword"))  # catch up untimed
    for mode in MODES:
        # New text per mode and size, so the first pass always pays for the query embedding.
        fresh = [f"{t} ({mode} {tag})" for t in texts]
        requests = [SearchRequest(query=q[:1000], mode=mode) for q in fresh]
        cold = [await timed_ms(lambda r=r: core.memories.search(r)) for r in requests]
        warm = [await timed_ms(lambda r=r: core.memories.search(r)) for r in requests]
        out[mode] = {"with_embedding": summary_ms(cold), "cached_embedding": summary_ms(warm)}
    return out


async def mcp_overhead(core: ZapomniCore, data_dir: Path, texts: list[str]) -> dict[str, float]:
    """Median MCP round trip minus median direct call, same queries, embeddings cached on both sides."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "zapomni"),
        args=["serve"],
        env={"ZAPOMNI_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING"},
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
                via_mcp.append(await timed_ms(lambda q=q: session.call_tool("search_memory", {"query": q})))
                direct.append(await timed_ms(lambda q=q: core.memories.search(SearchRequest(query=q))))
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


def single_chunk_memory(
    text: str, vector: np.ndarray, analyzer: Analyzer, **fields: Any
) -> tuple[MemoryRecord, list[ChunkRow]]:
    """A memory of one chunk as the write path stores it, its vector given: what `MemoryWrites.insert` takes."""
    counts, now = analyzer.count(text), time.time()
    memory = MemoryRecord(
        id=str(uuid.uuid4()), text=text, created_at=now, content_hash=content_hash(text), date_ts=now, **fields
    )
    chunk = ChunkRow(str(uuid.uuid4()), 0, text, vector.tolist(), counts.terms, counts.counts, counts.length)
    return memory, [chunk]


async def grow(workdir: Path, texts: list[str], seed: int) -> None:
    """Add single-chunk memories through the stores' writes with vectors borrowed from stored chunks.

    Embedding 100K chunks takes this machine ~21 minutes (80 chunks/s); search latency at that size does
    not depend on the vectors matching their text, so the store grows with real texts (real BM25
    statistics) and perturbed copies of real vectors (a realistic HNSW neighbourhood structure).
    """
    connection = connect_embedded(workdir)
    client = GraphClient(connection, "zapomni")
    writes, analyzer, rng = MemoryWrites(client), Analyzer(), np.random.default_rng(seed)
    rows = await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 5000")
    base = np.asarray([row[0] for row in rows], dtype=np.float32)
    bar = progress(len(texts), f"growing by {len(texts):,} chunks (no embedding)")
    try:
        for start in range(0, len(texts), 500):
            batch = texts[start : start + 500]
            for text, vector in zip(batch, borrowed_vectors(base, len(batch), rng), strict=True):
                await writes.insert(*single_chunk_memory(text, vector, analyzer))
            if bar is not None:
                bar.update(len(batch))
    finally:
        await connection.close()
        if bar is not None:
            bar.close()


async def run(
    data_dir: Path,
    sizes: list[int],
    workdir: Path,
    query_count: int,
    save: Callable[[dict[str, Any]], None],
    embed_upto: int,
) -> dict[str, Any]:
    pool = sentences(data_dir)
    all_texts = memory_texts(pool, max(sizes), seed=1)
    query_texts = queries(data_dir, pool, query_count)
    results: dict[str, Any] = {"sizes": {}, "raw_embedder_chunks_per_s": round(raw_embedder_rate(all_texts), 1)}
    async with open_core(Settings(ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING")) as (core, _info):
        stored = 0
        for size in sorted(sizes):
            entry: dict[str, Any] = {}
            if stored == 0 or size <= embed_upto:
                seconds = await ingest(core, all_texts[stored:size], f"ingesting to {size:,} chunks")
                entry["ingest_chunks_per_s"] = round((size - stored) / seconds, 1)
                entry["ingest_docs_per_min"] = round((size - stored) / seconds * 60)
            else:
                entry["grown_without_embedding"] = True
                await grow(workdir, all_texts[stored:size], seed=size)
            stored = size
            entry["chunks"] = (await core.workspaces.stats()).total_chunks
            entry["search_ms"] = await search_latency(core, query_texts, tag=str(size))
            if size == min(sizes):
                entry["mcp"] = await mcp_overhead(core, workdir, query_texts[:MCP_QUERIES])
            entry["rss_mb"] = {"zapomni": peak_rss_mb(), "database": peak_rss_mb(await database_pid(workdir))}
            results["sizes"][str(size)] = entry
            save(results)  # each size is reported as soon as it is measured
    return results


def render(results: dict[str, Any]) -> str:
    raw = results["raw_embedder_chunks_per_s"]
    lines = [
        "# Speed and scale — embedded defaults",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; CPUs: {os.cpu_count()}; memories of one ~50-token chunk "
        f"(two SciFact sentences); {CONCURRENCY} concurrent `add_memory` calls; `appendfsync always`",
        f"- bare embedder on the same texts (the ceiling): **{raw} chunks/s**",
        "",
        "## Ingestion and memory",
        "",
        "| chunks | ingest chunks/s | docs/min | share of embedder ceiling "
        "| peak RSS Zapomni MB | peak RSS FalkorDB MB |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size, e in results["sizes"].items():
        if "ingest_chunks_per_s" in e:
            share = e["ingest_chunks_per_s"] / raw * 100
            rate = f"{e['ingest_chunks_per_s']} | {e['ingest_docs_per_min']:,} | {share:.0f} %"
        else:
            rate = "grown without the model¹ | – | –"
        lines.append(f"| {int(size):,} | {rate} | {e['rss_mb']['zapomni']} | {e['rss_mb']['database']} |")
    if any("grown_without_embedding" in e for e in results["sizes"].values()):
        lines += [
            "",
            "¹ Past the first size the store grows through the stores' writes with real texts and perturbed copies "
            "of stored vectors (the model alone would need ~21 minutes for 100K chunks here); searches still go "
            "through `ZapomniCore.search` with real query embeddings.",
        ]
    lines += [
        "",
        "## Search latency (ms, through `ZapomniCore.search`, limit 10)",
        "",
        "| chunks | mode | p50 | p95 | p99 | p50 cached embedding | p95 cached | p99 cached |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size, e in results["sizes"].items():
        for mode, m in e["search_ms"].items():
            w, c = m["with_embedding"], m["cached_embedding"]
            cells = [w["p50"], w["p95"], w["p99"], c["p50"], c["p95"], c["p99"]]
            lines.append(f"| {int(size):,} | {mode} | " + " | ".join(map(str, cells)) + " |")
    for size, e in results["sizes"].items():
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
    lines += ["", "![search latency](scale.png)", "", "Produced by `bench/scale.py`."]
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(results["sizes"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(MODES)
    for i, mode in enumerate(MODES):
        p95 = [results["sizes"][s]["search_ms"][mode]["with_embedding"]["p95"] for s in sizes]
        axes[0].bar([x + i * width for x in range(len(sizes))], p95, width, label=mode)
    axes[0].axhline(50, color="red", linestyle="--", label="target p95 50 ms")
    axes[0].set_xticks([x + width for x in range(len(sizes))], [f"{int(s):,} chunks" for s in sizes])
    axes[0].set_ylabel("search p95 ms (query embedding included)")
    axes[0].legend()
    ingested = [s for s in sizes if "ingest_chunks_per_s" in results["sizes"][s]]
    rates = [results["sizes"][s]["ingest_chunks_per_s"] for s in ingested]
    labels = ["embedder ceiling", *[f"ingest to {int(s):,}" for s in ingested]]
    axes[1].bar(labels, [results["raw_embedder_chunks_per_s"], *rates])
    axes[1].set_ylabel("chunks / s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=QUERIES, help="search queries per mode and size")
    parser.add_argument(
        "--embed-upto",
        type=int,
        default=10_000,
        help="ingest through add_memory up to this size, then grow without the model",
    )
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--output", type=Path, default=RESULTS / "scale.md")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    args.output.parent.mkdir(parents=True, exist_ok=True)

    def save(results: dict[str, Any]) -> None:
        args.output.write_text(render(results))
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=2))
        chart(results, args.output.with_suffix(".png"))

    workdir = Path(tempfile.mkdtemp(prefix="zs-", dir="/tmp"))
    try:
        results = asyncio.run(run(args.data_dir, args.sizes, workdir, args.queries, save, args.embed_upto))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
