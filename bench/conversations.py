"""Conversational recall on LoCoMo (development half), through MCP, for each way an agent may store a chat.

Everything goes through the official MCP client (`ClientSession` + `stdio_client`) against `zapomni
serve` as a subprocess, the way an agent uses the product; this module imports nothing from the
application. Server settings: the product's defaults, except appendfsync everysec, graph extraction
off (ZAPOMNI_GRAPH_AUTO=false) and LOG_LEVEL=WARNING.

The data (../shared/data/locomo-dev/locomo-dev.json, the only LoCoMo file this bench reads) and its
metric are described in ../shared/data/README.md: each turn stored as one memory with one `add_memory`
call, in conversation order (sessions in order, turns in order: the server may use a thread's
preceding turns as context); every question of categories 1-4 that has evidence asked with
`search_memory` (limit 10) in `hybrid`, `vector` and `keyword` mode; evidence recall@5 and @10 = the
share of the question's evidence turns (`dia_id`s, as given) among the top 5 / 10 memories returned,
averaged over questions, overall and per category (1 multi-hop, 2 temporal, 3 open-domain, 4
single-hop; see bench/graph_retrieval.py for where these names come from).

Storage variants, each in a fresh data directory per conversation. A turn's text is the turn's text
plus ` [shares a photo: caption]` when it shares one; `date` is the session's date and time (ISO 8601):
- `before`: `speaker: text`, no metadata (how the project measured before: hybrid recall@10 0.601);
- `name_date`: `speaker: text`, metadata `date` only (the issue-25 table's "as most agents do");
- `full`: the text, metadata `thread` ("conv-26 session 3"), `speaker` and `date` (what the README asks
  agents to store);
- `equal_weights`: as `full`, on a server fusing with equal leg weights (`ZAPOMNI_VECTOR_WEIGHT=1`;
  ablation of the 0.7 default, which is chosen on SciFact train, not here);
- `no_context`: the text, metadata `thread` only (ablation);
- `no_thread`: the text, metadata `speaker` and `date` (ablation);
- `plain`: the text alone.

Baseline in the same run, in-process: bm25s (Lucene BM25, English stemmer and stopwords, as
bench/quality.py calls it) over `speaker: text` per turn, one index per conversation, top 10.
Latency: client-measured round trips of the `full` variant's hybrid searches (p50 / p95 / mean).

SciFact check (`--scifact`, on by default when ../shared/data/scifact exists): every corpus document
stored as issue 25's independent run stored it (`title` + newline + abstract, metadata `source`) with
`add_memory` through one server (a few calls in flight on one session), every test claim searched in
hybrid mode with limit 10, as an agent asks; nDCG@10 on the test split, with the server's default
settings (bench/scifact_mcp.py compares storage ways and limits; bench/quality.py reports in-process
figures with the RRF k it chose; compare with care).
About 10 minutes on 2 cores.

Latency at scale (`--scale N`, default 10000; 0 skips it): two more fresh stores, each holding N turn
memories made by cycling through every loaded conversation's turns, copy after copy, until N are stored
(copy k >= 1 of a turn gets " (copy k)" appended: the server deduplicates identical texts; a text that
would repeat one already stored is skipped, so the store holds N memories):
- `threaded`: metadata as the `full` variant's, the thread suffixed " copy k" for copies k >= 1;
- `unthreaded`: the same texts, metadata speaker and date only.
Adds go with a few calls in flight on one session, one thread per worker at a time, a thread's turns in
order. Then, after 20 warm-up searches, every loaded question (cycled up to `--scale-searches`, default
500, when there are fewer) is searched in each mode (limit 10), one at a time: client-measured round
trips, p50 / p95 / mean, with get_stats's memory and chunk counts and the ingest time. At 10,000 memories
expect roughly 5-6 minutes of adds and 3 of searches per store on 2 cores (extrapolated from 1,000).
These two servers run with the embedding cache off (ZAPOMNI_CACHE_MAX_ENTRIES=0) so that every search
embeds its query, as a new question would: otherwise the vector pass would reuse the hybrid pass's
query vectors, and cycled questions their first round's.

Run: `.venv/bin/python -m bench.conversations` (about 35 minutes on 2 cores with SciFact, plus the scale
section); for a quick look `--conversations 1 --variants before,full --no-scifact --scale 0`, or smaller
still with `--turns N --questions N`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import (
    DATA_DIR,
    REPO_ROOT,
    call,
    in_scratch_dir,
    load_scifact,
    scifact_documents,
    summary_ms,
    write_results,
)
from bench.locomo import CATEGORIES, LOCOMO, Conversation, Question, Turn, load_locomo
from bench.metrics import evidence_recall, mean_ndcg

RESULTS = REPO_ROOT / "bench" / "results"
ZAPOMNI = shutil.which("zapomni", path=str(Path(sys.executable).parent)) or "zapomni"
GROUPS = ("all", "1", "2", "3", "4")  # the keys of a figures table
MODES = ("hybrid", "vector", "keyword")
LIMIT = 10
SCIFACT_LIMIT = 10  # as an agent asks (issue 25: limit 100 searched deeper legs and measured 0.719)
SCIFACT_CONCURRENCY = 4  # add_memory calls in flight on the one session
MAX_QUERY_CHARS = 1000  # search_memory's limit
BM25S = "bm25s"
REFERENCE = {"before hybrid": 0.601, BM25S: 0.562}  # ../shared/data/README.md, recall@10
SERVER_ENV = {"LOG_LEVEL": "WARNING", "ZAPOMNI_GRAPH_AUTO": "false", "ZAPOMNI_APPENDFSYNC": "everysec"}
SCALE = 10_000  # memories per store in the latency-at-scale section
SCALE_SEARCHES = 500  # at least this many searches per mode and store (questions cycled)
SCALE_WARMUP = 20  # searches before the measured ones, not counted
SCALE_CONCURRENCY = 4  # add_memory calls in flight on the one session (one thread per worker)
SCALE_ENV = {"ZAPOMNI_CACHE_MAX_ENTRIES": "0"}  # every search embeds its query


# -- storage variants --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    speaker_prefix: bool = False  # text = "speaker: text"
    thread: bool = False
    speaker: bool = False
    date: bool = False
    server_env: tuple[tuple[str, str], ...] = ()  # settings this variant's server runs with

    def text(self, turn: Turn) -> str:
        return turn.line if self.speaker_prefix else turn.text

    def metadata(self, turn: Turn, sample_id: str) -> dict[str, str]:
        out = {}
        if self.thread:
            out["thread"] = f"{sample_id} session {turn.session}"
        if self.speaker:
            out["speaker"] = turn.speaker
        if self.date and turn.date:
            out["date"] = turn.date
        return out


VARIANTS = {
    v.name: v
    for v in (
        Variant("before", "`speaker: text`, no metadata (how the project measured before)", speaker_prefix=True),
        Variant("name_date", "`speaker: text`, metadata date only", speaker_prefix=True, date=True),
        Variant(
            "full", "text; metadata thread, speaker, date (the README's advice)", thread=True, speaker=True, date=True
        ),
        Variant(
            "equal_weights",
            "as `full`, fused with equal leg weights (ZAPOMNI_VECTOR_WEIGHT=1; ablation of the 0.7 default)",
            thread=True,
            speaker=True,
            date=True,
            server_env=(("ZAPOMNI_VECTOR_WEIGHT", "1.0"),),
        ),
        Variant("no_context", "text; metadata thread only", thread=True),
        Variant("no_thread", "text; metadata speaker, date", speaker=True, date=True),
        Variant("plain", "text only, no metadata"),
    )
}


# -- the server --------------------------------------------------------------------------------------


@asynccontextmanager
async def mcp_server(data_dir: Path, extra_env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialised official-client session with a fresh `zapomni serve` on `data_dir` (stderr to a log)."""
    # PYTHONPATH passes through so that a worktree's code is the server measured, not the venv's install.
    passed = {k: os.environ[k] for k in ("PATH", "PYTHONPATH") if k in os.environ}
    env = {"ZAPOMNI_DATA_DIR": str(data_dir), **passed, **SERVER_ENV, **(extra_env or {})}
    params = StdioServerParameters(command=ZAPOMNI, args=["serve"], env=env)
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir.parent / f"{data_dir.name}.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def add(session: ClientSession, text: str, metadata: dict[str, str] | None = None) -> str:
    """Store one memory, searchable when this returns (a large text's indexing job is waited for)."""
    arguments: dict[str, Any] = {"text": text} | ({"metadata": metadata} if metadata else {})
    added, _ms = await call(session, "add_memory", arguments)
    if added.get("status") == "indexing":
        await wait_job(session, str(added["job_id"]))
    return str(added["memory_id"])


