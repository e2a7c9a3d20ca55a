"""What a search reads of its hits is found by the nodes' own numbers, which need no index (issue 40, part 3: a first
answer while the indexes are built after a load): keyword hits by the numbers the keyword index keeps, a hit's
update links by the numbers the same search read; a number that no longer holds the node never returns another."""

from __future__ import annotations

import json

import pytest

from zapomni_core import ZapomniCore
from zapomni_core.kernel.registry import Workspace
from zapomni_core.memories.requests import AddMemoryRequest, DeleteMemoryRequest, MemoryMetadata, SearchRequest
from zapomni_db import LinkRow, SearchFilter
from zapomni_db.client import GraphClient
from zapomni_db.search_reads import _FETCH_BY_NODE
from zapomni_db.updates import _LINKS_AT

pytestmark = pytest.mark.anyio

TEXTS = [
    "The kiln in the garage reaches 1260 degrees for stoneware.",
    "Our sourdough starter lives in the fridge between bakes.",
    "The ferry to the island leaves at 7:40 on weekdays.",
]


async def workspace_of(core: ZapomniCore) -> Workspace:
    workspace = await core.workspaces.registry.get(None, create=True)
    assert workspace is not None
    return workspace


async def chunk_nodes(workspace: Workspace) -> dict[str, int]:
    """Each chunk's id and the database's number for its node, read from the database."""
    rows = await workspace.stores.client.ro_query("MATCH (c:Chunk) RETURN c.id, ID(c)")
    return {row[0]: int(row[1]) for row in rows}


async def test_the_keyword_index_keeps_each_chunks_node_number(core: ZapomniCore) -> None:
    for text in TEXTS:
        await core.memories.add(AddMemoryRequest(text=text))
    workspace = await workspace_of(core)
    hits = await workspace.keyword_index.search(["kiln", "sourdough", "ferri"], 10)
    nodes = await chunk_nodes(workspace)
    assert len(hits) == 3
    assert {hit.chunk_id: hit.node for hit in hits} == nodes


async def test_chunks_are_found_by_number_and_by_id_when_the_number_is_wrong(core: ZapomniCore) -> None:
    added = [
        await core.memories.add(AddMemoryRequest(text=text, metadata=MemoryMetadata(tags=[f"t{i}"])))
        for i, text in enumerate(TEXTS)
    ]
    workspace = await workspace_of(core)
    nodes = await chunk_nodes(workspace)
    ids = sorted(nodes)
    vector = await core.embedder.embed_query("stoneware kiln")
    reads = workspace.stores.search

    async def fetched(numbers: list[int], search: SearchFilter | None = None) -> list[tuple[str, str]]:
        hits = await reads.fetch_chunks(ids, vector, filters=search or SearchFilter(), nodes=numbers)
        return [(hit.chunk_id, hit.memory.id) for hit in hits]

    by_id = [(hit.chunk_id, hit.memory.id) for hit in await reads.fetch_chunks(ids, vector, filters=SearchFilter())]
    assert len(by_id) == 3 and [chunk_id for chunk_id, _ in by_id] == ids
    assert await fetched([nodes[i] for i in ids]) == by_id
    # Every number holding another of the chunks, or none at all: each is found by its id, none twice.
    assert await fetched([nodes[i] for i in ids[1:] + ids[:1]]) == by_id
    assert await fetched([10**9 + i for i in range(3)]) == by_id
    # A chunk found at its number but filtered out is not looked for again, and not returned.
    kept = await fetched([nodes[i] for i in ids], SearchFilter(tags=["t0"]))
    assert kept == [(chunk_id, memory) for chunk_id, memory in by_id if memory == added[0].memory_id]


