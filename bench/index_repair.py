"""What an AOF replay does to the vector index, and what the start-up repair costs (docs/decisions/0007).

For each size: store N one-chunk memories (random 384-d unit vectors, the stores' write path,
no compaction afterwards, as after a crash), restart the embedded server, and measure
- the distinct chunks a top-50 query returns after the replay (50 when the index is sound),
- the repair in `open_core` (`repair_vector_index`: the check, the rebuild, the compaction),
- the next start after the repair (compacted: nothing to rebuild).

Run: `.venv/bin/python -m bench.index_repair [--sizes 2000 10000]`; results in bench/results/index_repair.md.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path

from zapomni_core import Settings
from zapomni_core.database import open_database
from zapomni_core.kernel.writing import content_hash
from zapomni_core.logs import configure_logging
from zapomni_db import (
    ChunkRow,
    GraphClient,
    MemoryRecord,
    MemoryWrites,
    SchemaSettings,
    migrate,
    repair_vector_index,
    wait_for_indexes,
)

RESULTS = Path(__file__).resolve().parent / "results" / "index_repair.md"
K = 50


def unit_vector(rng: random.Random) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(384)]
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


async def top_k(client: GraphClient) -> int:
    probe = (await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 1"))[0][0]
    rows = await client.ro_query(
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node RETURN count(node)",
        {"k": K, "v": list(probe)},
    )
    return int(rows[0][0])


async def fill(settings: Settings, size: int) -> float:
    rng = random.Random(size)
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        client = (await open_database(settings, stack)).client
        await migrate(client, SchemaSettings(dimension=384))
        writes = MemoryWrites(client)
        for i in range(size):
            text, at = f"memory {i}", 1.0e9 + i
            hashed = content_hash(text)
            memory = MemoryRecord(id=str(uuid.uuid4()), text=text, created_at=at, content_hash=hashed, date_ts=at)
            chunk = ChunkRow(str(uuid.uuid4()), 0, text, unit_vector(rng))
            await writes.insert(memory, [chunk])
    return time.perf_counter() - started


async def restart(settings: Settings, *, repair: bool) -> tuple[float, int, float]:
    """(seconds until loaded and indexed, distinct top-K, seconds of repair)."""
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        client = (await open_database(settings, stack)).client
        await wait_for_indexes(client)
        loaded = time.perf_counter() - started
        found = await top_k(client)
        repair_s = 0.0
        if repair:
            began = time.perf_counter()
            await repair_vector_index(client, SchemaSettings(dimension=384))
            repair_s = time.perf_counter() - began
        return loaded, found, repair_s


async def measure(size: int) -> dict[str, float]:
    data_dir = Path(tempfile.mkdtemp(prefix="zb-", dir="/tmp"))
    try:
        settings = Settings.from_variables(
            ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_APPENDFSYNC="everysec"
        )
        fill_s = await fill(settings, size)
        replay_load, replay_found, repair_s = await restart(settings, repair=True)
        clean_load, clean_found, _ = await restart(settings, repair=False)
        return {
            "size": size,
            "fill_s": fill_s,
            "replay_load_s": replay_load,
            "replay_top_k": replay_found,
            "repair_s": repair_s,
            "clean_load_s": clean_load,
            "clean_top_k": clean_found,
        }
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def report(rows: list[dict[str, float]]) -> str:
    lines = [
        "# Vector index after an AOF replay, and the start-up repair",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, `python -m bench.index_repair`, embedded FalkorDB 4.16.3, "
        "one random 384-d chunk per memory, appendfsync everysec for the fill.",
        "",
        f"| chunks | load with replay (s) | distinct top-{K} after replay | repair (s) | next start (s) "
        f"| distinct top-{K} next start |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['size']:,} | {row['replay_load_s']:.2f} | {row['replay_top_k']} | {row['repair_s']:.2f} "
            f"| {row['clean_load_s']:.2f} | {row['clean_top_k']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    configure_logging("WARNING")
    rows = [asyncio.run(measure(size)) for size in args.sizes]
    text = report(rows)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
