"""Recall@10 of FalkorDB's HNSW vector index against exact search, as the product queries it.

The vector leg (`zapomni_db.search_reads.SearchReads.vector_search`, called by
`zapomni_core.search.vector.VectorRetriever` with the pipeline's depth, 50) asks the index for its 50
nearest chunks; the index was built with M 16, efConstruction 200, efRuntime 100 (decision 0002), and
FalkorDB searches with max(efRuntime, k). For each of `--queries` real SciFact claims, embedded with the
product's model, this bench:
- runs that very query (k = limit = 50, no filters) and takes its top 10 and top 50;
- computes the exact top 10 and top 50 by brute force in numpy over every stored chunk vector, read out
  of the database in pages by node id (streaming: only the running top 50 per query is held);
- reports recall@10 and recall@50 (mean, minimum, 5th percentile) and the query's latency;
- repeats the query with a larger k (`--k`, taking the top 10 of it): with FalkorDB's max(efRuntime, k)
  this is what a larger efRuntime would give, read-only (the index itself is not touched).
A hit counts when it is one of the exact top k or ties with the k-th (cosine within 1e-6).

With `--store DIR` it runs on an existing embedded store (a ZAPOMNI_DATA_DIR, as `bench.scale --store`
keeps) and only reads: it attaches to the running database, or starts it and stops it again when done.
With `--sizes` it grows its own store under /tmp (the first `--embed-upto` chunks through
`ZapomniCore.add_memory` with the real model, the rest with `bench.scale.grow`'s perturbed copies of stored
vectors) and measures at each size; `--rebuild M,efConstruction,efRuntime ...` (grown stores only: it
rewrites the index) then drops and re-creates the vector index with other parameters at each size, times
the build and measures again, and puts the product's index back at the end.

Run: `python -m bench.vector_recall --store <dir>` or `python -m bench.vector_recall --sizes 10000 100000`;
results in bench/results/vector_recall.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, claims, commit, memory_texts, sentences
from bench.scale import connect_embedded, grow, ingest, load_now
from zapomni_core import Settings, open_core
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.logs import configure_logging
from zapomni_db import GraphClient, SearchReads
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.records.memories import SearchFilter
from zapomni_db.schema import SchemaSettings, create_vector_index, drop_vector_index, wait_for_indexes

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PRODUCT_K = 50  # the pipeline's leg depth (DEFAULT_LEG_DEPTH): what the vector leg asks the index for
PRODUCT_INDEX = SchemaSettings(dimension=384)  # M 16, efConstruction 200, efRuntime 100 (decision 0002)
PAGE_IDS = 20_000  # node ids per page when reading the stored vectors
TIE = 1e-6
_PAGE = "MATCH (c:Chunk) WHERE ID(c) >= $lo AND ID(c) < $hi RETURN c.id, c.embedding"


async def exact_top(client: GraphClient, queries: np.ndarray, depth: int) -> tuple[list[list[str]], np.ndarray, int]:
    """The exact `depth` nearest chunk ids per query (best first), their cosine similarities, and the chunks read."""
    best_sim = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_ref = np.zeros((len(queries), 0), dtype=np.int64)  # into the concatenation of all pages' ids
    names: list[str] = []
    rows = await client.ro_query("MATCH (n) RETURN max(ID(n))")
    top_node = int(rows[0][0]) if rows and rows[0][0] is not None else -1
    for lo in range(0, top_node + 1, PAGE_IDS):
        page = await client.ro_query(_PAGE, {"lo": lo, "hi": lo + PAGE_IDS})
        page = [row for row in page if row[1] is not None]
        if not page:
            continue
        vectors = np.asarray([row[1] for row in page], dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        offset = len(names)
        names += [str(row[0]) for row in page]
        page_sims = queries @ vectors.T
        sims = np.concatenate([best_sim, page_sims], axis=1)
        refs = np.concatenate([best_ref, np.broadcast_to(np.arange(offset, len(names)), page_sims.shape)], axis=1)
        keep = min(depth, sims.shape[1])
        part = np.argpartition(-sims, keep - 1, axis=1)[:, :keep]
        best_sim, best_ref = np.take_along_axis(sims, part, axis=1), np.take_along_axis(refs, part, axis=1)
    order = np.argsort(-best_sim, axis=1, kind="stable")
    best_sim, best_ref = np.take_along_axis(best_sim, order, axis=1), np.take_along_axis(best_ref, order, axis=1)
    return [[names[i] for i in row] for row in best_ref], best_sim, len(names)


def recall(found: list[str], truth: list[str], truth_sims: np.ndarray, similarity: dict[str, float], k: int) -> float:
    """Share of the exact top k that `found[:k]` holds; a hit tying with the k-th exact one counts."""
    k = min(k, len(truth))
    if k == 0:
        return float("nan")
    floor = float(truth_sims[k - 1]) - TIE
    exact = set(truth[:k])
    hits = sum(1 for cid in dict.fromkeys(found[:k]) if cid in exact or similarity.get(cid, -np.inf) >= floor)
    return min(1.0, hits / k)


def similarity_ratio(found: list[str], truth_sims: np.ndarray, similarity: dict[str, float], k: int) -> float:
    """Mean cosine of `found[:k]` over that of the exact top k: 1.0 when the index's answers are as near as the
    exact ones, whichever chunks they are (where many chunks are about equally near, recall is a lottery)."""
    k = min(k, len(truth_sims))
    if k == 0 or not found:
        return float("nan")
    got = [similarity[cid] for cid in dict.fromkeys(found[:k])] + [0.0] * (k - len(dict.fromkeys(found[:k])))
    return float(np.mean(got) / np.mean(truth_sims[:k]))


def spread(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {
        "mean": round(float(a.mean()), 4),
        "min": round(float(a.min()), 4),
        "p5": round(float(np.percentile(a, 5)), 4),
        "share_perfect": round(float((a >= 1.0).mean()), 4),
    }


def latency(samples_ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(samples_ms)
    return {f"p{q}": round(float(np.percentile(a, q)), 2) for q in (50, 95, 99)} | {"mean": round(float(a.mean()), 2)}


async def index_recall(
    client: GraphClient,
    queries: np.ndarray,
    truth: list[list[str]],
    truth_sims: np.ndarray,
    ks: Sequence[int],
    chunks: int,
) -> dict[str, Any]:
    """The product's vector query at each k in `ks` (top 10 of it; top 50 too when k ≥ 50), against the truth."""
    reads, out = SearchReads(client), {}
    exact_sim = [dict(zip(t, map(float, s), strict=False)) for t, s in zip(truth, truth_sims, strict=True)]
    for k in ks:
        r10, r50, ratio10, times, short, duplicated = [], [], [], [], 0, 0
        await reads.vector_search(queries[0].tolist(), k=k, limit=k, filters=SearchFilter())  # warm
        for q, t, ts, sims in zip(queries, truth, truth_sims, exact_sim, strict=True):
            started = time.perf_counter()
            hits = await reads.vector_search(q.tolist(), k=k, limit=k, filters=SearchFilter())
            times.append((time.perf_counter() - started) * 1000)
            found = [h.chunk_id for h in hits]
            short += len(found) < min(k, chunks)
            duplicated += len(set(found)) < len(found)
            similarity = sims | {h.chunk_id: 1.0 - h.distance for h in hits}  # the index's own cosine for the rest
            r10.append(recall(found, t, ts, similarity, 10))
            ratio10.append(similarity_ratio(found, ts, similarity, 10))
            if k >= PRODUCT_K:
                r50.append(recall(found, t, ts, similarity, PRODUCT_K))
        out[str(k)] = {
            "k": k,
            "recall_at_10": spread(r10),
            "recall_at_50": spread(r50) if r50 else None,
            "similarity_ratio_at_10": spread(ratio10),
            "latency_ms": latency(times),
            "short_answers": short,
            "answers_with_duplicates": duplicated,
            "load": load_now(),
        }
    return out


