"""Schema migrations on a real embedded FalkorDB: a version-0 graph comes out like a new one, once.

A version-0 graph is what Zapomni wrote before schema versions were recorded: Memory and Chunk
nodes with their properties, real embeddings and keyword statistics, but no SchemaVersion node,
no indexes, no Sequence node and no `Memory.seq`. It is built here with raw Cypher.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import run_cli
from tests.helpers import open_core
from tests.processes import server_env
from zapomni_core import Settings
from zapomni_core.database import open_database
from zapomni_core.embedders.onnx_minilm import OnnxMiniLMEmbedder
from zapomni_core.memories.requests import AddMemoryRequest, SearchRequest
from zapomni_core.search.analyzer import Analyzer
from zapomni_db import GraphClient, SchemaMismatch, SchemaSettings, migrate, wait_for_indexes
from zapomni_db.schema import current_version, latest_version

pytestmark = pytest.mark.anyio

ONNX_DIMENSION = 384
# (created_at, chunks). Two memories share a creation time: their ids decide their order.
FIXTURE = {
    "bread": (1000.0, ["Sourdough bread needs a lively starter and a long, slow rise before baking."]),
    "tea": (1000.0, ["Green tea should steep for two minutes in water just below boiling."]),
    "k8s": (
        2000.0,
        [
            "The Kubernetes cluster autoscaler adds nodes when pods cannot be scheduled.",
            "Node pools scale down after ten idle minutes; the error code KSA-4471 means a quota limit.",
        ],
    ),
    "bike": (500.0, ["Oil the bicycle chain every two hundred kilometres, more often after rain."]),
    "garden": (3000.0, ["Tomato seedlings go outside after the last frost, usually in mid May."]),
}


@asynccontextmanager
async def graph(settings: Settings) -> AsyncIterator[GraphClient]:
    async with AsyncExitStack() as stack:
        yield (await open_database(settings, stack)).client


async def write_version_zero(client: GraphClient) -> dict[str, str]:
    """The fixture as an unversioned graph; returns memory ids by key."""
    embedder = OnnxMiniLMEmbedder()
    analyzer = Analyzer()
    ids: dict[str, str] = {}
    try:
        for key, (created_at, texts) in FIXTURE.items():
            memory_id = ids[key] = str(uuid.uuid4())
            vectors = await embedder.embed_documents(texts)
            chunks = []
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                counts = analyzer.count(text)
                chunks.append(
                    {
                        "id": str(uuid.uuid4()),
                        "idx": i,
                        "text": text,
                        "embedding": vector,
                        "terms": counts.terms,
                        "counts": counts.counts,
                        "length": counts.length,
                    }
                )
            await client.query(
                "CREATE (m:Memory {id: $id, text: $text, created_at: $created_at, tags: [$key], source: 'fixture', "
                "date: null, date_ts: $created_at, metadata: '{}', chunk_count: $chunk_count}) "
                "WITH m UNWIND $chunks AS c CREATE (m)-[:HAS_CHUNK]->(:Chunk {id: c.id, memory_id: $id, idx: c.idx, "
                "text: c.text, embedding: vecf32(c.embedding), created_at: $created_at, terms: c.terms, "
                "term_counts: c.counts, term_length: c.length})",
                {
                    "id": memory_id,
                    "key": key,
                    "text": " ".join(texts),
                    "created_at": created_at,
                    "chunk_count": len(chunks),
                    "chunks": chunks,
                },
                create=True,  # version 0 had no migrations: the first memory created the graph
            )
    finally:
        await embedder.aclose()
    return ids


async def snapshot(client: GraphClient) -> dict[str, Any]:
    """What a migration may change: version, memory numbers, counter, indexes.

    A database that has just restarted rebuilds its indexes from its files ("UNDER CONSTRUCTION"): the
    snapshot waits for them, since that state is the restart's, not the migration's.
    """
    await wait_for_indexes(client)
    seqs = await client.ro_query("MATCH (m:Memory) RETURN m.id, m.seq")
    counter = await client.ro_query("MATCH (q:Sequence {id: 'chunks'}) RETURN q.value")
    indexes = await client.ro_query("CALL db.indexes() YIELD label, properties, types, options, status")
    return {
        "version": await current_version(client),
        "seqs": dict(seqs),
        "counter": counter[0][0] if counter else None,
        "indexes": sorted(json.dumps(row, sort_keys=True, default=str) for row in indexes),
    }


@pytest.fixture
async def version_zero(settings: Settings) -> dict[str, str]:
    async with graph(settings) as client:
        ids = await write_version_zero(client)
        state = await snapshot(client)
    assert state == {"version": 0, "seqs": dict.fromkeys(ids.values()), "counter": None, "indexes": []}
    return ids


async def test_migrate_brings_version_zero_to_the_latest_and_searchable(
    settings: Settings, version_zero: dict[str, str]
) -> None:
    schema = SchemaSettings(dimension=ONNX_DIMENSION)
    async with graph(settings) as client:
        applied = await migrate(client, schema)
        assert [m.version for m in applied] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
        await wait_for_indexes(client)
        after = await snapshot(client)

        assert after["version"] == latest_version(schema) == 11
        statuses = await client.ro_query("CALL db.indexes() YIELD label, status")
        assert {label for label, _ in statuses} == {
            "Memory", "Chunk", "Change", "Job", "Entity", "RELATED_TO", "File", "Symbol", "Class"
        }  # fmt: skip
        assert all(status == "OPERATIONAL" for _, status in statuses)
        indexed = {
            (label, field, kind)
            for label, types in await client.ro_query("CALL db.indexes() YIELD label, types")
            for field, kinds in types.items()
            for kind in kinds
        }
        assert indexed == {
            ("Memory", "id", "RANGE"),
            ("Memory", "source", "RANGE"),
            ("Memory", "status", "RANGE"),
            ("Memory", "graph_state", "RANGE"),
            ("Memory", "date_ts", "RANGE"),
            ("Memory", "seq", "RANGE"),
            ("Memory", "content_hash", "RANGE"),
            ("Memory", "created_at", "RANGE"),
            ("Memory", "speaker", "RANGE"),
            ("Memory", "thread", "RANGE"),
            ("Memory", "tags", "RANGE"),
            ("Change", "seq", "RANGE"),
            ("Chunk", "id", "RANGE"),
            ("Chunk", "embedding", "VECTOR"),
            ("Job", "id", "RANGE"),
            ("Job", "state", "RANGE"),
            ("Job", "memory_id", "RANGE"),
            ("Entity", "key", "RANGE"),
            ("Entity", "id", "RANGE"),
            ("Entity", "name", "RANGE"),
            ("RELATED_TO", "id", "RANGE"),
            ("RELATED_TO", "memory_id", "RANGE"),
            ("Memory", "kind", "RANGE"),
            ("File", "memory_id", "RANGE"),
            ("File", "codebase", "RANGE"),
            ("File", "relative", "RANGE"),
            ("Symbol", "id", "RANGE"),
            ("Symbol", "memory_id", "RANGE"),
            ("Symbol", "qualified_name", "RANGE"),
            ("Symbol", "name_lower", "RANGE"),
            ("Symbol", "codebase", "RANGE"),
            ("Class", "qualified_name", "RANGE"),
        }

        # Every memory numbered once, 1..n, by creation time then id; the counter past the last.
        order = sorted(FIXTURE, key=lambda key: (FIXTURE[key][0], version_zero[key]))
        assert after["seqs"] == {version_zero[key]: n for n, key in enumerate(order, start=1)}
        assert after["counter"] == len(FIXTURE)

        # A one-chunk memory's text is kept once, on the memory; the two chunks of k8s keep theirs.
        stored = await client.ro_query("MATCH (m:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN m.id, c.idx, c.text")
        assert {(m, idx): text for m, idx, text in stored} == {
            (version_zero[key], i): (text if len(texts) > 1 else None)
            for key, (_, texts) in FIXTURE.items()
            for i, text in enumerate(texts)
        }
        # The vector index was rebuilt around that change, not left with a stale copy of each changed chunk.
        total = len(stored)
        probe = (await client.ro_query("MATCH (c:Chunk) RETURN c.embedding LIMIT 1"))[0][0]
        entries = await client.ro_query(
            "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($probe)) YIELD node "
            "RETURN count(node), count(DISTINCT node)",
            {"k": total, "probe": list(probe)},
        )
        assert entries == [[total, total]]

        # Running it again changes nothing.
        assert await migrate(client, schema) == []
        assert await snapshot(client) == after

    # The engine opens it, and both legs see the old memories.
    async with open_core(settings) as (core, _info):
        for key, query in {"bread": "how long should sourdough rise", "bike": "bicycle chain oil"}.items():
            found = await core.memories.search(SearchRequest(query=query, limit=1, mode="vector"))
            assert [hit.memory_id for hit in found.results] == [version_zero[key]]
        found = await core.memories.search(SearchRequest(query="KSA-4471", limit=1, mode="keyword"))
        assert [hit.memory_id for hit in found.results] == [version_zero["k8s"]]
        assert (await core.workspaces.stats()).total_chunks == sum(len(texts) for _, texts in FIXTURE.values())

    async with graph(settings) as client:  # opening the engine migrated nothing more
        assert await snapshot(client) == after


async def test_memories_added_after_migration_are_numbered_after_the_old_ones(
    settings: Settings, version_zero: dict[str, str]
) -> None:
    async with open_core(settings) as (core, _info):  # open_core migrates too
        added = await core.memories.add(AddMemoryRequest(text="The boiler service is due every October."))
        found = await core.memories.search(SearchRequest(query="boiler service", limit=1, mode="keyword"))
        assert [hit.memory_id for hit in found.results] == [added.memory_id]
        # The old memories got their content hash when the engine opened: adding one again deduplicates.
        again = await core.memories.add(AddMemoryRequest(text=" ".join(FIXTURE["bike"][1])))
        assert (again.memory_id, again.deduplicated) == (version_zero["bike"], True)
    async with graph(settings) as client:
        seqs = {memory_id: int(seq) for memory_id, seq in await client.ro_query("MATCH (m:Memory) RETURN m.id, m.seq")}
    assert seqs[added.memory_id] == len(FIXTURE) + 1
    assert sorted(seqs.values()) == list(range(1, len(FIXTURE) + 2))


async def test_dry_run_lists_every_migration_and_changes_nothing(
    settings: Settings, version_zero: dict[str, str]
) -> None:
    async with graph(settings) as client:
        before = await snapshot(client)
        due = await migrate(client, SchemaSettings(dimension=ONNX_DIMENSION), dry_run=True)
        assert [(m.version, bool(m.description)) for m in due] == [
            (1, True),
            (2, True),
            (3, True),
            (4, True),
            (5, True),
            (6, True),
            (7, True),
            (8, True),
            (9, True),
            (10, True),
            (11, True),
        ]
        assert await snapshot(client) == before


async def test_indexing_version_zero_with_another_dimension_is_refused(
    settings: Settings, version_zero: dict[str, str]
) -> None:
    # A 768-d index over 384-d vectors would index none of them, silently.
    async with graph(settings) as client:
        before = await snapshot(client)
        with pytest.raises(SchemaMismatch, match=r"384-d.*768-d"):
            await migrate(client, SchemaSettings(dimension=768))
        assert await snapshot(client) == before


def zapomni(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = server_env(data_dir, LOG_LEVEL="WARNING")
    return run_cli(args, env)


@pytest.mark.own_database
async def test_the_migrate_command(data_dir: Path, version_zero: dict[str, str]) -> None:
    status = zapomni(data_dir, "migrate", "status", "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["version"] == 0 and report["latest_version"] == 11
    assert [m["version"] for m in report["pending"]] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert all(m["description"] for m in report["pending"])
    assert report["stored_embedder"] is None  # version 0 predates the claim
    assert report["configured_embedder"] == {"model": "onnx:all-MiniLM-L6-v2-int8", "dimension": 384, "error": None}
    assert report["stored_vector_dimension"] == 384 and report["vector_index_dimension"] is None
    assert report["chunks"] == 6
    assert report["reembed_needed"] is False and report["reembed_in_progress"] is None

    dry = zapomni(data_dir, "migrate", "apply", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would apply migration 1: memories, chunks and their indexes" in dry.stdout
    assert "would apply migration 2: " in dry.stdout
    assert "would apply migration 3: " in dry.stdout
    assert "would apply migration 4: durable jobs" in dry.stdout
    assert "would apply migration 5: knowledge graph" in dry.stdout
    assert json.loads(zapomni(data_dir, "migrate", "status", "--json").stdout)["version"] == 0

    applied = zapomni(data_dir, "migrate", "apply", "--json")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout) == {
        "dry_run": False,
        "version": 11,
        "migrations": report["pending"],
    }
    report = json.loads(zapomni(data_dir, "migrate", "status", "--json").stdout)
    assert (report["version"], report["pending"], report["vector_index_dimension"]) == (11, [], 384)

    again = zapomni(data_dir, "migrate", "apply")
    assert again.returncode == 0 and again.stdout.strip() == "the schema is up to date (version 11)"

    human = zapomni(data_dir, "migrate", "status")
    assert "schema version:      11 (latest 11)" in human.stdout
    assert "pending migrations:  none" in human.stdout
    assert "re-embed:            not needed" in human.stdout

    missing = zapomni(data_dir, "migrate")
    assert missing.returncode == 2 and "status" in missing.stderr  # argparse names the actions
