"""Cypher fragments more than one store uses. Values always travel as parameters."""

from collections.abc import Sequence


class VectorParam:
    """A vector as a query parameter, written once as the text the query carries. The FalkorDB client writes
    parameters into the query text value by value (`stringify_param_value`: 0.38-0.59 ms for 384 floats, on every
    add, search and update detection); nine significant digits are a float32's exact value, 0.14 ms and a third
    shorter. The client writes a value that is not a string, list, dict or None as `str(value)`."""

    __slots__ = ("_text",)

    def __init__(self, values: Sequence[float]) -> None:
        self._text = "[" + ",".join([f"{x:.9g}" for x in values]) + "]"

    def __str__(self) -> str:
        return self._text


# FalkorDB runs write queries one at a time, so this counter orders every change a graph sees:
# a memory made visible, updated or deleted takes the next number. The keyword index of every
# process catches up by reading what changed above the number it has seen.
NEXT_SEQ = "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + 1 WITH q.value AS seq "
# For memories bound to `m` whose fields a hit shows changed (their chunks did not): a change-log entry naming their
# chunks, so the keyword index, which keeps those fields, reads them again (`SearchReads.changes_between`).
REINDEX_CHUNKS = (
    "OPTIONAL MATCH (m)-[:HAS_CHUNK]->(c:Chunk) WITH m, collect(c.id) AS reread "
    "WITH collect(m) AS ms, collect(reread) AS rereads WHERE size(ms) > 0 "
    "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + 1 "
    "CREATE (:Change {seq: q.value, removed: [], added: reduce(acc = [], ids IN rereads | acc + ids), at: $now}) "
    "WITH ms UNWIND ms AS m "
)

# A memory's kind as every listing shows it and the kind filter reads it (`ListedKind`), for a memory bound to
# `m`: a file's (document, code), else a conversation turn when it has a speaker or a thread (the agent's or the
# one the server inferred, decision 0023), else a note. Notes and turns are stored without a kind: a turn is one
# by what it holds, so an edit that gives a note a speaker, or takes a turn's away, changes its kind.
KIND = (
    "CASE WHEN m.kind IS NOT NULL THEN m.kind "
    "WHEN m.speaker IS NOT NULL OR m.thread IS NOT NULL THEN 'turn' ELSE 'note' END"
)

FILTER = (
    "($source IS NULL OR m.source = $source) "
    "AND ($tags IS NULL OR any(t IN m.tags WHERE t IN $tags)) "
    "AND ($date_from IS NULL OR m.date_ts >= $date_from) "
    "AND ($date_to IS NULL OR m.date_ts <= $date_to) "
    f"AND ($kind IS NULL OR {KIND} = $kind) "
    # A turn's thread and speaker are properties: the agent's, else the inferred ones (decision 0025).
    "AND ($thread IS NULL OR m.thread = $thread) "
    "AND ($speaker IS NULL OR m.speaker = $speaker) "
    # Evaluated only when asked: the pattern costs ~20 us a row (an `IS NULL` on a parameter, nothing).
    "AND ($current IS NULL OR NOT (m)-[:SUPERSEDED_BY]->(:Memory))"
)

# A Chunk's properties at creation. Nothing is ever SET on a Chunk afterwards: FalkorDB 4.16.3 re-inserts
# the vector of a vector-indexed node on any SET and leaves the old copy in the HNSW index, so top-k
# then returns fewer distinct chunks (the same fault as an AOF replay's, docs/decisions/0007; the graph
# keeps to it, docs/decisions/0012).
CHUNK_PROPERTIES = (
    "{id: c.id, memory_id: $memory_id, idx: c.idx, embedding: vecf32(c.embedding), created_at: $created_at, "
    # Null (not stored) for the one chunk of a memory that is its whole text: read as `coalesce(c.text, m.text)`.
    "text: c.text, "
    # Where the chunk sits in its file; null (not stored) for a note's chunks.
    "page: c.page, section: c.section, line_start: c.line_start, line_end: c.line_end, "
    # What was read with the text when it was embedded (a conversation turn's speaker and date).
    "context: c.context}"
)

# A new job's properties (parameters from `zapomni_db.jobs.job_params`).
JOB_PROPERTIES = (
    "{id: $job_id, kind: $job_kind, state: 'pending', memory_id: $job_memory_id, args: $job_args, done: 0, "
    "total: $job_total, unit: $job_unit, counts: '{}', failed: 0, failures: [], attempts: 0, "
    "created_at: $job_created_at, updated_at: $job_created_at}"
)