async def measure(client: GraphClient, queries: np.ndarray, ks: Sequence[int], label: str) -> dict[str, Any]:
    load = load_now()
    started = time.perf_counter()
    truth, truth_sims, chunks = await exact_top(client, queries, max(PRODUCT_K, 10))
    exact_s = time.perf_counter() - started
    print(f"{label}: exact top {PRODUCT_K} over {chunks:,} chunks in {exact_s:.1f} s (load {load})", file=sys.stderr)
    entry: dict[str, Any] = {
        "chunks": chunks,
        "load_before": load,
        "exact_search_s": round(exact_s, 1),
        "by_k": await index_recall(client, queries, truth, truth_sims, ks, chunks),
    }
    for k, e in entry["by_k"].items():
        print(f"  k {k}: recall@10 {e['recall_at_10']} p50 {e['latency_ms']['p50']} ms", file=sys.stderr)
    return entry


async def index_options(client: GraphClient) -> dict[str, Any]:
    """What the stored vector index reports about itself (`db.indexes()`)."""
    rows = await client.ro_query("CALL db.indexes() YIELD label, properties, types, options, status RETURN *")
    for row in rows:
        if "Chunk" in str(row) and "VECTOR" in str(row):
            return {"index": [str(x) for x in row]}
    return {"index": None}


