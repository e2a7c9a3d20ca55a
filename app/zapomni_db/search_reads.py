"""What the search legs read: vector neighbours, chunks by id, and the changes the keyword index catches up on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from zapomni_db._cypher import FILTER, VectorParam, at_numbers
from zapomni_db.client import GraphClient
from zapomni_db.errors import QueryFailed, QueryTimedOut, VectorIndexBuilding
from zapomni_db.records.memories import ChunkPlace, MemoryInfo, SearchFilter
from zapomni_db.records.search import Candidates, ChunkHit, Comparable, IndexChanges, IndexedChunk
from zapomni_db.schema import IndexBuild, indexes_building

log = structlog.get_logger(__name__)

_HIT = f"{MemoryInfo.PROJECTION}, node.id, coalesce(node.text, m.text), distance, {ChunkPlace.projection('node')}"
_VECTOR_SEARCH = (
    "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($vector)) YIELD node, score "
    f"MATCH (node)<-[:HAS_CHUNK]-(m:Memory) WHERE {FILTER} "
    f"WITH m, node, score AS distance RETURN {_HIT} ORDER BY distance ASC, node.id ASC LIMIT $limit"
)
# While the vector index is built after a load (decision 0036) it answers no query: the nearest chunks are then
# found by comparing the query with every stored vector, which is exact and takes seconds at a million chunks.
_EXACT_SEARCH = (
    "MATCH (node:Chunk) WHERE node.embedding IS NOT NULL "
    "WITH node, vec.cosineDistance(node.embedding, vecf32($vector)) AS score ORDER BY score ASC, node.id ASC "
    f"LIMIT $k MATCH (node)<-[:HAS_CHUNK]-(m:Memory) WHERE {FILTER} "
    f"WITH m, node, score AS distance RETURN {_HIT} ORDER BY distance ASC, node.id ASC LIMIT $limit"
)
# The query was compared with stored vectors at 1.2 to 3.7 µs a vector on this machine (decision 0045): a store
# that even 1 µs a vector could not compare within the caller's limit is not tried (the query would only be stopped).
_FASTEST_EXACT_US = 1.0
_DISTANCE = "vec.cosineDistance(node.embedding, vecf32($vector)) AS distance"
# Keyword candidates come ranked from the keyword index; this applies the filters and brings the cosine distance
# along so every hit has a similarity. Chunks deleted meanwhile (by this process or another) are simply not found.
_FETCHED = f"WITH node MATCH (node)<-[:HAS_CHUNK]-(m:Memory) WHERE {FILTER} WITH m, node, {_DISTANCE} RETURN {_HIT}"
# By the nodes' own numbers, which the keyword index keeps (0.5 ms for 40 at a million chunks while the indexes
# build, where a label scan takes 0.7 s); a chunk no longer at its number is looked for by id (`_FETCH_BY_ID`).
_FETCH_BY_NODE = f"{at_numbers('node', 'Chunk')} {_FETCHED}"
# `IN` is one index scan, and one label scan while the index is built after a load (an UNWIND would scan once per
# id: 7x slower at 30K chunks, decision 0036).
_FETCH_BY_ID = f"MATCH (node:Chunk) WHERE node.id IN $ids {_FETCHED}"
_AT_NODES = f"{at_numbers('node', 'Chunk')} RETURN found_id"
# What update detection compares a stored memory (`$memory_id`, by its first chunk's vector) with, read at once
# (decision 0043): the nearest chunks in the vector index, the chunks the keyword index ranked (by their node
# numbers), and the one-chunk memories made visible since that index last caught up (`$after`), among the last
# `$within` changes: what an index a second behind cannot find yet. Only notes and turns of one short chunk, as
# near as `$max_distance`, and only what the rules read of them: read one after the other, with every column of a
# search hit and the vector sent as text each time, they took 3.7 ms an add.
_PROBE = "MATCH (:Memory {id: $memory_id})-[:HAS_CHUNK]->(probe:Chunk) WHERE probe.idx = 0 "


def _candidate_legs(by_vector: bool) -> dict[str, str]:
    """Each leg's reading of candidates and their distances to the probe: the stored memory's first chunk, or
    (`by_vector`) the vector of a memory being stored, read while it is written (`$vector`, 0.1 to 0.3 ms more)."""
    probe, keep, vector = ("", "", "vecf32($vector)") if by_vector else (_PROBE, "probe, ", "probe.embedding")
    distance = _DISTANCE if by_vector else "vec.cosineDistance(node.embedding, probe.embedding) AS distance"
    return {
        "nearest": f"{probe} CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, {vector}) YIELD node, score "
        "MATCH (node)<-[:HAS_CHUNK]-(m:Memory) WITH m, node, score AS distance",
        "ranked": f"{at_numbers('node', 'Chunk')} WITH node {probe} "
        f"WITH {keep}node MATCH (node)<-[:HAS_CHUNK]-(m:Memory) WITH m, node, {distance}",
        "unread": f"{probe} MATCH (q:Sequence {{id: 'chunks'}}) WITH {keep}q.value AS latest "
        "MATCH (m:Memory) WHERE m.seq > $after AND m.seq > latest - $within AND m.chunk_count = 1 "
        f"MATCH (m)-[:HAS_CHUNK]->(node:Chunk) WITH m, node, {distance}",
    }


_CANDIDATES = {by_vector: _candidate_legs(by_vector) for by_vector in (False, True)}
_COMPARABLE = (
    "WITH m, distance, coalesce(node.text, m.text) AS text "
    "WHERE distance <= $max_distance AND m.kind IS NULL AND m.chunk_count = 1 AND size(text) <= $max_chars "
    "RETURN m.id, text, m.speaker, m.date, m.created_at, distance"
)
# A memory's first chunk: a memory that replaced a hit is shown by it (the memories linked as updates are short:
# one chunk, decision 0043).
_FIRST_CHUNKS = (
    "MATCH (m:Memory) WHERE m.id IN $memory_ids MATCH (m)-[:HAS_CHUNK]->(node:Chunk) "
    f"WHERE node.idx = 0 AND {FILTER} "
    f"WITH m, node, {_DISTANCE} RETURN {_HIT}"
)
# What the keyword index counts of a chunk `c` of a memory `m`, and the chunk's place in its memory's thread. The
# terms are counted in process (`KeywordIndex`), not stored: term arrays were a sixth of the database's
# memory (decision 0031). Then what a hit on the chunk shows, which the index keeps (decision 0045).
_INDEXED = f"c.id, coalesce(c.text, m.text), c.context, m.date_ts, c.idx, ID(c), {MemoryInfo.PROJECTION}, " + (
    ChunkPlace.projection("c")
)


class SearchReads:
    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def vector_search(
        self, vector: list[float], *, k: int, limit: int, filters: SearchFilter, exact_within_ms: int | None = None
    ) -> list[ChunkHit]:
        """The `limit` nearest chunks among the `k` nearest in the index that pass `filters` (all stored chunks
        compared while the index is being built).

        `exact_within_ms`: how long comparing every stored chunk may take (VectorIndexBuilding, saying why, beyond
        it; not tried when even the fastest rate measured could not do it)."""
        params = {"vector": VectorParam(vector), "k": k, "limit": limit, **filters.as_params()}
        try:
            rows = await self._client.ro_query(_VECTOR_SEARCH, params)
        except QueryFailed:
            building = [build for build in await indexes_building(self._client) if build.label == "Chunk"]
            if not building:
                raise
            rows = await self._exact_search(params, building[0], exact_within_ms)
        return [_hit(row) for row in rows]

    async def _exact_search(self, params: dict[str, Any], build: IndexBuild, within_ms: int | None) -> list[Any]:
        why = (
            f"its index is being built after a load ({build}) and comparing the query with every stored vector "
            f"takes longer than {within_ms} ms (ZAPOMNI_VECTOR_EXACT_LIMIT_MS)"
        )
        if within_ms is not None and build.total * _FASTEST_EXACT_US > within_ms * 1000:
            raise VectorIndexBuilding(why)
        log.info("search.vector_index_building", index=str(build), fallback="every stored vector compared")
        try:
            return await self._client.ro_query(_EXACT_SEARCH, params, timeout_ms=within_ms)
        except QueryTimedOut as exc:
            raise VectorIndexBuilding(why) from exc

    async def fetch_chunks(
        self, ids: Sequence[str], vector: list[float], *, filters: SearchFilter, nodes: Sequence[int] | None = None
    ) -> list[ChunkHit]:
        """The chunks among `ids` that pass `filters`, in the order of `ids`.

        `nodes`: each id's node number as the keyword index knows it; the ids not found by it are looked for by id.
        """
        params = {"vector": VectorParam(vector), **filters.as_params()}
        by_id: dict[str, ChunkHit] = {}
        missing = list(ids)
        if nodes is not None:
            rows = await self._client.ro_query(_FETCH_BY_NODE, {**params, "nodes": list(nodes), "ids": missing})
            by_id = {hit.chunk_id: hit for hit in map(_hit, rows)}
            missing = [i for i in ids if i not in by_id]
            if missing:  # filtered out, deleted, or (rarely) not at the number the index knows
                rows = await self._client.ro_query(_AT_NODES, {"nodes": list(nodes), "ids": missing})
                there = {row[0] for row in rows}
                missing = [i for i in missing if i not in there]
        if missing:
            rows = await self._client.ro_query(_FETCH_BY_ID, {**params, "ids": missing})
            by_id.update((hit.chunk_id, hit) for hit in map(_hit, rows))
        return [by_id[i] for i in ids if i in by_id]

    async def first_chunks(
        self, memory_ids: Sequence[str], vector: list[float], *, filters: SearchFilter
    ) -> list[ChunkHit]:
        """The first chunk of each of `memory_ids` that passes `filters` (with its distance to `vector`), in the
        order of `memory_ids`."""
        rows = await self._client.ro_query(
            _FIRST_CHUNKS, {"memory_ids": list(memory_ids), "vector": VectorParam(vector), **filters.as_params()}
        )
        by_memory = {hit.memory.id: hit for hit in map(_hit, rows)}
        return [by_memory[i] for i in memory_ids if i in by_memory]

    async def update_candidates(
        self,
        memory_id: str,
        *,
        vector: Sequence[float] | None = None,
        k: int,
        ranked: Sequence[tuple[str, int]] = (),
        unread_after: int | None = None,
        unread_within: int = 0,
        max_distance: float = 2.0,
        max_chars: int,
    ) -> Candidates:
        """The notes and turns of one chunk of at most `max_chars` that the stored memory `memory_id` is compared
        with: among the `k` chunks nearest to its first, the chunks `ranked` (id and node number, as the keyword index
        knows them), and the one-chunk memories made visible after change `unread_after` among the last
        `unread_within` changes; each with its distance to that first chunk, at most `max_distance`; itself among
        them. With its `vector`, the memory need not be stored yet: read while it is written, itself among them or
        not.

        While the vector index is built after a load the nearest are not read (comparing every stored vector takes
        seconds at a million chunks, on every add); that is logged."""
        legs = ["nearest", *(["ranked"] if ranked else []), *(["unread"] if unread_after is not None else [])]
        params = {
            "memory_id": memory_id,
            **({"vector": VectorParam(vector)} if vector is not None else {}),
            "k": k,
            "ids": [chunk_id for chunk_id, _ in ranked],
            "nodes": [node for _, node in ranked],
            "after": unread_after,
            "within": unread_within,
            "max_distance": max_distance,
            "max_chars": max_chars,
        }
        try:
            rows = await self._client.ro_query(_candidates_query(legs, vector is not None), params)
        except QueryFailed:
            building = [build for build in await indexes_building(self._client) if build.label == "Chunk"]
            if not building:
                raise
            log.warning("search.update_candidates_without_nearest", index=str(building[0]))
            legs.remove("nearest")
            rows = await self._client.ro_query(_candidates_query(legs, vector is not None), params) if legs else []
        found: dict[str, list[Comparable]] = {leg: [] for leg in _CANDIDATES[False]}
        for found_id, text, speaker, date, created_at, distance, leg in rows:
            found[leg].append(Comparable(found_id, text or "", speaker, date, float(created_at), float(distance)))
        return Candidates(**found)

    async def indexed_chunks(self) -> int:
        """Chunk nodes in the vector index, linked or not: the ceiling for a vector query's k."""
        rows = await self._client.ro_query("MATCH (c:Chunk) RETURN count(c)")
        return int(rows[0][0]) if rows else 0

    async def sequence(self) -> tuple[int, int]:
        """The latest change's number, and the number up to which the change log was pruned."""
        rows = await self._client.ro_query("MATCH (q:Sequence {id: 'chunks'}) RETURN q.value, q.pruned_upto")
        return (int(rows[0][0]), int(rows[0][1] or 0)) if rows else (0, 0)

    async def changes_between(self, after: int, upto: int) -> IndexChanges:
        """Chunks that appeared and chunk ids that went away with `after < seq <= upto`.

        Memories made visible in the window bring all their current chunks; updates bring the
        chunks they added (those still stored). Chunk ids are never reused, so applying additions
        first and removals second is right whatever happened in between.
        """
        window = {"after": after, "upto": upto}
        new_memories = await self._client.ro_query(
            "MATCH (m:Memory) WHERE m.seq > $after AND m.seq <= $upto "
            f"MATCH (m)-[:HAS_CHUNK]->(c:Chunk) RETURN {_INDEXED}",
            window,
        )
        changes = await self._client.ro_query(
            "MATCH (x:Change) WHERE x.seq > $after AND x.seq <= $upto RETURN x.added, x.removed", window
        )
        added_ids = [cid for added, _ in changes for cid in (added or [])]
        updated = (
            await self._client.ro_query(
                f"UNWIND $ids AS cid MATCH (c:Chunk {{id: cid}})<-[:HAS_CHUNK]-(m:Memory) RETURN {_INDEXED}",
                {"ids": added_ids},
            )
            if added_ids
            else []
        )
        return IndexChanges(
            added=[_indexed(row) for row in (*new_memories, *updated)],
            removed=[cid for _, removed in changes for cid in (removed or [])],
        )


def _candidates_query(legs: Sequence[str], by_vector: bool) -> str:
    return " UNION ALL ".join(f"{_CANDIDATES[by_vector][leg]} {_COMPARABLE}, '{leg}' AS leg" for leg in legs)


def _indexed(row: list[Any]) -> IndexedChunk:
    memory = MemoryInfo.from_row(row, 6)
    return IndexedChunk(
        chunk_id=row[0],
        text=row[1] or "",
        context=row[2],
        thread=memory.thread,
        order=(float(row[3] or 0.0), memory.created_at, int(row[4] or 0)),
        node=int(row[5]),
        memory=memory,
        place=ChunkPlace.from_row(row, 6 + MemoryInfo.WIDTH),
    )


def _hit(row: list[Any]) -> ChunkHit:
    w = MemoryInfo.WIDTH
    return ChunkHit(
        memory=MemoryInfo.from_row(row),
        chunk_id=row[w],
        text=row[w + 1],
        distance=float(row[w + 2]),
        place=ChunkPlace.from_row(row, w + 3),
    )
