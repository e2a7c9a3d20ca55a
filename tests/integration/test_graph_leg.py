"""Graph expansion in search, on the real embedded store and embedder: memories linked by shared entities.

The graphs are written the way the build job writes them (hand-made extractor output -> `memory_graph_rows`
-> `write_memory_graph` under a claimed job), so the entity keys are the product's own.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from tests.helpers import open_core
from zapomni_core import Settings, ZapomniCore
from zapomni_core.graph.building import memory_graph_rows
from zapomni_core.graph.expansion import ExpansionConfig, GraphExpansion, fuse_leg, idf, query_entity_keys
from zapomni_core.graph.extraction import EXCLUSIVE_RELATIONS, ChunkGraph, Mention, Relation
from zapomni_core.graph.merge import EntityIndex
from zapomni_core.kernel.registry import Workspace
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.search import Candidate, SearchOptions, SearchPipeline, reciprocal_rank_fusion
from zapomni_core.search.types import RetrievalQuery
from zapomni_db import ChunkHit, JobRecord, MemoryInfo, SearchFilter
from zapomni_db.graph_neighbours import GraphNeighbours

pytestmark = pytest.mark.anyio

OWNER = "graph-leg-test"

# Entities of each memory, (name, type); the query asks about Maria Lindqvist's dog.
ADOPTION = "Maria Lindqvist adopted a greyhound called Pixel last spring."
VET = "The veterinarian in Tromsø treated Pixel for a sore paw."  # shares Pixel, and no word with the query
DOGGY = [
    "Dogs need a walk every day, whatever the weather.",
    "Our neighbour's dog barks at the postman.",
    "A dog show in Bergen drew a large crowd.",
    "Which dog breeds shed the least hair?",
]
OTHER = [
    "The quarterly report is due on Friday.",
    "I switched the build to a newer compiler.",
    "Remember to renew the car insurance.",
    "The sourdough needs twelve hours to rise.",
    "Our team retro moved to Thursday afternoons.",
    "The printer on floor three is out of toner.",
]
QUERY = "Which dog did Maria Lindqvist adopt?"


@pytest.fixture
async def expanding(data_dir: Path) -> AsyncIterator[ZapomniCore]:
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_EXPANSION=True, ZAPOMNI_GRAPH_AUTO=False
    )
    async with open_core(settings, background_jobs=False) as (engine, _info):
        yield engine


async def default_workspace(core: ZapomniCore) -> Workspace:
    workspace = await core.workspaces.registry.get(None, create=True)
    assert workspace is not None
    return workspace


async def remember(
    core: ZapomniCore,
    text: str,
    entities: Sequence[tuple[str, str]] = (),
    relations: Sequence[tuple[str, str, str]] = (),
) -> str:
    """Add a memory and write its graph as the build job would: one chunk, these entities and relations."""
    memory_id = (await core.memories.add(AddMemoryRequest(text=text))).memory_id
    if not entities:
        return memory_id
    stores = (await default_workspace(core)).stores
    memory, chunks = await stores.reads.get(memory_id), await stores.reads.chunks(memory_id)
    assert memory is not None and len(chunks) == 1
    graph = ChunkGraph(
        entities=tuple(Mention(name, etype, 0.9) for name, etype in entities),
        relations=tuple(Relation(s, o, t, t.lower(), 0.75, text, "pattern") for s, t, o in relations),
    )
    index = EntityIndex(await stores.graph.known_entities(), threshold=89.0)
    rows = memory_graph_rows(memory, chunks, [graph], index)
    job = JobRecord(id=str(uuid.uuid4()), kind="graph-leg-test", created_at=time.time())
    await stores.jobs.create(job)
    seen = await stores.jobs.get(job.id)
    assert seen is not None and await stores.jobs.claim(seen, OWNER, 600.0) is not None
    assert await stores.graph.write_memory_graph(
        memory_id, job.id, OWNER, rows.entities, rows.mentions, rows.relations, sorted(EXCLUSIVE_RELATIONS)
    )
    return memory_id


async def ranking(core: ZapomniCore, query: str, pipeline: SearchPipeline | None = None) -> list[tuple[str, list[str]]]:
    """(memory id, legs) of the hybrid results, limit 10, through the workspace's pipeline or `pipeline`."""
    if pipeline is None:
        results = (await core.memories.search(SearchRequest(query=query, limit=10))).results
        return [(r.memory_id, list(r.matched_by)) for r in results]
    retrieval = RetrievalQuery(query, await core.embedder.embed_query(query), SearchFilter())
    ranked = await pipeline.run(retrieval, SearchOptions(limit=10))
    return [(r.candidate.memory_id, list(r.legs)) for r in ranked]


