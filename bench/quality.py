"""Retrieval quality on BEIR SciFact through the same `ZapomniCore.search` path the MCP tool uses.

Every corpus document is stored with `add_memory` (title + abstract, chunked like any memory);
every test claim is searched with `search_memory`'s engine in `vector`, `keyword` and `hybrid`
mode (limit 100, best chunk per memory = a document ranking). Two baselines are computed in the
same run: `bm25s` (Lucene BM25, English stemmer and stopwords — the published-style keyword
baseline) and exact brute-force cosine over whole-document embeddings from the same MiniLM model.
The RRF constant is chosen on the *train* claims only, then reported on test.

Also reported: ingestion throughput of this corpus against the embedder's raw throughput on the
same chunks (the ceiling). Run: `.venv/bin/python bench/quality.py` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.common import DATA_DIR, SciFact, claims, load_scifact, progress
from bench.metrics import mean_ndcg, recall_at_100
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.runtime import chunker_for
from zapomni_core.search.types import SearchMode

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MODES: tuple[SearchMode, ...] = ("vector", "keyword", "hybrid")
RRF_CANDIDATES = (10, 30, 60, 100)
CONCURRENCY = 4
RAW_SAMPLE = 1000  # chunks embedded bare to measure the ceiling


@dataclass
class Quality:
    ndcg10: dict[str, float] = field(default_factory=dict)
    recall100: dict[str, float] = field(default_factory=dict)
    ingestion: dict[str, float] = field(default_factory=dict)
    rrf_on_train: dict[int, float] = field(default_factory=dict)
    chosen_rrf_k: int = 60
    test_queries: int = 0
    date: str = field(default_factory=lambda: f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


def query_splits(
    data_dir: Path, data: SciFact
) -> tuple[list[str], list[str], list[str], list[str], dict[str, dict[str, int]]]:
    """Test ids and texts, train ids and texts, train qrels; with a partial corpus (smoke runs) only the
    queries whose relevant documents are present."""
    train_ids, train_texts, train_qrels = claims(data_dir, "train")
    known = set(data.doc_ids)
    test = [(q, t) for q, t in zip(data.query_ids, data.query_texts, strict=True) if set(data.qrels[q]) & known]
    train = [(q, t) for q, t in zip(train_ids, train_texts, strict=True) if set(train_qrels[q]) & known]
    return [q for q, _ in test], [t for _, t in test], [q for q, _ in train], [t for _, t in train], train_qrels


async def ingest(core: ZapomniCore, doc_ids: list[str], texts: list[str]) -> tuple[dict[str, str], float]:
    """Store every document; return memory id -> doc id and the seconds it took."""
    memory_to_doc: dict[str, str] = {}
    queue = list(zip(doc_ids, texts, strict=True))
    bar = progress(len(queue), "ingesting SciFact")
    started = time.perf_counter()

    async def worker() -> None:
        while queue:
            doc_id, text = queue.pop()
            result = await core.memories.add(AddMemoryRequest(text=text))
            memory_to_doc[result.memory_id] = doc_id
            if bar is not None:
                bar.update(1)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    if bar is not None:
        bar.close()
    return memory_to_doc, time.perf_counter() - started


async def rank_documents(
    core: ZapomniCore, queries: Sequence[str], mode: SearchMode, memory_to_doc: dict[str, str]
) -> list[list[str]]:
    rankings = []
    for query in queries:
        result = await core.memories.search(SearchRequest(query=query[:1000], limit=100, mode=mode))
        rankings.append([memory_to_doc[hit.memory_id] for hit in result.results])
    return rankings


def raw_embedder_throughput(texts: list[str], chunker_settings: Settings) -> tuple[float, int]:
    """Chunks/s of the bare embedder on an evenly spaced sample of the chunks ingestion produced."""
    embedder = OnnxMiniLMEmbedder()
    chunker = chunker_for(embedder, chunker_settings)
    chunks = [piece for text in texts for piece in chunker.split(text)]
    sample = chunks[:: max(1, len(chunks) // RAW_SAMPLE)]
    started = time.perf_counter()
    embedder.embed_sync(sample)
    return len(sample) / (time.perf_counter() - started), len(chunks)


def bm25s_rankings(doc_ids: list[str], texts: list[str], queries: list[str]) -> list[list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(method="lucene")
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    results, _scores = retriever.retrieve(tokens, k=min(100, len(texts)), show_progress=False)
    return [[doc_ids[i] for i in row] for row in results]


def exact_cosine_rankings(doc_ids: list[str], texts: list[str], queries: list[str]) -> list[list[str]]:
    embedder = OnnxMiniLMEmbedder()
    docs = np.asarray(embedder.embed_sync(texts), dtype=np.float32)
    qs = np.asarray(embedder.embed_sync(queries), dtype=np.float32)
    top = np.argsort(-(qs @ docs.T), axis=1)[:, :100]
    return [[doc_ids[i] for i in row] for row in top]


async def run(data_dir: Path, limit_docs: int | None, workdir: Path) -> tuple[Quality, dict[str, tuple[float, float]]]:
    data = load_scifact(data_dir, limit_docs)
    test_ids, test_texts, tr_ids, tr_texts, train_qrels = query_splits(data_dir, data)

    quality = Quality(test_queries=len(test_ids))
    base = {"ZAPOMNI_DATA_DIR": workdir, "ZAPOMNI_APPENDFSYNC": "everysec", "LOG_LEVEL": "WARNING"}
    async with open_core(Settings.from_variables(**base)) as (core, _info):
        memory_to_doc, seconds = await ingest(core, data.doc_ids, data.doc_texts)
        stats = await core.workspaces.stats()
    raw_rate, raw_chunks = raw_embedder_throughput(data.doc_texts, Settings.from_variables(**base))
    quality.ingestion = {
        "documents": len(data.doc_ids),
        "chunks": stats.total_chunks,
        "seconds": round(seconds, 1),
        "chunks_per_s": round(stats.total_chunks / seconds, 1),
        "docs_per_min": round(len(data.doc_ids) / seconds * 60, 0),
        "raw_embedder_chunks_per_s": round(raw_rate, 1),
        "share_of_raw": round(stats.total_chunks / seconds / raw_rate, 3),
    }
    assert raw_chunks == stats.total_chunks, (raw_chunks, stats.total_chunks)

    for k in RRF_CANDIDATES if tr_ids else ():
        async with open_core(Settings.from_variables(**base, ZAPOMNI_RRF_K=k)) as (core, _info):
            rankings = await rank_documents(core, tr_texts, "hybrid", memory_to_doc)
        quality.rrf_on_train[k] = round(mean_ndcg(rankings, tr_ids, train_qrels), 4)
    if quality.rrf_on_train:
        quality.chosen_rrf_k = max(quality.rrf_on_train, key=lambda k: (quality.rrf_on_train[k], -abs(k - 60)))

    async with open_core(Settings.from_variables(**base, ZAPOMNI_RRF_K=quality.chosen_rrf_k)) as (core, _info):
        for mode in MODES:
            rankings = await rank_documents(core, test_texts, mode, memory_to_doc)
            quality.ndcg10[mode] = round(mean_ndcg(rankings, test_ids, data.qrels), 4)
            quality.recall100[mode] = round(recall_at_100(rankings, test_ids, data.qrels), 4)

    baselines = {}
    for name, rankings in (
        ("bm25s (Lucene BM25, stemmed)", bm25s_rankings(data.doc_ids, data.doc_texts, test_texts)),
        ("exact cosine, MiniLM whole docs", exact_cosine_rankings(data.doc_ids, data.doc_texts, test_texts)),
    ):
        baselines[name] = (
            round(mean_ndcg(rankings, test_ids, data.qrels), 4),
            round(recall_at_100(rankings, test_ids, data.qrels), 4),
        )
    return quality, baselines


def render(quality: Quality, baselines: dict[str, tuple[float, float]]) -> str:
    ing = quality.ingestion
    lines = [
        "# Retrieval quality — BEIR SciFact (test)",
        "",
        f"- date: {quality.date}; CPUs: {os.cpu_count()}; "
        f"{quality.ingestion['documents']} documents, {quality.test_queries} test queries",
        f"- RRF k chosen on train claims: {quality.chosen_rrf_k} "
        f"(train nDCG@10 by k: {', '.join(f'{k}: {v}' for k, v in quality.rrf_on_train.items()) or 'n/a'})",
        "- Zapomni rows go through `ZapomniCore.search` (limit 100, best chunk per memory).",
        "",
        "| system | nDCG@10 | Recall@100 |",
        "|---|---:|---:|",
    ]
    for mode in MODES:
        lines.append(f"| Zapomni `{mode}` | {quality.ndcg10[mode]} | {quality.recall100[mode]} |")
    for name, (ndcg, recall) in baselines.items():
        lines.append(f"| baseline: {name} | {ndcg} | {recall} |")
    lines += [
        "| published: BM25 (Anserini flat) | 0.679 | 0.925 |",
        "| published: all-MiniLM-L6-v2 | 0.645 | – |",
        "",
        "## Ingestion of this corpus",
        "",
        f"{ing['documents']} documents → {ing['chunks']} chunks in {ing['seconds']} s "
        f"({CONCURRENCY} concurrent `add_memory` calls): **{ing['chunks_per_s']} chunks/s, "
        f"{ing['docs_per_min']:.0f} documents/min**. The bare embedder on the same chunks: "
        f"{ing['raw_embedder_chunks_per_s']} chunks/s, so ingestion runs at "
        f"**{ing['share_of_raw'] * 100:.0f} %** of the embedder's ceiling.",
        "",
        "![quality](quality.png)",
        "",
        "Produced by `bench/quality.py`.",
    ]
    return "\n".join(lines) + "\n"


def chart(quality: Quality, baselines: dict[str, tuple[float, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"Zapomni {m}" for m in MODES] + [name.split(" (")[0].split(",")[0] for name in baselines]
    ndcg = [quality.ndcg10[m] for m in MODES] + [v[0] for v in baselines.values()]
    recall = [quality.recall100[m] for m in MODES] + [v[1] for v in baselines.values()]
    fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], ndcg, 0.4, label="nDCG@10")
    ax.bar([i + 0.2 for i in x], recall, 0.4, label="Recall@100")
    ax.axhline(0.70, color="red", linestyle="--", linewidth=1, label="target nDCG@10 0.70")
    ax.set_xticks(list(x), names, rotation=15)
    ax.set_ylim(0, 1)
    ax.legend(loc="lower right")
    ax.set_title("BEIR SciFact test")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--limit-docs", type=int, default=None, help="first N documents only (smoke runs)")
    parser.add_argument("--output", type=Path, default=RESULTS / "quality.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "quality.json")
    parser.add_argument("--from-json", type=Path, help="only redraw the report and chart from a saved run")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        quality = Quality(
            **{**saved["quality"], "rrf_on_train": {int(k): v for k, v in saved["quality"]["rrf_on_train"].items()}}
        )
        baselines = {name: tuple(values) for name, values in saved["baselines"].items()}
        args.output.write_text(render(quality, baselines))
        chart(quality, baselines, args.output.with_suffix(".png"))
        return 0
    if not (args.data_dir / "corpus.jsonl").is_file():
        print(f"SciFact not found at {args.data_dir}: nothing to measure", file=sys.stderr)
        return 2
    configure_logging("WARNING")
    workdir = Path(tempfile.mkdtemp(prefix="zq-", dir="/tmp"))
    try:
        quality, baselines = asyncio.run(run(args.data_dir, args.limit_docs, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = render(quality, baselines)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    args.json.write_text(json.dumps({"quality": quality.__dict__, "baselines": baselines}, indent=2, default=str))
    chart(quality, baselines, args.output.with_suffix(".png"))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
