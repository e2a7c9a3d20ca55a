"""The knowledge graph of one workspace: entities, the chunks that mention them, relations between them.

In the workspace's graph, beside its memories and chunks::

    (:Entity {id, key, name, type, aliases, description, confidence, created_at, updated_at})
    (:Chunk)-[:MENTIONS {count, confidence}]->(:Entity)
    (:Entity)-[:RELATED_TO {id, type, predicate, strength, evidence, method, chunk_id, memory_id,
                            valid_from, valid_from_ts, superseded_by, exclusive}]->(:Entity)
    Memory.graph_state: null (pending: not processed since it was stored or changed) or 'done';
    Memory.graph_job: the job that processed it; Memory.graph_at: when.

`exclusive: true` marks the facts that take part in supersession (an llm fact of a type the engine
calls exclusive, e.g. LIVES_IN): a delete, which does not know those types, recomputes exactly the
groups it touched.

Invariants the writes keep, and that make every delete exact:
- `key` is unique: every write MERGEs on it (FalkorDB runs one write query at a time).
- One RELATED_TO edge per piece of evidence (a chunk stating the fact), carrying its memory id:
  removing a memory's edges removes exactly its evidence.
- Every relation's endpoints are mentioned by the chunk that states it, and every entity is
  mentioned by some chunk: an entity no chunk mentions has no relation either and is deleted in
  the same write that took its last mention (and by the start-up sweep, `Maintenance`).
- `superseded_by` names an existing edge: a write that removes an edge recomputes the supersession
  of the facts that pointed at it (`_cypher.SUPERSEDE_GROUP`).

Chunks are vector-indexed: nothing here sets a property on a Chunk; edges to and from them are
created and deleted only. Writes of a job are fenced like `JobStore.stage_chunks`: a job that is
no longer running, or no longer this owner's, changes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from zapomni_db._cypher import DROP_UNMENTIONED, PURGE_EVIDENCE, SUPERSEDE_GROUP
from zapomni_db.client import GraphClient
from zapomni_db.records.graph import (
    EntityInfo,
    EntityRow,
    GraphCounts,
    KnownEntity,
    MentionedEntity,
    MentionRow,
    ReachedEntity,
    RelationEvidence,
    RelationRow,
)

# A memory's graph goes in one query (atomic) up to this many entities + mentions + relations;
# a larger one is written in batches of about this size (see `write_memory_graph`).
ONE_QUERY_ROWS = 4000
MAX_DEPTH = 3

_FENCE = "MATCH (j:Job {id: $job_id}) WHERE j.state = 'running' AND j.owner = $owner "
_MEMORY = "MATCH (m:Memory {id: $memory_id}) WHERE coalesce(m.status, 'indexed') = 'indexed' "
# The chunks the extraction read are still the memory's (an update replaces chunks: then the write
# would describe a text that is gone). With `$chunk_count` the set must be exactly the memory's.
_CHUNKS_CURRENT = (
    "OPTIONAL MATCH (c:Chunk) WHERE c.id IN $check AND c.memory_id = $memory_id AND (m)-[:HAS_CHUNK]->(c) "
    "WITH j, m, count(DISTINCT c) AS found WHERE found = size($check) "
    "AND ($chunk_count IS NULL OR m.chunk_count = $chunk_count) "
)
# Upsert: a new entity takes the row; an existing one keeps the higher-confidence name, type,
# description and confidence, and gathers every other name seen into its aliases. Each SET item
# reads only its own old value or values computed before the SET, so evaluation order is moot.
_UPSERT_ENTITIES = (
    "CALL { UNWIND $entities AS x MERGE (e:Entity {key: x.key}) "
    "ON CREATE SET e.id = x.id, e.created_at = $now, e.confidence = -1.0, e.aliases = [] "
    "WITH x, e, x.confidence > e.confidence AS better, e.name AS was, coalesce(e.aliases, []) AS known "
    "WITH x, e, better, was, known, CASE WHEN better THEN x.name ELSE was END AS name "
    "SET e.name = name, e.type = CASE WHEN better THEN x.type ELSE e.type END, "
    "e.description = CASE WHEN better THEN coalesce(x.description, e.description) "
    "ELSE coalesce(e.description, x.description) END, "
    "e.confidence = CASE WHEN better THEN x.confidence ELSE e.confidence END, "
    "e.aliases = reduce(acc = [], a IN known + x.aliases + [was, x.name] | "
    "CASE WHEN a IS NULL OR a = name OR a IN acc THEN acc ELSE acc + [a] END), e.updated_at = $now } "
)
# Chunk first: it is indexed by id (matching through the entity would scan).
_CREATE_MENTIONS = (
    "CALL { UNWIND $mentions AS x MATCH (c:Chunk {id: x.chunk_id}) MATCH (e:Entity {key: x.key}) "
    "CREATE (c)-[:MENTIONS {count: x.count, confidence: x.confidence}]->(e) } "
)
_RELATION_PROPERTIES = (
    "{id: x.id, type: x.type, predicate: x.predicate, strength: x.strength, evidence: x.evidence, "
    "method: x.method, chunk_id: x.chunk_id, memory_id: $memory_id, valid_from: x.valid_from, "
    "valid_from_ts: x.valid_from_ts, exclusive: x.exclusive}"
)
_CREATE_RELATIONS = (
    "CALL { UNWIND $relations AS x MATCH (s:Entity {key: x.subject}) MATCH (o:Entity {key: x.object}) "
    f"CREATE (s)-[:RELATED_TO {_RELATION_PROPERTIES}]->(o) }} "
)
# Supersession recomputed for whole (subject, type) groups of exclusive llm facts.
_SUPERSEDE = f"CALL {{ UNWIND $groups AS g MATCH (s:Entity {{key: g.subject}}) WITH s, g.type AS t {SUPERSEDE_GROUP}}} "
_DONE = "SET m.graph_state = 'done', m.graph_job = $job_id, m.graph_at = $now RETURN m.id"

# One query: fence, replace the memory's evidence, supersession, stale entities, done.
_WRITE_WHOLE = (
    f"{_FENCE}{_MEMORY}{_CHUNKS_CURRENT}{PURGE_EVIDENCE}{_UPSERT_ENTITIES}{_CREATE_MENTIONS}"
    f"{_CREATE_RELATIONS}{_SUPERSEDE}{DROP_UNMENTIONED}{_DONE}"
)
# A large graph: begin (old evidence out, memory pending), batches, finish. See `write_memory_graph`.
_WRITE_BEGIN = (
    f"{_FENCE}{_MEMORY}{_CHUNKS_CURRENT}{PURGE_EVIDENCE}"
    "SET m.graph_state = null, m.graph_job = null RETURN [e IN stale | e.key]"
)
_WRITE_ENTITIES = f"{_FENCE}{_MEMORY}WITH j, m {_UPSERT_ENTITIES}{_CREATE_MENTIONS}RETURN m.id"
_WRITE_RELATIONS = f"{_FENCE}{_MEMORY}WITH j, m {_CREATE_RELATIONS}RETURN m.id"
_WRITE_FINISH = (
    f"{_FENCE}{_MEMORY}{_CHUNKS_CURRENT}{_SUPERSEDE}"
    "CALL { UNWIND $stale AS k MATCH (e:Entity {key: k}) WHERE NOT ()-[:MENTIONS]->(e) DETACH DELETE e } "
    f"{_DONE}"
)

# A memory of many chunks, written a slice of chunks at a time so that a job stopped half way resumes
# after the last slice it wrote instead of extracting the whole memory again (see `begin_sliced_graph`).
# `m.graph_chunks` counts the chunks (in idx order) whose evidence `m.graph_job` has written; it means
# something only while the memory is pending and still that job's: an update or a rebuild clears
# `graph_job`. `m.graph_stale`: the entities the old evidence mentioned, for the last step to drop.
_SLICED = "AND m.graph_state IS NULL AND m.graph_job = $job_id AND m.graph_chunks = $start "
_SLICED_BEGIN = (
    f"{_FENCE}{_MEMORY}{_CHUNKS_CURRENT}{PURGE_EVIDENCE}"
    "SET m.graph_state = null, m.graph_job = $job_id, m.graph_chunks = 0, "
    "m.graph_stale = [k IN coalesce(m.graph_stale, []) + [e IN stale | e.key] WHERE k IS NOT NULL] RETURN m.id"
)
_SLICED_WRITE = (
    f"{_FENCE}{_MEMORY}{_SLICED}{_CHUNKS_CURRENT}{_UPSERT_ENTITIES}{_CREATE_MENTIONS}{_CREATE_RELATIONS}"
    f"{_SUPERSEDE}SET m.graph_chunks = $end RETURN m.id"
)
_SLICED_FINISH = (
    f"{_FENCE}{_MEMORY}{_SLICED}AND m.chunk_count = $start "
    "CALL { WITH m UNWIND coalesce(m.graph_stale, []) AS k MATCH (e:Entity {key: k}) "
    "WHERE NOT ()-[:MENTIONS]->(e) DETACH DELETE e } "
    f"SET m.graph_chunks = null, m.graph_stale = null, m.graph_state = 'done', m.graph_at = $now RETURN m.id"
)

_RESET = (
    f"{PURGE_EVIDENCE}{DROP_UNMENTIONED}WITH 1 AS one UNWIND $purge AS mid MATCH (m:Memory {{id: mid}}) "
    "SET m.graph_state = null, m.graph_job = null, m.graph_at = null, m.graph_chunks = null, m.graph_stale = null "
    "RETURN count(m)"
)

_PENDING = "coalesce(m.status, 'indexed') = 'indexed' AND m.graph_state IS NULL"
# Every value `Memory.graph_state` and `Memory.status` take besides null (`totals` counts by them): processed,
# a code file's (its graph comes from its parse); being indexed, or given up (searchable: no status).
_STATES = ("done", "code")
_UNSEARCHABLE = ("indexing", "failed")


def _json_text(expression: str) -> str:
    """A string expression made safe inside FalkorDB's `toJSON`, which quotes strings without escaping them."""
    return f"replace(replace({expression}, '\\\\', '\\\\\\\\'), '\"', '\\\\\"')"


