"""SciFact offline replay: both legs' candidate lists dumped once from a store, fusion variants replayed in Python.

Why this exists (issue 25, docs/decisions/0030-scifact-through-mcp.md): trying a search setting through MCP costs a
server run per setting; trying a keyword-index change costs a new ingestion. Decision 0030 replayed the pipeline
offline instead and lost the scripts; this rebuilds that replay with the project's own code.

`dump` (once per store): copies a data directory that `python -m bench.scifact_mcp --keep DIR` left (the corpus
stored the issue's way: `title` + newline + text, `source` = `scifact/<doc id>`, one `add_memory` per document),
opens the copy in process (`open_core`, no background jobs) and, for every judged train and test claim, records

- the vector leg's list at the pipeline's depth (one HNSW query of that depth, as a search asks) and at `--depth`
  (default 200), the keyword leg's list at `--depth`: chunk id, cosine distance, leg score;
- what the real pipeline (`ZapomniCore.memories.search`, hybrid, limit 10) returns: the check the replay is held to;

and the store's chunks (text, context, thread, memory, embedding, their order in the keyword index) and memories
(with the text each was stored with). All of it goes to one pickle (`--cache`, about 60 MB); the store is not opened,
only its copy.

`replay`: rebuilds each claim's candidates from the cache and runs them through `SearchPipeline` itself (legs that
return the dumped lists), so RRF with fractional ranks, the time list, the relevance floor, best chunk per memory
and the cut to `limit` are the product's code. Variants:

- the keyword leg, replicated: the store's chunks counted with the project's `Analyzer` (`indexed_text`, as
  `KeywordIndex` does) into the hand-written `Bm25Index` the leg ran on before tantivy (decision 0044), in the
  order they were stored, scored with other `K1`/`B` (tantivy's bindings fix k1 at 1.2); how many claims get
  the real leg's lists at 1.5 / 0.75 is reported;
- a whole-memory keyword leg: a memory's chunks' counts and lengths summed into one BM25 document (chunks overlap
  by `ZAPOMNI_CHUNK_OVERLAP`, so overlapping words count twice), or the text the memory was stored with counted as
  one document; fused by memory (each leg's list cut to one entry per memory, its best chunk; a keyword-found
  memory shown by its chunk nearest the query). For one-chunk memories (every chat turn) it is the chunk leg;
- "fused by memory" with today's chunk leg (decision 0030's reverted `ZAPOMNI_FUSE_BY_MEMORY`), and vector weights;
- the dumped legs fused by their scores instead of their ranks (`ZAPOMNI_FUSION=scores`, decision 0035), at several
  vector shares.

"Today" is the store's own pipeline as the dump searched it (RRF in dumps made before decision 0035).

nDCG@10 over the 809 train claims (what chooses) and the 300 test claims (reported only), by memory `source`, with
each variant's mean per-claim difference from today's pipeline and its paired standard error. `--mcp` adds the
figures `bench.scifact_mcp --json` saved for the same store, to compare with.

Run: `python -m bench.scifact_replay dump --store DIR --cache FILE` (about 2 minutes on a loaded 2-core machine),
then `python -m bench.scifact_replay replay --cache FILE --mcp train.json test.json` (about 2.5 minutes;
bench/results/scifact_replay.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import shutil
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import bench.handwritten_bm25 as bm25
from bench.common import DATA_DIR, REPO_ROOT, claims, commit, in_scratch_dir, write_results
from bench.handwritten_bm25 import Bm25Index
from bench.metrics import mean_ndcg, ndcg_at_10
from zapomni_core import Settings, open_core
from zapomni_core.content.conversation import indexed_text
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import SearchRequest
from zapomni_core.search import Candidate, RetrievalQuery, SearchOptions, SearchPipeline
from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.types import LegName
from zapomni_core.tuning import DEFAULT_LEG_DEPTH, DEFAULT_VECTOR_SHARE, DEFAULT_VECTOR_WEIGHT, FusionMethod
from zapomni_db import ChunkHit, SearchFilter
from zapomni_db.records.memories import ChunkPlace, MemoryInfo

RESULTS = REPO_ROOT / "bench" / "results"
SPLITS = ("train", "test")
LIMIT = 10
DEPTH = 200
WEIGHTS = (0.7, 0.85, 1.0)
BS = (0.3, 0.4, 0.5)
SHARES = (0.4, 0.5, 0.55, 0.6, 0.65, 0.7)
K1 = 1.5
# The store's chunks with what the keyword index counts of them (search_reads._INDEXED) and their memory.
_CHUNKS = (
    "MATCH (m:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN m.id, c.id, c.idx, coalesce(c.text, m.text), c.context, "
    "m.thread, m.date_ts, m.created_at, c.embedding"
)

Entry = tuple[str, float, float]  # chunk id, cosine distance, leg score


@dataclass
class Chunk:
    memory_id: str
    index: int
    text: str
    context: str | None
    thread: str | None
    order: tuple[float, float, int]
    place: ChunkPlace


@dataclass
class Query:
    claim_id: str
    split: str
    text: str
    vector: np.ndarray  # float32
    vector_shallow: list[Entry]  # the vector leg at the pipeline's depth
    vector_deep: list[Entry]  # the vector leg at `depth`
    keyword_deep: list[Entry]  # the keyword leg at `depth`
    real: list[str]  # the memory ids `ZapomniCore.memories.search` returned (hybrid, limit 10)


@dataclass
class Cache:
    store: str
    code: str
    date: str
    depth: int
    pipeline: dict[str, float]  # the settings of the store's own pipeline, as opened
    chunks: dict[str, Chunk]
    memories: dict[str, MemoryInfo]
    memory_texts: dict[str, str]  # the text each memory was stored with (chunks overlap; this does not)
    chunk_ids: list[str]  # rows of `embeddings`
    embeddings: np.ndarray  # float32, unit rows
    index_order: list[str]  # chunk ids by position in the server's keyword index
    qrels: dict[str, dict[str, dict[str, int]]]  # split -> claim -> doc -> relevance
    queries: list[Query]
    dump_s: float = 0.0


# ---------------------------------------------------------------------------------------------------------- dump


def _entries(found: Sequence[Candidate]) -> list[Entry]:
    return [(c.chunk_id, c.hit.distance, c.leg_score) for c in found]


async def dump(store: Path, data_dir: Path, depth: int, workdir: Path, max_claims: int | None = None) -> Cache:
    """Read everything the replay needs from a copy of `store` (the original is not opened)."""
    started = time.perf_counter()
    copy = workdir / "store"
    shutil.copytree(store, copy, ignore=shutil.ignore_patterns("run"))
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=copy, ZAPOMNI_APPENDFSYNC="everysec", LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False
    )
    async with open_core(settings, background_jobs=False) as (core, _info):
        workspace = await core.workspaces.registry.get(None, create=False)
        assert workspace is not None, f"no default workspace in {store}"
        pipeline = workspace.search
        legs = {leg.name: leg for leg in pipeline.retrievers}
        own = {
            "rrf_k": pipeline._rrf_k,
            "leg_depth": pipeline._leg_depth,
            "relevance_floor": pipeline._relevance_floor,
            "vector_weight": pipeline._weights["vector"],
            "fusion_scores": float(pipeline._fusion == "scores"),
            "vector_share": pipeline._vector_share,
            "days_weight": pipeline._days_weight,
            "when_weight": pipeline._when_weight,
            "graph_expansion": float(pipeline.expansion is not None),
        }
        rows = await workspace.stores.client.ro_query(_CHUNKS)
        chunk_ids = [row[1] for row in rows]
        embeddings = np.asarray([row[8] for row in rows], dtype=np.float32)
        embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
        # Memories and chunk places as search hits carry them (the vector is only there to be given one).
        hits = await workspace.stores.search.fetch_chunks(chunk_ids, embeddings[0].tolist(), filters=SearchFilter())
        places = {hit.chunk_id: hit.place for hit in hits}
        memories = {hit.memory.id: hit.memory for hit in hits}
        stored = await workspace.stores.client.ro_query("MATCH (m:Memory) RETURN m.id, m.text")
        memory_texts = {row[0]: row[1] or "" for row in stored}
        chunks = {
            row[1]: Chunk(
                memory_id=row[0],
                index=int(row[2] or 0),
                text=row[3] or "",
                context=row[4],
                thread=row[5],
                order=(float(row[6] or 0.0), float(row[7] or 0.0), int(row[2] or 0)),
                place=places.get(row[1], ChunkPlace()),
            )
            for row in rows
        }
        index_order = chunk_ids  # the order they were stored in, the replica's tie-break
        queries: list[Query] = []
        qrels: dict[str, dict[str, dict[str, int]]] = {}
        for split in SPLITS:
            ids, texts, judged = claims(data_dir, split)
            ids, texts = ids[:max_claims], texts[:max_claims]  # all unless a smoke test
            qrels[split] = {claim: judged[claim] for claim in ids}
            for n, (claim_id, claim) in enumerate(zip(ids, texts, strict=True)):
                text = claim[:1000]  # as bench.scifact_mcp asks
                vector = await core.embedder.embed_query(text)
                query = RetrievalQuery(text, vector, SearchFilter())
                shallow = await legs["vector"].retrieve(query, max(pipeline._leg_depth, 2 * LIMIT))
                deep = await legs["vector"].retrieve(query, depth)
                keyword = await legs["keyword"].retrieve(query, depth)
                found = await core.memories.search(SearchRequest(query=text, limit=LIMIT, mode="hybrid"))
                queries.append(
                    Query(
                        claim_id=claim_id,
                        split=split,
                        text=text,
                        vector=np.asarray(vector, dtype=np.float32),
                        vector_shallow=_entries(shallow),
                        vector_deep=_entries(deep),
                        keyword_deep=_entries(keyword),
                        real=[hit.memory_id for hit in found.results],
                    )
                )
                if (n + 1) % 100 == 0:
                    print(f"{split}: {n + 1}/{len(ids)} claims dumped", file=sys.stderr)
    return Cache(
        store=str(store),
        code=commit(),
        date=f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        depth=depth,
        pipeline=own,
        chunks=chunks,
        memories=memories,
        memory_texts=memory_texts,
        chunk_ids=chunk_ids,
        embeddings=embeddings,
        index_order=index_order,
        qrels=qrels,
        queries=queries,
        dump_s=round(time.perf_counter() - started, 1),
    )


# -------------------------------------------------------------------------------------------------------- replay


class ListLeg:
    """A retrieval leg that returns a list given per query text (cut to the depth asked)."""

    def __init__(self, name: LegName, lists: Mapping[str, list[Candidate]]) -> None:
        self.name: LegName = name
        self._lists = lists

    async def retrieve(self, query: RetrievalQuery, k: int) -> list[Candidate]:
        return self._lists[query.text][:k]


@contextmanager
def bm25_parameters(k1: float, b: float) -> Iterator[None]:
    """`Bm25Index.search` with other K1 and B (module constants there)."""
    saved = bm25.K1, bm25.B
    bm25.K1, bm25.B = k1, b
    try:
        yield
    finally:
        bm25.K1, bm25.B = saved


class Replay:
    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._row = {cid: i for i, cid in enumerate(cache.chunk_ids)}
        self._by_memory: dict[str, list[str]] = {}
        for cid in cache.index_order:
            self._by_memory.setdefault(cache.chunks[cid].memory_id, []).append(cid)
        analyzer = Analyzer()
        counted = {cid: analyzer.count(indexed_text(chunk.context, chunk.text)) for cid, chunk in cache.chunks.items()}
        # The chunk index, in the server's order (ties go to the chunk indexed first), threads as the server reads.
        self.chunk_index = Bm25Index()
        for cid in cache.index_order:
            chunk, counts = cache.chunks[cid], counted[cid]
            self.chunk_index.add(cid, counts.terms, counts.counts, counts.length, chunk.thread, chunk.order)
        # One document per memory: its chunks' counts and lengths summed (what the index can do without the text).
        self.memory_index = Bm25Index()
        for memory_id, cids in self._by_memory.items():
            summed: dict[str, int] = {}
            for cid in cids:
                for term, count in zip(counted[cid].terms, counted[cid].counts, strict=True):
                    summed[term] = summed.get(term, 0) + count
            length = sum(counted[cid].length for cid in cids)
            self.memory_index.add(memory_id, list(summed), list(summed.values()), length)
        # One document per memory from the text it was stored with: no chunk overlap counted twice.
        self.text_index = Bm25Index()
        for memory_id, cids in self._by_memory.items():
            counts = analyzer.count(indexed_text(cache.chunks[cids[0]].context, cache.memory_texts[memory_id]))
            self.text_index.add(memory_id, counts.terms, counts.counts, counts.length)
        self.threads = sum(1 for chunk in cache.chunks.values() if chunk.thread)
        self._analyzer = analyzer
        self._similarity: dict[str, np.ndarray] = {}

    def similarities(self, query: Query) -> np.ndarray:
        """Cosine similarity of every chunk to the query (float32, rows as `chunk_ids`)."""
        found = self._similarity.get(query.claim_id)
        if found is None:
            vector = query.vector / np.linalg.norm(query.vector)
            found = self._similarity[query.claim_id] = self.cache.embeddings @ vector
        return found

    def hit(self, chunk_id: str, distance: float) -> ChunkHit:
        chunk = self.cache.chunks[chunk_id]
        return ChunkHit(self.cache.memories[chunk.memory_id], chunk_id, chunk.text, distance, chunk.place)

    def candidates(self, entries: Sequence[Entry]) -> list[Candidate]:
        return [Candidate.from_hit(self.hit(cid, distance), leg_score=score) for cid, distance, score in entries]

    def keyword_chunks(self, query: Query, k1: float, b: float, depth: int) -> list[Candidate]:
        """The replicated keyword leg: chunks by BM25 with `k1`, `b`."""
        terms = self._analyzer.query_terms(query.text)
        if not terms:
            return []
        with bm25_parameters(k1, b):
            ranked = self.chunk_index.search(terms, depth)
        similarity = self.similarities(query)
        return [
            Candidate.from_hit(self.hit(cid, 1.0 - float(similarity[self._row[cid]])), leg_score=score)
            for cid, score in ranked
        ]

    def keyword_memories(
        self, query: Query, k1: float, b: float, depth: int, *, whole_text: bool = False
    ) -> list[Candidate]:
        """The whole-memory keyword leg: memories by BM25, keyed by memory, shown by their chunk nearest the query.

        Each memory is one document: its chunks' counts summed, or with `whole_text` the text it was stored with.
        """
        terms = self._analyzer.query_terms(query.text)
        if not terms:
            return []
        with bm25_parameters(k1, b):
            ranked = (self.text_index if whole_text else self.memory_index).search(terms, depth)
        similarity = self.similarities(query)
        out = []
        for memory_id, score in ranked:
            best = max(self._by_memory[memory_id], key=lambda cid: float(similarity[self._row[cid]]))
            hit = self.hit(best, 1.0 - float(similarity[self._row[best]]))
            out.append(Candidate.from_hit(replace(hit, chunk_id=memory_id), leg_score=score))
        return out


def document(cache: Cache, memory_id: str) -> str:
    """The SciFact document a memory is, by the `source` it was stored with (`scifact/<doc id>`)."""
    return str(cache.memories[memory_id].source or "").removeprefix("scifact/")


def by_memory(found: Sequence[Candidate]) -> list[Candidate]:
    """A leg's list cut to each memory's best chunk, keyed by memory (so RRF adds up a memory's ranks)."""
    seen: set[str] = set()
    out = []
    for candidate in found:
        if candidate.memory_id not in seen:
            seen.add(candidate.memory_id)
            out.append(replace(candidate, hit=replace(candidate.hit, chunk_id=candidate.memory_id)))
    return out


@dataclass(frozen=True)
class Variant:
    name: str
    # "real" (the dumped leg), "chunk" (replica), "memory" (whole memory, chunks summed), "text" (its stored text)
    keyword: str
    b: float = 0.75
    k1: float = K1
    fuse_by_memory: bool = False
    vector_weight: float = DEFAULT_VECTOR_WEIGHT
    vector_depth: int = DEFAULT_LEG_DEPTH  # the shallow (real-depth) vector query when it is the pipeline's
    keyword_depth: int = DEFAULT_LEG_DEPTH
    fusion: FusionMethod = "ranks"  # these variants were first measured fusing ranks (RRF)
    vector_share: float = DEFAULT_VECTOR_SHARE  # when fusing scores


def as_dumped(cache: Cache) -> Variant:
    """The store's own pipeline, as the dump searched it (dumps before decision 0035 fused ranks)."""
    fusion: FusionMethod = "scores" if cache.pipeline.get("fusion_scores") else "ranks"
    share = cache.pipeline.get("vector_share", DEFAULT_VECTOR_SHARE)
    return Variant("today", "real", fusion=fusion, vector_share=share, vector_weight=cache.pipeline["vector_weight"])


def rankings(replay: Replay, variant: Variant, queries: Sequence[Query]) -> tuple[list[list[str]], list[list[str]]]:
    """Per query, the documents and the memory ids the pipeline returns with `variant`."""
    cache = replay.cache
    vector_lists: dict[str, list[Candidate]] = {}
    keyword_lists: dict[str, list[Candidate]] = {}
    for query in queries:
        deep = variant.vector_depth > len(query.vector_shallow)
        vector = replay.candidates(query.vector_deep if deep else query.vector_shallow)[: variant.vector_depth]
        if variant.keyword == "real":
            keyword = replay.candidates(query.keyword_deep)[: variant.keyword_depth]
        elif variant.keyword == "chunk":
            keyword = replay.keyword_chunks(query, variant.k1, variant.b, variant.keyword_depth)
        else:
            whole_text = variant.keyword == "text"
            keyword = replay.keyword_memories(
                query, variant.k1, variant.b, variant.keyword_depth, whole_text=whole_text
            )
        if variant.fuse_by_memory:
            vector = by_memory(vector)
            keyword = keyword if variant.keyword in ("memory", "text") else by_memory(keyword)
        vector_lists[query.text], keyword_lists[query.text] = vector, keyword
    pipeline = SearchPipeline(
        [ListLeg("vector", vector_lists), ListLeg("keyword", keyword_lists)],
        rrf_k=int(cache.pipeline["rrf_k"]),
        leg_depth=max(variant.vector_depth, variant.keyword_depth),
        relevance_floor=cache.pipeline["relevance_floor"],
        vector_weight=variant.vector_weight,
        fusion=variant.fusion,
        vector_share=variant.vector_share,
        days_weight=cache.pipeline["days_weight"],
        when_weight=cache.pipeline["when_weight"],
    )

    async def run_all() -> list[list[str]]:
        out = []
        for query in queries:
            found = await pipeline.run(RetrievalQuery(query.text, [], SearchFilter()), SearchOptions(limit=LIMIT))
            out.append([r.candidate.memory_id for r in found])
        return out

    memory_rankings = asyncio.run(run_all())
    return [[document(cache, m) for m in ranking] for ranking in memory_rankings], memory_rankings


def keyword_alone(replay: Replay, variant: Variant, queries: Sequence[Query]) -> list[list[str]]:
    """The documents of the keyword leg on its own (a memory's first chunk found stands for it), top 10."""
    out = []
    for query in queries:
        if variant.keyword in ("memory", "text"):
            found = replay.keyword_memories(query, variant.k1, variant.b, 100, whole_text=variant.keyword == "text")
        elif variant.keyword == "chunk":
            found = by_memory(replay.keyword_chunks(query, variant.k1, variant.b, 100))
        else:
            found = by_memory(replay.candidates(query.keyword_deep))
        out.append([document(replay.cache, c.memory_id) for c in found[:LIMIT]])
    return out


def per_claim(replay: Replay, variant: Variant, *, alone: bool = False) -> dict[str, np.ndarray]:
    """nDCG@10 of each claim, by split (claims in `claims()` order)."""
    figures = {}
    for split in SPLITS:
        queries = [q for q in replay.cache.queries if q.split == split]
        docs = keyword_alone(replay, variant, queries) if alone else rankings(replay, variant, queries)[0]
        judged = replay.cache.qrels[split]
        figures[split] = np.array([ndcg_at_10(d, judged[q.claim_id]) for d, q in zip(docs, queries, strict=True)])
    return figures


def score(replay: Replay, variant: Variant, *, alone: bool = False) -> dict[str, float]:
    return {split: round(float(values.mean()), 4) for split, values in per_claim(replay, variant, alone=alone).items()}


def variants() -> list[Variant]:
    out: list[Variant] = []
    for weight in WEIGHTS:
        w = weight
        out.append(Variant("RRF (before 0035): per chunk, k1 1.5, b 0.75 (dumped leg)", "real", vector_weight=w))
        out.append(Variant("RRF (before 0035), fused by memory", "real", fuse_by_memory=True, vector_weight=w))
        out += [Variant(f"(b) per chunk, b {b}", "chunk", b=b, vector_weight=w) for b in BS]
        out.append(Variant("(a) whole memory, b 0.75, by memory", "memory", fuse_by_memory=True, vector_weight=w))
        for b in BS:
            out.append(
                Variant(f"(c) whole memory, b {b}, by memory", "memory", b=b, fuse_by_memory=True, vector_weight=w)
            )
        for b in (0.75, *BS):  # the same from the stored text, without the chunks' overlap
            name = f"(a'/c') whole memory text, b {b}, by memory"
            out.append(Variant(name, "text", b=b, fuse_by_memory=True, vector_weight=w))
    for share in SHARES:  # decision 0035: the legs' scores fused, not their ranks
        out.append(
            Variant(
                f"(d) today's legs, scores fused, vector share {share}", "real", fusion="scores", vector_share=share
            )
        )
    return out


def check(replay: Replay) -> dict[str, Any]:
    """The replay against the real pipeline the dump ran, and the replica against the dumped keyword leg."""
    today = as_dumped(replay.cache)
    same_rankings = {}
    for split in SPLITS:
        queries = [q for q in replay.cache.queries if q.split == split]
        _, memory_rankings = rankings(replay, today, queries)
        same_rankings[split] = sum(mine == q.real for mine, q in zip(memory_rankings, queries, strict=True))
    same_lists, same_top = 0, 0
    for query in replay.cache.queries:
        mine = [c.chunk_id for c in replay.keyword_chunks(query, K1, 0.75, replay.cache.depth)]
        real = [cid for cid, _d, _s in query.keyword_deep]
        same_lists += mine == real
        same_top += mine[:DEFAULT_LEG_DEPTH] == real[:DEFAULT_LEG_DEPTH]
    real_ndcg = {}
    for split in SPLITS:
        queries = [q for q in replay.cache.queries if q.split == split]
        docs = [[document(replay.cache, m) for m in q.real] for q in queries]
        real_ndcg[split] = round(mean_ndcg(docs, [q.claim_id for q in queries], replay.cache.qrels[split]), 4)
    return {
        "claims": {split: sum(q.split == split for q in replay.cache.queries) for split in SPLITS},
        "replay_equals_in_process_pipeline": same_rankings,
        "in_process_pipeline_ndcg10": real_ndcg,
        "replica_keyword_lists_equal": {"depth": same_lists, "top_50": same_top, "of": len(replay.cache.queries)},
        "replica_today": score(replay, replace(today, name="replica today", keyword="chunk")),
        "threaded_chunks": replay.threads,
    }


def render(cache: Cache, checks: dict[str, Any], rows: list[dict[str, Any]], replay_s: float) -> str:
    best = max(rows, key=lambda row: row["train"])
    lines = [
        "# SciFact replay: keyword-leg and fusion variants on one store (issue 25)",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; code {commit()} (dump made at {cache.code}, {cache.date});",
        f"  produced by `python -m bench.scifact_replay dump --store {cache.store} --cache CACHE`"
        f" ({cache.dump_s:.0f} s) and `python -m bench.scifact_replay replay --cache CACHE --mcp …`"
        f" ({replay_s:.0f} s).",
        f"- store: {len(cache.memories)} memories, {len(cache.chunks)} chunks, {checks['threaded_chunks']} in a thread;"
        f" the store's pipeline as opened: {cache.pipeline}.",
        "- nDCG@10, limit 10; train (809 claims) chooses, test (300) is reported only. Δ: the mean per-claim"
        " difference from today's pipeline (first row), ± its standard error (paired).",
        "",
        "## Checks",
        "",
        f"- replay of today's pipeline (dumped legs) equals the in-process `ZapomniCore.memories.search` ranking on "
        f"{checks['replay_equals_in_process_pipeline']} claims of {checks['claims']};",
        f"  that pipeline's nDCG@10: {checks['in_process_pipeline_ndcg10']}; through MCP on this store"
        f" (bench.scifact_mcp, train on the ingesting server, test on a copy): {checks.get('mcp_ndcg10') or '-'}.",
        f"- keyword replica (Analyzer + Bm25Index, k1 1.5, b 0.75) equals the dumped keyword leg: "
        f"{checks['replica_keyword_lists_equal']}; fused, {checks['replica_today']}.",
        "",
        f"The best on train: {best['name']}, vector weight {best['vector_weight']}: train {best['train']:.4f},"
        f" test {best['test']:.4f}.",
        "",
        "## Variants",
        "",
        "| keyword leg | vector weight | train | Δ train | test | Δ test | keyword alone, train / test |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        alone = row.get("alone")
        alone_text = f"{alone['train']:.4f} / {alone['test']:.4f}" if alone else ""
        deltas = {split: f"{row[f'{split}_delta']:+.4f} ± {row[f'{split}_delta_se']:.4f}" for split in SPLITS}
        lines.append(
            f"| {row['name']} | {row['vector_weight']} | {row['train']:.4f} | {deltas['train']} | {row['test']:.4f}"
            f" | {deltas['test']} | {alone_text} |"
        )
    return "\n".join(lines) + "\n"


def mcp_figures(paths: Sequence[Path]) -> dict[str, float]:
    """nDCG@10 at limit 10 by split from `bench.scifact_mcp --json` files (runs at default settings only)."""
    out = {}
    for path in paths:
        for run in json.loads(path.read_text())["runs"]:
            if not run["server_env"] and "10" in run["by_limit"]:
                out[str(run.get("split", "test"))] = float(run["by_limit"]["10"]["ndcg10"])
    return out


def replay_main(cache_path: Path, output: Path, json_path: Path, mcp: Sequence[Path]) -> None:
    started = time.perf_counter()
    with cache_path.open("rb") as handle:
        cache: Cache = pickle.load(handle)
    replay = Replay(cache)
    checks = check(replay)
    checks["mcp_ndcg10"] = mcp_figures(mcp)
    print(json.dumps(checks), file=sys.stderr)
    rows = []
    base = per_claim(replay, as_dumped(cache))
    alone_done: set[tuple[str, float]] = set()
    for variant in variants():
        claims_ndcg = per_claim(replay, variant)
        row: dict[str, Any] = {"name": variant.name, "vector_weight": variant.vector_weight}
        for split, values in claims_ndcg.items():
            diff = values - base[split]
            row[split] = round(float(values.mean()), 4)
            row[f"{split}_delta"] = round(float(diff.mean()), 4)
            row[f"{split}_delta_se"] = round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 4)
        if (variant.keyword, variant.b) not in alone_done:
            alone_done.add((variant.keyword, variant.b))
            row["alone"] = score(replay, variant, alone=True)
        rows.append(row)
        print(f"{variant.name} w {variant.vector_weight}: {row['train']} / {row['test']}", file=sys.stderr)
    replay_s = time.perf_counter() - started
    write_results(render(cache, checks, rows, replay_s), {"checks": checks, "rows": rows}, output, json_path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    dumping = commands.add_parser("dump", help="dump both legs' lists and the store's chunks to --cache")
    dumping.add_argument("--store", type=Path, required=True, help="a data dir bench.scifact_mcp --keep left")
    dumping.add_argument("--cache", type=Path, required=True)
    dumping.add_argument("--data-dir", type=Path, default=DATA_DIR)
    dumping.add_argument("--depth", type=int, default=DEPTH)
    dumping.add_argument("--max-claims", type=int, default=None, help="per split (a smoke test); all by default")
    replaying = commands.add_parser("replay", help="replay the variants from --cache")
    replaying.add_argument("--cache", type=Path, required=True)
    replaying.add_argument("--output", type=Path, default=RESULTS / "scifact_replay.md")
    replaying.add_argument("--json", type=Path, default=RESULTS / "scifact_replay.json")
    replaying.add_argument("--mcp", type=Path, nargs="*", default=[], help="bench.scifact_mcp --json files to compare")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    if args.command == "dump":
        cache = in_scratch_dir(
            "zr-", lambda workdir: dump(args.store, args.data_dir, args.depth, workdir, args.max_claims)
        )
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        with args.cache.open("wb") as handle:
            pickle.dump(cache, handle, protocol=pickle.HIGHEST_PROTOCOL)
        print(f"{len(cache.queries)} claims dumped in {cache.dump_s:.0f} s to {args.cache}", file=sys.stderr)
        return 0
    replay_main(args.cache, args.output, args.json, args.mcp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