async def test_a_number_given_to_a_new_chunk_after_a_delete_does_not_return_it(core: ZapomniCore) -> None:
    first = await core.memories.add(AddMemoryRequest(text=TEXTS[0]))
    kept = await core.memories.add(AddMemoryRequest(text=TEXTS[1]))
    workspace = await workspace_of(core)
    number = (await chunk_nodes(workspace))[(await workspace.stores.reads.chunks(first.memory_id))[0].id]
    gone = next(chunk_id for chunk_id, node in (await chunk_nodes(workspace)).items() if node == number)
    await core.memories.delete(DeleteMemoryRequest(memory_ids=[first.memory_id]))
    # FalkorDB gives a freed number to a node made later: chunks are made until one holds it (the change record
    # of the delete may take it first), the case the check of the id guards against.
    client = workspace.stores.client
    for i in range(4):
        await client.query(
            "MATCH (m:Memory {id: $m}) CREATE (m)-[:HAS_CHUNK]->(:Chunk {id: $c, idx: 1, embedding: vecf32($v)})",
            {"m": kept.memory_id, "c": f"intruder-{i}", "v": [1.0] * core.embedder.dimension},
        )
        if number in (await chunk_nodes(workspace)).values():
            break
    holder = next(chunk_id for chunk_id, node in (await chunk_nodes(workspace)).items() if node == number)
    assert holder.startswith("intruder-"), "a new chunk holds the deleted chunk's number"
    vector = await core.embedder.embed_query("kiln")
    reads = workspace.stores.search
    assert await reads.fetch_chunks([gone], vector, filters=SearchFilter(), nodes=[number]) == []
    both = await reads.fetch_chunks([gone, holder], vector, filters=SearchFilter(), nodes=[number, number])
    assert [hit.chunk_id for hit in both] == [holder]


async def profiled_scans(client: GraphClient, query: str, params: dict[str, object]) -> list[str]:
    """The steps of the query's profile that find nodes (scans and seeks)."""
    # PROFILE takes no parameters of its own: they go in the query's CYPHER header, as JSON literals.
    header = "CYPHER " + " ".join(f"{k}={json.dumps(v)}" for k, v in params.items())
    profile = await client.command("GRAPH.PROFILE", client.graph_name, f"{header} {query}")
    steps = [step.decode() if isinstance(step, bytes) else str(step) for step in profile]
    return [step for step in steps if "Scan" in step or "Seek" in step]


async def test_the_fetch_by_number_reads_no_index_and_scans_no_label(core: ZapomniCore) -> None:
    for text in TEXTS:
        await core.memories.add(AddMemoryRequest(text=text))
    workspace = await workspace_of(core)
    nodes = await chunk_nodes(workspace)
    params = {"nodes": list(nodes.values()), "ids": list(nodes), "vector": [0.0] * core.embedder.dimension}
    scans = await profiled_scans(workspace.stores.client, _FETCH_BY_NODE, params | SearchFilter().as_params())
    assert len(scans) == 1 and "Node By Label and ID Scan" in scans[0], scans
    assert "Records produced: 3," in scans[0], scans


async def test_a_hits_update_links_are_read_by_its_number(core: ZapomniCore) -> None:
    older = await core.memories.add(AddMemoryRequest(text="Our office is on Baker Street, second floor."))
    newer = await core.memories.add(AddMemoryRequest(text="We moved: the office is at 14 Kings Road now."))
    workspace = await workspace_of(core)
    link = LinkRow(older.memory_id, newer.memory_id, 0.9, "office", "self", ("moved",), "We moved", "test")
    if not await workspace.stores.updates.of([older.memory_id]):  # found by detection already, or linked here
        await workspace.stores.updates.link([link])
    found = await core.memories.search(SearchRequest(query="where is the office?"))
    by_id = {hit.memory_id: hit for hit in found.results}
    assert [entry.memory_id for entry in by_id[older.memory_id].superseded_by] == [newer.memory_id]
    assert [entry.memory_id for entry in by_id[newer.memory_id].supersedes] == [older.memory_id]
    rows = await workspace.stores.client.ro_query("MATCH (m:Memory) RETURN m.id, ID(m)")
    numbers = {row[0]: int(row[1]) for row in rows}
    params = {"ids": [older.memory_id], "nodes": [numbers[older.memory_id]]}
    scans = await profiled_scans(workspace.stores.client, _LINKS_AT, params)
    assert scans and all("Node By Label and ID Scan" in step for step in scans), scans
    # A number now held by another memory finds nothing for this one.
    assert await workspace.stores.updates.of([older.memory_id], nodes=[numbers[newer.memory_id]]) == []