async def wait_job(session: ClientSession, job_id: str) -> None:
    while True:
        info, _ms = await call(session, "job_status", {"job_id": job_id, "wait_s": 30})
        if info["state"] not in ("pending", "running"):
            return


async def search(session: ClientSession, query: str, mode: str, limit: int) -> tuple[list[str], float]:
    """Memory ids in rank order, and the round trip (ms)."""
    found, ms = await call(session, "search_memory", {"query": query[:MAX_QUERY_CHARS], "limit": limit, "mode": mode})
    return [hit["memory_id"] for hit in found["results"]], ms


# -- scoring -----------------------------------------------------------------------------------------


Ranking = list[list[str]]  # per result, the keys (dia_ids) of the memory (several if the server deduplicated)


@dataclass
class Scores:
    """Per question: (category, recall@5, recall@10)."""

    rows: list[tuple[int, float, float]] = field(default_factory=list)

    def add(self, question: Question, ranking: Ranking) -> None:
        evidence = question.evidence
        self.rows.append((question.category, recall(ranking, evidence, 5), recall(ranking, evidence, 10)))

    def figures(self) -> dict[str, dict[str, float]]:
        """'all', '1'..'4' -> questions, recall5, recall10."""
        out = {}
        for group in GROUPS:
            picked = [r for r in self.rows if group == "all" or str(r[0]) == group]
            if picked:
                out[group] = {
                    "questions": len(picked),
                    "recall5": round(float(np.mean([r[1] for r in picked])), 4),
                    "recall10": round(float(np.mean([r[2] for r in picked])), 4),
                }
        return out