def position(found: list[tuple[str, list[str]]], memory_id: str) -> int | None:
    return next((i + 1 for i, (mid, _) in enumerate(found) if mid == memory_id), None)


async def test_expansion_surfaces_a_memory_sharing_an_entity_with_the_top_hit(expanding: ZapomniCore) -> None:
    core = expanding
    adoption = await remember(
        core, ADOPTION, [("Maria Lindqvist", "PERSON"), ("Pixel", "OTHER")], [("Maria Lindqvist", "OWNS", "Pixel")]
    )
    vet = await remember(core, VET, [("Tromsø", "PLACE"), ("Pixel", "OTHER")])
    for text in DOGGY:
        await remember(core, text, [("Bergen", "PLACE")] if "Bergen" in text else [])
    for text in OTHER:
        await remember(core, text)
    workspace = await default_workspace(core)
    assert workspace.search.expansion is not None, "ZAPOMNI_GRAPH_EXPANSION=true gives the pipeline a graph leg"
    plain = SearchPipeline(workspace.search.retrievers)

    without = await ranking(core, QUERY, plain)
    with_graph = await ranking(core, QUERY)
    assert without[0][0] == with_graph[0][0] == adoption, (adoption, vet, without, with_graph)
    assert all("graph" not in legs for _, legs in without)
    before, after = position(without, vet), position(with_graph, vet)
    assert after is not None and after <= 3, with_graph
    assert before is None or before > after, (without, with_graph)
    assert "graph" in dict(with_graph)[vet] and "keyword" not in dict(with_graph)[vet], "found through Pixel alone"
    # Modes other than hybrid are left alone.
    vector_only = (await core.memories.search(SearchRequest(query=QUERY, mode="vector", limit=10))).results
    assert all("graph" not in r.matched_by for r in vector_only)


async def test_the_query_names_entities_and_depth_two_follows_relations(expanding: ZapomniCore) -> None:
    core = expanding
    # Ana's note names Quill; another names Quill and Harbor Labs with a relation; a third only Harbor Labs.
    # A date links nothing by default: "next month" is said of many things.
    await remember(
        core,
        "Ana Duarte is moving her team onto Quill next month.",
        [("Ana Duarte", "PERSON"), ("Quill", "PRODUCT"), ("next month", "DATE")],
    )
    payroll = await remember(core, "Payroll closes early next month.", [("next month", "DATE")])
    await remember(
        core,
        "Quill was built at Harbor Labs.",
        [("Quill", "PRODUCT"), ("Harbor Labs", "ORG")],
        [("Harbor Labs", "CREATED", "Quill")],
    )
    labs = await remember(core, "Harbor Labs hired forty engineers in June.", [("Harbor Labs", "ORG")])
    for text in OTHER:
        await remember(core, text)
    workspace = await default_workspace(core)
    neighbours = GraphNeighbours(workspace.stores.client)
    text = "what is ana duarte up to"
    query = RetrievalQuery(text, await core.embedder.embed_query(text), SearchFilter())

    # No seeds at all: the lower-case name in the query still resolves to the stored entity.
    assert "ana duarte|PERSON" in query_entity_keys(query.text)
    config = ExpansionConfig(query_entities=True)
    named = await GraphExpansion(neighbours, workspace.stores.search, config).candidates(query, [], 10)
    assert [c.hit.text for c in named] == ["Ana Duarte is moving her team onto Quill next month."]

    seed = await seed_candidate(core, workspace, "Ana Duarte is moving her team onto Quill next month.")
    depth1 = await GraphExpansion(neighbours, workspace.stores.search).candidates(query, [seed], 10)
    assert [c.hit.text for c in depth1] == ["Quill was built at Harbor Labs."], "Quill is shared; the seed is left out"
    depth2 = await GraphExpansion(neighbours, workspace.stores.search, ExpansionConfig(depth=2)).candidates(
        query, [seed], 10
    )
    assert [c.memory_id for c in depth2][1:] == [labs], "Harbor Labs is related to Quill: one hop further"
    assert depth2[0].leg_score > depth2[1].leg_score, "a related entity counts less than a shared one"
    with_dates = await GraphExpansion(neighbours, workspace.stores.search, ExpansionConfig(dates=True)).candidates(
        query, [seed], 10
    )
    assert payroll in [c.memory_id for c in with_dates] and len(with_dates) == 2