# -- the knowledge graph (zapomni_db.graph) -----------------------------------------------------
# Supersession, recomputed for a whole group of facts: the exclusive relations (`exclusive: true`,
# set at write time on llm facts of an exclusive type) of one subject `s` and one type `t` (bound,
# distinct, by what precedes). A fact's successor is the next fact in time: among the
# facts dated after it, those of the earliest date; if one of them names the same object, the state
# continued and nothing replaced it, else the one with the smallest id replaced it. Undated facts and
# equal dates supersede nothing. The same rule as `zapomni_core.graph.merge.superseding`, applied to
# the whole group at once; the group's edges are read once (a subject may have thousands of relations).
SUPERSEDE_GROUP = (
    "MATCH (s)-[o:RELATED_TO]->(obj:Entity) WHERE o.type = t AND o.exclusive = true "
    "WITH s, t, collect([o, id(obj), o.valid_from_ts, o.id]) AS facts UNWIND facts AS fact "
    "WITH fact, [x IN facts WHERE fact[2] IS NOT NULL AND x[2] IS NOT NULL AND x[2] > fact[2]] AS later "
    "WITH fact, later, reduce(d = null, x IN later | CASE WHEN d IS NULL OR x[2] < d THEN x[2] ELSE d END) AS first "
    "WITH fact, [x IN later WHERE x[2] = first] AS nearest WITH fact[0] AS o, CASE "
    "WHEN size(nearest) = 0 OR any(x IN nearest WHERE x[1] = fact[1]) THEN null "
    "ELSE reduce(b = null, x IN nearest | CASE WHEN b IS NULL OR x[3] < b THEN x[3] ELSE b END) END AS next "
    "SET o.superseded_by = next "
)

# Removes the graph evidence of the memories in `$purge`, inside any write query with one row in
# flight: their RELATED_TO edges (the supersession of the groups they belonged to is recomputed:
# `superseded_by` only ever names a fact of the same group, so no id is left dangling), a code
# file's symbols and File node, then the MENTIONS of their chunks. The entities those mentions
# pointed at come out as `stale`; `DROP_UNMENTIONED` deletes the ones no chunk mentions any more.
PURGE_EVIDENCE = (
    # Matched by the edge index; a pattern naming the end nodes' label would scan every entity.
    "CALL { OPTIONAL MATCH ()-[r:RELATED_TO]->() WHERE r.memory_id IN $purge "
    "WITH collect(r) AS rels, collect(CASE WHEN r.exclusive THEN [startNode(r), r.type] END) AS groups "
    "FOREACH (r IN rels | DELETE r) "
    f"WITH groups UNWIND groups AS g WITH DISTINCT g[0] AS s, g[1] AS t {SUPERSEDE_GROUP}}} "
    # A code file's memory: its File node and symbols, with every edge they have (CALLS from other files too).
    "CALL { OPTIONAL MATCH (n:Symbol) WHERE n.memory_id IN $purge "
    "WITH collect(n) AS ns FOREACH (n IN ns | DETACH DELETE n) } "
    "CALL { OPTIONAL MATCH (f:File) WHERE f.memory_id IN $purge "
    "WITH collect(f) AS fs FOREACH (f IN fs | DETACH DELETE f) } "
    "CALL { OPTIONAL MATCH (owner:Memory)-[:HAS_CHUNK|STAGED]->(:Chunk)-[x:MENTIONS]->(e:Entity) "
    "WHERE owner.id IN $purge "
    "WITH collect(x) AS xs, collect(DISTINCT e) AS es FOREACH (x IN xs | DELETE x) RETURN es AS stale } "
)
# Entities in `stale` that no chunk mentions any more. Every relation's endpoints are mentioned by
# the chunk that states it, so such an entity has no relation left either (DETACH is a safeguard).
DROP_UNMENTIONED = "CALL { WITH stale UNWIND stale AS e WITH e WHERE NOT ()-[:MENTIONS]->(e) DETACH DELETE e } "


def at_numbers(variable: str, label: str) -> str:
    """The nodes of `label` whose numbers are in `$nodes` and whose ids are in `$ids`, bound to `variable` (decision
    0045). `ID(n) = x` from an UNWIND finds a node without any index, as fast while the indexes are built after a
    load; the id is checked because a number freed by a delete is given to the next node made. It is compared as a
    projected value: written as a condition on the node's `id`, the planner reads the id's index once per number."""
    return (
        f"UNWIND $nodes AS x MATCH ({variable}:{label}) WHERE ID({variable}) = x "
        f"WITH {variable}, {variable}.id AS found_id WHERE found_id IN $ids"
    )