def recall(ranking: Ranking, evidence: frozenset[str], k: int) -> float:
    return evidence_recall((key for keys in ranking[:k] for key in keys), evidence)


def keyed(memory_ids: Sequence[str], to_keys: dict[str, list[str]]) -> Ranking:
    return [to_keys[m] for m in memory_ids]


def bm25s_rankings(texts: Sequence[str], queries: Sequence[str], k: int) -> list[list[int]]:
    """Indices of the top `k` texts per query: Lucene BM25, English stemmer and stopwords (bench/quality.py)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(method="lucene")
    corpus = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False)
    retriever.index(corpus, show_progress=False)
    tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=stemmer, show_progress=False)
    results, _scores = retriever.retrieve(tokens, k=min(k, len(texts)), show_progress=False)
    return [[int(i) for i in row] for row in results]


# -- LoCoMo ------------------------------------------------------------------------------------------


@dataclass
class LocomoRun:
    scores: dict[str, dict[str, Scores]] = field(default_factory=dict)  # variant -> mode -> scores
    bm25s: Scores = field(default_factory=Scores)
    stores: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # variant -> per conversation
    full_hybrid_ms: list[float] = field(default_factory=list)


async def store_turns(session: ClientSession, conversation: Conversation, variant: Variant) -> dict[str, list[str]]:
    """Every turn, one add_memory each, in conversation order; memory id -> dia_ids."""
    to_turns: dict[str, list[str]] = {}
    for turn in conversation.turns:
        memory_id = await add(session, variant.text(turn), variant.metadata(turn, conversation.sample_id))
        to_turns.setdefault(memory_id, []).append(turn.dia_id)
    return to_turns


async def run_variant(
    conversation: Conversation, variant: Variant, data_dir: Path, into: LocomoRun, modes: Sequence[str] = MODES
) -> None:
    """One fresh store: the conversation stored the variant's way, every question asked in every mode."""
    by_mode = into.scores.setdefault(variant.name, {mode: Scores() for mode in modes})
    this_conversation = Scores()  # hybrid, for leave-one-conversation-out figures
    async with mcp_server(data_dir, dict(variant.server_env)) as session:
        started = time.perf_counter()
        to_turns = await store_turns(session, conversation, variant)
        ingest_s = time.perf_counter() - started
        for mode in modes:
            for question in conversation.questions:
                ids, ms = await search(session, question.text, mode, LIMIT)
                by_mode[mode].add(question, keyed(ids, to_turns))
                if mode == "hybrid":
                    this_conversation.add(question, keyed(ids, to_turns))
                if variant.name == "full" and mode == "hybrid":
                    into.full_hybrid_ms.append(ms)
    into.stores.setdefault(variant.name, []).append(
        {
            "conversation": conversation.sample_id,
            "turns": len(conversation.turns),
            "memories": len(to_turns),
            "questions": len(conversation.questions),
            "ingest_s": round(ingest_s, 1),
            "hybrid": this_conversation.figures(),
        }
    )
    hybrid = by_mode["hybrid"].figures().get("all", {})
    print(
        f"{conversation.sample_id} {variant.name}: {len(to_turns)} memories in {ingest_s:.1f} s; "
        f"running hybrid recall@10 {hybrid.get('recall10')}",
        file=sys.stderr,
    )


