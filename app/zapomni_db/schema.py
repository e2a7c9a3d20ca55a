"""Schema versions and the idempotent migration runner.

A migration is a numbered list of Cypher statements. The database records the version it is at
in a single `(:SchemaVersion {id: 'schema'})` node; `migrate` applies, in order, every migration
above that version and bumps the version after each one, so a run that dies half way resumes
where it stopped. Index statements that find their index already there (or, dropping, gone) count as done.

Version 0 is a graph without that node: either a new one, or one written before versions were
recorded (Memory and Chunk nodes with their properties and embeddings, but no indexes, no
Sequence node and no `Memory.seq`). Migration 1 indexes such a graph and migration 2 numbers its
memories, so it comes out exactly like a graph built at the latest version.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import structlog

from zapomni_db.client import GraphClient
from zapomni_db.errors import DatabaseUnavailable, QueryFailed, SchemaMismatch

log = structlog.get_logger(__name__)

# Neighbours asked for when checking the vector index for duplicates (see `repair_vector_index`).
_PROBE_K = 100
# How FalkorDB shows an index it is building: "[Indexing] done/total: UNDER CONSTRUCTION".
_INDEXING = re.compile(r"\[Indexing\] (?P<done>\d+)/(?P<total>\d+)")


@dataclass(frozen=True)
class SchemaSettings:
    """What the vector index is built with; fixed for the life of a graph."""

    dimension: int
    ef_construction: int = 200
    ef_runtime: int = 100
    m: int = 16


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    # Work that Cypher alone cannot do safely, run after the statements; like them it must be safe to run again.
    step: Callable[[GraphClient], Awaitable[None]] | None = None


# Memories written before migration 2 have no `seq`, and the keyword index only sees memories by
# `seq`: number them in a fixed order (creation time, then id) after every number already handed
# out, and move the counter past them. Only memories without a number are touched, so running it
# again changes nothing. Memory nodes are not in the vector index, so setting a property on them
# is safe (on a Chunk it would leave a stale HNSW entry behind).
_BACKFILL_SEQ = (
    "MERGE (q:Sequence {id: 'chunks'}) ON CREATE SET q.value = 0 WITH q "
    "OPTIONAL MATCH (s:Memory) WHERE s.seq IS NOT NULL WITH q, max(s.seq) AS top "
    "WITH q, CASE WHEN top IS NULL OR top < q.value THEN q.value ELSE top END AS base "
    "MATCH (m:Memory) WHERE m.seq IS NULL WITH q, base, m ORDER BY m.created_at, m.id "
    "WITH q, base, collect(m) AS todo SET q.value = base + size(todo) "
    "WITH base, todo UNWIND range(0, size(todo) - 1) AS i WITH todo[i] AS m, base + i + 1 AS seq "
    "SET m.seq = seq"
)

# Chunks no memory links, staged more than an hour ago (`timestamp()` is in ms): an older version's crash leftovers.
_SWEEP_UNMARKED = (
    "MATCH (c:Chunk) WHERE c.created_at < timestamp() / 1000.0 - 3600 AND NOT (c)<-[:HAS_CHUNK|STAGED]-(:Memory) "
    "DELETE c"
)


# What a version before 9 staged, still unlinked, hung off its marker (while the index still finds it).
_HANG_STAGED = (
    "MATCH (s:Staging) MATCH (c:Chunk {memory_id: s.memory_id}) "
    "WHERE NOT (c)<-[:HAS_CHUNK|STAGED]-(:Memory) AND NOT (s)-[:STAGES]->(c) CREATE (s)-[:STAGES]->(c)"
)


# The one chunk of a memory that is its whole text keeps no copy of it (`zapomni_db.memories._chunk_params`).
_SOLE_CHUNK_TEXT = "MATCH (m:Memory)-[:HAS_CHUNK]->(c:Chunk) WHERE m.chunk_count = 1 AND c.text = m.text "
_SHARE_BATCH = 100_000


async def _share_sole_chunk_text(client: GraphClient, settings: SchemaSettings) -> None:
    """Remove the text of every chunk that is its memory's whole text, with the vector index dropped meanwhile.

    Changing an indexed Chunk leaves a stale copy of its vector in the HNSW index (`_cypher.CHUNK_PROPERTIES`),
    so the index is dropped first and built again from the graph last (16 min 50 s for the whole migration at a
    million chunks, decision 0033). Safe to run again after a crash at any point: what is left is stripped, and an
    index the crash left dropped is built."""
    todo = await client.ro_query(f"{_SOLE_CHUNK_TEXT}RETURN count(c)")
    dimension = await vector_index_dimension(client)
    if not todo[0][0]:
        if dimension is None and await stored_vector_dimension(client) is not None:
            await create_vector_index(client, settings)  # a run that stopped before building it again
        return
    await wait_for_indexes(client)  # dropping from an index still building once hung (`_apply`)
    await drop_vector_index(client)
    await wait_for_indexes(client)
    removed, started = 0, time.perf_counter()
    while True:
        rows = await client.query(f"{_SOLE_CHUNK_TEXT}WITH c LIMIT {_SHARE_BATCH} SET c.text = null RETURN count(c)")
        removed += int(rows[0][0]) if rows else 0
        if not rows or int(rows[0][0]) < _SHARE_BATCH:
            break
    log.info("db.migration.chunk_texts_shared", chunks=removed, seconds=round(time.perf_counter() - started, 1))
    await create_vector_index(client, settings if dimension is None else replace(settings, dimension=dimension))
    # The next start loads a snapshot instead of replaying the drop and building the index a second time.
    await rewrite_append_only_file(client, wait_s=0)


def vector_index_statement(settings: SchemaSettings) -> str:
    """The one definition of the chunk vector index: migration 1 creates it, a re-embed re-creates it."""
    # The index options are integers from our own configuration, never user input.
    return (
        "CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) OPTIONS {"
        f"dimension: {int(settings.dimension)}, similarityFunction: 'cosine', M: {int(settings.m)}, "
        f"efConstruction: {int(settings.ef_construction)}, efRuntime: {int(settings.ef_runtime)}}}"
    )


def migrations(settings: SchemaSettings) -> list[Migration]:
    return [
        Migration(
            1,
            "memories, chunks and their indexes",
            (
                "CREATE INDEX FOR (m:Memory) ON (m.id)",
                "CREATE INDEX FOR (m:Memory) ON (m.source)",
                "CREATE INDEX FOR (m:Memory) ON (m.date_ts)",
                "CREATE INDEX FOR (c:Chunk) ON (c.id)",
                # (c.memory_id) was indexed here until migration 9 dropped it: a new graph never makes it.
                vector_index_statement(settings),
            ),
        ),
        Migration(
            2,
            "visibility sequence for the keyword index (numbers memories that have none)",
            ("CREATE INDEX FOR (m:Memory) ON (m.seq)", _BACKFILL_SEQ),
        ),
        Migration(
            3,
            "deduplication, listing and change log (content hashes are filled in by the engine at start-up)",
            (
                "CREATE INDEX FOR (m:Memory) ON (m.content_hash)",
                "CREATE INDEX FOR (m:Memory) ON (m.created_at)",
                "CREATE INDEX FOR (x:Change) ON (x.seq)",
            ),
        ),
        Migration(
            4,
            "durable jobs",
            (
                "CREATE INDEX FOR (j:Job) ON (j.id)",
                "CREATE INDEX FOR (j:Job) ON (j.state)",
                "CREATE INDEX FOR (j:Job) ON (j.memory_id)",
            ),
        ),
        # Memories stored before it have no `graph_state`: they all count as pending (nothing to backfill).
        Migration(
            5,
            "knowledge graph: entities and relations",
            (
                "CREATE INDEX FOR (e:Entity) ON (e.key)",
                "CREATE INDEX FOR (e:Entity) ON (e.id)",
                "CREATE INDEX FOR (e:Entity) ON (e.name)",
                "CREATE INDEX FOR ()-[r:RELATED_TO]-() ON (r.id)",
                "CREATE INDEX FOR ()-[r:RELATED_TO]-() ON (r.memory_id)",
            ),
        ),
        # Notes stored before it have no `kind` (read as 'note') and no file nodes: nothing to backfill.
        Migration(
            6,
            "files and codebases: file memories, code files and symbols",
            (
                "CREATE INDEX FOR (m:Memory) ON (m.kind)",
                "CREATE INDEX FOR (f:File) ON (f.memory_id)",
                "CREATE INDEX FOR (f:File) ON (f.codebase)",
                "CREATE INDEX FOR (f:File) ON (f.relative)",
                "CREATE INDEX FOR (s:Symbol) ON (s.id)",
                "CREATE INDEX FOR (s:Symbol) ON (s.memory_id)",
                "CREATE INDEX FOR (s:Symbol) ON (s.qualified_name)",
                "CREATE INDEX FOR (s:Symbol) ON (s.name_lower)",
                "CREATE INDEX FOR (s:Symbol) ON (s.codebase)",
                "CREATE INDEX FOR (c:Class) ON (c.qualified_name)",
            ),
        ),
        # get_stats counts the memories not yet processed by graph extraction from the few that are not
        # searchable yet and those processed (`GraphStore.totals`), instead of reading every memory.
        Migration(
            7,
            "counts without a scan: memory status and graph state",
            (
                "CREATE INDEX FOR (m:Memory) ON (m.status)",
                "CREATE INDEX FOR (m:Memory) ON (m.graph_state)",
            ),
        ),
        # Large writes mark what they stage (`Staging`), so the start-up sweep of crash leftovers reads those
        # marks instead of every chunk (22 s at 1M chunks). Leftovers from before the marks are swept here, once.
        Migration(8, "crash leftovers found from markers: the last full sweep", (_SWEEP_UNMARKED,)),
        # Staged chunks hang off their marker instead of being found by their memory's id: its index goes.
        Migration(
            9,
            "staged chunks found from their marker; no index on a chunk's memory id",
            (_HANG_STAGED, "DROP INDEX FOR (c:Chunk) ON (c.memory_id)"),
        ),
        Migration(
            10,
            "a one-chunk memory's text stored once, on the memory (the vector index is rebuilt)",
            (),
            step=lambda client: _share_sole_chunk_text(client, settings),
        ),
        # A page filtered by speaker, thread or tag reads the memories that pass from the label's index, with its
        # window of creation times (`memory_reads._conditions`); source, kind and date were indexed already.
        Migration(
            11,
            "filtered pages from the index: speaker, thread and tags",
            (
                "CREATE INDEX FOR (m:Memory) ON (m.speaker)",
                "CREATE INDEX FOR (m:Memory) ON (m.thread)",
                "CREATE INDEX FOR (m:Memory) ON (m.tags)",
            ),
        ),
    ]


def latest_version(settings: SchemaSettings) -> int:
    return migrations(settings)[-1].version


async def current_version(client: GraphClient) -> int:
    rows = await client.ro_query("MATCH (s:SchemaVersion {id: 'schema'}) RETURN s.version")
    return int(rows[0][0]) if rows else 0


async def migrate(client: GraphClient, settings: SchemaSettings, *, dry_run: bool = False) -> list[Migration]:
    """Bring the graph to the latest schema version; return the migrations applied (or due, if dry)."""
    version = await current_version(client)
    due = [m for m in migrations(settings) if m.version > version]
    if dry_run:
        return due
    if any(m.version == 1 for m in due):
        await _check_stored_dimension(client, settings.dimension)
    if due:  # a store loaded moments ago may still be building its indexes, which drop nothing safely (`_apply`)
        await wait_for_indexes(client)
    for migration in due:
        for statement in migration.statements:
            await _apply(client, statement)
        if migration.step is not None:
            await migration.step(client)
        await client.query(
            "MERGE (s:SchemaVersion {id: 'schema'}) SET s.version = $version, s.updated_at = timestamp()",
            {"version": migration.version},
            create=True,
        )
        log.info("db.migration.applied", version=migration.version, description=migration.description)
    return due


async def wait_for_indexes(
    client: GraphClient,
    timeout_s: float = 600.0,
    *,
    poll_s: float = 0.2,
    on_progress: Callable[[list[IndexBuild]], None] | None = None,
) -> None:
    """Indexes build in the background: wait until every one is OPERATIONAL.

    An index that is still indexing is given all the time it needs while its status (FalkorDB's
    "[Indexing] done/total") moves: `timeout_s` counts only time without progress. Dropping one property's index
    rebuilds the label's whole index, vector index included (migration 9: more than 600 s at a million chunks,
    decision 0032); the old index answers queries meanwhile. `on_progress` is told each new status."""
    deadline, noted = time.monotonic() + timeout_s, 0.0
    seen: list[IndexBuild] = []
    while True:
        pending = await indexes_building(client)
        if not pending:
            return
        now = time.monotonic()
        if pending != seen:
            seen, deadline = pending, now + timeout_s
            if on_progress is not None:
                on_progress(pending)
        elif now > deadline:
            raise DatabaseUnavailable(f"indexes did not finish building: {describe_builds(pending)}")
        if now - noted >= 10:
            log.info("db.indexes_building", indexes=[str(build) for build in pending])
            noted = now
        await asyncio.sleep(poll_s)


@dataclass(frozen=True, order=True)
class IndexBuild:
    """A label's index that is not yet answering, as FalkorDB reports it (its status, e.g. "[Indexing] 5/9: UNDER
    CONSTRUCTION"; every index of the graph shows one while the database builds them after loading it)."""

    label: str
    status: str

    @property
    def left(self) -> int:
        """Entities it has yet to take (0 when the status shows no count)."""
        found = _INDEXING.search(self.status)
        return int(found["total"]) - int(found["done"]) if found else 0

    @property
    def total(self) -> int:
        """Entities the build takes in all (0 when the status shows no count)."""
        found = _INDEXING.search(self.status)
        return int(found["total"]) if found else 0

    @property
    def empty(self) -> bool:
        """An index of a label with nothing in it: it waits in the database's queue, with nothing to build."""
        found = _INDEXING.search(self.status)
        return found is not None and found["total"] == "0"

    def __str__(self) -> str:
        return f"{self.label}: {self.status}"