async def rebuild(client: GraphClient, settings: SchemaSettings) -> float:
    """Drop the chunk vector index and build it again with `settings`: the seconds until it is operational."""
    started = time.perf_counter()
    await drop_vector_index(client)
    await create_vector_index(client, settings)
    await wait_for_indexes(client, timeout_s=7200)
    return round(time.perf_counter() - started, 1)


async def embed_queries(data_dir: Path, count: int) -> np.ndarray:
    _, texts, _ = claims(data_dir, "test")
    embedder = OnnxMiniLMEmbedder()
    vectors = np.asarray([await embedder.embed_query(t) for t in texts[:count]], dtype=np.float32)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


async def on_store(store: Path, queries: np.ndarray, ks: Sequence[int], graph: str) -> dict[str, Any]:
    """Read-only: attach to (or start) the store's database, measure, detach."""
    database = EmbeddedDatabase(store)
    await asyncio.to_thread(database.open)
    try:
        connection = connect_embedded(store)
        client = GraphClient(connection, graph)
        try:
            entry = await measure(client, queries, ks, str(store)) | await index_options(client)
        finally:
            await connection.close()
    finally:
        await asyncio.to_thread(database.close)
    return {str(entry["chunks"]): entry}


async def grown(
    data_dir: Path,
    workdir: Path,
    sizes: Sequence[int],
    embed_upto: int,
    queries: np.ndarray,
    ks: Sequence[int],
    variants: Sequence[SchemaSettings],
    save: Any,
    results: dict[str, Any],
) -> None:
    sizes = sorted(sizes)
    texts = memory_texts(sentences(data_dir), sizes[-1], seed=1)
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False)
    stored = 0
    for size in sizes:
        async with open_core(settings) as (core, _info):
            entry: dict[str, Any] = {"load_start": load_now()}
            if stored == 0:
                wanted = texts[: min(size, embed_upto)]
                seconds, _ = await ingest(core, wanted, f"ingesting {len(wanted):,} chunks with the model")
                entry["embedded"] = {"chunks": len(wanted), "seconds": round(seconds, 1)}
                stored = len(wanted)
            if stored < size:
                started = time.perf_counter()
                await grow(workdir, texts[stored:size], seed=size)
                entry["grown"] = {"chunks": size - stored, "seconds": round(time.perf_counter() - started, 1)}
                stored = size
            connection = connect_embedded(workdir)
            client = GraphClient(connection, settings.graph_name)
            try:
                entry |= await measure(client, queries, ks, f"{size:,}")
                entry["variants"] = {}
                for variant in variants:
                    name = f"M {variant.m}, efConstruction {variant.ef_construction}, efRuntime {variant.ef_runtime}"
                    built = {"build_s": await rebuild(client, variant), "load": load_now()}
                    built |= await measure(client, queries, [PRODUCT_K], f"{size:,} {name}")
                    entry["variants"][name] = built
                if variants:
                    entry["product_index_rebuild_s"] = await rebuild(client, PRODUCT_INDEX)
            finally:
                await connection.close()
        results["sizes"][str(size)] = entry
        save(results)


