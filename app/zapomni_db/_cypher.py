"""Cypher fragments more than one store uses. Values always travel as parameters."""

# FalkorDB runs write queries one at a time, so this counter orders every change a graph sees:
# a memory made visible, updated or deleted takes the next number. The keyword index of every
# process catches up by reading what changed above the number it has seen.
NEXT_SEQ = "MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + 1 WITH q.value AS seq "

FILTER = (
    "($source IS NULL OR m.source = $source) "
    "AND ($tags IS NULL OR any(t IN m.tags WHERE t IN $tags)) "
    "AND ($date_from IS NULL OR m.date_ts >= $date_from) "
    "AND ($date_to IS NULL OR m.date_ts <= $date_to)"
)

# A Chunk's properties at creation. Nothing is ever SET on a Chunk afterwards: on a vector-indexed
# node that re-inserts its vector and leaves a stale copy in the HNSW index (DESIGN.md).
CHUNK_PROPERTIES = (
    "{id: c.id, memory_id: $memory_id, idx: c.idx, text: c.text, embedding: vecf32(c.embedding), "
    "created_at: $created_at, terms: c.terms, term_counts: c.counts, term_length: c.length}"
)

# A new job's properties (parameters from `zapomni_db.jobs.job_params`).
JOB_PROPERTIES = (
    "{id: $job_id, kind: $job_kind, state: 'pending', memory_id: $job_memory_id, args: $job_args, done: 0, "
    "total: $job_total, unit: $job_unit, counts: '{}', failed: 0, failures: [], attempts: 0, "
    "created_at: $job_created_at, updated_at: $job_created_at}"
)
