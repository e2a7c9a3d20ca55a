"""The knowledge-graph store on the real embedded FalkorDB: writes fenced by the job claim, entity
upserts, supersession, traversal, and deletes, updates, migrations, exports and re-embeds that
leave no trace and lose nothing."""

from __future__ import annotations

import io
import json
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.helpers import open_core, unit_vector
from zapomni_core import Settings, ZapomniCore
from zapomni_core.database import open_database
from zapomni_core.embedders import build_embedder
from zapomni_core.memories.requests import AddMemoryRequest
from zapomni_core.reembedding import reembed
from zapomni_core.transfer import TransferError
from zapomni_db import (
    ChunkRow,
    EntityRow,
    GraphClient,
    GraphStore,
    GraphStores,
    JobRecord,
    MemoryRecord,
    MentionRow,
    ReachedEntity,
    RelationRow,
    SchemaSettings,
    migrate,
    wait_for_indexes,
)
from zapomni_db.schema import current_version, latest_version, migrations
from zapomni_db.workspaces import graph_for

pytestmark = pytest.mark.anyio

DIM = 8
OWNER = "graph-test-worker"
KIND = "graph-test"  # no job runner handles this kind: only the tests claim these jobs
EXCLUSIVE = ["LIVES_IN", "WORKS_FOR", "LOCATED_IN"]


def key(name: str) -> str:
    return f"{name.lower()}|thing"