def run_bm25s(conversation: Conversation, into: Scores) -> None:
    texts = [t.line for t in conversation.turns]
    rankings = bm25s_rankings(texts, [q.text for q in conversation.questions], LIMIT)
    for question, row in zip(conversation.questions, rankings, strict=True):
        into.add(question, [[conversation.turns[i].dia_id] for i in row])


async def locomo_run(
    conversations: Sequence[Conversation], variants: Sequence[Variant], workdir: Path, modes: Sequence[str] = MODES
) -> LocomoRun:
    out = LocomoRun()
    for conversation in conversations:
        if conversation.questions:
            run_bm25s(conversation, out.bm25s)
        for variant in variants:
            await run_variant(conversation, variant, workdir / f"{variant.name}-{conversation.sample_id}", out, modes)
    return out


# -- SciFact -----------------------------------------------------------------------------------------


async def scifact_run(data_dir: Path, workdir: Path) -> dict[str, Any]:
    """Every document through one server, stored as issue 25's independent run stored them (`title` + newline
    + text, a `source`), every test claim searched (hybrid, limit 10): nDCG@10."""
    data = load_scifact(data_dir, None)
    to_docs: dict[str, list[str]] = {}
    queue = list(reversed(scifact_documents(data_dir, "issue")))
    async with mcp_server(workdir / "scifact") as session:
        started = time.perf_counter()

        async def worker() -> None:
            while queue:
                doc_id, text, metadata = queue.pop()
                to_docs.setdefault(await add(session, text, metadata), []).append(doc_id)

        await asyncio.gather(*(worker() for _ in range(SCIFACT_CONCURRENCY)))
        ingest_s = time.perf_counter() - started
        print(f"SciFact: {len(data.doc_ids)} documents stored in {ingest_s:.0f} s", file=sys.stderr)
        rankings, latency = [], []
        for text in data.query_texts:
            ids, ms = await search(session, text, "hybrid", SCIFACT_LIMIT)
            rankings.append([doc for m in ids for doc in to_docs[m]])
            latency.append(ms)
    return {
        "documents": len(data.doc_ids),
        "memories": len(to_docs),
        "test_claims": len(data.query_ids),
        "ingest_s": round(ingest_s, 1),
        "ndcg10": round(mean_ndcg(rankings, data.query_ids, data.qrels), 4),
        "search_ms": summary_ms(latency),
    }


# -- latency at scale --------------------------------------------------------------------------------


ScaleThread = list[tuple[str, dict[str, str]]]  # one thread's turns in order: text, `full`-style metadata


