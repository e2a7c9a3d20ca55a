"""get_stats' counts without a scan (decision 0026): the same numbers as counting every memory."""

from __future__ import annotations

import pytest

from zapomni_core import ZapomniCore
from zapomni_core.memories.requests import AddMemoryRequest

pytestmark = pytest.mark.anyio


async def test_totals_equal_the_counts_read_from_every_memory(core: ZapomniCore) -> None:
    for i in range(3):
        await core.memories.add(AddMemoryRequest(text=f"A note {i}."))
    stores = core.workspaces.registry.stores("default")
    # Every state a memory's status and graph state combine to, a code file's included, and what a graph
    # write leaves; an unlinked chunk (a crash's leftover) and a staged one are not counted as chunks.
    await stores.client.query(
        "UNWIND $states AS s CREATE (m:Memory {id: s[0], created_at: 1.0, chunk_count: 1}) "
        "SET m.status = s[1], m.graph_state = s[2] "
        "CREATE (m)-[:HAS_CHUNK]->(:Chunk {id: s[0] + '-c', memory_id: s[0]})",
        {
            "states": [
                ["done", None, "done"],
                ["code", None, "code"],
                ["indexing", "indexing", None],
                ["indexing code", "indexing", "code"],
                ["failed", "failed", None],
                ["failed done", "failed", "done"],
            ]
        },
    )
    await stores.client.query(
        "CREATE (:Chunk {id: 'orphan', memory_id: 'gone'}) "
        "CREATE (e:Entity {key: 'a', type: 'person'})-[:RELATED_TO {id: 'r', type: 'knows'}]->(:Entity {key: 'b'})"
    )
    counts = await stores.graph.counts()
    assert (counts.memories_pending, counts.entities, counts.relations) == (3, 2, 1)
    assert await stores.graph.totals() == (counts.entities, counts.relations, counts.memories_pending)
    stats = await core.workspaces.stats()
    assert (stats.total_memories, stats.total_chunks, stats.extraction_pending) == (9, 9, 3)