def describe_builds(builds: list[IndexBuild]) -> str:
    """The builds a reader cares about: those with something to take (the empty ones queue behind them)."""
    return ", ".join(str(build) for build in [b for b in builds if not b.empty] or builds)


async def indexes_building(client: GraphClient) -> list[IndexBuild]:
    """The graph's indexes that are not yet answering, by label."""
    rows = await client.ro_query("CALL db.indexes() YIELD label, status RETURN label, status")
    return sorted(IndexBuild(label, status) for label, status in rows if status != "OPERATIONAL")


async def stored_vector_dimension(client: GraphClient) -> int | None:
    """The length of a stored chunk embedding (they all share one), or None when there are no chunks."""
    rows = await client.ro_query("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN c.embedding LIMIT 1")
    return len(rows[0][0]) if rows else None


async def vector_index_dimension(client: GraphClient) -> int | None:
    """The dimension the chunk vector index was built with, or None when there is no such index."""
    rows = await client.ro_query(
        "CALL db.indexes() YIELD label, options, types WHERE label = 'Chunk' RETURN options, types"
    )
    for options, types in rows:
        if "VECTOR" in (types or {}).get("embedding", []):
            return int(options["embedding"]["dimension"])
    return None


async def create_vector_index(client: GraphClient, settings: SchemaSettings) -> None:
    await _apply(client, vector_index_statement(settings))


