"""Writes of memories and their chunks: insert (deduplicated), update, delete, metadata merge.

Every write that changes which chunks exist takes the next sequence number and, for removed or
replaced chunks, leaves a `(:Change {seq, added, removed, at})` entry of chunk ids only (no text),
which other processes' keyword indexes read to catch up. Changes are pruned after a while
(`Maintenance.prune_changes`); a process that fell further behind rebuilds its index.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from zapomni_db._cypher import (
    CHUNK_PROPERTIES,
    DROP_UNMENTIONED,
    JOB_PROPERTIES,
    NEXT_SEQ,
    PURGE_EVIDENCE,
    REINDEX_CHUNKS,
    VectorParam,
)
from zapomni_db.client import GraphClient
from zapomni_db.memory_reads import stored_head
from zapomni_db.records.jobs import JobRecord
from zapomni_db.records.memories import ChunkRow, MemoryRecord

# A single query this size stays well inside FalkorDB's comfortable parameter payload
# (500 chunks x 384 floats); bigger writes put their chunks in first, in batches, unlinked.
WRITE_BATCH = 500

_MEMORY_PROPERTIES = (
    "{id: $memory_id, text: $text, head: $head, created_at: $created_at, updated_at: $updated_at, tags: $tags, "
    "source: $source, date: $date, date_ts: $date_ts, metadata: $metadata, chunk_count: $chunk_count, "
    "content_hash: $content_hash, seq: seq, kind: $kind, file_hash: $file_hash, graph_state: $graph_state, "
    "thread: $thread, inferred: $inferred, speaker: $speaker}"
)
# Nothing is created when a memory with the same content hash exists: two processes adding the
# same text at once store it once (FalkorDB runs one write query at a time).
_IF_NEW = "OPTIONAL MATCH (dup:Memory {content_hash: $content_hash}) WITH count(dup) AS dups WHERE dups = 0 "
_INSERT_WHOLE = (
    f"{_IF_NEW}{NEXT_SEQ}CREATE (m:Memory {_MEMORY_PROPERTIES}) WITH m UNWIND $chunks AS c "
    f"CREATE (m)-[:HAS_CHUNK]->(:Chunk {CHUNK_PROPERTIES}) WITH m, count(*) AS n RETURN m.id"
)
# Many small memories in one write, each stored unless its text is (an import's batch, its own duplicates removed
# by the caller): the ids of those stored. One write and one fsync for a batch instead of one per memory.
_INSERT_NEW_MANY = (
    "UNWIND $memories AS mem OPTIONAL MATCH (dup:Memory {content_hash: mem.content_hash}) "
    "WITH mem, count(dup) AS dups WHERE dups = 0 WITH mem ORDER BY mem.position WITH collect(mem) AS fresh "
    "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + size(fresh) "
    "WITH fresh, q.value - size(fresh) AS base UNWIND range(0, size(fresh) - 1) AS i "
    f"WITH base + i + 1 AS seq, fresh[i] AS mem CREATE (m:Memory {_MEMORY_PROPERTIES.replace('$', 'mem.')}) "
    f"WITH m, mem UNWIND mem.chunks AS c CREATE (m)-[:HAS_CHUNK]->(:Chunk {CHUNK_PROPERTIES.replace('$', 'mem.')}) "
    "RETURN DISTINCT m.id"
)
# A large add: the memory is stored (durable, listed, not yet searchable) with the job that indexes it.
_INSERT_PENDING = (
    f"{_IF_NEW}{NEXT_SEQ}CREATE (m:Memory {_MEMORY_PROPERTIES}) SET m.status = 'indexing', m.job_id = $job_id "
    f"CREATE (j:Job {JOB_PROPERTIES}) RETURN m.id"
)
_REQUEUE = (
    "MATCH (m:Memory {id: $memory_id}) WHERE m.status = 'failed' SET m.status = 'indexing', m.job_id = $job_id "
    f"CREATE (j:Job {JOB_PROPERTIES}) RETURN m.id"
)
# Many small memories in one write, each with its own sequence number, for bulk loads whose texts are known to
# be distinct (no duplicate check): the scale benchmark grows its stores to a million chunks with it.
_INSERT_MANY = (
    "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + size($memories) "
    "WITH q.value - size($memories) AS base UNWIND range(0, size($memories) - 1) AS i "
    f"WITH base + i + 1 AS seq, $memories[i] AS mem CREATE (m:Memory {_MEMORY_PROPERTIES.replace('$', 'mem.')}) "
    f"WITH m, mem UNWIND mem.chunks AS c CREATE (m)-[:HAS_CHUNK]->(:Chunk {CHUNK_PROPERTIES.replace('$', 'mem.')}) "
    "RETURN count(DISTINCT m)"
)
# Written before a large write's first chunk, which hang off it (STAGES), and removed once they are linked or
# dropped: what a crash in between leaves is found from these few nodes (`Maintenance.remove_orphan_chunks`), not
# by reading every chunk, and a chunk needs no index on its memory's id (30-90 MB less at 1M: decision 0032).
_UNMARK_STAGING = "MATCH (s:Staging {memory_id: $memory_id}) DETACH DELETE s"
# The marker is made with the first batch and touched by each (the start-up sweep leaves marks younger than an hour).
_STAGE_CHUNKS = (
    "MERGE (s:Staging {memory_id: $memory_id}) SET s.at = $at "
    f"WITH s UNWIND $chunks AS c CREATE (s)-[:STAGES]->(:Chunk {CHUNK_PROPERTIES})"
)
_STAGED = "MATCH (:Staging {memory_id: $memory_id})-[:STAGES]->(c:Chunk) WHERE NOT (c)<-[:HAS_CHUNK]-() "
_INSERT_LINK = (
    f"{_IF_NEW}{NEXT_SEQ}CREATE (m:Memory {_MEMORY_PROPERTIES}) WITH m "
    f"{_STAGED}CREATE (m)-[:HAS_CHUNK]->(c) WITH m, count(*) AS n RETURN m.id"
)
_DROP_STAGED = f"{_STAGED}DETACH DELETE c"

_SET_FIELDS = (
    "m.text = $text, m.head = $head, m.tags = $tags, m.source = $source, m.date = $date, m.date_ts = $date_ts, "
    "m.metadata = $metadata, m.content_hash = $content_hash, m.updated_at = $updated_at, m.thread = $thread, "
    "m.inferred = $inferred, m.speaker = $speaker"
)
# One query: readers see the old memory or the new one, never a mix. A large update's chunks were
# staged (unlinked) beforehand and are linked here; a small one's are created here. The old text's
# knowledge-graph evidence goes in the same write and the memory is pending for the graph again.
_UPDATE = (
    f"MATCH (m:Memory {{id: $memory_id}}) {PURGE_EVIDENCE}{DROP_UNMENTIONED}WITH m "
    "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + 1 WITH m, q.value AS seq "
    f"SET {_SET_FIELDS}, m.chunk_count = $chunk_count, m.graph_state = null, m.graph_job = null, m.graph_at = null, "
    "m.graph_chunks = null, m.graph_stale = null "
    "WITH m, seq OPTIONAL MATCH (m)-[:HAS_CHUNK]->(old:Chunk) WHERE old.id IN $drop DETACH DELETE old "
    "WITH DISTINCT m, seq CREATE (:Change {seq: seq, removed: $drop, added: $added, at: $now}) "
    "WITH m OPTIONAL MATCH (:Staging {memory_id: $memory_id})-[:STAGES]->(s:Chunk) "
    "WHERE s.id IN $staged AND NOT (s)<-[:HAS_CHUNK]-() "
    "FOREACH (x IN CASE WHEN s IS NULL THEN [] ELSE [s] END | CREATE (m)-[:HAS_CHUNK]->(x)) "
    f"WITH DISTINCT m FOREACH (c IN $chunks | CREATE (m)-[:HAS_CHUNK]->(:Chunk {CHUNK_PROPERTIES})) RETURN m.id"
)
# The keyword index keeps what a hit shows (decision 0045): the change log names the chunks, so it reads them again.
_UPDATE_FIELDS = f"MATCH (m:Memory {{id: $memory_id}}) SET {_SET_FIELDS} WITH m {REINDEX_CHUNKS}RETURN DISTINCT m.id"

# The memories' knowledge-graph evidence goes first, in the same write (`_cypher.PURGE_EVIDENCE`).
_DELETE = (
    f"{NEXT_SEQ}{PURGE_EVIDENCE}{DROP_UNMENTIONED}WITH seq "
    "UNWIND $ids AS mid MATCH (m:Memory {id: mid}) OPTIONAL MATCH (m)-[:HAS_CHUNK|STAGED]->(c:Chunk) "
    "WITH seq, collect(DISTINCT m) AS ms, collect(c) AS cs, collect(c.id) AS cids, collect(DISTINCT m.id) AS mids "
    "CREATE (:Change {seq: seq, removed: cids, added: [], at: $now}) "
    "WITH ms + cs AS doomed, mids UNWIND doomed AS n DETACH DELETE n WITH mids, count(n) AS gone RETURN mids, gone"
)


class MemoryWrites:
    """Creates, changes and removes `Memory` and `Chunk` nodes in one graph."""

    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def insert(self, memory: MemoryRecord, chunks: Sequence[ChunkRow]) -> bool:
        """Store a memory with its chunks, whole or not at all; False when its content hash is taken.

        Small memories go in one query (atomic in FalkorDB). Large ones write their chunks in
        batches first and create the Memory node and its HAS_CHUNK edges last: searches only
        reach chunks through a Memory, so a half-written memory is invisible, and
        `Maintenance.remove_orphan_chunks` clears what a crash left behind.
        """
        params = _memory_params(memory, len(chunks))
        rows = _chunk_params(memory, chunks)
        if len(rows) <= WRITE_BATCH:
            return bool(await self._client.query(_INSERT_WHOLE, {**params, "chunks": rows}))
        await self._stage(memory.id, memory.created_at, rows)
        linked = bool(await self._client.query(_INSERT_LINK, params))
        if not linked:
            await self._client.query(_DROP_STAGED, {"memory_id": memory.id})
        await self._client.query(_UNMARK_STAGING, {"memory_id": memory.id})
        return linked

    async def insert_many(self, memories: Sequence[tuple[MemoryRecord, Sequence[ChunkRow]]]) -> int:
        """Store small memories (each within one write batch) in one query; how many were stored.

        For bulk loads of texts known to be distinct: unlike `insert`, no content hash is checked.
        """
        rows = [
            {**_memory_params(memory, len(chunks)), "chunks": _chunk_params(memory, chunks)}
            for memory, chunks in memories
        ]
        if not rows:
            return 0
        found = await self._client.query(_INSERT_MANY, {"memories": rows})
        return int(found[0][0]) if found else 0

    async def insert_new(self, memories: Sequence[tuple[MemoryRecord, Sequence[ChunkRow]]]) -> set[str]:
        """Store small memories (each within one write batch, texts distinct among them) in one query, each
        unless its content hash is stored already; the ids of those stored."""
        # `position`: stored in the order given (sequence numbers are the order lists and exports read).
        rows = [
            {**_memory_params(memory, len(chunks)), "chunks": _chunk_params(memory, chunks), "position": position}
            for position, (memory, chunks) in enumerate(memories)
        ]
        if not rows:
            return set()
        return {row[0] for row in await self._client.query(_INSERT_NEW_MANY, {"memories": rows})}

    def fits_one_write(self, chunks: Sequence[ChunkRow]) -> bool:
        """Whether a memory of these chunks is written in one query (`insert_new` takes only those)."""
        return len(chunks) <= WRITE_BATCH

    async def insert_pending(self, memory: MemoryRecord, job: JobRecord) -> bool:
        """Store a memory ahead of its chunks, with the job that will index it; False when its content
        hash is taken. The memory is listed at once (status "indexing") and searchable once published."""
        return bool(await self._client.query(_INSERT_PENDING, {**_memory_params(memory, 0), **job_params(job)}))

    async def requeue(self, memory_id: str, job: JobRecord) -> bool:
        """Give a memory whose indexing failed a new indexing job; False unless it is in state failed."""
        return bool(await self._client.query(_REQUEUE, {"memory_id": memory_id, **job_params(job)}))

    async def update(
        self, memory: MemoryRecord, *, keep: Sequence[str], drop: Sequence[str], new: Sequence[ChunkRow]
    ) -> bool:
        """Replace a memory's fields and changed chunks in one query; False when it no longer exists.

        Its knowledge-graph evidence is removed in the same query and it becomes pending for the graph.

        `keep` are chunk ids left untouched, `drop` those removed, `new` the chunks created.
        """
        params = {
            **_memory_params(memory, len(keep) + len(new)),
            "purge": [memory.id],
            "drop": list(drop),
            "added": [c.id for c in new],
            "now": time.time(),
        }
        rows = _chunk_params(memory, new, chunk_count=len(keep) + len(new))
        staged: list[str] = []
        if len(rows) > WRITE_BATCH:
            # The new chunks are created now, not when the memory was.
            await self._stage(memory.id, params["now"], rows)
            staged, rows = [r["id"] for r in rows], []
        done = bool(await self._client.query(_UPDATE, {**params, "chunks": rows, "staged": staged}))
        if staged:
            if not done:
                await self._client.query(_DROP_STAGED, {"memory_id": memory.id})
            await self._client.query(_UNMARK_STAGING, {"memory_id": memory.id})
        return done

    async def update_fields(self, memory: MemoryRecord) -> bool:
        """Change only the Memory node's own fields: its chunks stay as they are, and only the keyword index, which
        keeps what a hit shows, reads them again."""
        return bool(await self._client.query(_UPDATE_FIELDS, {**_memory_params(memory, 0), "now": time.time()}))

    async def delete(self, memory_ids: Sequence[str]) -> list[str]:
        """Delete these memories and their chunks (from every index) and their knowledge-graph evidence
        (relations, mentions, entities left unmentioned), in one query; return the ids that existed."""
        if not memory_ids:
            return []
        ids = list(memory_ids)
        rows = await self._client.query(_DELETE, {"ids": ids, "purge": ids, "now": time.time()})
        return list(rows[0][0]) if rows else []

    async def _stage(self, memory_id: str, created_at: float, rows: list[dict[str, Any]]) -> None:
        for start in range(0, len(rows), WRITE_BATCH):
            await self._client.query(
                _STAGE_CHUNKS,
                {
                    "memory_id": memory_id,
                    "created_at": created_at,
                    "at": time.time(),
                    "chunks": rows[start : start + WRITE_BATCH],
                },
            )


def job_params(job: JobRecord) -> dict[str, Any]:
    """The parameters `JOB_PROPERTIES` reads."""
    return {
        "job_id": job.id,
        "job_kind": job.kind,
        "job_memory_id": job.memory_id,
        "job_args": job.args_json,
        "job_unit": job.unit,
        "job_total": job.total,
        "job_created_at": job.created_at,
    }


def _memory_params(memory: MemoryRecord, chunk_count: int) -> dict[str, Any]:
    return {
        "memory_id": memory.id,
        "text": memory.text,
        "head": stored_head(memory.text),
        "created_at": memory.created_at,
        "tags": list(memory.tags),
        "source": memory.source,
        "date": memory.date,
        "date_ts": memory.date_ts,
        "metadata": memory.metadata_json,
        "chunk_count": chunk_count,
        "content_hash": memory.content_hash,
        "updated_at": memory.updated_at if memory.updated_at is not None else memory.created_at,
        # A note is stored without a kind (`coalesce(m.kind, 'note')` reads it), as before files existed.
        "kind": None if memory.kind == "note" else memory.kind,
        "file_hash": memory.file_hash,
        "thread": memory.thread,
        "inferred": memory.inferred_json,
        "speaker": memory.speaker,
        # Code has its own graph (zapomni_db.code): entity extraction leaves it alone.
        "graph_state": "code" if memory.kind == "code" else None,
    }


def _chunk_params(
    memory: MemoryRecord, chunks: Sequence[ChunkRow], *, chunk_count: int | None = None
) -> list[dict[str, Any]]:
    """A memory's chunk rows as written: the one chunk of a memory that is its whole text stores no copy of it.

    Most memories are one short chunk, and a second copy of their text is FalkorDB memory for nothing
    (decision 0033); every read takes `coalesce(c.text, m.text)`. It holds only while the chunk
    is the memory's only one and the memory's text does not change, which `MemoryWriter.plan_update` keeps: it
    never keeps the chunk of a one-chunk memory across an edit. `chunk_count` is the memory's chunks in all, when
    some of them are not among `chunks` (an update's kept ones).
    """
    rows = [chunk_param(c) for c in chunks]
    whole = len(chunks) == 1 and (chunk_count is None or chunk_count == 1)
    if whole and chunks[0].text == memory.text:
        rows[0]["text"] = None  # FalkorDB stores no property for a null
    return rows


def chunk_param(chunk: ChunkRow) -> dict[str, Any]:
    return {
        "id": chunk.id,
        "idx": chunk.index,
        "text": chunk.text,
        "embedding": VectorParam(chunk.embedding),
        "page": chunk.place.page,
        "section": chunk.place.section,
        "line_start": chunk.place.line_start,
        "line_end": chunk.place.line_end,
        "context": chunk.context,
    }
