"""All Cypher for memories and chunks. Values always travel as parameters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zapomni_db.client import GraphClient
from zapomni_db.errors import SchemaMismatch
from zapomni_db.schema import current_version

# A single query this size stays well inside FalkorDB's comfortable parameter payload
# (500 chunks x 384 floats); bigger memories are written in batches, then linked.
WRITE_BATCH = 500


@dataclass(frozen=True)
class ChunkRow:
    id: str
    index: int
    text: str
    embedding: list[float]
    # Keyword-index statistics, computed once at write time: distinct terms, their counts, length.
    terms: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    length: int = 0


@dataclass(frozen=True)
class ChunkTerms:
    chunk_id: str
    seq: int
    terms: list[str]
    counts: list[int]
    length: int


@dataclass(frozen=True)
class MemoryRecord:
    id: str
    text: str
    created_at: float
    tags: list[str] = field(default_factory=list)
    source: str | None = None
    date: str | None = None
    # Seconds since the epoch of `date` when given, else of `created_at`: what date filters use.
    date_ts: float = 0.0
    metadata_json: str = "{}"


@dataclass(frozen=True)
class SearchFilter:
    tags: list[str] | None = None
    source: str | None = None
    date_from_ts: float | None = None
    date_to_ts: float | None = None

    @property
    def active(self) -> bool:
        return (
            bool(self.tags) or self.source is not None or self.date_from_ts is not None or self.date_to_ts is not None
        )

    def as_params(self) -> dict[str, Any]:
        return {
            "tags": self.tags or None,
            "source": self.source,
            "date_from": self.date_from_ts,
            "date_to": self.date_to_ts,
        }


@dataclass(frozen=True)
class ChunkHit:
    """A chunk found by either leg, with its cosine distance to the query vector."""

    memory_id: str
    chunk_id: str
    text: str
    distance: float
    tags: list[str]
    source: str | None
    created_at: float
    date: str | None


@dataclass(frozen=True)
class Counts:
    memories: int
    chunks: int


@dataclass(frozen=True)
class StoredMemory:
    """A memory as stored, without its chunks: what an export writes."""

    id: str
    seq: int
    text: str
    created_at: float
    tags: list[str]
    source: str | None
    date: str | None
    metadata_json: str
    chunk_count: int


@dataclass(frozen=True)
class StoredChunk:
    memory_id: str
    id: str
    index: int
    text: str
    embedding: list[float]


_CHUNK_PROPERTIES = (
    "{id: c.id, memory_id: $memory_id, idx: c.idx, text: c.text, embedding: vecf32(c.embedding), "
    "created_at: $created_at, terms: c.terms, term_counts: c.counts, term_length: c.length}"
)
# FalkorDB runs write queries one at a time, so this counter orders memories by when they became
# visible. The number goes on the Memory node, created in the query that makes it visible: setting
# a property on a Chunk later would re-insert its vector into the HNSW index (a deleted copy stays
# behind and vector queries return fewer than k nodes).
_NEXT_SEQ = "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + 1 WITH q.value AS seq "
_MEMORY_PROPERTIES = (
    "{id: $memory_id, text: $text, created_at: $created_at, tags: $tags, source: $source, "
    "date: $date, date_ts: $date_ts, metadata: $metadata, chunk_count: $chunk_count, seq: seq}"
)

_CREATE_WHOLE = (
    f"{_NEXT_SEQ}CREATE (m:Memory {_MEMORY_PROPERTIES}) WITH m, seq UNWIND $chunks AS c "
    f"CREATE (m)-[:HAS_CHUNK]->(:Chunk {_CHUNK_PROPERTIES})"
)
_CREATE_CHUNKS = f"UNWIND $chunks AS c CREATE (:Chunk {_CHUNK_PROPERTIES})"
_LINK_CHUNKS = (
    f"{_NEXT_SEQ}CREATE (m:Memory {_MEMORY_PROPERTIES}) WITH m, seq "
    "MATCH (c:Chunk {memory_id: $memory_id}) CREATE (m)-[:HAS_CHUNK]->(c)"
)
_FILTER = (
    "($source IS NULL OR m.source = $source) "
    "AND ($tags IS NULL OR any(t IN m.tags WHERE t IN $tags)) "
    "AND ($date_from IS NULL OR m.date_ts >= $date_from) "
    "AND ($date_to IS NULL OR m.date_ts <= $date_to)"
)
_HIT_FIELDS = "m.id, node.id, node.text, distance, m.tags, m.source, m.created_at, m.date"
_VECTOR_SEARCH = (
    "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($vector)) YIELD node, score "
    f"MATCH (node)<-[:HAS_CHUNK]-(m:Memory) WHERE {_FILTER} "
    f"WITH m, node, score AS distance RETURN {_HIT_FIELDS} "
    "ORDER BY distance ASC, node.id ASC LIMIT $limit"
)
# Keyword candidates come ranked from the in-process BM25 index; this applies the filters and
# brings the cosine distance along so every hit has a similarity.
_FETCH_CHUNKS = (
    "UNWIND $ids AS cid MATCH (node:Chunk {id: cid}) WITH node MATCH (node)<-[:HAS_CHUNK]-(m:Memory) "
    f"WHERE {_FILTER} WITH m, node, vec.cosineDistance(node.embedding, vecf32($vector)) AS distance "
    f"RETURN {_HIT_FIELDS}"
)


class MemoryRepository:
    """Reads and writes `Memory` and `Chunk` nodes in one graph."""

    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def insert(self, memory: MemoryRecord, chunks: Sequence[ChunkRow]) -> None:
        """Store a memory with its chunks; readers see it whole or not at all.

        Small memories go in one query (atomic in FalkorDB). Large ones write their chunks in
        batches first and create the Memory node and its HAS_CHUNK edges last: searches only
        reach chunks through a Memory, so a half-written memory is invisible, and
        `remove_orphan_chunks` clears what a crash left behind.
        """
        params = self._memory_params(memory, len(chunks))
        rows = [self._chunk_param(c) for c in chunks]
        if len(rows) <= WRITE_BATCH:
            await self._client.query(_CREATE_WHOLE, {**params, "chunks": rows})
            return
        for start in range(0, len(rows), WRITE_BATCH):
            await self._client.query(
                _CREATE_CHUNKS,
                {
                    "memory_id": memory.id,
                    "created_at": memory.created_at,
                    "chunks": rows[start : start + WRITE_BATCH],
                },
            )
        await self._client.query(_LINK_CHUNKS, params)

    async def vector_search(self, vector: list[float], *, k: int, limit: int, filters: SearchFilter) -> list[ChunkHit]:
        """The `limit` nearest chunks among the `k` nearest in the index that pass `filters`."""
        rows = await self._client.ro_query(
            _VECTOR_SEARCH, {"vector": vector, "k": k, "limit": limit, **filters.as_params()}
        )
        return [_hit(row) for row in rows]

    async def fetch_chunks(self, ids: Sequence[str], vector: list[float], *, filters: SearchFilter) -> list[ChunkHit]:
        """The chunks among `ids` that pass `filters`, in the order of `ids`."""
        rows = await self._client.ro_query(_FETCH_CHUNKS, {"ids": list(ids), "vector": vector, **filters.as_params()})
        by_id = {row[1]: _hit(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def chunk_sequence(self) -> int:
        """The sequence number of the newest visible memory (0 for an empty store)."""
        rows = await self._client.ro_query("MATCH (q:Sequence {id: 'chunks'}) RETURN q.value")
        return int(rows[0][0]) if rows else 0

    async def chunk_terms_between(self, after: int, upto: int) -> list[ChunkTerms]:
        """Keyword statistics of the chunks with `after < seq <= upto`."""
        rows = await self._client.ro_query(
            "MATCH (m:Memory) WHERE m.seq > $after AND m.seq <= $upto MATCH (m)-[:HAS_CHUNK]->(c:Chunk) "
            "RETURN c.id, m.seq, c.terms, c.term_counts, c.term_length",
            {"after": after, "upto": upto},
        )
        return [
            ChunkTerms(
                chunk_id=r[0], seq=int(r[1]), terms=list(r[2] or []), counts=list(r[3] or []), length=int(r[4] or 0)
            )
            for r in rows
        ]

    async def counts(self) -> Counts:
        memories = await self._client.ro_query("MATCH (m:Memory) RETURN count(m)")
        chunks = await self._client.ro_query("MATCH (:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN count(c)")
        return Counts(memories=int(memories[0][0]), chunks=int(chunks[0][0]))

    async def indexed_chunks(self) -> int:
        """Chunk nodes in the vector index, linked or not: the ceiling for a vector query's k."""
        rows = await self._client.ro_query("MATCH (c:Chunk) RETURN count(c)")
        return int(rows[0][0])

    async def remove_orphan_chunks(self, older_than_ts: float) -> int:
        """Delete chunks no Memory links to, written before `older_than_ts` (a crashed large add)."""
        rows = await self._client.query(
            "MATCH (c:Chunk) WHERE c.created_at < $cutoff AND NOT (c)<-[:HAS_CHUNK]-(:Memory) DELETE c RETURN count(c)",
            {"cutoff": older_than_ts},
        )
        return int(rows[0][0]) if rows else 0

    async def claim_embedder(self, model: str, dimension: int) -> None:
        """Record the embedder that builds this graph; refuse a different one."""
        rows = await self._client.query(
            "MERGE (e:EmbedderInfo {id: 'embedder'}) "
            "ON CREATE SET e.model = $model, e.dimension = $dimension, e.created_at = timestamp() "
            "RETURN e.model, e.dimension",
            {"model": model, "dimension": dimension},
        )
        stored_model, stored_dimension = rows[0][0], int(rows[0][1])
        if (stored_model, stored_dimension) != (model, dimension):
            raise SchemaMismatch(
                f"this graph was built with the embedder {stored_model} ({stored_dimension}-d), "
                f"but {model} ({dimension}-d) is configured"
            )

    async def database_size_bytes(self) -> int:
        info = await self._client.command("INFO", "memory")
        return int(info.get("used_memory", 0)) if isinstance(info, dict) else 0

    @staticmethod
    def _memory_params(memory: MemoryRecord, chunk_count: int) -> dict[str, Any]:
        return {
            "memory_id": memory.id,
            "text": memory.text,
            "created_at": memory.created_at,
            "tags": list(memory.tags),
            "source": memory.source,
            "date": memory.date,
            "date_ts": memory.date_ts,
            "metadata": memory.metadata_json,
            "chunk_count": chunk_count,
        }

    @staticmethod
    def _chunk_param(chunk: ChunkRow) -> dict[str, Any]:
        return {
            "id": chunk.id,
            "idx": chunk.index,
            "text": chunk.text,
            "embedding": chunk.embedding,
            "terms": chunk.terms,
            "counts": chunk.counts,
            "length": chunk.length,
        }

    # -- The embedder claim and re-embedding (`zapomni migrate reembed`) ------------------------

    async def stored_embedder(self) -> EmbedderClaim | None:
        """The embedder this graph is claimed by, or None before the first start."""
        rows = await self._client.ro_query("MATCH (e:EmbedderInfo {id: 'embedder'}) RETURN e.model, e.dimension")
        return EmbedderClaim(model=rows[0][0], dimension=int(rows[0][1])) if rows else None

    async def reembed_state(self) -> ReembedState | None:
        """The re-embed in progress, if one started and has not finished; the engine must not open meanwhile."""
        rows = await self._client.ro_query(
            "MATCH (r:Reembed {id: 'reembed'}) RETURN r.model, r.dimension, r.started_at"
        )
        if not rows:
            return None
        model, dimension, started_at = rows[0]
        return ReembedState(model=model, dimension=int(dimension), started_at=float(started_at))

    async def begin_reembed(self, model: str, dimension: int, now: float) -> tuple[ReembedState, bool]:
        """Mark a re-embed to `model` as in progress; the flag is True when none was before this call.

        A run that resumes keeps its start time; one that resumes with another target model takes
        that model (chunks are skipped only when they already carry the new one).
        """
        rows = await self._client.query(
            "OPTIONAL MATCH (old:Reembed {id: 'reembed'}) WITH count(old) = 0 AS fresh "
            "MERGE (r:Reembed {id: 'reembed'}) ON CREATE SET r.started_at = $now "
            "SET r.model = $model, r.dimension = $dimension RETURN r.started_at, fresh",
            {"model": model, "dimension": dimension, "now": now},
        )
        started_at, fresh = rows[0]
        return ReembedState(model=model, dimension=dimension, started_at=float(started_at)), bool(fresh)

    async def abandon_reembed(self) -> None:
        """Remove the in-progress mark of a re-embed that never touched a chunk."""
        await self._client.query("MATCH (r:Reembed {id: 'reembed'}) DELETE r")

    async def stored_chunks(self) -> int:
        """Every Chunk node, linked or not (0 for a graph that does not exist yet)."""
        rows = await self._client.ro_query("MATCH (c:Chunk) RETURN count(c)")
        return int(rows[0][0]) if rows else 0

    async def reembedded_chunks(self, model: str) -> int:
        """Chunks whose vector a re-embed to `model` has already written."""
        rows = await self._client.ro_query(
            "MATCH (c:Chunk) WHERE c.embedding_model = $model RETURN count(c)", {"model": model}
        )
        return int(rows[0][0]) if rows else 0

    async def chunk_ids_to_reembed(self, model: str, *, after: str, limit: int) -> list[str]:
        """Up to `limit` ids, in id order after `after`, of chunks whose vector is not from `model` yet."""
        rows = await self._client.ro_query(
            "MATCH (c:Chunk) WHERE c.id > $after AND (c.embedding_model IS NULL OR c.embedding_model <> $model) "
            "RETURN c.id ORDER BY c.id LIMIT $limit",
            {"model": model, "after": after, "limit": limit},
        )
        return [row[0] for row in rows]

    async def chunk_texts(self, ids: Sequence[str]) -> dict[str, str]:
        rows = await self._client.ro_query(
            "UNWIND $ids AS cid MATCH (c:Chunk {id: cid}) RETURN c.id, c.text", {"ids": list(ids)}
        )
        return {row[0]: row[1] for row in rows}

    async def set_chunk_embeddings(self, model: str, vectors: dict[str, list[float]]) -> int:
        """Replace chunk vectors and tag them with `model` in one SET; returns the chunks updated.

        Only with the vector index dropped: a SET on an indexed Chunk re-inserts it into the HNSW
        index and leaves a stale copy behind.
        """
        rows = await self._client.query(
            "UNWIND $rows AS r MATCH (c:Chunk {id: r.id}) "
            "SET c.embedding = vecf32(r.embedding), c.embedding_model = $model RETURN count(c)",
            {"model": model, "rows": [{"id": cid, "embedding": vector} for cid, vector in vectors.items()]},
        )
        return int(rows[0][0]) if rows else 0

    async def finish_reembed(self, model: str, dimension: int) -> None:
        """Claim the graph for the new embedder and clear the in-progress mark, in one (atomic) query."""
        await self._client.query(
            "MERGE (e:EmbedderInfo {id: 'embedder'}) ON CREATE SET e.created_at = timestamp() "
            "SET e.model = $model, e.dimension = $dimension, e.reembedded_at = timestamp() "
            "WITH e OPTIONAL MATCH (r:Reembed {id: 'reembed'}) DELETE r",
            {"model": model, "dimension": dimension},
        )

    # -- Export and import (`zapomni export` / `zapomni import`) ---------------------------------

    async def memories_between(self, after: int, upto: int) -> list[StoredMemory]:
        """Memories with `after < seq <= upto`, in `seq` order (the order they became visible)."""
        rows = await self._client.ro_query(
            "MATCH (m:Memory) WHERE m.seq > $after AND m.seq <= $upto "
            "RETURN m.id, m.seq, m.text, m.created_at, m.tags, m.source, m.date, m.metadata, m.chunk_count "
            "ORDER BY m.seq",
            {"after": after, "upto": upto},
        )
        return [
            StoredMemory(
                id=r[0],
                seq=int(r[1]),
                text=r[2],
                created_at=float(r[3]),
                tags=list(r[4] or []),
                source=r[5],
                date=r[6],
                metadata_json=r[7] or "{}",
                chunk_count=int(r[8] or 0),
            )
            for r in rows
        ]

    async def chunks_of(self, memory_ids: Sequence[str]) -> list[StoredChunk]:
        """Every chunk of `memory_ids` (with its vector), by memory id then idx."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid})-[:HAS_CHUNK]->(c:Chunk) "
            "RETURN m.id, c.id, c.idx, c.text, c.embedding ORDER BY m.id, c.idx",
            {"ids": list(memory_ids)},
        )
        return [_stored_chunk(row) for row in rows]

    async def chunk_range(self, memory_id: str, from_index: int, to_index: int) -> list[StoredChunk]:
        """The chunks of one memory with `from_index <= idx < to_index`, in idx order.

        A query of its own: an optional bound (`$hi IS NULL OR ...`) made FalkorDB 5x slower here.
        """
        rows = await self._client.ro_query(
            "MATCH (m:Memory {id: $id})-[:HAS_CHUNK]->(c:Chunk) WHERE c.idx >= $lo AND c.idx < $hi "
            "RETURN m.id, c.id, c.idx, c.text, c.embedding ORDER BY c.idx",
            {"id": memory_id, "lo": from_index, "hi": to_index},
        )
        return [_stored_chunk(row) for row in rows]

    async def existing_memory_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that name a stored memory."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid}) RETURN m.id", {"ids": list(ids)}
        )
        return {row[0] for row in rows}

    async def linked_chunk_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that name a chunk of a stored memory.

        Unlinked chunks (left by a crashed large write) are not counted: they are invisible, and
        the start-up sweep removes them.
        """
        rows = await self._client.ro_query(
            "UNWIND $ids AS cid MATCH (c:Chunk {id: cid})<-[:HAS_CHUNK]-(:Memory) RETURN DISTINCT c.id",
            {"ids": list(ids)},
        )
        return {row[0] for row in rows}

    async def schema_version(self) -> int:
        return await current_version(self._client)


def _stored_chunk(row: list[Any]) -> StoredChunk:
    return StoredChunk(memory_id=row[0], id=row[1], index=int(row[2]), text=row[3], embedding=list(row[4] or []))


def _hit(row: list[Any]) -> ChunkHit:
    return ChunkHit(
        memory_id=row[0],
        chunk_id=row[1],
        text=row[2],
        distance=float(row[3]),
        tags=list(row[4] or []),
        source=row[5],
        created_at=float(row[6]),
        date=row[7],
    )


@dataclass(frozen=True)
class EmbedderClaim:
    """The `(:EmbedderInfo)` record: which embedder's vectors the graph holds."""

    model: str
    dimension: int


@dataclass(frozen=True)
class ReembedState:
    """The `(:Reembed)` record of a re-embed that started and has not finished."""

    model: str
    dimension: int
    started_at: float
