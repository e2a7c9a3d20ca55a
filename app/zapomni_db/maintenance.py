"""Housekeeping of one graph: counts, the embedder claim, re-embedding, crash leftovers, the change log.

Re-embedding sets new vectors on the existing Chunk nodes: their MENTIONS edges, and so the
knowledge graph, stay as they are.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from zapomni_db._cypher import REINDEX_CHUNKS, VectorParam
from zapomni_db.client import GraphClient
from zapomni_db.errors import SchemaMismatch
from zapomni_db.records.maintenance import Counts, EmbedderClaim, ReembedState
from zapomni_db.schema import current_version

# Change-log entries older than this are pruned; a process whose keyword index is further behind
# (idle that long while others deleted) rebuilds its index from the store.
CHANGE_LOG_KEEP_S = 15 * 60.0

# Properties every write derives from what a memory holds; a store written before one existed gets it once, on
# opening (`zapomni_core.kernel.registry`, which also holds how each is computed). The store records when every
# memory has been given a field (`derived`, `mark_derived`): later openings read no memory for it (at 1M memories,
# looking for the ones without a hash and a head read every memory twice: 7.2 s).
DerivedField = Literal["content_hash", "head", "speaker"]


@dataclass(frozen=True)
class Derivation:
    sources: tuple[str, ...]  # the Memory properties the field is computed from
    # Most memories have none (a note has no speaker): absent is no sign of a memory still to do, so every memory
    # is read. A field every memory has (a hash, a head) is still to do exactly where it is absent.
    sparse: bool = False
    # Search hits show it, and the keyword index keeps what they show: setting it logs a change (decision 0045).
    shown: bool = False


DERIVED: dict[DerivedField, Derivation] = {
    "content_hash": Derivation(("text",)),
    "head": Derivation(("text",)),
    # The agent's speaker (in the metadata JSON), else the one inferred from a `Name:` lead (decision 0023).
    "speaker": Derivation(("metadata", "inferred"), sparse=True, shown=True),
}


def _sources(field: DerivedField) -> str:
    """A list of the field's sources for a memory `m`, '' for an absent one (a list holding null equals nothing).

    Field and source names come from the fixed table above, never from input."""
    return "[" + ", ".join(f"coalesce(m.{source}, '')" for source in DERIVED[field].sources) + "]"


def keyword_stamp_key(graph: str) -> str:
    """The key holding a graph's keyword index stamp (deleted after its graph and file: `drop_keyword_stamp`); "#"
    is in no workspace name, so it is no workspace's graph."""
    return f"{graph}#keyword-index-stamp"