def scale_threads(conversations: Sequence[Conversation], n: int) -> list[ScaleThread]:
    """N distinct turn texts, every loaded conversation's turns copy after copy, grouped by thread (in order)."""
    full = VARIANTS["full"]
    turns = [(c.sample_id, t) for c in conversations for t in c.turns]
    threads: dict[str, ScaleThread] = {}
    seen: set[str] = set()
    count, copy = 0, 0
    while turns and count < n:
        for sample_id, turn in turns:
            text = f"{turn.text} (copy {copy})" if copy else turn.text
            identity = " ".join(text.split())  # what the server deduplicates on
            if identity in seen:
                continue
            seen.add(identity)
            metadata = full.metadata(turn, sample_id)
            if copy:
                metadata["thread"] += f" copy {copy}"
            threads.setdefault(metadata["thread"], []).append((text, metadata))
            count += 1
            if count == n:
                break
        copy += 1
    return list(threads.values())


async def store_stats(session: ClientSession) -> dict[str, Any] | None:
    """get_stats's figures of the server's workspace (None when the server has no such tool)."""
    if "get_stats" not in {tool.name for tool in (await session.list_tools()).tools}:
        return None
    stats, _ms = await call(session, "get_stats", {})
    return stats


async def scale_store(
    name: str, threads: Sequence[ScaleThread], queries: Sequence[str], data_dir: Path
) -> dict[str, Any]:
    """One fresh store with every thread's turns (`threaded`: with the thread, else speaker and date only),
    then every query searched in every mode, one at a time."""
    threaded = name == "threaded"
    queue = list(reversed(threads))
    memory_ids: set[str] = set()
    adds = sum(len(t) for t in threads)
    async with mcp_server(data_dir, SCALE_ENV) as session:
        started = time.perf_counter()

        async def worker() -> None:
            while queue:
                for text, metadata in queue.pop():
                    kept = metadata if threaded else {k: v for k, v in metadata.items() if k != "thread"}
                    memory_ids.add(await add(session, text, kept))

        await asyncio.gather(*(worker() for _ in range(SCALE_CONCURRENCY)))
        ingest_s = time.perf_counter() - started
        print(f"scale {name}: {len(memory_ids)} memories stored in {ingest_s:.0f} s", file=sys.stderr)
        stats = await store_stats(session)
        for i in range(SCALE_WARMUP):
            await search(session, queries[i % len(queries)], MODES[i % len(MODES)], LIMIT)
        latency: dict[str, list[float]] = {mode: [] for mode in MODES}
        for mode in MODES:
            for query in queries:
                _ids, ms = await search(session, query, mode, LIMIT)
                latency[mode].append(ms)
        after = await store_stats(session)
    summary = {mode: summary_ms(samples) for mode, samples in latency.items()}
    figures = ", ".join(f"{mode} p50 {s['p50']} p95 {s['p95']} ms" for mode, s in summary.items())
    print(f"scale {name}: {figures}", file=sys.stderr)
    return {
        "adds": adds,
        "memories": len(memory_ids),
        "stats_memories": stats["total_memories"] if stats else None,
        "stats_chunks": stats["total_chunks"] if stats else None,
        "database_size_mb": stats["database_size_mb"] if stats else None,
        "threads": len(threads) if threaded else None,
        "ingest_s": round(ingest_s, 1),
        "adds_per_s": round(adds / ingest_s, 1) if ingest_s else None,
        "cache_hit_rate": after.get("cache_hit_rate") if after else None,
        "search_ms": summary,
    }


async def scale_run(conversations: Sequence[Conversation], n: int, searches: int, workdir: Path) -> dict[str, Any]:
    threads = scale_threads(conversations, n)
    questions = [q.text for c in conversations for q in c.questions]
    queries = [questions[i % len(questions)] for i in range(max(len(questions), searches))]
    stores = {}
    for name in ("threaded", "unthreaded"):
        stores[name] = await scale_store(name, threads, queries, workdir / f"scale-{name}")
    return {
        "memories": n,
        "searches_per_mode": len(queries),
        "distinct_questions": len(set(questions)),
        "warmup": SCALE_WARMUP,
        "concurrency": SCALE_CONCURRENCY,
        "server_env": SCALE_ENV,
        "stores": stores,
    }


