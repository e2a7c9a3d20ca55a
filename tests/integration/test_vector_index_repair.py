"""After a restart that replays the append-only file, the vector index still answers top-k with k chunks.

FalkorDB 4.16 indexes every node that an AOF replay re-creates twice: a top-50 query then returns
25 distinct chunks. Zapomni compacts the AOF when a process that wrote closes, and rebuilds the
index at start-up when it finds duplicates (after a crash, or a server stopped by someone else).
"""

from __future__ import annotations

import random
import uuid
from contextlib import AsyncExitStack

import pytest

from tests.helpers import open_core, unit_vector
from zapomni_core import Settings
from zapomni_core.database import open_database
from zapomni_core.kernel.writing import content_hash
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_db import ChunkRow, GraphClient, GraphStores, MemoryRecord, SchemaSettings, migrate, wait_for_indexes

pytestmark = [pytest.mark.anyio, pytest.mark.own_database]  # restarts and the append-only file

K = 50


async def distinct_neighbours(client: GraphClient) -> int:
    """How many chunks a top-K query around a stored chunk returns."""
    probe = (await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 1"))[0][0]
    rows = await client.ro_query(
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node RETURN count(node)",
        {"k": K, "v": list(probe)},
    )
    return int(rows[0][0])


async def raw_top_k(settings: Settings) -> int:
    """Top-k size seen without `open_core`, which would repair the index."""
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        await wait_for_indexes(database.client)  # after a load the index is rebuilt in the background
        return await distinct_neighbours(database.client)


async def write_without_compaction(settings: Settings, memories: int) -> None:
    """Memories stored through the stores alone: nothing compacts the AOF afterwards."""
    rng = random.Random(7)
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        await migrate(database.client, SchemaSettings(dimension=384))
        stores = GraphStores.on(database.client)
        await stores.maintenance.claim_embedder("onnx:all-MiniLM-L6-v2-int8", 384)  # what open_core will use
        for i in range(memories):
            text = f"memory {i}"
            at, hashed = 1.0e9 + i, content_hash(text)
            memory = MemoryRecord(id=str(uuid.uuid4()), text=text, created_at=at, content_hash=hashed, date_ts=at)
            chunk = ChunkRow(id=str(uuid.uuid4()), index=0, text=text, embedding=unit_vector(rng))
            assert await stores.writes.insert(memory, [chunk])


async def test_replayed_writes_are_repaired_at_start_up(settings: Settings) -> None:
    await write_without_compaction(settings, memories=120)
    # The FalkorDB behaviour this guards against; if a FalkorDB upgrade fixes it, this line says so.
    assert await raw_top_k(settings) < K

    async with open_core(settings) as (core, _info):
        workspace = await core.workspaces.registry.get(None, create=False)
        assert workspace is not None
        assert await distinct_neighbours(workspace.stores.client) == K
        # What a user sees: a vector search asked for K memories gets K, not K/2 (the vectors are
        # random, so none is related to the query: it asks for unrelated results too).
        result = await core.memories.search(
            SearchRequest(query="memory 3", limit=K, mode="vector", include_unrelated=True)
        )
        assert len(result.results) == K
    assert await raw_top_k(settings) == K  # the repair also compacted the file: the next start is clean


async def test_a_process_that_wrote_compacts_the_log_on_close(settings: Settings) -> None:
    async with open_core(settings) as (core, _info):
        for i in range(60):
            await core.memories.add(AddMemoryRequest(text=f"note {i}: the build on runner {i % 5} failed at step {i}"))
    assert await raw_top_k(settings) == K