# Every entity in one JSON string: thousands of rows parse in milliseconds this way, where the
# client's row-by-row parsing takes about 0.2 ms per row (measured: 3,000 entities 15 ms vs 600 ms).
_KNOWN_ENTITIES = (
    "MATCH (e:Entity) WITH e ORDER BY e.key RETURN toJSON(collect(["
    f"{_json_text('e.key')}, {_json_text('e.name')}, {_json_text('e.type')}, "
    f"[a IN coalesce(e.aliases, []) | {_json_text('a')}], e.confidence]))"
)

# Rank of a relation edge `r`: current facts before superseded ones, then by strength (in 0..1).
_SCORE = "(CASE WHEN r.superseded_by IS NULL THEN 2.0 ELSE 0.0 END + coalesce(r.strength, 0.0))"
# Relation edges read per entity by the traversals, strongest first. FalkorDB spends tens of
# microseconds per row on sorting and grouping, so a hub with thousands of relations would cost
# hundreds of milliseconds; its strongest edges are taken first (a cheap top-k), then grouped.
EDGES_PER_ENTITY = 100
# One BFS level: the unvisited entities next to the frontier, strongest first, at most `$remaining`,
# each with its `$per` strongest connecting edges (a row each). Edges travel as references; their
# properties are read only for the few returned.
_LEVEL = (
    "UNWIND $frontier AS k CALL { WITH k MATCH (a:Entity {key: k})-[r:RELATED_TO]-(b:Entity) "
    # The filter after a WITH: inside the MATCH it makes FalkorDB start from a scan of every entity.
    "WITH a, r, b WHERE ($types IS NULL OR r.type IN $types) AND NOT b.key IN $visited "
    f"WITH a, r, b, {_SCORE} AS score ORDER BY score DESC, r.id LIMIT $scan RETURN a, r, b, score }} "
    "WITH a, r, b, score ORDER BY score DESC, r.id "
    "WITH b, collect([a.key, r])[0..$per] AS edges, max(score) AS best ORDER BY best DESC, b.key LIMIT $remaining "
    "UNWIND range(0, size(edges) - 1) AS i WITH b, best, i, edges[i][0] AS via, edges[i][1] AS r "
    f"WITH b, best, i, via, r, startNode(r) AS s, endNode(r) AS o RETURN b.key, via, {RelationEvidence.PROJECTION} "
    "ORDER BY best DESC, b.key, i"
)
_ENTITIES_BY_KEY = (
    "UNWIND $keys AS k MATCH (e:Entity {key: k}) OPTIONAL MATCH (e)<-[x:MENTIONS]-(:Chunk) "
    f"RETURN {EntityInfo.PROJECTION}, count(x)"
)
# A chunk's entities by mention count; then each entity's strongest relations, one per fact
# (same other entity, direction and type: the evidence edges of one fact fold into `support`).
_CHUNK_ENTITIES = (
    "UNWIND $ids AS cid MATCH (c:Chunk {id: cid})-[x:MENTIONS]->(e:Entity) "
    "WITH c, x, e ORDER BY x.count DESC, x.confidence DESC, e.key "
    "WITH c, collect([e.key, e.name, e.type, x.count, x.confidence])[0..$per_chunk] AS top RETURN c.id, top"
)
_ENTITY_FACTS = (
    "UNWIND $keys AS k CALL { WITH k MATCH (e:Entity {key: k})-[r:RELATED_TO]-(other:Entity) "
    f"WITH e, r, other, {_SCORE} AS score ORDER BY score DESC, r.id LIMIT $scan "
    "WITH e, id(other) AS other, r.type AS t, id(startNode(r)) = id(e) AS outgoing, collect(r) AS stated "
    f"WITH e, stated[0] AS r, size(stated) AS support WITH e, r, support, {_SCORE} AS score "
    "ORDER BY score DESC, r.id LIMIT $per_entity RETURN e, r, support, score } "
    "WITH e, r, support, score, startNode(r) AS s, endNode(r) AS o "
    f"RETURN e.key, support, {RelationEvidence.PROJECTION} ORDER BY e.key, score DESC, r.id"
)