def ts(date: str) -> float:
    return datetime.fromisoformat(date).replace(tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class Fact:
    subject: str
    type: str
    object: str
    date: str = "2020-01-01"
    method: str = "llm"
    strength: float = 0.9


# What one chunk says: the names it mentions (with counts) and the facts it states.
Said = tuple[dict[str, int] | list[str], list[Fact]]


def graph_rows(
    per_chunk: dict[str, Said], *, confidence: float = 0.8
) -> tuple[list[EntityRow], list[MentionRow], list[RelationRow]]:
    entities: dict[str, EntityRow] = {}
    mentions: list[MentionRow] = []
    relations: list[RelationRow] = []
    for chunk_id, (names, facts) in per_chunk.items():
        counts = dict.fromkeys(names, 1) if isinstance(names, list) else dict(names)
        for fact in facts:
            counts.setdefault(fact.subject, 1)
            counts.setdefault(fact.object, 1)
        for name, count in counts.items():
            entities.setdefault(
                key(name), EntityRow(key(name), str(uuid.uuid4()), name, "CONCEPT", [], None, confidence)
            )
            mentions.append(MentionRow(chunk_id, key(name), count, confidence))
        for fact in facts:
            relations.append(
                RelationRow(
                    id=str(uuid.uuid4()),
                    subject_key=key(fact.subject),
                    object_key=key(fact.object),
                    type=fact.type,
                    predicate=fact.type.lower().replace("_", " "),
                    strength=fact.strength,
                    evidence=f"{fact.subject} {fact.type} {fact.object}",
                    method=fact.method,
                    chunk_id=chunk_id,
                    valid_from=fact.date,
                    valid_from_ts=ts(fact.date),
                )
            )
    return list(entities.values()), mentions, relations


class Store:
    """One workspace graph's stores, with helpers to add memories and write their graphs under a job."""

    def __init__(self, client: GraphClient, *, one_query_rows: int | None = None) -> None:
        self.client = client
        self.stores = GraphStores.on(client)
        self.graph = self.stores.graph if one_query_rows is None else GraphStore(client, one_query_rows=one_query_rows)
        self._rng = random.Random(7)

    async def memory(self, text: str, chunks: int = 1) -> tuple[str, list[str]]:
        memory_id = str(uuid.uuid4())
        ids = [str(uuid.uuid4()) for _ in range(chunks)]
        now = time.time()
        record = MemoryRecord(id=memory_id, text=text, created_at=now, content_hash=f"hash of {text}", date_ts=now)
        rows = [
            ChunkRow(id=cid, index=i, text=f"{text} (part {i})", embedding=unit_vector(self._rng, DIM))
            for i, cid in enumerate(ids)
        ]
        assert await self.stores.writes.insert(record, rows)
        return memory_id, ids

    async def job(self, owner: str = OWNER) -> str:
        job = JobRecord(id=str(uuid.uuid4()), kind=KIND, created_at=time.time())
        await self.stores.jobs.create(job)
        seen = await self.stores.jobs.get(job.id)
        assert seen is not None and await self.stores.jobs.claim(seen, owner, 600.0) is not None
        return job.id

    async def write(
        self,
        memory_id: str,
        per_chunk: dict[str, Said],
        *,
        job_id: str | None = None,
        owner: str = OWNER,
        chunk_ids: Sequence[str] | None = None,
        confidence: float = 0.8,
    ) -> bool:
        entities, mentions, relations = graph_rows(per_chunk, confidence=confidence)
        return await self.graph.write_memory_graph(
            memory_id,
            job_id or await self.job(),
            owner,
            entities,
            mentions,
            relations,
            EXCLUSIVE,
            now=time.time(),
            chunk_ids=chunk_ids,
        )

    async def edges(self) -> dict[str, dict[str, Any]]:
        """Every RELATED_TO edge by id: subject and object names, type, date, superseded_by, memory."""
        rows = await self.client.ro_query(
            "MATCH (s:Entity)-[r:RELATED_TO]->(o:Entity) "
            "RETURN r.id, s.name, r.type, o.name, r.valid_from, r.superseded_by, r.memory_id, r.method"
        )
        fields = ("subject", "type", "object", "date", "superseded_by", "memory_id", "method")
        return {row[0]: dict(zip(fields, row[1:], strict=True)) for row in rows}

    async def entity_names(self) -> set[str]:
        return {row[0] for row in await self.client.ro_query("MATCH (e:Entity) RETURN e.name")}

    async def assert_consistent(self) -> None:
        """The invariants every delete relies on, checked straight in the database."""
        q = self.client.ro_query
        assert await q("MATCH (e:Entity) WHERE NOT ()-[:MENTIONS]->(e) RETURN e.key") == [], "unmentioned entity"
        dangling = await q(
            "MATCH ()-[r:RELATED_TO]->() WHERE r.superseded_by IS NOT NULL "
            "OPTIONAL MATCH ()-[t:RELATED_TO {id: r.superseded_by}]->() WITH r, t WHERE t IS NULL RETURN r.id"
        )
        assert dangling == [], "superseded_by names a relation that does not exist"
        unbacked = await q(
            "MATCH (s:Entity)-[r:RELATED_TO]->(o:Entity) OPTIONAL MATCH (m:Memory {id: r.memory_id}) "
            "OPTIONAL MATCH (c:Chunk {id: r.chunk_id}) WITH r, s, o, m, c "
            "WHERE m IS NULL OR c IS NULL OR NOT (m)-[:HAS_CHUNK]->(c) OR NOT (c)-[:MENTIONS]->(s) "
            "OR NOT (c)-[:MENTIONS]->(o) RETURN r.id"
        )
        assert unbacked == [], "a relation whose memory, chunk or mentions are gone"
        loose = await q("MATCH (c:Chunk)-[:MENTIONS]->() WHERE NOT (:Memory)-[:HAS_CHUNK]->(c) RETURN c.id")
        assert loose == [], "a mention by a chunk of no memory"


@asynccontextmanager
async def opened(settings: Settings, *graphs: str) -> AsyncIterator[list[Store]]:
    """Stores on these graphs (schema at the latest version) of the embedded database of `settings`."""
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        stores = []
        for name in graphs:
            client = GraphClient(database.connection, name)
            await migrate(client, SchemaSettings(dimension=DIM))
            await wait_for_indexes(client)
            stores.append(Store(client))
        yield stores


def quiet(data_dir: Path, **extra: Any) -> Settings:
    """Settings without automatic graph extraction: these tests write every graph themselves."""
    return Settings.from_variables(ZAPOMNI_DATA_DIR=data_dir, LOG_LEVEL="WARNING", ZAPOMNI_GRAPH_AUTO=False, **extra)


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return quiet(data_dir)


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    async with opened(settings, "zapomni") as (only,):
        yield only


def summary(found: list[ReachedEntity]) -> list[tuple[str, int, list[str]]]:
    return [(r.entity.name, r.distance, r.path) for r in found]


# -- writing ------------------------------------------------------------------------------------------


async def test_a_memory_graph_is_written_and_read_back(store: Store) -> None:
    memory, (c0, c1) = await store.memory("Maria lives in Berlin and works for Acme.", chunks=2)
    said: dict[str, Said] = {
        c0: ({"Maria": 2, "Berlin": 1}, [Fact("Maria", "LIVES_IN", "Berlin")]),
        c1: (["Maria", "Acme"], [Fact("Maria", "WORKS_FOR", "Acme", strength=0.7)]),
    }
    assert await store.write(memory, said, chunk_ids=[c0, c1])

    counts = await store.graph.counts()
    assert (counts.entities_by_type, counts.relations, counts.memories_done, counts.memories_pending) == (
        {"CONCEPT": 3},
        2,
        1,
        0,
    )
    assert counts.relations_by_type == {"LIVES_IN": 1, "WORKS_FOR": 1} and counts.entities == 3
    assert await store.graph.graph_states([memory]) == {memory: "done"}
    assert [(e.key, e.name) for e in await store.graph.known_entities()] == [
        (key("Acme"), "Acme"),
        (key("Berlin"), "Berlin"),
        (key("Maria"), "Maria"),
    ]
    (maria,) = await store.graph.entities_by_key([key("Maria")])
    assert (maria.name, maria.type, maria.mentions, maria.confidence) == ("Maria", "CONCEPT", 2, 0.8)
    assert [e.name for e in await store.graph.entities_named(["MARIA", "acme", "nobody"])] == ["Maria", "Acme"]

    related = await store.graph.related(key("Maria"))
    assert summary(related) == [("Berlin", 1, ["LIVES_IN"]), ("Acme", 1, ["WORKS_FOR"])]
    berlin = related[0].relation
    assert (berlin.subject_name, berlin.type, berlin.object_name, berlin.predicate) == (
        "Maria",
        "LIVES_IN",
        "Berlin",
        "lives in",
    )
    assert (berlin.memory_id, berlin.chunk_id, berlin.valid_from, berlin.superseded_by) == (
        memory,
        c0,
        "2020-01-01",
        None,
    )
    assert berlin.chunk_text == "Maria lives in Berlin and works for Acme. (part 0)"
    assert (berlin.direction, berlin.other) == ("out", "Berlin")  # as seen from Maria
    # Relations are followed in either direction.
    (acme,) = await store.graph.related(key("Acme"))
    assert summary([acme]) == [("Maria", 1, ["WORKS_FOR"])]
    assert (acme.relation.direction, acme.relation.other, acme.name) == ("in", "Maria", "Maria")

    by_chunk = await store.graph.entities_of_chunks([c0, c1, "no-such-chunk"])
    assert [(e.name, e.count) for e in by_chunk[c0]] == [("Maria", 2), ("Berlin", 1)]
    assert [r.object_name for r in by_chunk[c0][0].relations] == ["Berlin", "Acme"]  # strongest first
    assert [(r.direction, r.other) for r in by_chunk[c0][1].relations] == [("in", "Maria")]  # Berlin's
    assert set(by_chunk) == {c0, c1}
    await store.assert_consistent()

    # Edges to chunks do not disturb the vector index (nothing was SET on a Chunk).
    probe = (await store.client.ro_query("MATCH (c:Chunk {id: $id}) RETURN c.embedding", {"id": c0}))[0][0]
    found = await store.client.ro_query(
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', 2, vecf32($v)) YIELD node RETURN node.id",
        {"v": list(probe)},
    )
    assert sorted(row[0] for row in found) == sorted([c0, c1])


async def test_writing_a_memory_graph_again_replaces_it(store: Store) -> None:
    memory, (c0,) = await store.memory("Maria lives in Berlin.")
    said: dict[str, Said] = {c0: (["Maria", "Berlin"], [Fact("Maria", "LIVES_IN", "Berlin")])}
    assert await store.write(memory, said)
    first = await store.graph.entities_by_key([key("Maria"), key("Berlin")])
    assert await store.write(memory, said)  # new relation and entity ids, same facts
    again = await store.graph.entities_by_key([key("Maria"), key("Berlin")])
    # Entities keep their ids (they are never deleted and recreated on a rewrite).
    assert [(e.key, e.id, e.name, e.aliases, e.mentions) for e in again] == [
        (e.key, e.id, e.name, e.aliases, e.mentions) for e in first
    ]
    edges = await store.edges()
    assert len(edges) == 1 and (await store.graph.counts()).relations == 1
    assert (await store.client.ro_query("MATCH ()-[x:MENTIONS]->() RETURN count(x)"))[0][0] == 2
    # A rewrite that finds less removes the rest.
    assert await store.write(memory, {c0: (["Maria"], [])})
    assert await store.entity_names() == {"Maria"} and await store.edges() == {}
    await store.assert_consistent()


async def test_a_write_outside_its_job_claim_or_memory_changes_nothing(store: Store) -> None:
    memory, (c0,) = await store.memory("Maria lives in Berlin.")
    said: dict[str, Said] = {c0: (["Maria", "Berlin"], [Fact("Maria", "LIVES_IN", "Berlin")])}

    job = await store.job(owner="someone else")
    assert not await store.write(memory, said, job_id=job)  # not our claim
    finished = await store.job()
    assert await store.stores.jobs.finish(finished, OWNER, state="completed", done=1, counts_json="{}")
    assert not await store.write(memory, said, job_id=finished)  # no longer running
    assert not await store.write(str(uuid.uuid4()), said)  # no such memory
    assert not await store.write(memory, said, chunk_ids=[c0, str(uuid.uuid4())])  # not the memory's chunks
    indexing = MemoryRecord(id=str(uuid.uuid4()), text="big", created_at=time.time(), content_hash="big")
    pending_job = JobRecord(id=str(uuid.uuid4()), kind="index_memory", created_at=time.time(), memory_id=indexing.id)
    assert await store.stores.writes.insert_pending(indexing, pending_job)
    assert not await store.write(indexing.id, {})  # not searchable yet
    assert (await store.graph.counts()).entities == 0 and await store.edges() == {}
    assert await store.graph.graph_states([memory]) == {memory: None}

    # The memory's text changed after the extraction read it: its chunks are not the ones extracted.
    stale_job = await store.job()
    record = MemoryRecord(id=memory, text="Maria moved.", created_at=time.time(), content_hash="moved")
    new_chunk = ChunkRow(
        id=str(uuid.uuid4()), index=0, text="Maria moved.", embedding=unit_vector(random.Random(1), DIM)
    )
    assert await store.stores.writes.update(record, keep=[], drop=[c0], new=[new_chunk])
    assert not await store.write(memory, said, job_id=stale_job)
    assert not await store.write(memory, said, job_id=stale_job, chunk_ids=[c0])
    assert (await store.graph.counts()).entities == 0

    # Rows that do not describe a consistent graph are refused before anything is sent.
    entities, mentions, relations = graph_rows(said)
    with pytest.raises(ValueError, match="not mentioned by its chunk"):
        await store.graph.write_memory_graph(
            memory, stale_job, OWNER, entities[:1], mentions[:1], relations, EXCLUSIVE, now=time.time()
        )
    with pytest.raises(ValueError, match="mentioned by no chunk"):
        await store.graph.write_memory_graph(memory, stale_job, OWNER, entities, [], [], EXCLUSIVE, now=time.time())


async def test_an_entity_upsert_keeps_the_more_confident_name_and_gathers_aliases(store: Store) -> None:
    first, (a,) = await store.memory("first")
    second, (b,) = await store.memory("second")
    third, (c,) = await store.memory("third")
    k = key("maria")

    async def write(memory: str, chunk: str, row: EntityRow) -> None:
        job = await store.job()
        mention = [MentionRow(chunk, k, 1, row.confidence)]
        assert await store.graph.write_memory_graph(memory, job, OWNER, [row], mention, [], [], now=time.time())

    await write(first, a, EntityRow(k, "id-1", "Maria Schmidt", "PERSON", ["M. Schmidt"], None, 0.6))
    await write(second, b, EntityRow(k, "id-2", "Maria", "PERSON", ["Mia"], "an engineer", 0.9))
    await write(third, c, EntityRow(k, "id-3", "maria s.", "PERSON", [], "someone", 0.5))
    (maria,) = await store.graph.entities_by_key([k])
    assert (maria.id, maria.name, maria.description, maria.confidence, maria.mentions) == (
        "id-1",
        "Maria",
        "an engineer",
        0.9,
        3,
    )
    assert sorted(maria.aliases) == sorted(["M. Schmidt", "Maria Schmidt", "Mia", "maria s."])
    assert [e.key for e in await store.graph.known_entities()] == [k]  # one entity, never a duplicate


async def test_a_newer_exclusive_fact_supersedes_the_older_whatever_the_order_they_arrive_in(store: Store) -> None:
    berlin, (b,) = await store.memory("Maria lives in Berlin (2020).")
    lisbon, (li,) = await store.memory("Maria moved to Lisbon (2023).")
    paris, (p,) = await store.memory("Maria lived in Paris (2018).")
    porto, (po,) = await store.memory("Maria lives in Porto (2023).")
    other, (o,) = await store.memory("Unrelated facts.")

    assert await store.write(berlin, {b: ([], [Fact("Maria", "LIVES_IN", "Berlin", "2020-01-01")])})
    assert await store.write(lisbon, {li: ([], [Fact("Maria", "LIVES_IN", "Lisbon", "2023-05-01")])})
    edges = await store.edges()
    by_place = {e["object"]: rid for rid, e in edges.items()}
    assert edges[by_place["Berlin"]]["superseded_by"] == by_place["Lisbon"]
    assert edges[by_place["Lisbon"]]["superseded_by"] is None

    # An older fact learnt later is superseded by the next one; Berlin keeps pointing at Lisbon.
    assert await store.write(paris, {p: ([], [Fact("Maria", "LIVES_IN", "Paris", "2018-03-01")])})
    edges = await store.edges()
    by_place = {e["object"]: rid for rid, e in edges.items()}
    assert edges[by_place["Paris"]]["superseded_by"] == by_place["Berlin"]
    assert edges[by_place["Berlin"]]["superseded_by"] == by_place["Lisbon"]

    # Same date: neither supersedes the other. Other methods and other types never supersede.
    assert await store.write(porto, {po: ([], [Fact("Maria", "LIVES_IN", "Porto", "2023-05-01")])})
    assert await store.write(
        other,
        {
            o: (
                [],
                [
                    Fact("Maria", "LIVES_IN", "Rome", "2024-01-01", method="pattern"),
                    Fact("Maria", "KNOWS", "Ana", "2019-01-01"),
                    Fact("Maria", "KNOWS", "Rui", "2024-01-01"),
                ],
            )
        },
    )
    edges = await store.edges()
    by_place = {e["object"]: rid for rid, e in edges.items()}
    assert edges[by_place["Lisbon"]]["superseded_by"] is None and edges[by_place["Porto"]]["superseded_by"] is None
    assert edges[by_place["Berlin"]]["superseded_by"] == min(by_place["Lisbon"], by_place["Porto"])
    for untouched in ("Rome", "Ana", "Rui"):
        assert edges[by_place[untouched]]["superseded_by"] is None
    assert (await store.graph.counts()).superseded == 2

    # A later statement of the same place continues the state: the next fact after Berlin 2020 is
    # Berlin 2021, so nothing replaced the 2020 one; the 2021 one is replaced in 2023.
    again, (a,) = await store.memory("Maria still lives in Berlin (2021).")
    assert await store.write(again, {a: ([], [Fact("Maria", "LIVES_IN", "Berlin", "2021-02-01")])})
    edges = await store.edges()
    by_date = {e["date"]: rid for rid, e in edges.items() if e["object"] == "Berlin"}
    by_place = {e["object"]: rid for rid, e in edges.items() if e["object"] != "Berlin"}
    assert edges[by_date["2020-01-01"]]["superseded_by"] is None
    assert edges[by_date["2021-02-01"]]["superseded_by"] == min(by_place["Lisbon"], by_place["Porto"])
    assert edges[by_place["Paris"]]["superseded_by"] == by_date["2020-01-01"]
    assert (await store.graph.counts()).superseded == 2
    # Superseded facts stay, and rank after current ones.
    around = await store.graph.related(key("Maria"), relation_types=["LIVES_IN"])
    assert [(r.name, r.relation.current) for r in around][-1] == ("Paris", False)
    assert [r.relation.current for r in around] == [True, True, True, True, False]  # Berlin's best is current
    await store.assert_consistent()

    # A delete recomputes the groups it touched: without the 2021 statement, 2020 is replaced in 2023.
    await store.stores.writes.delete([again])
    edges = await store.edges()
    assert edges[by_date["2020-01-01"]]["superseded_by"] == min(by_place["Lisbon"], by_place["Porto"])
    await store.assert_consistent()
    # Deleting the fact another pointed at gives it its next fact again, never a dangling id.
    await store.stores.writes.delete([lisbon, porto])
    edges = await store.edges()
    assert {e["object"] for e in edges.values()} == {"Berlin", "Paris", "Rome", "Ana", "Rui"}
    assert edges[by_date["2020-01-01"]]["superseded_by"] is None
    assert edges[by_place["Paris"]]["superseded_by"] == by_date["2020-01-01"]
    await store.assert_consistent()
    await store.stores.writes.delete([berlin])
    edges = await store.edges()
    assert edges[by_place["Paris"]]["superseded_by"] is None
    assert (await store.graph.counts()).superseded == 0
    await store.assert_consistent()


async def test_a_large_memory_graph_is_written_in_steps_with_the_same_result(settings: Settings) -> None:
    async with opened(settings, "zapomni", "zapomni:steps") as (whole, steps):
        steps = Store(steps.client, one_query_rows=7)
        said: dict[str, Said] = {}
        for store in (whole, steps):
            memory, chunks = await store.memory("a long memory", chunks=6)
            said = {
                cid: (
                    [f"Thing {i}", f"Thing {i + 1}", "Hub"],
                    [
                        Fact(f"Thing {i}", "PART_OF", "Hub", strength=0.5 + i / 20),
                        Fact(f"Thing {i}", "LOCATED_IN", f"Thing {i + 1}", f"202{i}-01-01"),
                        Fact(f"Thing {i}", "LOCATED_IN", "Hub", f"202{i}-06-01"),
                    ],
                )
                for i, cid in enumerate(chunks)
            }
            assert await store.write(memory, said, chunk_ids=chunks)
            assert await store.write(memory, said, chunk_ids=chunks)  # and again: replaced, not doubled
        a, b = await whole.graph.counts(), await steps.graph.counts()
        assert (a.entities_by_type, a.relations, a.superseded, a.memories_done) == (
            b.entities_by_type,
            b.relations,
            b.superseded,
            b.memories_done,
        )
        assert a.relations == 18 and a.entities == 8 and a.superseded > 0

        def shape(edges: dict[str, dict[str, Any]]) -> list[tuple[Any, ...]]:
            date = {rid: (e["object"], e["date"]) for rid, e in edges.items()}
            return sorted(
                (e["subject"], e["type"], e["object"], e["date"], date.get(e["superseded_by"])) for e in edges.values()
            )

        assert shape(await whole.edges()) == shape(await steps.edges())
        await steps.assert_consistent()


async def test_names_of_any_characters_come_back_exactly(store: Store) -> None:
    # known_entities reads every entity as one JSON document (FalkorDB's toJSON does not escape strings).
    names = ['Say "hi"', "back\\slash", 'both \\" mixed', "tab\tand\nnewline", "ünï 🐍", "it's", "ctl\x01"]
    memory, (c0,) = await store.memory("odd names")
    job = await store.job()
    rows = [EntityRow(f"k{i}", f"id{i}", name, "OTHER", [name, "plain"], None, 0.5) for i, name in enumerate(names)]
    mentions = [MentionRow(c0, row.key) for row in rows]
    assert await store.graph.write_memory_graph(memory, job, OWNER, rows, mentions, [], [])
    known = await store.graph.known_entities()
    assert [(e.key, e.name, e.type, e.aliases, e.confidence) for e in known] == [
        (row.key, row.name, "OTHER", ("plain",), 0.5) for row in rows
    ]


async def test_unprocessed_by_lists_what_a_job_over_given_memories_has_left(store: Store) -> None:
    ids = [(await store.memory(f"memory {i}"))[0] for i in range(3)]
    job = await store.job()
    assert await store.graph.unprocessed_by(job, [*ids, str(uuid.uuid4())], 10) == ids
    assert await store.write(ids[1], {}, job_id=job)
    assert await store.graph.unprocessed_by(job, ids, 10) == [ids[0], ids[2]]
    assert await store.graph.unprocessed_by(job, ids, 1) == [ids[0]]
    assert await store.graph.unprocessed_by(await store.job(), ids, 10) == ids  # another job: all again


# -- reading ------------------------------------------------------------------------------------------


async def test_related_walks_up_to_three_hops_with_filters_and_a_limit(store: Store) -> None:
    memory, chunks = await store.memory("a chain of facts", chunks=8)
    c = iter(chunks)
    said: dict[str, Said] = {
        next(c): ([], [Fact("A", "USES", "B", strength=0.9)]),
        next(c): ([], [Fact("A", "USES", "B", strength=0.6)]),
        next(c): ([], [Fact("B", "USES", "A", strength=0.4)]),
        next(c): ([], [Fact("B", "PART_OF", "C")]),
        next(c): ([], [Fact("D", "DEPENDS_ON", "C")]),
        next(c): ([], [Fact("A", "KNOWS", "E", strength=0.5)]),
        next(c): ([], [Fact("E", "KNOWS", "F")]),
        next(c): ([], [Fact("F", "KNOWS", "A", strength=0.1)]),
    }
    assert await store.write(memory, said)
    graph = store.graph

    assert summary(await graph.related(key("A"))) == [("B", 1, ["USES"]), ("E", 1, ["KNOWS"]), ("F", 1, ["KNOWS"])]
    assert summary(await graph.related(key("A"), depth=2)) == [
        ("B", 1, ["USES"]),
        ("E", 1, ["KNOWS"]),
        ("F", 1, ["KNOWS"]),
        ("C", 2, ["USES", "PART_OF"]),
    ]
    assert summary(await graph.related(key("A"), depth=3))[-1] == ("D", 3, ["USES", "PART_OF", "DEPENDS_ON"])
    assert summary(await graph.related(key("D"), depth=3)) == [
        ("C", 1, ["DEPENDS_ON"]),
        ("B", 2, ["DEPENDS_ON", "PART_OF"]),
        ("A", 3, ["DEPENDS_ON", "PART_OF", "USES"]),
    ]
    assert summary(await graph.related(key("A"), depth=3, relation_types=["USES", "PART_OF"])) == [
        ("B", 1, ["USES"]),
        ("C", 2, ["USES", "PART_OF"]),
    ]
    assert summary(await graph.related(key("A"), depth=3, limit=2)) == [("B", 1, ["USES"]), ("E", 1, ["KNOWS"])]

    # The strongest connecting relations are the evidence, with the chunks that state them.
    (b,) = await graph.related(key("A"), limit=1, evidence_per_entity=2)
    assert [(ev.strength, ev.subject_name, ev.object_name) for ev in b.evidence] == [(0.9, "A", "B"), (0.6, "A", "B")]
    assert b.relation == b.evidence[0] and all(ev.chunk_text and ev.memory_id == memory for ev in b.evidence)
    assert len((await graph.related(key("A"), limit=1))[0].evidence) == 3

    assert await graph.related("nobody|thing") == []
    with pytest.raises(ValueError, match="depth"):
        await graph.related(key("A"), depth=4)


async def test_entities_of_chunks_brings_the_most_mentioned_with_their_strongest_current_facts(store: Store) -> None:
    memory, (c0, c1, c2) = await store.memory("facts about X", chunks=3)
    said: dict[str, Said] = {
        c0: ({"X": 3, "Y": 1, "Z": 2}, [Fact("X", "LIVES_IN", "P", "2020-01-01", strength=0.99)]),
        c1: (
            ["X", "Q"],
            [Fact("X", "LIVES_IN", "Q", "2022-01-01", strength=0.5), Fact("X", "KNOWS", "Y", strength=0.95)],
        ),
        c2: ([], [Fact("X", "KNOWS", "Y", strength=0.8)]),
    }
    assert await store.write(memory, said)
    found = await store.graph.entities_of_chunks([c0], per_chunk=2, relations_per_entity=3)
    x, z = found[c0]
    assert [(x.name, x.count), (z.name, z.count)] == [("X", 3), ("Z", 2)]
    assert [(r.type, r.object_name, r.strength, r.support, r.current) for r in x.relations] == [
        ("KNOWS", "Y", 0.95, 2, True),  # two chunks state it: one fact, its strongest evidence
        ("LIVES_IN", "Q", 0.5, 1, True),
        ("LIVES_IN", "P", 0.99, 1, False),  # superseded: after every current fact
    ]
    assert z.relations == []
    assert await store.graph.entities_of_chunks([]) == {}


async def test_counts_pending_memories_and_an_explicit_reset(store: Store) -> None:
    ids = [(await store.memory(f"memory {i}"))[0] for i in range(3)]
    first_chunk = (await store.stores.reads.chunks(ids[0]))[0].id
    assert await store.graph.count_pending() == 3
    assert await store.write(ids[0], {first_chunk: (["Maria", "Berlin"], [Fact("Maria", "LIVES_IN", "Berlin")])})
    assert await store.graph.count_pending() == 2
    pending = sorted(ids[1:])
    assert await store.graph.pending_memories(1) == pending[:1]
    assert await store.graph.pending_memories(5, after_id=pending[0]) == pending[1:]
    assert await store.graph.pending_memories(5, after_id=pending[1]) == []
    counts = await store.graph.counts()
    assert (counts.memories_done, counts.memories_pending, counts.entities, counts.relations) == (1, 2, 2, 1)

    assert await store.graph.reset_memories([ids[0], str(uuid.uuid4())]) == 1
    counts = await store.graph.counts()
    assert (counts.memories_done, counts.memories_pending, counts.entities, counts.relations) == (0, 3, 0, 0)
    assert await store.graph.reset_memories([]) == 0
    await store.assert_consistent()


# -- deletes and updates ------------------------------------------------------------------------------


async def test_deleting_a_memory_leaves_no_trace_of_its_graph(store: Store) -> None:
    one, (a,) = await store.memory("Maria lives in Berlin, near the Spree.")
    two, (b,) = await store.memory("Maria works for Acme.")
    three, (c,) = await store.memory("Acme is located in Lisbon.")
    assert await store.write(
        one, {a: (["Spree"], [Fact("Maria", "LIVES_IN", "Berlin"), Fact("Berlin", "KNOWS", "Spree")])}
    )
    assert await store.write(two, {b: ([], [Fact("Maria", "WORKS_FOR", "Acme")])})
    assert await store.write(three, {c: ([], [Fact("Acme", "LOCATED_IN", "Lisbon")])})
    assert await store.entity_names() == {"Maria", "Berlin", "Spree", "Acme", "Lisbon"}

    assert await store.stores.writes.delete([one]) == [one]
    # Maria is still mentioned by memory two: she stays, with memory two's fact; Berlin and the Spree go.
    assert await store.entity_names() == {"Maria", "Acme", "Lisbon"}
    assert sorted((e["subject"], e["object"]) for e in (await store.edges()).values()) == [
        ("Acme", "Lisbon"),
        ("Maria", "Acme"),
    ]
    (maria,) = await store.graph.entities_by_key([key("Maria")])
    assert maria.mentions == 1
    await store.assert_consistent()

    # A bulk delete: everything goes.
    assert sorted(await store.stores.writes.delete([two, three, str(uuid.uuid4())])) == sorted([two, three])
    assert await store.entity_names() == set() and await store.edges() == {}
    assert (await store.client.ro_query("MATCH ()-[x:MENTIONS]->() RETURN count(x)"))[0][0] == 0
    counts = await store.graph.counts()
    assert (counts.entities, counts.relations, counts.memories_done, counts.memories_pending) == (0, 0, 0, 0)


async def test_an_update_removes_the_old_graph_and_makes_the_memory_pending(store: Store) -> None:
    memory, (c0, c1) = await store.memory("Maria lives in Berlin. She knows Ana.", chunks=2)
    other, (o,) = await store.memory("Ana lives in Porto.")
    said: dict[str, Said] = {
        c0: ([], [Fact("Maria", "LIVES_IN", "Berlin")]),
        c1: ([], [Fact("Maria", "KNOWS", "Ana")]),
    }
    assert await store.write(memory, said)
    assert await store.write(other, {o: ([], [Fact("Ana", "LIVES_IN", "Porto")])})

    # The second chunk is kept, the first replaced: all of the old text's evidence goes, kept chunk's too.
    record = MemoryRecord(id=memory, text="Maria lives in Lisbon.", created_at=time.time(), content_hash="new text")
    new = ChunkRow(
        id=str(uuid.uuid4()), index=0, text="Maria lives in Lisbon.", embedding=unit_vector(random.Random(2), DIM)
    )
    assert await store.stores.writes.update(record, keep=[c1], drop=[c0], new=[new])
    assert await store.graph.graph_states([memory, other]) == {memory: None, other: "done"}
    assert await store.graph.pending_memories(10) == [memory]
    assert await store.entity_names() == {"Ana", "Porto"}
    assert [e["memory_id"] for e in (await store.edges()).values()] == [other]
    await store.assert_consistent()

    # Processed again, from its new chunks.
    assert await store.write(memory, {new.id: ([], [Fact("Maria", "LIVES_IN", "Lisbon")])}, chunk_ids=[new.id, c1])
    assert await store.entity_names() == {"Ana", "Porto", "Maria", "Lisbon"}
    await store.assert_consistent()


async def test_the_orphan_sweep_removes_entities_no_chunk_mentions(store: Store) -> None:
    memory, (c0,) = await store.memory("Maria lives in Berlin.")
    assert await store.write(memory, {c0: ([], [Fact("Maria", "LIVES_IN", "Berlin")])})
    # What a large write that stopped half way can leave: an entity whose mentions went with the old evidence.
    await store.client.query("CREATE (:Entity {key: 'left|thing', id: 'x', name: 'Left'})")
    assert await store.stores.maintenance.remove_orphan_chunks(time.time() - 3600) == 0
    assert await store.entity_names() == {"Maria", "Berlin"}
    assert await store.stores.maintenance.remove_orphan_entities() == 0


async def test_workspaces_have_independent_graphs(settings: Settings) -> None:
    async with opened(settings, graph_for("zapomni", "default"), graph_for("zapomni", "work")) as (home, work):
        for store in (home, work):
            memory, (c0,) = await store.memory("Maria lives in Berlin.")
            assert await store.write(memory, {c0: ([], [Fact("Maria", "LIVES_IN", "Berlin")])})
        extra, (x,) = await work.memory("Maria works for Acme.")
        assert await work.write(extra, {x: ([], [Fact("Maria", "WORKS_FOR", "Acme")])})
        assert (await home.graph.counts()).entities == 2 and (await work.graph.counts()).entities == 3
        assert summary(await home.graph.related(key("Maria"))) == [("Berlin", 1, ["LIVES_IN"])]
        (home_maria,) = await home.graph.entities_by_key([key("Maria")])
        (work_maria,) = await work.graph.entities_by_key([key("Maria")])
        assert home_maria.id != work_maria.id

        await home.stores.writes.delete(await home.stores.reads.matching_ids(_no_filter()))
        assert (await home.graph.counts()).entities == 0
        assert await work.entity_names() == {"Maria", "Berlin", "Acme"}
        await work.assert_consistent()


def _no_filter() -> Any:
    from zapomni_db import SearchFilter

    return SearchFilter()


# -- schema, export and import, re-embed ------------------------------------------------------------------


async def test_a_version_4_store_gets_the_graph_schema_and_all_its_memories_are_pending(settings: Settings) -> None:
    schema = SchemaSettings(dimension=DIM)
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        client = GraphClient(database.connection, "zapomni")
        for migration in migrations(schema)[:4]:  # a store as the previous version left it
            for statement in migration.statements:
                await client.query(statement, create=True)
        await client.query("MERGE (s:SchemaVersion {id: 'schema'}) SET s.version = 4")
        old = Store(client)
        ids = sorted([(await old.memory(f"old memory {i}"))[0] for i in range(3)])

        assert [m.version for m in await migrate(client, schema)] == [5, 6, 7, 8, 9, 10, 11]
        await wait_for_indexes(client)
        assert await current_version(client) == latest_version(schema) == 11
        indexed = {
            (label, field)
            for label, fields in await client.ro_query("CALL db.indexes() YIELD label, properties")
            for field in fields
        }
        assert {
            ("Entity", "key"),
            ("Entity", "id"),
            ("Entity", "name"),
            ("RELATED_TO", "id"),
            ("RELATED_TO", "memory_id"),
        } <= indexed
        assert await old.graph.count_pending() == 3 and await old.graph.pending_memories(10) == ids
        assert await migrate(client, schema) == []


@dataclass(frozen=True)
class Built:
    """What a core store's graph looks like, in a form that survives an export and import."""

    counts: dict[str, Any]
    related: dict[str, list[tuple[Any, ...]]]
    states: dict[str, str | None]


async def build_graph(core: ZapomniCore) -> dict[str, list[str]]:
    """Memories in two workspaces with their graphs (the third memory of each left pending)."""
    texts = [
        "Maria lives in Berlin and works for Acme.",
        "Maria moved to Lisbon in 2023.",
        "Acme builds bicycles in Porto.",
    ]
    made: dict[str, list[str]] = {}
    for workspace in ("default", "work"):
        ids = [(await core.memories.add(AddMemoryRequest(text=t, workspace=workspace))).memory_id for t in texts]
        made[workspace] = ids
        opened_ws = await core.workspaces.registry.get(workspace, create=False)
        assert opened_ws is not None
        store = Store(opened_ws.stores.client)
        chunks = [(await opened_ws.stores.reads.chunks(mid))[0].id for mid in ids]
        assert await store.write(
            ids[0],
            {chunks[0]: ([], [Fact("Maria", "LIVES_IN", "Berlin", "2020-01-01"), Fact("Maria", "WORKS_FOR", "Acme")])},
        )
        assert await store.write(ids[1], {chunks[1]: ([], [Fact("Maria", "LIVES_IN", "Lisbon", "2023-01-01")])})
    return made


async def snapshot(core: ZapomniCore, made: dict[str, list[str]]) -> dict[str, Built]:
    built = {}
    for workspace, ids in made.items():
        opened_ws = await core.workspaces.registry.get(workspace, create=False)
        assert opened_ws is not None
        graph = opened_ws.stores.graph
        counts = await graph.counts()
        related = {
            k: [
                (
                    r.entity.key,
                    r.entity.id,
                    r.entity.name,
                    r.entity.mentions,
                    r.distance,
                    r.path,
                    [(e.id, e.superseded_by, e.chunk_id, e.chunk_text, e.memory_id) for e in r.evidence],
                )
                for r in await graph.related(k, depth=2)
            ]
            for k in (key("Maria"), key("Acme"), key("Lisbon"))
        }
        built[workspace] = Built(
            counts={
                "entities": counts.entities_by_type,
                "relations": counts.relations_by_type,
                "superseded": counts.superseded,
                "done": counts.memories_done,
                "pending": counts.memories_pending,
            },
            related=related,
            states=await graph.graph_states(ids),
        )
    return built


async def test_an_export_and_import_carry_the_graph(core: ZapomniCore, tmp_path: Path) -> None:
    made = await build_graph(core)
    before = await snapshot(core, made)
    assert before["default"].counts == {
        "entities": {"CONCEPT": 4},
        "relations": {"LIVES_IN": 2, "WORKS_FOR": 1},
        "superseded": 1,
        "done": 2,
        "pending": 1,
    }
    out = io.StringIO()
    report = await core.transfer.export_to(out)
    assert (report.memories, report.entities, report.relations) == (6, 8, 6)
    exported = [json.loads(line) for line in out.getvalue().splitlines()]
    assert exported[0]["format_version"] == 5
    assert [line["type"] for line in exported[1:5]] == ["memory"] * 3 + ["entity"]
    # "Maria moved to Lisbon" replaced "lives in Berlin" (in each workspace): the update links travel too.
    assert exported[-1] == {"type": "end", "memories": 6, "chunks": 6, "entities": 8, "relations": 6, "updates": 2}

    async with open_core(quiet(tmp_path / "copy")) as (copy, _info):
        imported = await copy.transfer.import_from(io.BytesIO(out.getvalue().encode()))
        assert (imported.imported, imported.entities_imported, imported.relations_imported) == (6, 8, 6)
        assert imported.graph_memories == 4 and imported.updates_imported == 2
        assert await snapshot(copy, made) == before
        for workspace in made:
            opened_ws = await copy.workspaces.registry.get(workspace, create=False)
            assert opened_ws is not None
            await Store(opened_ws.stores.client).assert_consistent()
        # Importing again skips every memory, and with them their graph: nothing doubles.
        again = await copy.transfer.import_from(io.BytesIO(out.getvalue().encode()))
        assert (again.imported, again.entities_imported, again.relations_imported, again.updates_imported) == (0,) * 4
        assert await snapshot(copy, made) == before

    # A file from before the graph (format 2) imports with every memory pending.
    old = []
    for line in exported:
        if line["type"] in ("entity", "relation", "update"):
            continue
        for newer in ("graph_state", "entities", "relations", "updates"):
            line.pop(newer, None)
        if line["type"] == "zapomni-export":
            line["format_version"] = 2
        old.append(json.dumps(line))
    async with open_core(quiet(tmp_path / "old")) as (copy, _info):
        imported = await copy.transfer.import_from(io.BytesIO(("\n".join(old) + "\n").encode()))
        assert (imported.imported, imported.entities_imported, imported.graph_memories) == (6, 0, 0)
        for workspace in made:
            opened_ws = await copy.workspaces.registry.get(workspace, create=False)
            assert opened_ws is not None
            counts = await opened_ws.stores.graph.counts()
            assert (counts.entities, counts.relations, counts.memories_pending) == (0, 0, 3)


def _edit(export: str, edit: Any) -> bytes:
    lines = [json.loads(line) for line in export.splitlines()]
    edit(lines)
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


async def test_bad_graph_lines_name_the_line_and_field_and_write_nothing(core: ZapomniCore, tmp_path: Path) -> None:
    await build_graph(core)
    out = io.StringIO()
    await core.transfer.export_to(out)
    export = out.getvalue()
    first_entity = next(i for i, line in enumerate(export.splitlines()) if '"type":"entity"' in line)
    first_relation = next(i for i, line in enumerate(export.splitlines()) if '"type":"relation"' in line)

    def set_(index: int, field: str, value: Any) -> Any:
        return lambda lines: lines[index].__setitem__(field, value)

    def mention_of_unknown_chunk(lines: list[dict[str, Any]]) -> None:
        lines[first_entity]["mentions"][0]["chunk_id"] = str(uuid.uuid4())

    def in_version_2(lines: list[dict[str, Any]]) -> None:
        lines[0]["format_version"] = 2

    def entity_twice(lines: list[dict[str, Any]]) -> None:
        lines.insert(first_entity + 1, dict(lines[first_entity]))
        lines[-1]["entities"] += 1

    cases = {
        "unknown chunk": (mention_of_unknown_chunk, [f"line {first_entity + 1}: mentions.0.chunk_id: ", "not a chunk"]),
        "unknown subject": (set_(first_relation, "subject", "nobody|thing"), [f"line {first_relation + 1}: subject: "]),
        "unknown memory": (set_(first_relation, "memory_id", str(uuid.uuid4())), ["memory_id: "]),
        "strength too high": (set_(first_relation, "strength", 1.5), [f"line {first_relation + 1}: strength: "]),
        "graph lines in a version 2 file": (in_version_2, [f"line {first_entity + 1}: type: entity lines need"]),
        "an entity twice": (entity_twice, [f"line {first_entity + 2}: key: ", "appears twice"]),
        "end line counts": (set_(-1, "relations", 99), ["end line counts", "99 relations"]),
    }
    async with open_core(quiet(tmp_path / "copy")) as (copy, _info):
        for name, (edit, fragments) in cases.items():
            with pytest.raises(TransferError) as caught:
                await copy.transfer.import_from(io.BytesIO(_edit(export, edit)))
            message = str(caught.value)
            assert all(fragment in message for fragment in fragments), (name, message)
            assert (await copy.workspaces.stats()).total_memories == 0, name


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama(models=["nomic-embed-text"]) as server:
        yield server


async def test_a_reembed_keeps_the_graph(data_dir: Path, fake: FakeOllama) -> None:
    onnx = quiet(data_dir)
    async with open_core(onnx) as (core, _info):
        made = await build_graph(core)
        before = await snapshot(core, made)
        mentions = await core.workspaces.registry.stores("default").client.ro_query(
            "MATCH (c:Chunk)-[x:MENTIONS]->(e:Entity) RETURN c.id, e.key, x.count ORDER BY c.id, e.key"
        )

    ollama = quiet(data_dir, ZAPOMNI_EMBEDDER="ollama", OLLAMA_HOST=fake.url)
    async with AsyncExitStack() as stack:
        database = await open_database(ollama, stack)
        embedder = await build_embedder(ollama)
        stack.push_async_callback(embedder.aclose)
        report = await reembed(database, embedder, ollama)
        assert report.embedded == 6

    async with open_core(ollama) as (core, _info):
        assert await snapshot(core, made) == before
        after = await core.workspaces.registry.stores("default").client.ro_query(
            "MATCH (c:Chunk)-[x:MENTIONS]->(e:Entity) RETURN c.id, e.key, x.count ORDER BY c.id, e.key"
        )
        assert after == mentions
