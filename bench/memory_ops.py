"""What owning memories costs at a 10K-memory store: delete (1 and 1,000), list pages, and the workspace mechanism.

(`--store` and `--batch` make both smaller: the smoke test's run.)

Through `ZapomniCore` (the path the MCP tools take), on the embedded defaults. The store grows with
real SciFact sentences (real BM25 statistics) and perturbed copies of real MiniLM vectors, written
through the engine's own write path (`MemoryWrites.insert`), as `bench/scale.py` does past 10K.

The workspace comparison (docs/decisions/0009-workspaces.md): a small workspace of 100 memories
beside a 10K one, searched (a) as its own graph — the mechanism Zapomni uses — and (b) as the
same 100 memories inside the big graph behind a property filter, the alternative design, emulated
with the `source` filter that runs exactly the query shape a workspace property would.

Run: `.venv/bin/python -m bench.memory_ops` (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, progress, sentences, summary_ms, timed_ms
from bench.scale import borrowed_vectors, single_chunk_memory
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import DeleteMemoryRequest, ListMemoriesRequest, SearchFilters, SearchRequest

RESULTS = Path(__file__).resolve().parent / "results"
STORE = 10_000
SMALL = 100
BATCH = 1_000
REPEATS = 50


async def grow(core: ZapomniCore, workspace: str | None, texts: Sequence[str], base: np.ndarray,
               rng: np.random.Generator, *, source: str | None = None) -> list[str]:  # fmt: skip
    """Single-chunk memories written through the engine's write path, with borrowed vectors."""
    space = await core.workspaces.registry.get(workspace, create=True)
    assert space is not None
    ids: list[str] = []
    bar = progress(len(texts), f"growing {space.name} by {len(texts):,}")
    for i, (text, vector) in enumerate(zip(texts, borrowed_vectors(base, len(texts), rng), strict=True)):
        memory, chunks = single_chunk_memory(text, vector, tags=["sampled"] if i % 10 == 0 else [], source=source)
        if await space.stores.writes.insert(memory, chunks):
            ids.append(memory.id)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return ids


async def timings(call: Callable[[], Awaitable[Any]], repeats: int) -> dict[str, float]:
    return summary_ms([await timed_ms(call) for _ in range(repeats)])