@dataclass(frozen=True)
class _Prepared:
    entities: list[dict[str, Any]]
    mentions: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    groups: list[dict[str, str]]
    check: list[str]
    chunk_count: int | None


_MOST_CONNECTED = (
    "MATCH (e:Entity) OPTIONAL MATCH (e)-[r:RELATED_TO]-(:Entity) WITH e, count(r) AS degree "
    "ORDER BY degree DESC, e.name LIMIT $limit RETURN e.name, e.type, degree"
)


class GraphStore:
    """Reads and writes of the knowledge graph in one workspace's graph."""

    def __init__(self, client: GraphClient, *, one_query_rows: int = ONE_QUERY_ROWS) -> None:
        self._client = client
        self._one_query_rows = one_query_rows

    # -- writing a memory's graph ------------------------------------------------------------------

    async def write_memory_graph(
        self,
        memory_id: str,
        job_id: str,
        owner: str,
        entities: Sequence[EntityRow],
        mentions: Sequence[MentionRow],
        relations: Sequence[RelationRow],
        exclusive_types: Sequence[str],
        *,
        now: float | None = None,
        chunk_ids: Sequence[str] | None = None,
    ) -> bool:
        """Replace the memory's graph evidence with these rows and mark it done; False (nothing
        written) when the job is not `owner`'s running job any more, the memory is gone or not
        searchable, or its chunks are no longer the ones extracted from.

        `chunk_ids`, when given, are the chunks the extraction read: the memory must have exactly
        these (an update in the meantime replaced some); without it, every chunk a row names must
        still be the memory's. Rows must be consistent: every mention names an entity of `entities`,
        every entity is mentioned, and every relation's subject and object are mentioned by the
        chunk that states it (ValueError otherwise). Duplicate entity keys and (chunk, entity)
        mentions are folded together.

        Then, for relations of a type in `exclusive_types` found by the LLM (method 'llm'), the
        older fact of a subject is superseded by the next newer one with another object (never
        deleted; equal dates supersede nothing), across all memories.

        Up to `ONE_QUERY_ROWS` rows this is one query, so atomic. A larger graph is written in
        steps, each fenced: the first removes the old evidence and marks the memory pending, the
        batches add entities together with their mentions and then relations, the last settles
        supersession, deletes entities left unmentioned and marks the memory done. A crash or lost
        claim in between leaves the memory pending (processed again later, which replaces what
        was written) and no entity without a mention except the stale ones the sweep removes.
        """
        rows = _prepare(entities, mentions, relations, exclusive_types, chunk_ids)
        params: dict[str, Any] = {
            "job_id": job_id,
            "owner": owner,
            "memory_id": memory_id,
            "purge": [memory_id],
            "check": rows.check,
            "chunk_count": rows.chunk_count,
            "groups": rows.groups,
            "now": time.time() if now is None else now,
        }
        size = self._one_query_rows
        if len(rows.entities) + len(rows.mentions) + len(rows.relations) <= size:
            whole = {**params, "entities": rows.entities, "mentions": rows.mentions, "relations": rows.relations}
            return bool(await self._client.query(_WRITE_WHOLE, whole))
        began = await self._client.query(_WRITE_BEGIN, params)
        if not began:
            return False
        stale = list(began[0][0] or [])
        for batch_entities, batch_mentions in _entity_batches(rows.entities, rows.mentions, size):
            batch = {**params, "entities": batch_entities, "mentions": batch_mentions}
            if not await self._client.query(_WRITE_ENTITIES, batch):
                return False
        for start in range(0, len(rows.relations), size):
            batch = {**params, "relations": rows.relations[start : start + size]}
            if not await self._client.query(_WRITE_RELATIONS, batch):
                return False
        return bool(await self._client.query(_WRITE_FINISH, {**params, "stale": stale}))

    # -- writing a large memory's graph in slices, resumably ------------------------------------------

    async def sliced_progress(self, memory_id: str, job_id: str) -> int | None:
        """How many of the memory's chunks (in order) `job_id` has written the evidence of, when an earlier
        attempt of that job stopped half way through it; None when there is nothing to resume."""
        rows = await self._client.ro_query(
            "MATCH (m:Memory {id: $memory_id}) WHERE m.graph_state IS NULL AND m.graph_job = $job_id "
            "RETURN m.graph_chunks",
            {"memory_id": memory_id, "job_id": job_id},
        )
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    async def begin_sliced_graph(self, memory_id: str, job_id: str, owner: str, chunk_ids: Sequence[str]) -> bool:
        """Start writing the memory's graph a slice of chunks at a time: its old evidence goes (the
        entities only it mentioned are dropped by `finish_sliced_graph`), it stays pending, and
        `job_id` owns its progress. False (nothing written) as for `write_memory_graph`.

        Each `write_graph_slice` is one query that adds the evidence of the next chunks and advances
        the progress with it, so a job stopped in between resumes after the last slice written
        (`sliced_progress`) and no chunk's evidence is written twice. Until the last step, readers
        see the graph of the chunks written so far; deleting the memory meanwhile removes it all,
        as it removes any evidence."""
        params = {
            "job_id": job_id,
            "owner": owner,
            "memory_id": memory_id,
            "purge": [memory_id],
            "check": list(chunk_ids),
            "chunk_count": len(chunk_ids),
        }
        return bool(await self._client.query(_SLICED_BEGIN, params))

    async def write_graph_slice(
        self,
        memory_id: str,
        job_id: str,
        owner: str,
        entities: Sequence[EntityRow],
        mentions: Sequence[MentionRow],
        relations: Sequence[RelationRow],
        exclusive_types: Sequence[str],
        *,
        chunk_ids: Sequence[str],
        start: int,
        chunk_count: int,
        now: float | None = None,
    ) -> bool:
        """Add the evidence of the memory's chunks `chunk_ids` (those at `start`, `start + 1`, ... of its
        `chunk_count`) and advance its progress past them, in one query; False (nothing written) when
        the job lost its claim, the memory changed or another slice was written from `start` already.
        Rows are checked as by `write_memory_graph`."""
        rows = _prepare(entities, mentions, relations, exclusive_types, chunk_ids)
        params: dict[str, Any] = {
            "job_id": job_id,
            "owner": owner,
            "memory_id": memory_id,
            "check": rows.check,
            "chunk_count": chunk_count,
            "start": start,
            "end": start + len(rows.check),
            "groups": rows.groups,
            "entities": rows.entities,
            "mentions": rows.mentions,
            "relations": rows.relations,
            "now": time.time() if now is None else now,
        }
        return bool(await self._client.query(_SLICED_WRITE, params))

    async def finish_sliced_graph(self, memory_id: str, job_id: str, owner: str, chunk_count: int) -> bool:
        """Mark the memory done once every one of its `chunk_count` chunks was written, dropping the old
        evidence's entities no chunk mentions any more; False (nothing written) otherwise."""
        params = {"job_id": job_id, "owner": owner, "memory_id": memory_id, "start": chunk_count, "now": time.time()}
        return bool(await self._client.query(_SLICED_FINISH, params))

    # -- which memories need processing --------------------------------------------------------------

    async def pending_memories(self, limit: int, after_id: str | None = None) -> list[str]:
        """Ids of searchable memories not processed yet, in id order, after `after_id`."""
        rows = await self._client.ro_query(
            f"MATCH (m:Memory) WHERE ($after IS NULL OR m.id > $after) AND {_PENDING} "
            "RETURN m.id ORDER BY m.id LIMIT $limit",
            {"after": after_id, "limit": limit},
        )
        return [row[0] for row in rows]

    async def unprocessed_by(self, job_id: str, memory_ids: Sequence[str], limit: int) -> list[str]:
        """Those of `memory_ids` (in their order) that are searchable and were not processed by
        `job_id` yet: what a job over an explicit list of memories has left to do."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid}) WHERE coalesce(m.status, 'indexed') = 'indexed' "
            "AND (m.graph_state IS NULL OR m.graph_job IS NULL OR m.graph_job <> $job) RETURN m.id LIMIT $limit",
            {"ids": list(dict.fromkeys(memory_ids)), "job": job_id, "limit": limit},
        )
        return [row[0] for row in rows]

    async def count_pending(self) -> int:
        rows = await self._client.ro_query(f"MATCH (m:Memory) WHERE {_PENDING} RETURN count(m)")
        return int(rows[0][0]) if rows else 0

    async def reset_memories(self, memory_ids: Sequence[str]) -> int:
        """Remove these memories' graph evidence and mark them pending (an explicit rebuild); returns
        how many memories there were."""
        if not memory_ids:
            return 0
        rows = await self._client.query(_RESET, {"purge": list(memory_ids)})
        return int(rows[0][0]) if rows else 0

    async def graph_states(self, memory_ids: Sequence[str]) -> dict[str, str | None]:
        """`graph_state` of each of these memories that exists (None: pending)."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid}) RETURN m.id, m.graph_state", {"ids": list(memory_ids)}
        )
        return {row[0]: row[1] for row in rows}

    # -- entities ----------------------------------------------------------------------------------

    async def known_entities(self) -> list[KnownEntity]:
        """Every entity's key, name, type, aliases and confidence (for the engine's fuzzy name index)."""
        rows = await self._client.ro_query(_KNOWN_ENTITIES)
        # Control characters stay raw inside the strings: `strict=False` reads them.
        entities = json.loads(rows[0][0], strict=False) if rows and rows[0][0] else []
        return [KnownEntity(r[0], r[1], r[2], tuple(r[3] or ()), float(r[4] or 0.0)) for r in entities]

    async def most_connected(self, limit: int) -> list[tuple[str, str, int]]:
        """(name, type, relation edges) of the `limit` entities with the most relation edges, then by name.

        Reads every entity's degree: an overview for a person, not for a request path that must scale."""
        rows = await self._client.ro_query(_MOST_CONNECTED, {"limit": limit})
        return [(row[0], row[1], int(row[2] or 0)) for row in rows]

    async def entities_by_key(self, keys: Sequence[str]) -> list[EntityInfo]:
        """The entities with these keys (those that exist), in the order asked."""
        rows = await self._client.ro_query(_ENTITIES_BY_KEY, {"keys": list(dict.fromkeys(keys))})
        found = {row[0]: EntityInfo.from_row(row, mentions=int(row[EntityInfo.WIDTH])) for row in rows}
        return [found[k] for k in dict.fromkeys(keys) if k in found]

    async def entities_named(self, names: Sequence[str], limit: int = 50) -> list[EntityInfo]:
        """Entities whose name or an alias is one of `names` (ignoring case), most mentioned first."""
        lowered = sorted({n.lower() for n in names if n})
        if not lowered:
            return []
        rows = await self._client.ro_query(
            "MATCH (e:Entity) WHERE toLower(e.name) IN $names OR any(a IN e.aliases WHERE toLower(a) IN $names) "
            f"OPTIONAL MATCH (e)<-[x:MENTIONS]-(:Chunk) WITH e, count(x) AS n RETURN {EntityInfo.PROJECTION}, n "
            "ORDER BY n DESC, e.key LIMIT $limit",
            {"names": lowered, "limit": limit},
        )
        return [EntityInfo.from_row(row, mentions=int(row[EntityInfo.WIDTH])) for row in rows]

    # -- traversal ---------------------------------------------------------------------------------

    async def related(
        self,
        entity_key: str,
        *,
        depth: int = 1,
        limit: int = 20,
        relation_types: Sequence[str] | None = None,
        evidence_per_entity: int = 3,
    ) -> list[ReachedEntity]:
        """Entities within `depth` hops of `entity_key` (relations followed in either direction),
        nearest first, then strongest (current facts before superseded ones), at most `limit`.

        A breadth-first search, one bounded query per level: each level asks only for the entities
        next to the previous level that are not visited yet, and at most as many as are still
        wanted (variable-length paths in FalkorDB enumerate every path and explode on hubs). Of an
        entity with many relations, only its strongest are followed: `EDGES_PER_ENTITY`, or as many
        as the entities still wanted could need.
        Empty when the entity does not exist.
        """
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth must be between 1 and {MAX_DEPTH} (got {depth})")
        if limit <= 0:
            return []
        types = list(relation_types) if relation_types else None
        start = await self._client.ro_query("MATCH (e:Entity {key: $key}) RETURN e.key", {"key": entity_key})
        if not start:
            return []
        paths: dict[str, list[str]] = {entity_key: []}
        found: list[tuple[str, int, str, list[RelationEvidence]]] = []
        frontier = [entity_key]
        for distance in range(1, depth + 1):
            remaining = limit - len(found)
            if remaining <= 0 or not frontier:
                break
            rows = await self._client.ro_query(
                _LEVEL,
                {
                    "frontier": frontier,
                    "visited": list(paths),
                    "types": types,
                    "per": max(1, evidence_per_entity),
                    "remaining": remaining,
                    "scan": max(EDGES_PER_ENTITY, remaining * evidence_per_entity),
                },
            )
            frontier = []
            level: dict[str, tuple[str, list[RelationEvidence]]] = {}
            for row in rows:
                level.setdefault(row[0], (row[1], []))[1].append(RelationEvidence.from_row(row, 2, side=row[1]))
            for key, (via, evidence) in level.items():
                paths[key] = [*paths[via], evidence[0].type]
                found.append((key, distance, via, evidence))
                frontier.append(key)
        if not found:
            return []
        infos = {e.key: e for e in await self.entities_by_key([key for key, *_ in found])}
        texts = await self._chunk_texts({ev.chunk_id for *_, evidence in found for ev in evidence})
        related = []
        for key, distance, via, evidence in found:
            if key not in infos:  # deleted between the two reads
                continue
            with_text = [_with_text(ev, texts) for ev in evidence]
            related.append(ReachedEntity(infos[key], distance, paths[key], via, with_text[0], with_text))
        return related

    async def entities_of_chunks(
        self, chunk_ids: Sequence[str], *, per_chunk: int = 5, relations_per_entity: int = 3
    ) -> dict[str, list[MentionedEntity]]:
        """For each of these chunks that mentions any: its most mentioned entities, each with its
        strongest 1-hop relations (current facts first; one per fact, `support` counting its evidence).
        Facts are chosen among each entity's `EDGES_PER_ENTITY` strongest relation edges."""
        if not chunk_ids or per_chunk <= 0:
            return {}
        rows = await self._client.ro_query(_CHUNK_ENTITIES, {"ids": list(chunk_ids), "per_chunk": per_chunk})
        keys = list(dict.fromkeys(item[0] for _, top in rows for item in top))
        facts: dict[str, list[RelationEvidence]] = {}
        if keys and relations_per_entity > 0:
            fact_rows = await self._client.ro_query(
                _ENTITY_FACTS, {"keys": keys, "per_entity": relations_per_entity, "scan": EDGES_PER_ENTITY}
            )
            for row in fact_rows:
                facts.setdefault(row[0], []).append(RelationEvidence.from_row(row, 2, support=int(row[1]), side=row[0]))
        return {
            chunk_id: [
                MentionedEntity(key, name, etype, int(count or 0), float(confidence or 0.0), facts.get(key, []))
                for key, name, etype, count, confidence in top
            ]
            for chunk_id, top in rows
        }

    # -- status ------------------------------------------------------------------------------------

    async def counts(self) -> GraphCounts:
        by_type = await self._client.ro_query("MATCH (e:Entity) RETURN e.type, count(e)")
        relations = await self._client.ro_query(
            "MATCH ()-[r:RELATED_TO]->() "
            "RETURN r.type, count(r), sum(CASE WHEN r.superseded_by IS NULL THEN 0 ELSE 1 END)"
        )
        memories = await self._client.ro_query(
            "MATCH (m:Memory) WHERE coalesce(m.status, 'indexed') = 'indexed' RETURN m.graph_state IS NULL, count(m)"
        )
        states = {bool(pending): int(n) for pending, n in memories}
        return GraphCounts(
            entities_by_type={t: int(n) for t, n in by_type},
            relations=sum(int(n) for _, n, _ in relations),
            memories_done=states.get(False, 0),
            memories_pending=states.get(True, 0),
            relations_by_type={t: int(n) for t, n, _ in relations},
            superseded=sum(int(s or 0) for *_, s in relations),
        )

    async def totals(self) -> tuple[int, int, int]:
        """Entities, relations and searchable memories not yet processed (what `counts` sums), for get_stats.

        Without reading every memory: FalkorDB answers a label's or an edge type's count in constant time,
        and the memories that are not pending are counted through the indexes on `status` (set only while a
        memory is being indexed or failed) and `graph_state` (set once processed, or on a code file's)."""
        entities = await self._client.ro_query("MATCH (e:Entity) RETURN count(e)")
        relations = await self._client.ro_query("MATCH ()-[r:RELATED_TO]->() RETURN count(r)")
        memories = await self._client.ro_query("MATCH (m:Memory) RETURN count(m)")
        processed = await self._client.ro_query(
            "MATCH (m:Memory) WHERE m.graph_state IN $states RETURN count(m)", {"states": list(_STATES)}
        )
        unsearchable = await self._client.ro_query(
            "MATCH (m:Memory) WHERE m.status IN $statuses "
            "RETURN count(m), sum(CASE WHEN m.graph_state IS NULL THEN 0 ELSE 1 END)",
            {"statuses": list(_UNSEARCHABLE)},
        )
        both = int(unsearchable[0][1] or 0) if unsearchable else 0
        pending = _count(memories) - _count(processed) - _count(unsearchable) + both
        return _count(entities), _count(relations), pending

    # -- export and import -------------------------------------------------------------------------

    async def entity_page(self, after_key: str | None, limit: int) -> list[EntityInfo]:
        """Entities in key order after `after_key` (an export's pages)."""
        rows = await self._client.ro_query(
            f"MATCH (e:Entity) WHERE $after IS NULL OR e.key > $after RETURN {EntityInfo.PROJECTION} "
            "ORDER BY e.key LIMIT $limit",
            {"after": after_key, "limit": limit},
        )
        return [EntityInfo.from_row(row) for row in rows]

    async def mentions_of(self, entity_keys: Sequence[str]) -> list[MentionRow]:
        """Every mention of these entities, with the chunk's memory id, by entity key then chunk id."""
        rows = await self._client.ro_query(
            "UNWIND $keys AS k MATCH (e:Entity {key: k})<-[x:MENTIONS]-(c:Chunk) "
            "RETURN c.id, e.key, x.count, x.confidence, c.memory_id ORDER BY e.key, c.id",
            {"keys": list(entity_keys)},
        )
        return [MentionRow(r[0], r[1], int(r[2] or 0), float(r[3] or 0.0), r[4]) for r in rows]

    async def relation_page(self, after_id: str | None, limit: int) -> list[RelationRow]:
        """Relation edges in id order after `after_id` (an export's pages)."""
        rows = await self._client.ro_query(
            "MATCH (s:Entity)-[r:RELATED_TO]->(o:Entity) WHERE $after IS NULL OR r.id > $after "
            f"RETURN {RelationRow.PROJECTION} ORDER BY r.id LIMIT $limit",
            {"after": after_id, "limit": limit},
        )
        return [RelationRow.from_row(row) for row in rows]

    async def import_entities(
        self, entities: Sequence[EntityRow], mentions: Sequence[MentionRow], *, now: float
    ) -> int:
        """Upsert entities (as `write_memory_graph` does) with their mentions, in one query; mentions
        of chunks that do not exist are skipped, and an entity left with no mention is not kept.
        Returns the entities that exist afterwards."""
        if not entities:
            return 0
        prepared = [_entity_param(e) for e in _fold_entities(entities).values()]
        folded = _fold_mentions(mentions)
        rows = await self._client.query(
            f"{_UPSERT_ENTITIES}"
            "CALL { UNWIND $mentions AS x MATCH (c:Chunk {id: x.chunk_id}) WHERE (:Memory)-[:HAS_CHUNK]->(c) "
            "MATCH (e:Entity {key: x.key}) MERGE (c)-[y:MENTIONS]->(e) "
            "SET y.count = x.count, y.confidence = x.confidence } "
            "CALL { UNWIND $entities AS x MATCH (e:Entity {key: x.key}) WHERE NOT ()-[:MENTIONS]->(e) "
            "DETACH DELETE e } "
            "WITH 1 AS one UNWIND $entities AS x MATCH (e:Entity {key: x.key}) RETURN count(e)",
            {"entities": prepared, "mentions": folded, "now": now},
        )
        return int(rows[0][0]) if rows else 0

    async def import_relations(self, relations: Sequence[RelationRow]) -> int:
        """Relation edges as exported (ids, memory ids and superseded_by kept). An edge whose id is
        already stored is skipped, and so is one whose chunk is not its memory's or does not mention
        both its entities (the invariant every delete relies on). Returns the edges created."""
        if not relations:
            return 0
        rows = await self._client.query(
            "UNWIND $relations AS x MATCH (c:Chunk {id: x.chunk_id}) WHERE c.memory_id = x.memory_id "
            "MATCH (c)-[:MENTIONS]->(s:Entity {key: x.subject}) MATCH (c)-[:MENTIONS]->(o:Entity {key: x.object}) "
            "OPTIONAL MATCH ()-[taken:RELATED_TO {id: x.id}]->() WITH x, s, o WHERE taken IS NULL "
            "CREATE (s)-[r:RELATED_TO {id: x.id, type: x.type, predicate: x.predicate, strength: x.strength, "
            "evidence: x.evidence, method: x.method, chunk_id: x.chunk_id, memory_id: x.memory_id, "
            "valid_from: x.valid_from, valid_from_ts: x.valid_from_ts, superseded_by: x.superseded_by}]->(o) "
            "RETURN count(r)",
            {"relations": [_relation_param(r) for r in relations]},
        )
        return int(rows[0][0]) if rows else 0

    async def finish_import(
        self, memory_ids: Sequence[str], exclusive_types: Sequence[str], *, now: float, mark_done: bool = True
    ) -> int:
        """After an import wrote these memories' graph: drop every `superseded_by` naming a relation
        that was not imported, flag their exclusive llm facts and recompute supersession for those
        facts' subjects (the store may know other facts about them), and (`mark_done`) mark the
        memories done. Returns the memories found."""
        if not memory_ids:
            return 0
        rows = await self._client.query(
            # A superseded_by naming a relation the file did not bring (its memory was skipped) goes,
            "CALL { UNWIND $ids AS mid MATCH ()-[o:RELATED_TO {memory_id: mid}]->() WHERE o.superseded_by IS NOT NULL "
            "OPTIONAL MATCH ()-[x:RELATED_TO {id: o.superseded_by}]->() WITH o, x WHERE x IS NULL "
            "SET o.superseded_by = null } "
            # the facts that take part in supersession are flagged as `write_memory_graph` flags them,
            "CALL { UNWIND $ids AS mid MATCH ()-[r:RELATED_TO {memory_id: mid}]->() "
            "SET r.exclusive = CASE WHEN r.type IN $exclusive AND r.method = 'llm' THEN true ELSE null END } "
            # and their groups are recomputed with whatever the store already knew about their subjects.
            "CALL { UNWIND $ids AS mid MATCH ()-[r:RELATED_TO {memory_id: mid}]->() WHERE r.exclusive = true "
            f"WITH DISTINCT startNode(r) AS s, r.type AS t {SUPERSEDE_GROUP}}} "
            "UNWIND $ids AS mid MATCH (m:Memory {id: mid}) FOREACH (x IN CASE WHEN $done THEN [m] ELSE [] END | "
            "SET x.graph_state = 'done', x.graph_job = null, x.graph_at = $now) RETURN count(m)",
            {"ids": list(memory_ids), "exclusive": list(exclusive_types), "now": now, "done": mark_done},
        )
        return int(rows[0][0]) if rows else 0

    # -- helpers -----------------------------------------------------------------------------------

    async def _chunk_texts(self, chunk_ids: set[str]) -> dict[str, str]:
        if not chunk_ids:
            return {}
        rows = await self._client.ro_query(
            "UNWIND $ids AS cid MATCH (c:Chunk {id: cid})<-[:HAS_CHUNK]-(m:Memory) "
            "RETURN c.id, coalesce(c.text, m.text)",
            {"ids": sorted(chunk_ids)},
        )
        return {row[0]: row[1] for row in rows}