# -- the report --------------------------------------------------------------------------------------


def _header(counts: dict[str, dict[str, float]]) -> tuple[list[str], list[str]]:
    """Column titles (with question counts) and the groups they show, for the groups with questions."""
    groups = [g for g in GROUPS if g in counts]
    names = {g: "all" if g == "all" else f"{g} {CATEGORIES[int(g)]}" for g in groups}
    return [f"{names[g]} ({int(counts[g]['questions'])})" for g in groups], groups


def variant_table(name: str, results: dict[str, Any]) -> list[str]:
    modes = results["locomo"][name]
    titles, groups = _header(results["bm25s"])
    lines = [
        f"## `{name}`: {results['variants'][name]}",
        "",
        "| search | " + " | ".join(f"{t} @5 | {t} @10" for t in titles) + " |",
        "|---|" + "---:|---:|" * len(groups),
    ]
    rows = [(f"Zapomni `{mode}`", modes[mode]) for mode in MODES if mode in modes] + [(BM25S, results["bm25s"])]
    for label, figures in rows:
        cells = [f"{figures[g]['recall5']:.3f} | {figures[g]['recall10']:.3f}" for g in groups]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def summary_table(results: dict[str, Any]) -> list[str]:
    titles, groups = _header(results["bm25s"])
    lines = [
        "## Summary: hybrid evidence recall@10 by variant and category",
        "",
        "| variant | " + " | ".join(titles) + " | all @5 |",
        "|---|" + "---:|" * (len(groups) + 1),
    ]
    rows = [(f"`{name}`", by_mode["hybrid"]) for name, by_mode in results["locomo"].items()]
    for label, figures in [*rows, (BM25S, results["bm25s"])]:
        cells = [f"{figures[g]['recall10']:.3f}" for g in groups]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {figures['all']['recall5']:.3f} |")
    return [*lines, ""]