async def run(workdir: Path, store: int, batch_size: int = BATCH, repeats: int = REPEATS) -> dict[str, Any]:
    pool = sentences(DATA_DIR)
    rng, pyrng = np.random.default_rng(3), random.Random(3)
    # The store, then what is put back after each delete: 20 singles and 3 batches.
    texts = [f"{pyrng.choice(pool)} {pyrng.choice(pool)} ({i})" for i in range(store + 20 + 3 * batch_size)]
    results: dict[str, Any] = {"date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "store_memories": store}
    async with open_core(Settings.from_variables(ZAPOMNI_DATA_DIR=workdir, LOG_LEVEL="WARNING")) as (core, _info):
        seed_vectors = await core.embedder.embed_documents(texts[:300])
        base = np.asarray(seed_vectors, dtype=np.float32)
        ids = await grow(core, None, texts[:store], base, rng)
        spare = iter(texts[store:])

        async def delete(batch: list[str]) -> float:
            """Delete `batch`, then put as many new memories back, so the store stays at its size."""
            elapsed = await timed_ms(lambda: core.memories.delete(DeleteMemoryRequest(memory_ids=batch)))
            ids.extend(await grow(core, None, [next(spare) for _ in batch], base, rng))
            return elapsed

        single = []
        for _ in range(20):
            single.append(await delete([ids.pop(pyrng.randrange(len(ids)))]))
        thousand = []
        for _ in range(3):
            pyrng.shuffle(ids)
            batch = ids[:batch_size]
            del ids[:batch_size]
            thousand.append(await delete(batch))
        results["delete_1"] = summary_ms(single)
        results["delete_batch"] = {
            "memories": batch_size,
            "runs_ms": [round(t, 1) for t in thousand],
            "median_ms": round(statistics.median(thousand), 1),
        }

        middle = await core.memories.page(ListMemoriesRequest(limit=100))
        deep_cursor = middle.next_cursor
        for _ in range(store // 200 - 1):  # walk to the middle of the store
            middle = await core.memories.page(ListMemoriesRequest(limit=100, cursor=deep_cursor))
            deep_cursor = middle.next_cursor
        results["list_page_20"] = {
            "first page, newest": await timings(lambda: core.memories.page(ListMemoriesRequest()), repeats),
            "first page, oldest": await timings(
                lambda: core.memories.page(ListMemoriesRequest(order="oldest")), repeats
            ),
            "page in the middle": await timings(
                lambda: core.memories.page(ListMemoriesRequest(cursor=deep_cursor)), repeats
            ),
            "tag filter (10% match)": await timings(
                lambda: core.memories.page(ListMemoriesRequest(filters=SearchFilters(tags=["sampled"]))), repeats
            ),
            "page of 100": await timings(lambda: core.memories.page(ListMemoriesRequest(limit=100)), repeats),
        }

        # Workspace mechanism: the same 100 memories as their own graph and behind a property filter.
        small_texts = [f"{pyrng.choice(pool)} (small {i})" for i in range(SMALL)]
        small_vectors = np.asarray(await core.embedder.embed_documents(small_texts), dtype=np.float32)
        await grow(core, "small", small_texts, small_vectors, rng)
        await grow(core, None, small_texts, small_vectors, rng, source="ws-small")
        queries = [" ".join(t.split()[:8]) for t in small_texts[:repeats]]
        mechanism: dict[str, Any] = {}
        for mode in ("vector", "hybrid"):
            for label, arguments in (
                ("graph per workspace", {"workspace": "small"}),
                ("property filter", {"filters": {"source": "ws-small"}}),
            ):
                found, samples = [], []
                for query in queries:
                    request = SearchRequest(query=query, mode=mode, limit=10, include_unrelated=True, **arguments)
                    started = time.perf_counter()
                    found.append((await core.memories.search(request)).count)
                    samples.append((time.perf_counter() - started) * 1000)
                mechanism[f"{mode}: {label}"] = {
                    **summary_ms(samples),
                    "mean_results": round(sum(found) / len(found), 2),
                }
        results["workspace_mechanism"] = mechanism
        results["search_after_deletes"] = await timings(
            lambda: core.memories.search(SearchRequest(query=pyrng.choice(queries))), repeats
        )
    return results


def render(results: dict[str, Any]) -> str:
    deleted = results["delete_batch"]
    lines = [
        f"# Owning memories at a {results['store_memories']:,}-memory store",
        "",
        f"Measured {results['date']} on this machine (2 cores), embedded defaults, through `ZapomniCore` "
        "(`python -m bench.memory_ops`).",
        "",
        "| operation | p50 | p95 |",
        "|---|---:|---:|",
        f"| delete 1 memory (of {results['store_memories']:,}) | {results['delete_1']['p50']} ms "
        f"| {results['delete_1']['p95']} ms |",
        f"| delete {deleted['memories']:,} memories in one call (3 runs: {', '.join(map(str, deleted['runs_ms']))} ms) "
        f"| {deleted['median_ms']} ms | |",
    ]
    for label, figures in results["list_page_20"].items():
        lines.append(f"| list_memories, {label} | {figures['p50']} ms | {figures['p95']} ms |")
    lines.append(
        f"| hybrid search after the deletes | {results['search_after_deletes']['p50']} ms | "
        f"{results['search_after_deletes']['p95']} ms |"
    )
    lines += [
        "",
        f"## Workspace mechanism: {SMALL} memories beside {results['store_memories']:,}",
        "",
        "| search | p50 | p95 | results (limit 10) |",
        "|---|---:|---:|---:|",
    ]
    for label, figures in results["workspace_mechanism"].items():
        lines.append(f"| {label} | {figures['p50']} ms | {figures['p95']} ms | {figures['mean_results']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=int, default=STORE, help="memories in the big workspace")
    parser.add_argument("--batch", type=int, default=BATCH, help="memories deleted in one call (3 runs)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timings per operation (and search queries)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where memory_ops.md/.json go")
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    workdir = Path(tempfile.mkdtemp(prefix="zb-ops-", dir="/tmp"))
    try:
        results = asyncio.run(run(workdir, args.store, args.batch, args.repeats))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory_ops.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "memory_ops.md").write_text(render(results))
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