def _count(rows: list[Any]) -> int:
    return int(rows[0][0] or 0) if rows else 0


def _with_text(evidence: RelationEvidence, texts: dict[str, str]) -> RelationEvidence:
    return replace(evidence, chunk_text=texts.get(evidence.chunk_id))


def _fold_entities(entities: Sequence[EntityRow]) -> dict[str, EntityRow]:
    """Entity rows by key, duplicates folded as the database folds them (higher confidence wins)."""
    folded: dict[str, EntityRow] = {}
    for row in entities:
        seen = folded.get(row.key)
        if seen is None:
            folded[row.key] = row
            continue
        better, worse = (row, seen) if row.confidence > seen.confidence else (seen, row)
        names = [*seen.aliases, *row.aliases, seen.name, row.name]
        folded[row.key] = EntityRow(
            key=row.key,
            id=seen.id,
            name=better.name,
            type=better.type,
            aliases=[n for n in dict.fromkeys(names) if n != better.name],
            description=better.description or worse.description,
            confidence=better.confidence,
        )
    return folded


def _fold_mentions(mentions: Sequence[MentionRow]) -> list[dict[str, Any]]:
    """One row per (chunk, entity): counts added, the higher confidence kept."""
    folded: dict[tuple[str, str], list[Any]] = {}
    for m in mentions:
        seen = folded.get((m.chunk_id, m.entity_key))
        if seen is None:
            folded[(m.chunk_id, m.entity_key)] = [m.count, m.confidence]
        else:
            seen[0] += m.count
            seen[1] = max(seen[1], m.confidence)
    return [
        {"chunk_id": chunk, "key": key, "count": int(count), "confidence": float(confidence)}
        for (chunk, key), (count, confidence) in folded.items()
    ]