def render(results: dict[str, Any]) -> str:
    lines = [
        "# Recall of the HNSW vector index against exact search",
        "",
        f"- date: {results['date']}; commit {results['commit']}; {results['queries']} SciFact test claims embedded "
        "with the product's model (all-MiniLM-L6-v2 int8 ONNX); the product's vector query "
        f"(`SearchReads.vector_search`, no filters) with k = limit; the product asks for k = {PRODUCT_K}.",
        "- index: M 16, efConstruction 200, efRuntime 100 unless a row says otherwise; FalkorDB searches with "
        "max(efRuntime, k), so a larger k is what a larger efRuntime gives (read-only).",
        "- exact: brute-force cosine in numpy over every stored chunk vector; a hit tying with the k-th counts.",
        "- similarity ratio: the mean cosine of the 10 the index found over that of the exact 10 (1.0: as near). Past"
        " the embedded chunks the store holds perturbed copies of their vectors, many about equally near a query:"
        " there recall measures which of near-equals came back, the ratio how near they are.",
        f"- store: {results['store']}",
        "- the machine has 2 shared cores: load averages (1/5/15 min) beside each row.",
        "",
        "| chunks | index / query | recall@10 mean | min | p5 | all 10 found | recall@50 mean | p5 "
        "| similarity of the 10 found / exact 10: mean, p5 | latency p50 / p95 ms | load |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def row(chunks: int, label: str, e: dict[str, Any]) -> str:
        r10, r50, lat = e["recall_at_10"], e["recall_at_50"], e["latency_ms"]
        r50_cells = f"{r50['mean']} | {r50['p5']}" if r50 else "– | –"
        ratio = e.get("similarity_ratio_at_10")  # not in runs before it was measured
        ratio_cell = f"{ratio['mean']}, {ratio['p5']}" if ratio else "–"
        flags = ""
        if e["short_answers"] or e["answers_with_duplicates"]:
            flags = f" (short: {e['short_answers']}, with duplicates: {e['answers_with_duplicates']})"
        return (
            f"| {chunks:,} | {label}{flags} | {r10['mean']} | {r10['min']} | {r10['p5']} | {r10['share_perfect']} "
            f"| {r50_cells} | {ratio_cell} | {lat['p50']} / {lat['p95']} | {' '.join(map(str, e['load']))} |"
        )

    for entry in results["sizes"].values():
        for k, e in entry["by_k"].items():
            label = "product (k 50)" if int(k) == PRODUCT_K else f"k {k} (≈ efRuntime {max(100, int(k))})"
            lines.append(row(entry["chunks"], label, e))
        for name, variant in entry.get("variants", {}).items():
            e = variant["by_k"][str(PRODUCT_K)]
            lines.append(row(entry["chunks"], f"rebuilt {name} ({variant['build_s']} s to build), k 50", e))
    lines += [
        "",
        "| chunks | exact search s | index build (product settings) s | grown / embedded |",
        "|---:|---:|---:|---|",
    ]
    for entry in results["sizes"].values():
        grew, embedded = entry.get("grown", {}).get("chunks", 0), entry.get("embedded", {}).get("chunks", 0)
        how = f"{grew:,} grown / {embedded:,} embedded"
        lines.append(
            f"| {entry['chunks']:,} | {entry['exact_search_s']} | {entry.get('product_index_rebuild_s', '–')} | {how} |"
        )
    lines += ["", "Produced by `python -m bench.vector_recall`."]
    return "\n".join(lines) + "\n"


def parse_variant(text: str) -> SchemaSettings:
    m, ef_construction, ef_runtime = (int(x) for x in text.split(","))
    return replace(PRODUCT_INDEX, m=m, ef_construction=ef_construction, ef_runtime=ef_runtime)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--store", type=Path, help="an existing ZAPOMNI_DATA_DIR: measured read-only")
    where.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        help="grow a store under /tmp to each size and measure "
        "(default, without --store: 10000 100000, as `make bench` runs it)",
    )
    parser.add_argument("--queries", type=int, default=200, help="SciFact test claims used as queries (≤ 300)")
    parser.add_argument("--k", type=int, nargs="+", default=[PRODUCT_K, 200, 400], help="index query depths")
    parser.add_argument("--embed-upto", type=int, default=2000, help="chunks ingested with the model (--sizes)")
    parser.add_argument("--rebuild", type=parse_variant, nargs="*", default=[], metavar="M,EFC,EFR",
                        help="index variants to build and measure at each size (--sizes only)")  # fmt: skip
    parser.add_argument("--graph", default="zapomni", help="the graph to read (--store)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--output", type=Path, default=RESULTS / "vector_recall.md")
    args = parser.parse_args(argv)
    if args.store is None and args.sizes is None:
        args.sizes = [10_000, 100_000]
    if args.store is not None and args.rebuild:
        parser.error("--rebuild rewrites the index: only on a store this bench grows (--sizes)")
    if args.store is not None and not (args.store / "db").is_dir():
        parser.error(f"{args.store} holds no embedded database (no db/ directory)")
    configure_logging("WARNING")
    ks = sorted(set(args.k) | {PRODUCT_K})
    queries = asyncio.run(embed_queries(args.data_dir, args.queries))
    results: dict[str, Any] = {
        "commit": commit(),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "queries": len(queries),
        "store": str(args.store) if args.store else "grown under /tmp, removed afterwards",
        "sizes": {},
    }

    def save(results: dict[str, Any]) -> None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(render(results))
        args.output.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")

    if args.store is not None:
        results["sizes"] = asyncio.run(on_store(args.store, queries, ks, args.graph))
        save(results)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="zr-", dir="/tmp"))
        try:
            asyncio.run(
                grown(args.data_dir, workdir, args.sizes, args.embed_upto, queries, ks, args.rebuild, save, results)
            )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            shutil.rmtree(workdir.parent / f"{workdir.name}-logs", ignore_errors=True)
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