def per_conversation_table(results: dict[str, Any]) -> list[str]:
    """Hybrid recall@10 of each conversation: the held-out figure of a leave-one-conversation-out choice."""
    names = [c["sample_id"] for c in results["conversations"]]
    lines = [
        "## Hybrid evidence recall@10 per conversation",
        "",
        "| variant | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for variant, stores in results["stores"].items():
        by_name = {s["conversation"]: s.get("hybrid", {}).get("all", {}).get("recall10") for s in stores}
        cells = [f"{by_name[n]:.3f}" if by_name.get(n) is not None else "–" for n in names]
        lines.append(f"| `{variant}` | " + " | ".join(cells) + " |")
    return [*lines, ""]


def scifact_section(results: dict[str, Any]) -> list[str]:
    lines = ["## SciFact test through MCP (title, newline, text and a source; hybrid, limit 10, server defaults)", ""]
    scifact = results.get("scifact")
    if scifact is None:
        return [*lines, f"Not measured: {results['scifact_note']}.", ""]
    latency = scifact["search_ms"]
    return [
        *lines,
        f"nDCG@10 **{scifact['ndcg10']:.4f}** over {scifact['test_claims']} test claims; {scifact['documents']} "
        f"documents stored with `add_memory` in {scifact['ingest_s']} s ({SCIFACT_CONCURRENCY} calls in flight); "
        f"search round trip p50 {latency['p50']} ms, p95 {latency['p95']} ms. bench/results/quality.md measures "
        "in-process with the RRF k it chose on train (hybrid 0.718 there).",
        "",
    ]


def scale_section(results: dict[str, Any]) -> list[str]:
    scale = results.get("scale")
    if scale is None:
        return []
    lines = [
        f"## Search latency at {scale['memories']:,} memories",
        "",
        f"Two fresh stores of {scale['memories']:,} turn memories each: the loaded conversations' turns copy after "
        "copy (copy k ≥ 1 of a turn gets ` (copy k)` appended). `threaded`: metadata thread (suffixed ` copy k`), "
        "speaker and date, as the `full` variant; `unthreaded`: speaker and date only. Stored with `add_memory`, "
        f"{scale['concurrency']} calls in flight on one session (a thread's turns in order). Then, after "
        f"{scale['warmup']} warm-up searches, {scale['searches_per_mode']} `search_memory` calls per mode (limit 10; "
        f"{scale['distinct_questions']} distinct LoCoMo questions"
        + (", cycled" if scale["searches_per_mode"] > scale["distinct_questions"] else "")
        + "), one at a time: client-measured round "
        "trips through MCP, query embedding included (these servers run with the embedding cache off, "
        f"{', '.join(f'{k}={v}' for k, v in scale['server_env'].items())}).",
        "",
        "| store | memories | chunks | ingest | mode | p50 ms | p95 ms | mean ms |",
        "|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for name, store in scale["stores"].items():
        memories = store["stats_memories"] if store["stats_memories"] is not None else store["memories"]
        chunks = f"{store['stats_chunks']:,}" if store["stats_chunks"] is not None else "–"
        ingest = f"{store['ingest_s']} s ({store['adds_per_s']}/s)"
        for i, mode in enumerate(MODES):
            figures = store["search_ms"][mode]
            head = f"`{name}` | {memories:,} | {chunks} | {ingest}" if i == 0 else " | | | "
            lines.append(f"| {head} | `{mode}` | {figures['p50']} | {figures['p95']} | {figures['mean']} |")
    return [*lines, ""]


def render(results: dict[str, Any]) -> str:
    counts = results["bm25s"]["all"]["questions"]
    convs = results["conversations"]
    latency = results.get("full_hybrid_ms")
    lines = [
        "# Conversational recall — LoCoMo development half, through MCP",
        "",
        f"- date: {results['date']}; CPUs: {results['cpus']} (load average at the end {results['load_average']}); "
        "produced by `python -m bench.conversations`.",
        f"- {len(convs)} conversation{'s' if len(convs) > 1 else ''} ({', '.join(c['sample_id'] for c in convs)}), "
        f"{sum(c['turns'] for c in convs)} turns, {counts} questions of categories 1–4 with evidence"
        + (f"; limited by {results['limits']}" if results["limits"] else "")
        + ".",
        "- each turn one `add_memory` call in conversation order, a fresh `zapomni serve` per conversation and "
        "variant (official MCP client; graph extraction off, appendfsync everysec); each question one "
        "`search_memory` call, limit 10. Evidence recall@5 / @10: the share of the question's evidence turns "
        "among the top 5 / 10 memories, averaged over questions (../shared/data/README.md).",
        *(
            [f"- every server also ran with {', '.join(f'{k}={v}' for k, v in results['server_env'].items())}."]
            if results.get("server_env")
            else []
        ),
        f"- reference (README, November 2026): `before` hybrid recall@10 {REFERENCE['before hybrid']}, "
        f"bm25s {REFERENCE[BM25S]}. bm25s here: Lucene BM25, English stemmer and stopwords, over "
        "`speaker: text`, one index per conversation, top 10.",
        "- evidence ids are used as given: a few malformed ones in the data ('D8:6; D9:17', 'D', 'D:11:26') "
        "can never be found, as in the reference.",
        "",
        *summary_table(results),
        *per_conversation_table(results),
    ]
    if latency:
        lines += [
            f"Search round trip of the `full` variant in hybrid mode ({latency['count']} searches, client-measured): "
            f"p50 {latency['p50']} ms, p95 {latency['p95']} ms, mean {latency['mean']} ms.",
            "",
        ]
    for name in results["locomo"]:
        lines += variant_table(name, results)
    lines += scale_section(results)
    lines += scifact_section(results)
    return "\n".join(lines).rstrip() + "\n"


# -- main --------------------------------------------------------------------------------------------


async def run(args: argparse.Namespace, conversations: list[Conversation], workdir: Path) -> dict[str, Any]:
    extra = tuple(tuple(item.split("=", 1)) for item in args.env)
    variants = [replace(VARIANTS[name], server_env=(*VARIANTS[name].server_env, *extra)) for name in args.variants]
    locomo = await locomo_run(conversations, variants, workdir, args.modes)
    results: dict[str, Any] = {
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "cpus": os.cpu_count(),
        "limits": ", ".join(
            f"--{flag} {getattr(args, flag)}"
            for flag in ("conversations", "turns", "questions")
            if getattr(args, flag) is not None
        ),
        "conversations": [
            {"sample_id": c.sample_id, "turns": len(c.turns), "questions": len(c.questions)} for c in conversations
        ],
        "variants": {v.name: v.description for v in variants},
        "server_env": dict(extra),
        "locomo": {name: {mode: s.figures() for mode, s in by_mode.items()} for name, by_mode in locomo.scores.items()},
        "bm25s": locomo.bm25s.figures(),
        "stores": locomo.stores,
        "full_hybrid_ms": (
            summary_ms(locomo.full_hybrid_ms) | {"count": len(locomo.full_hybrid_ms)} if locomo.full_hybrid_ms else None
        ),
    }
    results["scale"] = (
        await scale_run(conversations, args.scale, args.scale_searches, workdir) if args.scale > 0 else None
    )
    if not args.scifact:
        results["scifact"], results["scifact_note"] = None, "skipped (--no-scifact, or SciFact not found)"
    else:
        results["scifact"] = await scifact_run(args.data_dir, workdir)
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return results


def comma_list(choices: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (got {text!r})")
        return names

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo development half (locomo-dev.json)")
    parser.add_argument("--conversations", type=int, default=None, help="the first N conversations only")
    parser.add_argument("--variants", type=comma_list(list(VARIANTS)), default=list(VARIANTS),
                        help=f"comma list of storage variants (default all: {','.join(VARIANTS)})")  # fmt: skip
    parser.add_argument("--modes", type=comma_list(list(MODES)), default=list(MODES),
                        help=f"comma list of search modes (default all: {','.join(MODES)})")  # fmt: skip
    parser.add_argument("--turns", type=int, default=None,
                        help="the first N turns of each conversation (and only the questions they answer)")  # fmt: skip
    parser.add_argument("--questions", type=int, default=None, help="the first N questions of each conversation")
    parser.add_argument("--scifact", action=argparse.BooleanOptionalAction, default=None,
                        help="the SciFact check through MCP (default: on when the data is there)")  # fmt: skip
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="SciFact (BEIR layout)")
    parser.add_argument("--scale", type=int, default=SCALE,
                        help=f"memories per store, latency at scale (default {SCALE}, 0 skips)")  # fmt: skip
    parser.add_argument("--scale-searches", type=int, default=SCALE_SEARCHES,
                        help=f"searches per mode and store there, at least (default {SCALE_SEARCHES})")  # fmt: skip
    parser.add_argument("--env", action="append", default=[],
                        help="KEY=VALUE for every variant's server (repeatable): ZAPOMNI_FUSION=ranks")  # fmt: skip
    parser.add_argument("--output", type=Path, default=RESULTS / "conversations.md")
    parser.add_argument("--json", type=Path, default=RESULTS / "conversations.json")
    args = parser.parse_args(argv)
    if not args.locomo.is_file():
        print(f"LoCoMo development half not found at {args.locomo}: nothing to measure", file=sys.stderr)
        return 2
    has_scifact = (args.data_dir / "corpus.jsonl").is_file()
    if args.scifact and not has_scifact:
        print(f"SciFact not found at {args.data_dir}: its check is skipped", file=sys.stderr)
    args.scifact = has_scifact if args.scifact is None else args.scifact and has_scifact
    conversations = [c.limited(args.turns, args.questions) for c in load_locomo(args.locomo)[: args.conversations]]
    if not any(c.questions for c in conversations):
        print("no question left to ask (every question's evidence lies past --turns?)", file=sys.stderr)
        return 2
    results = in_scratch_dir("zc-", lambda workdir: run(args, conversations, workdir))
    write_results(render(results), results, args.output, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