async def test_hub_entities_are_skipped_or_capped_and_count_less_than_rare_ones(expanding: ZapomniCore) -> None:
    core = expanding
    # Sam speaks in 32 notes (a hub); two notes share the rare "Kestrel Cove" with the seed.
    seed_text = "Sam: we camped at Kestrel Cove with the kids."
    await remember(core, seed_text, [("Sam", "PERSON"), ("Kestrel Cove", "PLACE")])
    rare = await remember(
        core, "Sam: the tide at Kestrel Cove came in fast.", [("Sam", "PERSON"), ("Kestrel Cove", "PLACE")]
    )
    rare_only = await remember(core, "Kestrel Cove has a small ferry pier.", [("Kestrel Cove", "PLACE")])
    hub = [
        await remember(core, f"Sam: note number {i} about the weekly plans.", [("Sam", "PERSON")]) for i in range(30)
    ]
    workspace = await default_workspace(core)
    neighbours = GraphNeighbours(workspace.stores.client)
    counts = await neighbours.mention_counts(["sam|PERSON", "kestrel cove|PLACE", "nobody|PERSON"])
    assert counts == {"sam|PERSON": 32, "kestrel cove|PLACE": 3}
    assert idf(32, 33) < idf(3, 33)

    seed = await seed_candidate(core, workspace, seed_text)
    text = "Sam camping at Kestrel Cove, the tide"
    query = RetrievalQuery(text, await core.embedder.embed_query(text), SearchFilter())
    for hubs in ("skip", "cap"):
        for weighted in (True, False):
            config = ExpansionConfig(per_entity=5, weighted=weighted, hubs=hubs)
            found = await GraphExpansion(neighbours, workspace.stores.search, config).candidates(query, [seed], 50)
            ids = [c.memory_id for c in found]
            assert seed.memory_id not in ids
            if hubs == "skip":
                assert sorted(ids) == sorted([rare, rare_only]), "a hub (over per_entity mentions) links nothing"
                continue
            assert len([m for m in ids if m in hub]) <= 5, "a capped hub gives at most per_entity chunks"
            assert ids[0] == rare, "two shared entities beat one"
            if weighted:
                assert ids[1] == rare_only, "a rare shared entity beats the hub"
                assert found[1].leg_score > found[-1].leg_score


async def seed_candidate(core: ZapomniCore, workspace: Workspace, text: str) -> Candidate:
    """The chunk holding `text`, as a search leg would have found it for that very text."""
    rows = await workspace.stores.client.ro_query(
        "MATCH (m:Memory)-[:HAS_CHUNK]->(c:Chunk) WHERE coalesce(c.text, m.text) = $t RETURN c.id", {"t": text}
    )
    vector = await core.embedder.embed_query(text)
    (hit,) = await workspace.stores.search.fetch_chunks([rows[0][0]], vector, filters=SearchFilter())
    return Candidate.from_hit(hit)


def test_query_entity_keys_skip_stopword_edges_and_cover_every_family() -> None:
    keys = query_entity_keys("When did Caroline's sister visit the Golden Gate Bridge?")
    assert "caroline|PERSON" in keys and "golden gate bridge|PLACE" in keys and "golden gate bridge|ORG" in keys
    assert not any(key.startswith(("when", "did ", "the ")) for key in keys)
    assert query_entity_keys("what is it?") == []


def fake(chunk_id: str, similarity: float, leg_score: float) -> Candidate:
    memory = MemoryInfo(
        id=f"m-{chunk_id}", tags=[], source=None, date=None, created_at=0.0, updated_at=0.0, chunk_count=1
    )
    return Candidate(ChunkHit(memory, chunk_id, "", 1 - similarity), similarity, leg_score)


def test_fusing_the_graph_list_afterwards_equals_fusing_all_three_lists() -> None:
    vector = [fake(c, s, s) for c, s in (("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6))]
    keyword = [fake(c, s, b) for c, s, b in (("c", 0.7, 9.0), ("e", 0.5, 7.0), ("a", 0.9, 7.0))]
    graph = [fake(c, s, g) for c, s, g in (("f", 0.4, 3.2), ("d", 0.6, 1.1), ("b", 0.8, 1.1))]
    at_once = reciprocal_rank_fusion({"vector": vector, "keyword": keyword, "graph": graph})
    afterwards = fuse_leg(reciprocal_rank_fusion({"vector": vector, "keyword": keyword}), "graph", graph, k=60)
    assert [(r.candidate.chunk_id, round(r.rank_score, 12), r.legs) for r in afterwards] == [
        (r.candidate.chunk_id, round(r.rank_score, 12), r.legs) for r in at_once
    ]
    half = fuse_leg(reciprocal_rank_fusion({"vector": vector}), "graph", graph, k=60, weight=0.5)
    assert {r.candidate.chunk_id: r.rank_score for r in half}["f"] == pytest.approx(0.5 / 61)
