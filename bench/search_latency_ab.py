"""Search latency of two pipeline settings on one store of N turn memories, in the same run (issue 25).

One fresh store (in-process `ZapomniCore`, embedded defaults, embedding cache off) holds N conversation
turns: the LoCoMo development half's turns copy after copy, as bench/conversations.py's scale section
makes them (copy k >= 1 gets " (copy k)" appended and its thread " copy k"), each with speaker, date and
thread, added one at a time per thread. Then every LoCoMo question (cycled up to `--searches`) is searched
in hybrid mode, limit 10, once with each setting, alternating settings query by query so that both
see the same machine load: `before` (main's defaults: RRF k 60, leg depth 50, no time weights) and
`after` (this branch's defaults). Timed: `ZapomniCore.search` end to end, query embedding included.

Run: `python -m bench.search_latency_ab --memories 10000`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, in_scratch_dir, summary_ms
from bench.locomo import LOCOMO, load_locomo
from zapomni_core import Settings, open_core
from zapomni_core.logs import configure_logging
from zapomni_core.memories.requests import AddMemoryRequest, MemoryMetadata
from zapomni_core.search import RetrievalQuery, SearchOptions, SearchPipeline
from zapomni_db import SearchFilter

RESULTS = REPO_ROOT / "bench" / "results"
CONCURRENCY = 4
BEFORE = {"rrf_k": 60, "leg_depth": 50, "days_weight": 0.0, "when_weight": 0.0}  # main's defaults


def turns(n: int) -> list[list[tuple[str, dict[str, str]]]]:
    """N distinct turns grouped by thread, in order."""
    conversations = load_locomo(LOCOMO)
    flat = [(c.sample_id, t) for c in conversations for t in c.turns]
    threads: dict[str, list[tuple[str, dict[str, str]]]] = {}
    count, copy = 0, 0
    while count < n:
        for sample_id, turn in flat:
            text = f"{turn.text} (copy {copy})" if copy else turn.text
            thread = f"{sample_id} session {turn.session}" + (f" copy {copy}" if copy else "")
            metadata = {"speaker": turn.speaker, "thread": thread} | ({"date": turn.date} if turn.date else {})
            threads.setdefault(thread, []).append((text, metadata))
            count += 1
            if count == n:
                break
        copy += 1
    return list(threads.values())


async def run(n: int, searches: int, workdir: Path, before_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    before_settings = BEFORE if before_settings is None else before_settings
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=workdir,
        ZAPOMNI_APPENDFSYNC="everysec",
        LOG_LEVEL="WARNING",
        ZAPOMNI_GRAPH_AUTO=False,
        ZAPOMNI_CACHE_MAX_ENTRIES=0,
    )
    questions = [q.text for c in load_locomo(LOCOMO) for q in c.questions]
    queries = [questions[i % len(questions)] for i in range(searches)]  # cycled up to `--searches`
    async with open_core(settings) as (core, _info):
        queue = list(reversed(turns(n)))
        started = time.perf_counter()

        async def worker() -> None:
            while queue:
                for text, metadata in queue.pop():
                    await core.memories.add(
                        AddMemoryRequest(text=text, metadata=MemoryMetadata.model_validate(metadata))
                    )

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        ingest_s = time.perf_counter() - started
        print(f"{n} turns stored in {ingest_s:.0f} s", file=sys.stderr)
        workspace = await core.workspaces.registry.get(None, create=False)
        assert workspace is not None
        after = workspace.search
        before = SearchPipeline(after.retrievers, **before_settings)
        pipelines = {"before": before, "after": after}
        latency: dict[str, list[float]] = {name: [] for name in pipelines}
        warm_up = queries[:20]
        for i, query in enumerate(warm_up + queries):
            for name, pipeline in pipelines.items():
                began = time.perf_counter()
                vector = await core.embedder.embed_query(query)
                await pipeline.run(RetrievalQuery(query, vector, SearchFilter()), SearchOptions(limit=10))
                if i >= len(warm_up):  # the first (up to 20) warm up
                    latency[name].append((time.perf_counter() - began) * 1000)
        stats = await core.workspaces.stats()
    summary = {name: summary_ms(samples) for name, samples in latency.items()}
    return {
        "memories": stats.total_memories,
        "chunks": stats.total_chunks,
        "ingest_s": round(ingest_s, 1),
        "searches": len(queries),
        "before": before_settings,
        "search_ms": summary,
        "p95_ratio": round(summary["after"]["p95"] / summary["before"]["p95"], 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=500)
    parser.add_argument("--json", type=Path, default=RESULTS / "search_latency_ab.json")
    parser.add_argument(
        "--before",
        action="append",
        default=[],
        help="NAME=VALUE of the `before` pipeline (rrf_k, leg_depth, days_weight, when_weight, fuse_by_memory); "
        "given at all, the pipeline's defaults for the rest instead of main's",
    )
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    before = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.before)} if args.before else None
    results = in_scratch_dir("zl-", lambda workdir: run(args.memories, args.searches, workdir, before))
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
