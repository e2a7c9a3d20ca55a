"""What search's graph expansion reads: the entities of chunks, how widely each entity is mentioned, the
chunks that mention given entities, and the entities related to them.

Read-only and bounded: an entity mentioned by many chunks (a hub, such as the speaker named in every turn
of a conversation) gives at most `per_entity` chunks, the ones nearest the query vector, so it can never
flood the result; the RELATED_TO step reads at most `scan` edges of an entity and keeps its `per_entity`
strongest neighbours. Every value travels as a parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zapomni_db._cypher import VectorParam
from zapomni_db.client import GraphClient

# Chunk first (indexed by id), then its entities.
_CHUNK_ENTITIES = (
    "UNWIND $ids AS cid MATCH (c:Chunk {id: cid})-[:MENTIONS]->(e:Entity) RETURN c.id, collect(DISTINCT e.key)"
)
# Entities that exist among `keys`, each with the number of chunks that mention it.
_MENTION_COUNTS = (
    "UNWIND $keys AS k MATCH (e:Entity {key: k}) OPTIONAL MATCH (e)<-[x:MENTIONS]-(:Chunk) RETURN e.key, count(x)"
)
# Per entity, the `$per` chunks mentioning it that are nearest the query vector.
_MENTIONING = (
    "UNWIND $keys AS k CALL { WITH k MATCH (e:Entity {key: k})<-[:MENTIONS]-(c:Chunk) "
    "WITH c, vec.cosineDistance(c.embedding, vecf32($vector)) AS d ORDER BY d ASC, c.id LIMIT $per "
    "RETURN c.id AS cid, c.memory_id AS mid, d } RETURN k, cid, mid, d"
)
# Per entity, its strongest current neighbours over RELATED_TO (either direction), among its first
# `$scan` edges; the filter comes after a WITH (inside the MATCH it makes FalkorDB scan every entity).
_RELATED = (
    "UNWIND $keys AS k CALL { WITH k MATCH (a:Entity {key: k})-[r:RELATED_TO]-(b:Entity) "
    "WITH r, b LIMIT $scan WITH r, b WHERE r.superseded_by IS NULL AND NOT b.key IN $keys "
    "WITH b.key AS other, max(r.strength) AS strength ORDER BY strength DESC, other LIMIT $per "
    "RETURN other, strength } RETURN k, other, strength"
)


@dataclass(frozen=True)
class MentioningChunk:
    """A chunk that mentions `entity_key`, with its memory and its cosine distance to the query vector."""

    entity_key: str
    chunk_id: str
    memory_id: str
    distance: float


@dataclass(frozen=True)
class NeighbourEntity:
    """An entity related to `entity_key` by a current RELATED_TO edge of the given (strongest) strength."""

    entity_key: str
    other_key: str
    strength: float


class GraphNeighbours:
    """The graph reads of search expansion, in one workspace's graph."""

    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def entities_of_chunks(self, chunk_ids: Sequence[str]) -> dict[str, list[str]]:
        """The keys of the entities each of these chunks mentions (chunks that mention none are absent)."""
        if not chunk_ids:
            return {}
        rows = await self._client.ro_query(_CHUNK_ENTITIES, {"ids": list(dict.fromkeys(chunk_ids))})
        return {row[0]: sorted(row[1] or []) for row in rows}

    async def mention_counts(self, keys: Sequence[str]) -> dict[str, int]:
        """For those of `keys` that are entities: how many chunks mention each."""
        if not keys:
            return {}
        rows = await self._client.ro_query(_MENTION_COUNTS, {"keys": list(dict.fromkeys(keys))})
        return {row[0]: int(row[1] or 0) for row in rows}

    async def chunks_mentioning(
        self, keys: Sequence[str], vector: list[float], *, per_entity: int
    ) -> list[MentioningChunk]:
        """Per entity, at most `per_entity` chunks mentioning it, nearest the query `vector` first."""
        if not keys or per_entity <= 0:
            return []
        rows = await self._client.ro_query(
            _MENTIONING, {"keys": list(dict.fromkeys(keys)), "vector": VectorParam(vector), "per": per_entity}
        )
        return [MentioningChunk(row[0], row[1], row[2], float(row[3])) for row in rows]

    async def related_entities(self, keys: Sequence[str], *, per_entity: int, scan: int = 200) -> list[NeighbourEntity]:
        """Per entity, its `per_entity` strongest neighbours by current RELATED_TO edges (not among `keys`),
        read from at most `scan` of its edges."""
        if not keys or per_entity <= 0:
            return []
        rows = await self._client.ro_query(
            _RELATED, {"keys": list(dict.fromkeys(keys)), "per": per_entity, "scan": max(scan, per_entity)}
        )
        return [NeighbourEntity(row[0], row[1], float(row[2] or 0.0)) for row in rows]

    async def chunk_count(self) -> int:
        """Chunks in the graph: the N of the entities' inverse document frequency."""
        rows = await self._client.ro_query("MATCH (c:Chunk) RETURN count(c)")
        return int(rows[0][0]) if rows else 0