async def drop_vector_index(client: GraphClient) -> bool:
    """Drop the chunk vector index; False when there was none (an interrupted re-embed already did)."""
    try:
        await client.query("DROP VECTOR INDEX FOR (c:Chunk) ON (c.embedding)")
    except QueryFailed as exc:
        if "no such index" in str(exc).lower():
            return False
        raise
    log.info("db.vector_index.dropped")
    return True


async def _check_stored_dimension(client: GraphClient, dimension: int) -> None:
    # A vector of another dimension than its index is stored but never indexed, without an error:
    # indexing a version-0 graph with the wrong dimension would hide every memory from vector search.
    stored = await stored_vector_dimension(client)
    if stored is not None and stored != dimension:
        raise SchemaMismatch(
            f"the stored chunk embeddings are {stored}-d but the vector index would be built {dimension}-d: "
            "migrate with the embedder that wrote them, then re-embed"
        )


async def create_indexes(client: GraphClient, statements: tuple[str, ...]) -> None:
    """Create indexes (and the graph, if it is new) with statements that may find them already there; wait
    until they are built."""
    for statement in statements:
        await _apply(client, statement)
    await wait_for_indexes(client)


async def _apply(client: GraphClient, statement: str) -> None:
    if statement.startswith("DROP INDEX"):
        # Dropping a field from a label index FalkorDB is still building hung a fresh graph's migration for the
        # client's whole timeout once (CI, loaded machine): let the build finish first.
        await wait_for_indexes(client)
    try:
        await client.query(statement, create=True)  # a new workspace's graph comes into being here
    except QueryFailed as exc:
        if not any(done in str(exc).lower() for done in ("already indexed", "no such index")):
            raise