class Maintenance:
    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def counts(self) -> Counts:
        """Memories, and chunks linked to them (not those staged for a memory being indexed, nor a crash's leftovers).

        Two queries FalkorDB answers from its label and relationship-type counts without reading a node
        (a query that does anything more, such as both counts at once, reads them all): constant time."""
        memories = await self._client.ro_query("MATCH (m:Memory) RETURN count(m)")
        chunks = await self._client.ro_query("MATCH ()-[r:HAS_CHUNK]->() RETURN count(r)")
        return Counts(memories=int(memories[0][0]) if memories else 0, chunks=int(chunks[0][0]) if chunks else 0)

    async def remove_orphan_chunks(self, older_than_ts: float) -> int:
        """Delete the chunks of large writes that stopped before linking them (a crash), staged before
        `older_than_ts`, then the entities no chunk mentions (`remove_orphan_entities`); returns the chunks deleted.

        Each such write left its `Staging` marker (`MemoryWrites`) with its chunks hanging off it: only those few
        nodes and their chunks are read, however large the store. Unmarked leftovers of older versions were swept
        once by migration 8."""
        rows = await self._client.query(
            "MATCH (s:Staging) WHERE s.at < $cutoff "
            # A chunk staged for a memory still being indexed (STAGED) is not an orphan, however old.
            "OPTIONAL MATCH (s)-[:STAGES]->(c:Chunk) WHERE NOT (c)<-[:HAS_CHUNK|STAGED]-(:Memory) "
            "WITH collect(DISTINCT s) AS marks, collect(c) AS chunks "
            "WITH marks + chunks AS doomed, size(chunks) AS removed UNWIND doomed AS n DETACH DELETE n "
            "WITH removed, count(n) AS gone RETURN removed",
            {"cutoff": older_than_ts},
        )
        await self.remove_orphan_entities()
        return int(rows[0][0]) if rows else 0

    async def remove_orphan_entities(self) -> int:
        """Delete entities no chunk mentions: what a large graph write that stopped half way leaves
        (`GraphStore.write_memory_graph`). No grace period is needed: every graph write creates an
        entity in the same query as a mention of it. Returns the entities deleted."""
        rows = await self._client.query(
            "MATCH (e:Entity) WHERE NOT ()-[:MENTIONS]->(e) DETACH DELETE e RETURN count(e)"
        )
        return int(rows[0][0]) if rows else 0

    async def prune_changes(self, now: float | None = None) -> int:
        """Drop change-log entries older than `CHANGE_LOG_KEEP_S`, remembering how far the log was cut."""
        rows = await self._client.query(
            "MATCH (x:Change) WHERE x.at < $cutoff WITH max(x.seq) AS top, collect(x) AS old "
            "WHERE size(old) > 0 MATCH (q:Sequence {id: 'chunks'}) "
            "SET q.pruned_upto = CASE WHEN coalesce(q.pruned_upto, 0) > top THEN q.pruned_upto ELSE top END "
            "WITH old UNWIND old AS x DELETE x RETURN count(x)",
            {"cutoff": (now or time.time()) - CHANGE_LOG_KEEP_S},
        )
        return int(rows[0][0]) if rows else 0

    async def graph_exists(self) -> bool:
        """Whether the graph exists (a deleted workspace's does not)."""
        return await self._client.exists()

    async def keyword_index_stamp(self) -> str | None:
        """The stamp the last saved keyword index wrote (`stamp_keyword_index`), if any."""
        stamp = await self._client.command("GET", keyword_stamp_key(self._client.graph_name))
        if stamp is not None:
            return stamp.decode() if isinstance(stamp, bytes) else str(stamp)
        # Where stores saved before decision 0037 keep it: their saved file is read once more, not rebuilt.
        rows = await self._client.ro_query("MATCH (q:Sequence {id: 'chunks'}) RETURN q.index_stamp")
        return rows[0][0] if rows else None

    async def stamp_keyword_index(self, stamp: str) -> None:
        """Mark the store as the one a keyword index file was saved from: only that file matches it.

        A plain key beside the graph, not a graph property: a graph write waits for an index build the database
        makes after loading a large store (minutes), and the file is worth saving most just then (decision 0037).
        """
        await self._client.command("SET", keyword_stamp_key(self._client.graph_name), stamp)

    async def derived(self) -> set[str]:
        """The derived fields every memory of this store has been given (`mark_derived`)."""
        rows = await self._client.ro_query("MATCH (s:SchemaVersion {id: 'schema'}) RETURN s.derived")
        return set(rows[0][0] or []) if rows else set()

    async def mark_derived(self, field: DerivedField) -> None:
        """Record that every memory has been given `field`: writes keep it from now on."""
        await self._client.query(
            "MERGE (s:SchemaVersion {id: 'schema'}) "
            "SET s.derived = [f IN coalesce(s.derived, []) WHERE f <> $field] + [$field]",
            {"field": field},
        )

    async def memories_without(self, field: DerivedField, after: str, limit: int) -> list[tuple[str, list[Any]]]:
        """(id, [its `sources`]) of up to `limit` memories after the id `after`, in id order, that may still
        lack `field`: those without it, or for a sparse field every memory."""
        derivation = DERIVED[field]
        missing = "" if derivation.sparse else f"AND m.{field} IS NULL "
        rows = await self._client.ro_query(
            f"MATCH (m:Memory) WHERE m.id > $after {missing}RETURN m.id, {_sources(field)} ORDER BY m.id LIMIT $limit",
            {"after": after, "limit": limit},
        )
        return [(row[0], list(row[1])) for row in rows]

    async def set_derived(self, field: DerivedField, values: Sequence[tuple[str, Any, list[Any]]]) -> None:
        """Set `field` on the memories named in (id, value, the sources it was computed from) rows.

        A memory a write changed since its sources were read is left alone: that write set the field itself.
        A hash or head is checked by its absence (comparing a whole text again would double what is read);
        a sparse field, which may be absent after a write too, by its sources (a turn's two small JSONs)."""
        if not values:
            return
        sparse = DERIVED[field].sparse
        unchanged = f"{_sources(field)} = r[2]" if sparse else f"m.{field} IS NULL"
        # Memory nodes are not vector-indexed: setting a property on them is safe.
        reread = f"WITH m {REINDEX_CHUNKS}RETURN count(m)" if DERIVED[field].shown else ""
        await self._client.query(
            f"UNWIND $rows AS r MATCH (m:Memory {{id: r[0]}}) WHERE {unchanged} SET m.{field} = r[1] {reread}",
            {
                "rows": [[memory_id, value, sources if sparse else []] for memory_id, value, sources in values],
                "now": time.time(),
            },
        )

    async def database_size_bytes(self) -> int:
        info = await self._client.command("INFO", "memory")
        return int(info.get("used_memory", 0)) if isinstance(info, dict) else 0

    async def schema_version(self) -> int:
        return await current_version(self._client)

    async def claim_embedder(self, model: str, dimension: int) -> None:
        """Record the embedder that builds this graph; refuse a different one.

        A graph already claimed is only read: a write waits while the database builds an index after loading the
        store (minutes at a million chunks), and every opening claims."""
        claim = await self.stored_embedder()
        if claim is None:
            rows = await self._client.query(
                "MERGE (e:EmbedderInfo {id: 'embedder'}) "
                "ON CREATE SET e.model = $model, e.dimension = $dimension, e.created_at = timestamp() "
                "RETURN e.model, e.dimension",
                {"model": model, "dimension": dimension},
            )
            claim = EmbedderClaim(model=rows[0][0], dimension=int(rows[0][1]))
        stored_model, stored_dimension = claim.model, claim.dimension
        if (stored_model, stored_dimension) != (model, dimension):
            raise SchemaMismatch(
                f"this graph was built with the embedder {stored_model} ({stored_dimension}-d), "
                f"but {model} ({dimension}-d) is configured"
            )

    # -- re-embedding (`zapomni migrate reembed`) ----------------------------------------------

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

    async def chunk_texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """Each chunk's text and the context it was embedded with (ChunkRow.context)."""
        rows = await self._client.ro_query(
            "UNWIND $ids AS cid MATCH (c:Chunk {id: cid}) OPTIONAL MATCH (c)<-[:HAS_CHUNK]-(m:Memory) "
            "RETURN c.id, coalesce(c.text, m.text), c.context",
            {"ids": list(ids)},
        )
        return {row[0]: (row[1], row[2]) for row in rows}

    async def set_chunk_embeddings(self, model: str, vectors: dict[str, list[float]]) -> int:
        """Replace chunk vectors and tag them with `model` in one SET; returns the chunks updated.

        Only with the vector index dropped: a SET on an indexed Chunk re-inserts it into the HNSW
        index and leaves a stale copy behind.
        """
        rows = await self._client.query(
            "UNWIND $rows AS r MATCH (c:Chunk {id: r.id}) "
            "SET c.embedding = vecf32(r.embedding), c.embedding_model = $model, "
            # Chunks stored before decision 0031 carry term arrays nothing reads: the rewrite drops them.
            "c.terms = null, c.term_counts = null, c.term_length = null RETURN count(c)",
            {
                "model": model,
                "rows": [{"id": cid, "embedding": VectorParam(vector)} for cid, vector in vectors.items()],
            },
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
