"""What one FalkorDB primary sustains: memory writes per second with the model out of the way.

Replicas share one database, and every write goes to its one primary: this is the ceiling replicas
cannot lift. Single-chunk memories (real SciFact text, its term counts, a perturbed copy of a stored
vector) are written through `MemoryWrites.insert`, the transaction `add_memory` ends in, from 1, 4 and
16 concurrent writers for a fixed time, with the product's `appendfsync always` and with `everysec`.

Run: `.venv/bin/python -m bench.primary_writes [--seconds 15]`; results in bench/results/primary_writes.md/.json.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DATA_DIR, commit, in_scratch_dir, memory_texts, sentences, write_results
from bench.scale import borrowed_vectors, connect_embedded, single_chunk_memory
from zapomni_core import AddMemoryRequest, Settings, open_core
from zapomni_db import GraphClient, MemoryWrites

RESULTS = Path(__file__).resolve().parent / "results"
WRITERS = (1, 4, 16)
SEED_MEMORIES = 200
TEXTS = 20_000


async def seeded(data_dir: Path, fsync: str, texts: list[str]) -> None:
    """A store with real vectors to borrow (the model embeds these few)."""
    settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, ZAPOMNI_APPENDFSYNC=fsync, LOG_LEVEL="WARNING")
    async with open_core(settings, background_jobs=False) as (core, _info):
        for text in texts:
            await core.memories.add(AddMemoryRequest(text=text))


async def write_rate(data_dir: Path, texts: list[str], writers: int, seconds: float) -> float:
    """Memories per second that `writers` concurrent writers store in `seconds`."""
    connection = connect_embedded(data_dir)
    client = GraphClient(connection, "zapomni")
    writes, rng = MemoryWrites(client), np.random.default_rng(writers)
    rows = await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 500")
    base = np.asarray([row[0] for row in rows], dtype=np.float32)
    # Prepared before the clock starts: only the database's work is timed.
    unique = [f"{text} ({writers}-{i})" for i, text in enumerate(texts)]
    vectors = borrowed_vectors(base, len(unique), rng)
    prepared = [single_chunk_memory(text, vector) for text, vector in zip(unique, vectors, strict=True)]
    written = 0
    until = time.monotonic() + seconds

    async def writer(offset: int) -> None:
        nonlocal written
        for memory, chunks in prepared[offset::writers]:
            if time.monotonic() >= until:
                return
            await writes.insert(memory, chunks)
            written += 1

    started = time.monotonic()
    try:
        await asyncio.gather(*(writer(i) for i in range(writers)))
    finally:
        await connection.close()
    return written / (time.monotonic() - started)


async def measure(
    workdir: Path, seconds: float, texts_count: int = TEXTS, seed_count: int = SEED_MEMORIES
) -> dict[str, Any]:
    """`texts_count`: memories prepared for each cell, more than its writers store in `seconds`."""
    texts = memory_texts(sentences(DATA_DIR), texts_count, seed=9)
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "seconds": seconds,
        "rates": {},
    }
    for fsync in ("always", "everysec"):
        data_dir = workdir / fsync
        await seeded(data_dir, fsync, texts[:seed_count])
        # The embedded database stops with its last client: a core keeps it up while the writers run.
        settings = Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, ZAPOMNI_APPENDFSYNC=fsync, LOG_LEVEL="WARNING")
        async with open_core(settings, background_jobs=False):
            for writers in WRITERS:
                rate = await write_rate(data_dir, texts, writers, seconds)
                results["rates"][f"{fsync}/{writers}"] = round(rate, 1)
    return results


def report(results: dict[str, Any]) -> str:
    lines = [
        "# What one FalkorDB primary sustains (bench/primary_writes.py)",
        "",
        f"{results['date']}, commit {results['commit']}; single-chunk memories written through "
        "`MemoryWrites.insert` with vectors "
        f"already computed, {results['seconds']:g} s per cell; memories per second.",
        "",
        "| appendfsync | " + " | ".join(f"{w} writer{'s' if w > 1 else ''}" for w in WRITERS) + " |",
        "|---|" + "---:|" * len(WRITERS),
    ]
    for fsync in ("always", "everysec"):
        lines.append(f"| {fsync} | " + " | ".join(str(results["rates"][f"{fsync}/{w}"]) for w in WRITERS) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--texts", type=int, default=TEXTS, help="memories prepared for each cell")
    parser.add_argument("--seed-memories", type=int, default=SEED_MEMORIES, help="embedded to lend their vectors")
    parser.add_argument("--output", type=Path, default=RESULTS / "primary_writes.md")
    args = parser.parse_args(argv)
    results = in_scratch_dir("zpw-", lambda workdir: measure(workdir, args.seconds, args.texts, args.seed_memories))
    write_results(report(results), results, args.output, args.output.with_suffix(".json"))


if __name__ == "__main__":
    main()
