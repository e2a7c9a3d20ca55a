"""`list_memories` pages and `get_stats` as a store grows (decision 0026, section 4): do they stay flat?

A fresh store (or `--store`) is grown without the model through `MemoryWrites.insert_many` with
single-chunk memories (random unit vectors: neither a page nor the counts read a vector) whose
creation times are spread over the past `--days` days, as imported memories keep theirs. At each
size of `--sizes`, with the machine's load average beside the figures, through `ZapomniCore`:
- the first page (20) newest and oldest, and a page after a cursor in the middle of the store;
- pages filtered by speaker, tag, thread and source, one matching 1 % of the memories (every hundredth grown one
  has speaker "ann", tag "rare" and thread "t-rare") and one matching nothing (before decision 0044's indexed
  filters, the worst case: every window was read to the store's ends);
- the page query this change replaced (one query ordering every memory), on the same store;
- `get_stats`, and the counting queries it ran before this change, on the same store.

Run: `.venv/bin/python -m bench.list_pages [--sizes 10000 100000]`; results in bench/results/list_pages.{md,json}.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import commit, summary_ms, timed_ms
from bench.scale import GROW_BATCH, load_now, single_chunk_memory
from zapomni_core import Settings, ZapomniCore, open_core
from zapomni_core.memories.cursors import encode_cursor
from zapomni_core.memories.requests import ListMemoriesRequest, SearchFilters
from zapomni_core.workspaces.requests import StatsRequest
from zapomni_db import GraphClient, PageKey
from zapomni_db.records.memories import MemoryInfo

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SAMPLES = 20
RARE_EVERY = 100  # one grown memory in a hundred has the speaker, tag and thread the filtered pages ask for
# Filtered pages: (column, filters), one matching 1 % of a grown store and one matching nothing, per indexed filter.
FILTERED = (
    ("speaker 1 %", SearchFilters(speaker="ann")),
    ("tag 1 %", SearchFilters(tags=["rare"])),
    ("thread 1 %", SearchFilters(thread="t-rare")),
    ("speaker, none", SearchFilters(speaker="nobody")),
    ("tag, none", SearchFilters(tags=["nothing-has-it"])),
    ("thread, none", SearchFilters(thread="nowhere")),
    ("source, none", SearchFilters(source="nowhere")),
)

# The queries get_stats and a page ran before decision 0026's section 5, for the comparison on the same store.
OLD_PAGE = (
    "MATCH (m:Memory) WITH m, toInteger(m.created_at * 1000000) AS key "
    f"RETURN {MemoryInfo.PROJECTION}, coalesce(m.head, m.text), key ORDER BY key DESC, m.id DESC LIMIT 21"
)
OLD_STATS = (
    "MATCH (m:Memory) RETURN count(m), sum(m.chunk_count)",
    "MATCH (e:Entity) RETURN e.type, count(e)",
    "MATCH ()-[r:RELATED_TO]->() RETURN r.type, count(r), sum(CASE WHEN r.superseded_by IS NULL THEN 0 ELSE 1 END)",
    "MATCH (m:Memory) WHERE coalesce(m.status, 'indexed') = 'indexed' RETURN m.graph_state IS NULL, count(m)",
    "MATCH (j:Job) RETURN j.state, count(j)",
)


async def grow(core: ZapomniCore, count: int, days: float, rng: random.Random) -> None:
    """Add `count` single-chunk memories created at random times over the past `days` days."""
    writes = core.workspaces.registry.stores("default").writes
    dimension = (await core.workspaces.stats()).embedding_dimension
    vectors = np.random.default_rng(rng.randrange(2**32))
    now = time.time()
    for start in range(0, count, GROW_BATCH):
        made = []
        for i in range(start, min(count, start + GROW_BATCH)):
            vector = vectors.standard_normal(dimension).astype(np.float32)
            rare = {"speaker": "ann", "tags": ["rare"], "thread": "t-rare"} if i % RARE_EVERY == 0 else {}
            text = f"memory {rng.random()} number {i}"
            memory, chunks = single_chunk_memory(text, vector / np.linalg.norm(vector), **rare)
            created = now - rng.random() * days * 86400
            made.append((dataclasses.replace(memory, created_at=created, date_ts=created), chunks))
        await writes.insert_many(made)


async def measure(core: ZapomniCore, client: GraphClient) -> dict[str, Any]:
    out: dict[str, Any] = {"load_before": load_now()}
    for order in ("newest", "oldest"):  # untimed: the first page finds the store's bounds, once
        await core.memories.page(ListMemoriesRequest(limit=20, order=order))
    for order in ("newest", "oldest"):
        # the loop's str is one of the Literal's values:
        request = ListMemoriesRequest(limit=20, order=order)  # type: ignore[arg-type]
        out[f"page_{order}_ms"] = summary_ms(
            [await timed_ms(partial(core.memories.page, request)) for _ in range(SAMPLES)]
        )
    # A cursor in the middle of the store: the median memory by creation time.
    rows = await client.ro_query("MATCH (m:Memory) RETURN m.id, toInteger(m.created_at * 1000000) AS k ORDER BY k")
    middle = rows[len(rows) // 2]
    for order in ("newest", "oldest"):
        cursor = encode_cursor(PageKey(int(middle[1]), middle[0]), order)
        # the loop's str is one of the Literal's values:
        request = ListMemoriesRequest(limit=20, order=order, cursor=cursor)  # type: ignore[arg-type]
        out[f"page_middle_{order}_ms"] = summary_ms(
            [await timed_ms(partial(core.memories.page, request)) for _ in range(SAMPLES)]
        )
    out["filtered_ms"], out["filtered_found"] = {}, {}
    for name, filters in FILTERED:
        request = ListMemoriesRequest(limit=20, filters=filters)
        # Untimed: the first asks the index cold; what it found shows the filter matched what it should.
        out["filtered_found"][name] = len((await core.memories.page(request)).memories)
        out["filtered_ms"][name] = summary_ms(
            [await timed_ms(partial(core.memories.page, request)) for _ in range(SAMPLES)]
        )
    out["old_page_newest_ms"] = summary_ms([await timed_ms(lambda: client.ro_query(OLD_PAGE)) for _ in range(5)])
    out["stats_ms"] = summary_ms(
        [await timed_ms(lambda: core.workspaces.stats(StatsRequest())) for _ in range(SAMPLES)]
    )

    async def old_stats() -> None:
        for query in OLD_STATS:
            await client.ro_query(query)

    out["old_stats_queries_ms"] = summary_ms([await timed_ms(old_stats) for _ in range(5)])
    out["load_after"] = load_now()
    return out


async def run(sizes: list[int], store: Path, days: float) -> dict[str, Any]:
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=store, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False)
    results: dict[str, Any] = {
        "commit": commit(),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "days": days,
        "grown": False,
        "sizes": {},
    }
    rng = random.Random(7)
    async with open_core(settings) as (core, _info):
        client = core.workspaces.registry.stores("default").client
        while core.workspaces.registry.held_writes("default"):  # a kept store (`--store`) builds its indexes
            await asyncio.sleep(0.5)  # after loading, and writes wait for them
        for size in sizes:
            stored = (await core.workspaces.stats()).total_memories
            if size > stored:
                started = time.perf_counter()
                await grow(core, size - stored, days, rng)
                results["grown"] = True
                print(f"grew to {size:,} in {time.perf_counter() - started:.0f} s (load {load_now()})", flush=True)
            results["sizes"][str(size)] = entry = await measure(core, client)
            print(json.dumps({size: entry}), flush=True)
    return results


def report(results: dict[str, Any]) -> str:
    made = (
        f"Single-chunk memories created over the past {results['days']:g} days"
        if results.get("grown", True)
        else "A store this run did not grow (`--store`): its memories were made by whatever grew it"
    )
    lines = [
        f"# list_memories pages and get_stats by store size (commit {results['commit']}, {results.get('date', '')})",
        "",
        f"{made}; p50 ms (p95), load average (1/5/15 min) before and after each size. Produced by "
        "`python -m bench.list_pages`.",
        "",
        "| memories | page newest | page oldest | middle newest | middle oldest "
        "| old page query | get_stats | old stats queries | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = (
        "page_newest_ms", "page_oldest_ms", "page_middle_newest_ms", "page_middle_oldest_ms",
        "old_page_newest_ms", "stats_ms", "old_stats_queries_ms",
    )  # fmt: skip
    for size, m in results["sizes"].items():
        cells = [f"{m[k]['p50']} ({m[k]['p95']})" for k in keys]
        lines.append(f"| {int(size):,} | " + " | ".join(cells) + f" | {m['load_before']} → {m['load_after']} |")
    names = [name for name, _filters in FILTERED]
    lines += [
        "",
        "Pages of 20, newest first, filtered (a store grown elsewhere may hold no memory that matches 1 %):",
        "",
        "| memories | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for size, m in results["sizes"].items():
        cells = [f"{m['filtered_ms'][name]['p50']} ({m['filtered_ms'][name]['p95']})" for name in names]
        lines.append(f"| {int(size):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--days", type=float, default=365.0)
    parser.add_argument("--store", type=Path, help="a data directory to grow and keep (default: a temporary one)")
    parser.add_argument("--output", type=Path, default=RESULTS / "list_pages.md")
    args = parser.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="zlp-", dir="/tmp"))
    try:
        results = asyncio.run(run(sorted(args.sizes), store, args.days))
    finally:
        if args.store is None:
            shutil.rmtree(store, ignore_errors=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report(results))
    args.output.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(report(results))


if __name__ == "__main__":
    main()