async def repair_vector_index(client: GraphClient, settings: SchemaSettings) -> bool:
    """Rebuild the chunk vector index when it holds duplicate entries; True when it did.

    FalkorDB 4.16 indexes every node that an append-only-file replay re-creates twice, so after a
    restart that replayed writes a top-k query returns about k/2 distinct chunks. The newest chunk was
    written last, so if anything was replayed it was: its own top-k then holds itself twice and
    comes back short. A rebuild from the loaded graph is exact; the rewrite afterwards makes the
    next start load a snapshot instead of replaying queries.
    """
    dimension = await vector_index_dimension(client)
    if dimension is None or not await _vector_index_short(client):
        return False
    started = time.perf_counter()
    await drop_vector_index(client)
    await create_vector_index(client, replace(settings, dimension=dimension))
    await wait_for_indexes(client)
    await rewrite_append_only_file(client, wait_s=0)
    log.warning(
        "db.vector_index.rebuilt",
        reason="duplicate entries after an append-only-file replay",
        seconds=round(time.perf_counter() - started, 3),
    )
    return True


async def _vector_index_short(client: GraphClient) -> bool:
    rows = await client.ro_query(
        "MATCH (m:Memory) WITH max(m.seq) AS newest MATCH (m:Memory {seq: newest})-[:HAS_CHUNK]->(c:Chunk) "
        "WITH c.embedding AS probe LIMIT 1 MATCH (other:Chunk) RETURN probe, count(other)"
    )
    if not rows or rows[0][0] is None:
        return False
    probe, chunks = rows[0]
    k = min(int(chunks), _PROBE_K)
    # The vector goes back as a parameter: FalkorDB rejects a property as the procedure's argument.
    try:
        found = await client.ro_query(
            "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($probe)) YIELD node RETURN count(node)",
            {"k": k, "probe": list(probe)},
        )
    except QueryFailed as exc:  # the index is being (re)built, e.g. by another process's repair
        log.info("db.vector_index.check_skipped", reason=str(exc))
        return False
    return int(found[0][0]) < k


async def rewrite_append_only_file(client: GraphClient, *, wait_s: float) -> bool:
    """Compact the AOF into a snapshot (BGREWRITEAOF); wait up to `wait_s` for it. True when it finished."""
    try:
        await client.command("BGREWRITEAOF")
    except QueryFailed as exc:
        if "in progress" not in str(exc).lower():
            raise
    deadline = time.monotonic() + wait_s
    while True:
        info = await client.command("INFO", "persistence")
        if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