def _entity_param(e: EntityRow) -> dict[str, Any]:
    return {
        "key": e.key,
        "id": e.id,
        "name": e.name,
        "type": e.type,
        "aliases": list(e.aliases),
        "description": e.description,
        "confidence": float(e.confidence),
    }


def _relation_param(r: RelationRow, exclusive: bool = False) -> dict[str, Any]:
    """An edge's properties. A build's write takes `memory_id` from the memory it writes and leaves
    `superseded_by` to the supersession rule; an import keeps both as exported."""
    return {
        # Only facts that take part in supersession carry the flag (FalkorDB drops null properties).
        "exclusive": True if exclusive else None,
        "id": r.id,
        "subject": r.subject_key,
        "object": r.object_key,
        "type": r.type,
        "predicate": r.predicate,
        "strength": float(r.strength),
        "evidence": r.evidence,
        "method": r.method,
        "chunk_id": r.chunk_id,
        "memory_id": r.memory_id,
        "valid_from": r.valid_from,
        "valid_from_ts": None if r.valid_from_ts is None else float(r.valid_from_ts),
        "superseded_by": r.superseded_by,
    }


def _prepare(
    entities: Sequence[EntityRow],
    mentions: Sequence[MentionRow],
    relations: Sequence[RelationRow],
    exclusive_types: Sequence[str],
    chunk_ids: Sequence[str] | None,
) -> _Prepared:
    """Fold duplicates and check the rows describe a consistent graph (see `write_memory_graph`)."""
    folded = _fold_entities(entities)
    mention_rows = _fold_mentions(mentions)
    mentioned = {(m["chunk_id"], m["key"]) for m in mention_rows}
    for m in mention_rows:
        if m["key"] not in folded:
            raise ValueError(f"mention of {m['key']!r} in chunk {m['chunk_id']}: the entity is not among the entities")
    unmentioned = sorted(set(folded) - {key for _, key in mentioned})
    if unmentioned:
        raise ValueError(f"entity {unmentioned[0]!r} is mentioned by no chunk: every entity needs a mention")
    for r in relations:
        for side, key in (("subject", r.subject_key), ("object", r.object_key)):
            if (r.chunk_id, key) not in mentioned:
                raise ValueError(
                    f"relation {r.id}: its {side} {key!r} is not mentioned by its chunk {r.chunk_id} "
                    "(a relation's entities are mentions of the chunk that states it)"
                )
    referenced = sorted({m["chunk_id"] for m in mention_rows})
    if chunk_ids is not None:
        expected = list(dict.fromkeys(chunk_ids))
        strangers = sorted(set(referenced) - set(expected))
        if strangers:
            raise ValueError(f"chunk {strangers[0]} is not among the memory's chunk_ids")
        check, chunk_count = expected, len(expected)
    else:
        check, chunk_count = referenced, None
    exclusive = set(exclusive_types)
    groups = sorted({(r.subject_key, r.type) for r in relations if r.type in exclusive and r.method == "llm"})
    return _Prepared(
        entities=[_entity_param(e) for e in folded.values()],
        mentions=mention_rows,
        relations=[_relation_param(r, r.type in exclusive and r.method == "llm") for r in relations],
        groups=[{"subject": s, "type": t} for s, t in groups],
        check=check,
        chunk_count=chunk_count,
    )


def _entity_batches(
    entities: list[dict[str, Any]], mentions: list[dict[str, Any]], size: int
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Entities with all their mentions, about `size` rows a batch: no batch leaves an entity it
    created without a mention."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for m in mentions:
        by_key.setdefault(m["key"], []).append(m)
    batches: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    batch_entities: list[dict[str, Any]] = []
    batch_mentions: list[dict[str, Any]] = []
    for entity in entities:
        mine = by_key.get(entity["key"], [])
        if batch_entities and len(batch_entities) + len(batch_mentions) + 1 + len(mine) > size:
            batches.append((batch_entities, batch_mentions))
            batch_entities, batch_mentions = [], []
        batch_entities.append(entity)
        batch_mentions.extend(mine)
    if batch_entities:
        batches.append((batch_entities, batch_mentions))
    return batches
