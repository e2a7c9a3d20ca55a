"""ZapomniCore against a real embedded FalkorDB and the real ONNX embedder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import graph_client, open_core, similarity
from zapomni_core import Settings, ZapomniCore
from zapomni_core.memories.requests import (
    MAX_TEXT_BYTES,
    AddMemoryRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    SearchRequest,
    UpdateMemoryRequest,
)
from zapomni_db import SchemaSettings, migrate
from zapomni_db.memories import WRITE_BATCH
from zapomni_db.schema import current_version, latest_version, wait_for_indexes

pytestmark = pytest.mark.anyio

FACTS = {
    "paris": (
        "The Eiffel Tower in Paris was finished in 1889 for the World's Fair.",
        ["travel"],
        "wiki",
        "2023-06-01",
    ),
    "python": (
        "Python's asyncio runs coroutines on a single-threaded event loop.",
        ["code"],
        "docs",
        "2024-01-15",
    ),
    "dentist": ("My dentist appointment is next Tuesday at 3pm.", ["personal"], "calendar", "2024-03-10"),
}


async def add(core: ZapomniCore, text: str, **metadata: object) -> str:
    result = await core.memories.add(AddMemoryRequest.model_validate({"text": text, "metadata": metadata or None}))
    return result.memory_id


async def search(core: ZapomniCore, query: str, limit: int = 10, **filters: object) -> list[str]:
    """Memory ids in rank order; unrelated results included, so filters alone decide what may come back."""
    request = SearchRequest.model_validate(
        {"query": query, "limit": limit, "filters": filters or None, "include_unrelated": True}
    )
    return [hit.memory_id for hit in (await core.memories.search(request)).results]


@pytest.fixture
async def facts(core: ZapomniCore) -> dict[str, str]:
    ids = {}
    for key, (text, tags, source, date) in FACTS.items():
        ids[key] = await add(core, text, tags=tags, source=source, date=date)
    return ids


async def test_search_finds_the_right_memory_first(core: ZapomniCore, facts: dict[str, str]) -> None:
    assert (await search(core, "when was the tower in France built?"))[0] == facts["paris"]
    assert (await search(core, "how does async Python schedule work?"))[0] == facts["python"]
    assert (await search(core, "when do I see the dentist"))[0] == facts["dentist"]


async def test_results_carry_scores_and_metadata(core: ZapomniCore, facts: dict[str, str]) -> None:
    result = await core.memories.search(SearchRequest(query="Eiffel Tower", limit=3, include_unrelated=True))
    top = result.results[0]
    assert top.memory_id == facts["paris"]
    assert top.text == FACTS["paris"][0]
    assert (top.tags, top.source, top.date) == (["travel"], "wiki", "2023-06-01T00:00:00+00:00")
    scores = [similarity(hit) for hit in result.results]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > 0.5 > scores[-1]
    # By default the unrelated memories (low similarity, no word in common) are left out.
    assert [
        hit.memory_id for hit in (await core.memories.search(SearchRequest(query="Eiffel Tower", limit=3))).results
    ] == [facts["paris"]]


async def test_filters_narrow_the_results(core: ZapomniCore, facts: dict[str, str]) -> None:
    assert await search(core, "anything", tags=["code", "personal"]) == await search(
        core, "anything", tags=["personal", "code"]
    )
    assert set(await search(core, "anything", tags=["code", "personal"])) == {
        facts["python"],
        facts["dentist"],
    }
    assert await search(core, "Eiffel Tower", source="calendar") == [facts["dentist"]]
    assert set(await search(core, "x", date_from="2024-01-01")) == {facts["python"], facts["dentist"]}
    assert await search(core, "x", date_to="2024-01-15") == await search(core, "x", date_to="2024-01-15T23:00:00")
    assert set(await search(core, "x", date_from="2024-01-15", date_to="2024-01-15")) == {facts["python"]}
    assert await search(core, "x", tags=["nope"]) == []


async def test_a_selective_filter_still_fills_the_limit(core: ZapomniCore) -> None:
    """Far-away matches must come back even when hundreds of nearer chunks fail the filter."""
    for i in range(150):
        await add(core, f"Note {i} about cooking pasta with tomato sauce and basil.", tags=["food"])
    rare = {await add(core, f"Quantum chromodynamics lecture {i}.", tags=["physics"]) for i in range(3)}
    found = await search(core, "cooking pasta with tomato sauce", limit=3, tags=["physics"])
    assert set(found) == rare


async def test_stats_count_memories_and_chunks(core: ZapomniCore, facts: dict[str, str], settings: Settings) -> None:
    before = await core.workspaces.stats()
    assert (before.total_memories, before.total_chunks) == (3, 3)
    await core.memories.search(SearchRequest(query="x"))
    stats = await core.workspaces.stats()
    assert stats.embedder == "onnx:all-MiniLM-L6-v2-int8" and stats.embedding_dimension == 384
    assert stats.avg_query_latency_ms is not None and stats.avg_query_latency_ms > 0
    assert stats.cache_backend == "memory"
    assert stats.cache_hit_rate == 0.0  # three documents and one query, all new
    assert stats.database_size_mb is not None and stats.database_size_mb > 0
    assert stats.graph_name == settings.graph_name


async def test_a_long_text_is_chunked_and_every_part_is_findable(core: ZapomniCore) -> None:
    paragraphs = [
        f"Paragraph {i}. " + " ".join(f"Filler sentence {i}.{j} about nothing in particular." for j in range(12))
        for i in range(20)
    ]
    paragraphs[13] = "The secret launch code for project Bluebird is 7-alpha-niner."
    result = await core.memories.add(AddMemoryRequest(text="\n\n".join(paragraphs)))
    assert result.chunks_created > 5
    assert result.text_preview.startswith("Paragraph 0.")
    hits = (await core.memories.search(SearchRequest(query="launch code for project Bluebird", limit=1))).results
    assert hits[0].memory_id == result.memory_id
    assert "7-alpha-niner" in hits[0].text


async def test_a_memory_bigger_than_one_write_batch_is_stored_whole(data_dir: Path) -> None:
    # Small chunks keep this quick: the point is the number of chunks, not their size.
    # Indexed in the request (as the CLI and imports do), not by a background job.
    settings = Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir,
        ZAPOMNI_CHUNK_MAX_TOKENS=16,
        ZAPOMNI_BACKGROUND_ADD_BYTES=MAX_TEXT_BYTES + 1,
        LOG_LEVEL="WARNING",
    )
    text = " ".join(f"Item {i} is number {i}." for i in range(WRITE_BATCH * 3))
    async with open_core(settings) as (core, _info):
        result = await core.memories.add(AddMemoryRequest(text=text))
        assert result.chunks_created > WRITE_BATCH
        stats = await core.workspaces.stats()
        assert (stats.total_memories, stats.total_chunks) == (1, result.chunks_created)
        hits = (await core.memories.search(SearchRequest(query="Item 1234 is number 1234.", limit=1))).results
        assert hits[0].memory_id == result.memory_id
        assert "Item 1234 is number 1234." in hits[0].text
        async with graph_client(data_dir) as client:
            marks = await client.ro_query("MATCH (s:Staging) RETURN count(s)")
        assert marks == [[0]], "the write's crash marker goes once its chunks are linked"


@pytest.mark.own_database
async def test_memories_survive_a_restart(settings: Settings) -> None:
    async with open_core(settings) as (core, info):
        assert info.started_database
        memory_id = await add(core, "Remember that the staging database password rotates monthly.")
    async with open_core(settings) as (core, _info):
        assert (await search(core, "how often does the staging password change?"))[0] == memory_id
        assert (await core.workspaces.stats()).total_memories == 1


@pytest.mark.own_database
async def test_two_engines_on_one_data_dir_share_one_database(settings: Settings) -> None:
    async with open_core(settings) as (first, first_info), open_core(settings) as (second, second_info):
        assert first_info.started_database and not second_info.started_database
        memory_id = await add(first, "Alice prefers tea over coffee.")
        assert (await search(second, "what does Alice drink?"))[0] == memory_id
        other_id = await add(second, "Bob is allergic to peanuts.")
        assert (await search(first, "food allergy"))[0] == other_id


@pytest.mark.own_database
async def test_migrations_are_idempotent(core: ZapomniCore, data_dir: Path) -> None:
    async with graph_client(data_dir) as client:
        settings = SchemaSettings(dimension=384)
        assert await current_version(client) == latest_version(settings)
        assert await migrate(client, settings) == []
        assert await migrate(client, settings, dry_run=True) == []


async def test_an_index_rebuild_longer_than_the_timeout_is_waited_for_while_it_progresses(data_dir: Path) -> None:
    # Dropping one property's index makes FalkorDB rebuild the label's whole index, vector index included: at a
    # million chunks that outlasted the 600 s a start waited, and the first server after migration 9 gave up.
    # The wait below took 5.6 s after 20,000 vectors and 1.8 s after 8,000 on a quiet 2-core machine: 10,000.
    from zapomni_db import EmbeddedDatabase

    db = EmbeddedDatabase(data_dir)
    db.open()
    try:
        async with graph_client(data_dir, "rebuild") as client:
            await migrate(client, SchemaSettings(dimension=64))
            await client.query(
                "UNWIND range(1, 10000) AS i "
                "CREATE (:Chunk {id: toString(i), embedding: vecf32([x IN range(1, 64) | rand()])})"
            )
            await wait_for_indexes(client)
            await client.query("CREATE INDEX FOR (c:Chunk) ON (c.probe)")
            started = time.monotonic()
            await wait_for_indexes(client, timeout_s=0.5)
            waited = time.monotonic() - started
            statuses = await client.ro_query("CALL db.indexes() YIELD label, status RETURN label, status")
        assert waited > 1.0, "the rebuild should outlast the timeout, or this test shows nothing"
        assert {status for _, status in statuses} == {"OPERATIONAL"}
    finally:
        db.close()


async def test_a_fresh_graph_is_migrated_from_version_zero(data_dir: Path) -> None:
    from zapomni_db import EmbeddedDatabase

    db = EmbeddedDatabase(data_dir)
    db.open()
    try:
        async with graph_client(data_dir, "fresh") as client:
            settings = SchemaSettings(dimension=8)
            assert await current_version(client) == 0
            due = await migrate(client, settings, dry_run=True)
            assert [m.version for m in due] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
            assert await current_version(client) == 0, "a dry run changes nothing"
            assert [m.version for m in await migrate(client, settings)] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
            assert await current_version(client) == 11
            indexes = await client.ro_query("CALL db.indexes() YIELD label, properties RETURN label, properties")
            indexed = {(label, prop) for label, props in indexes for prop in props}
            assert {
                ("Chunk", "embedding"),
                ("Chunk", "id"),
                ("Memory", "id"),
                ("Memory", "seq"),
                ("Memory", "content_hash"),
                ("Memory", "created_at"),
                ("Change", "seq"),
            } <= indexed
            assert await migrate(client, settings) == []
    finally:
        db.close()


@pytest.mark.own_database
async def test_memories_stored_before_hashes_and_heads_get_them_on_opening(settings: Settings, data_dir: Path) -> None:
    text = "Heads are cut in Python. " * 40
    async with open_core(settings) as (core, _info):
        memory_id = await add(core, text)
        async with graph_client(data_dir) as client:  # what an older version of the store holds
            await client.query("MATCH (m:Memory) SET m.head = null, m.content_hash = null")
            await client.query("MATCH (s:SchemaVersion) SET s.derived = null")
    async with open_core(settings) as (core, _info):
        async with graph_client(data_dir) as client:
            rows = await client.ro_query("MATCH (m:Memory) RETURN m.id, m.head, m.content_hash")
            # Once: the store records it, and the next opening reads no memory for it.
            await client.query("MATCH (m:Memory) SET m.head = null")
        assert len(rows) == 1 and rows[0][0] == memory_id
        assert rows[0][1] == text[:400] and rows[0][2] is not None
        assert await add(core, text) == memory_id, "the hash found again: the same text is stored once"
    async with open_core(settings) as (core, _info), graph_client(data_dir) as client:
        assert await client.ro_query("MATCH (m:Memory) RETURN m.head") == [[None]]


@pytest.mark.own_database
async def test_a_text_no_longer_than_a_head_is_not_stored_twice(core: ZapomniCore, data_dir: Path) -> None:
    short, long = "A short note.", "A long note. " * 40
    ids = {await add(core, short): None, await add(core, long): long[:400]}
    async with graph_client(data_dir) as client:
        assert dict(await client.ro_query("MATCH (m:Memory) RETURN m.id, m.head")) == ids
    page = await core.memories.page(ListMemoriesRequest(limit=10, order="oldest"))
    assert [m.preview for m in page.memories] == [short, long[:199].strip() + "\u2026"]


@pytest.mark.own_database
async def test_a_one_chunk_memory_stores_its_text_once_and_every_read_finds_it(
    settings: Settings, data_dir: Path
) -> None:
    # Long enough (over three quarters of a chunk) that an edit appending a paragraph leaves it a chunk of its own.
    short = "The spare key hangs behind the garden shed door. " + " ".join(
        f"Note {i} on where the tools of the allotment are kept." for i in range(15)
    )
    extra = " ".join(f"Paragraph sentence {i} about the allotment and its compost heap." for i in range(80))
    async with open_core(settings) as (core, _info):
        memory_id = await add(core, short)
        async with graph_client(data_dir) as client:
            rows = await client.ro_query(
                "MATCH (m:Memory {id: $id})-[:HAS_CHUNK]->(c:Chunk) RETURN m.text, c.text", {"id": memory_id}
            )
        assert rows == [[short, None]], "the chunk keeps no copy of its memory's text"
        chunks = await core.memories.chunks(GetMemoryRequest(memory_id=memory_id))
        assert [c.text for c in chunks.chunks] == [short]
        for mode in ("vector", "keyword", "hybrid"):
            found = await core.memories.search(SearchRequest(query="spare key garden shed", limit=1, mode=mode))
            assert [(h.memory_id, h.text) for h in found.results] == [(memory_id, short)], mode
        # Another engine's keyword index catches up from the store, and reads the text from the memory.
        async with open_core(settings) as (other, _):
            found = await other.memories.search(SearchRequest(query="spare key", limit=1, mode="keyword"))
            assert [h.text for h in found.results] == [short]

        # Edited so that its first chunk is the old text: that chunk is not kept (it would read as the whole
        # new text), and it is written with its own text now that the memory has more than one chunk.
        await core.memories.update(UpdateMemoryRequest(memory_id=memory_id, text=f"{short}\n\n{extra}"))
        chunks = await core.memories.chunks(GetMemoryRequest(memory_id=memory_id))
        assert len(chunks.chunks) > 1 and chunks.chunks[0].text == short, "or this test shows nothing"
        found = await core.memories.search(SearchRequest(query="spare key garden shed", limit=1, mode="keyword"))
        assert [h.text for h in found.results] == [short]
        async with graph_client(data_dir) as client:
            texts = await client.ro_query(
                "MATCH (:Memory {id: $id})-[:HAS_CHUNK]->(c:Chunk) RETURN c.text ORDER BY c.idx", {"id": memory_id}
            )
        assert [t for (t,) in texts] == [c.text for c in chunks.chunks]


@pytest.mark.own_database
async def test_a_migration_that_stopped_with_the_vector_index_dropped_builds_it_again(
    settings: Settings, data_dir: Path
) -> None:
    async with open_core(settings) as (core, _info):
        memory_id = await add(core, "Descaling the kettle with citric acid once a month.")
        async with graph_client(data_dir) as client:  # migration 10 stopped after stripping, before the build
            await client.query("MATCH (s:SchemaVersion) SET s.version = 9")
            await client.query("DROP VECTOR INDEX FOR (c:Chunk) ON (c.embedding)")
    async with open_core(settings) as (core, _info), graph_client(data_dir) as client:
        assert await current_version(client) == 11
        found = await core.memories.search(SearchRequest(query="kettle limescale", limit=1, mode="vector"))
        assert [h.memory_id for h in found.results] == [memory_id]


@pytest.mark.own_database
async def test_orphan_chunks_from_an_interrupted_write_are_removed(settings: Settings, data_dir: Path) -> None:
    hour_ago = time.time() - 7200
    async with open_core(settings) as (core, _info):
        await add(core, "A complete memory.")
        async with graph_client(data_dir) as client:
            # What a crash between chunk batches and the final link leaves behind, and a large write another
            # process is making now (its marker is recent): only the first is a leftover.
            for memory_id, at in (("gone", hour_ago), ("busy", time.time())):
                await client.query(
                    "CREATE (s:Staging {memory_id: $m, at: $at}) "
                    "CREATE (s)-[:STAGES]->(:Chunk {id: $m + '-chunk', memory_id: $m, text: 'half written', "
                    "created_at: $at})",
                    {"m": memory_id, "at": at},
                )
        assert (await core.workspaces.stats()).total_chunks == 1, "unlinked chunks are not counted"
        assert await search(core, "half written") != []  # the complete memory, never the orphan
    async with open_core(settings) as (core, _info):
        async with graph_client(data_dir) as client:
            chunks = await client.ro_query("MATCH (c:Chunk) RETURN c.id ORDER BY c.id")
            marks = await client.ro_query("MATCH (s:Staging) RETURN s.memory_id")
        assert [r[0] for r in chunks if r[0].endswith("-chunk")] == ["busy-chunk"]
        assert marks == [["busy"]]


@pytest.mark.own_database
async def test_unmarked_leftovers_of_an_older_version_are_swept_once_by_the_migration(
    settings: Settings, data_dir: Path
) -> None:
    async with open_core(settings) as (core, _info):
        await add(core, "A complete memory.")
        async with graph_client(data_dir) as client:  # a store of version 7, whose crashes left no marker
            await client.query("MATCH (s:SchemaVersion) SET s.version = 7")
            await client.query(
                "CREATE (:Chunk {id: 'old-orphan', memory_id: 'gone', created_at: $t}) "
                "CREATE (:Chunk {id: 'recent', memory_id: 'busy', created_at: $now})",
                {"t": time.time() - 7200, "now": time.time()},
            )
    async with open_core(settings) as (core, _info), graph_client(data_dir) as client:
        rows = await client.ro_query("MATCH (c:Chunk) WHERE c.memory_id IN ['gone', 'busy'] RETURN c.id")
        assert rows == [["recent"]], "an hour's grace for a write still in progress"
        assert await current_version(client) == 11


@pytest.mark.own_database
async def test_chunks_a_version_8_write_staged_hang_off_their_marker_and_the_memory_id_index_goes(
    settings: Settings, data_dir: Path
) -> None:
    async with open_core(settings) as (core, _info):
        await add(core, "A complete memory.")
        async with graph_client(data_dir) as client:  # version 8 found staged chunks by their indexed memory id
            await client.query("MATCH (s:SchemaVersion) SET s.version = 8")
            for memory_id, at in (("gone", time.time() - 7200), ("busy", time.time())):
                await client.query(
                    "CREATE (:Staging {memory_id: $m, at: $at}) "
                    "CREATE (:Chunk {id: $m + '-chunk', memory_id: $m, text: 'half written', created_at: $at})",
                    {"m": memory_id, "at": at},
                )
    async with open_core(settings) as (core, _info), graph_client(data_dir) as client:
        assert await current_version(client) == 11
        hung = await client.ro_query("MATCH (s:Staging)-[:STAGES]->(c:Chunk) RETURN s.memory_id, c.id")
        assert hung == [["busy", "busy-chunk"]], "the old write's leftover swept, the busy one kept on its marker"
        indexed = await client.ro_query(
            "CALL db.indexes() YIELD label, properties WHERE label = 'Chunk' RETURN properties"
        )
        assert "memory_id" not in {name for row in indexed for name in row[0]}
        assert "id" in {name for row in indexed for name in row[0]}


@pytest.mark.own_database
async def test_memories_stored_before_the_speaker_property_get_it_once_on_opening(
    settings: Settings, data_dir: Path
) -> None:
    async with open_core(settings) as (core, _info):
        sent = await add(core, "I adopted a puppy.", speaker="Caroline")
        inferred = await add(core, "Melanie: What a lovely puppy!")
        note = await add(core, "Buy dog food on the way home.")
        async with graph_client(data_dir) as client:  # what an older version of the store holds
            await client.query("MATCH (m:Memory) SET m.speaker = null")
            await client.query("MATCH (s:SchemaVersion) SET s.derived = null")
    async with open_core(settings) as (core, _info), graph_client(data_dir) as client:
        rows = await client.ro_query("MATCH (m:Memory) RETURN m.id, m.speaker")
        assert dict(rows) == {sent: "Caroline", inferred: "Melanie", note: None}
        # Once: the store records it, and the next opening reads no memory for it.
        await client.query("MATCH (m:Memory {id: $id}) SET m.speaker = null", {"id": sent})
    async with open_core(settings) as (core, _info):
        async with graph_client(data_dir) as client:
            rows = await client.ro_query("MATCH (m:Memory {id: $id}) RETURN m.speaker", {"id": sent})
        assert rows == [[None]]


async def test_a_backfill_leaves_a_memory_changed_since_it_was_read(core: ZapomniCore) -> None:
    memory_id = await add(core, "Caroline: I adopted a puppy.")
    workspace = await core.workspaces.registry.get(None, create=False)
    assert workspace is not None
    maintenance = workspace.stores.maintenance
    [(_id, sources)] = [row for row in await maintenance.memories_without("speaker", "", 10) if row[0] == memory_id]
    await maintenance.set_derived("speaker", [(memory_id, "Stale", ["{}", '{"speaker": "Someone"}'])])
    assert (await core.memories.get(GetMemoryRequest(memory_id=memory_id))).speaker == "Caroline"
    await maintenance.set_derived("speaker", [(memory_id, "Fresh", sources)])
    assert (await core.memories.get(GetMemoryRequest(memory_id=memory_id))).speaker == "Fresh"
