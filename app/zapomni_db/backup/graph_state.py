"""A graph's state as a backup records and checks it: counts, schema version, embedder and a vector-query probe.

Read with raw GRAPH.RO_QUERY replies over a synchronous client, in one MULTI/EXEC, so that one read
is one instant of the graph.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import redis
from falkordb.helpers import stringify_param_value

from zapomni_db.backup.errors import BackupError
from zapomni_db.records.maintenance import EmbedderClaim

PROBE_K = 10

_COUNT_QUERIES = {
    "memories": "MATCH (m:Memory) RETURN count(m)",
    "chunks": "MATCH (:Memory)-[:HAS_CHUNK]->(c:Chunk) RETURN count(c)",
    "nodes": "MATCH (n) RETURN count(n)",
    "relationships": "MATCH ()-[r]->() RETURN count(r)",
}
_SCHEMA_VERSION = "MATCH (s:SchemaVersion {id: 'schema'}) RETURN s.version"
_EMBEDDER = "MATCH (e:EmbedderInfo {id: 'embedder'}) RETURN e.model, e.dimension"
# The probe: a stored chunk's own vector as the query. Ties are ordered by id so the same index
# contents give the same list.
_PROBE_TAIL = (
    "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, c.embedding) YIELD node, score "
    "RETURN c.id, node.id ORDER BY score, node.id"
)
_PROBE_PICK = f"MATCH (:Memory)-[:HAS_CHUNK]->(c:Chunk) WITH c LIMIT 1 {_PROBE_TAIL}"
_PROBE_RERUN = f"MATCH (c:Chunk {{id: $chunk_id}}) WITH c LIMIT 1 {_PROBE_TAIL}"
_INDEX_STATUS = "CALL db.indexes() YIELD label, status RETURN label, status"
_EMPTY_GRAPH = "empty key"


@dataclass(frozen=True)
class StateCounts:
    memories: int = 0
    chunks: int = 0
    nodes: int = 0
    relationships: int = 0


@dataclass(frozen=True)
class Probe:
    """A top-k vector query with a stored chunk's embedding, and the chunk ids it returned in order."""

    chunk_id: str
    k: int
    ids: list[str]


@dataclass(frozen=True)
class GraphState:
    """What a verification compares: the same queries against the live server and a loaded copy."""

    schema_version: int = 0
    embedder: EmbedderClaim | None = None
    counts: StateCounts = field(default_factory=StateCounts)
    probe: Probe | None = None


def _cypher(query: str, params: dict[str, Any] | None = None) -> str:
    if not params:
        return query
    header = " ".join(f"{name}={stringify_param_value(value)}" for name, value in params.items())
    return f"CYPHER {header} {query}"


def queue_state(pipe: Any, graph: str, *, probe: bool, probe_chunk_id: str | None = None) -> None:
    """Queue the state queries on a pipeline; `parse_state` reads their replies in this order."""
    for query in _COUNT_QUERIES.values():
        pipe.execute_command("GRAPH.RO_QUERY", graph, query)
    pipe.execute_command("GRAPH.RO_QUERY", graph, _SCHEMA_VERSION)
    pipe.execute_command("GRAPH.RO_QUERY", graph, _EMBEDDER)
    if not probe:
        return
    if probe_chunk_id is None:
        pipe.execute_command("GRAPH.RO_QUERY", graph, _cypher(_PROBE_PICK, {"k": PROBE_K}))
    else:
        pipe.execute_command("GRAPH.RO_QUERY", graph, _cypher(_PROBE_RERUN, {"k": PROBE_K, "chunk_id": probe_chunk_id}))


def _state_replies(*, probe: bool) -> int:
    return len(_COUNT_QUERIES) + 2 + int(probe)


def _rows(reply: Any, *, optional: bool = False) -> list[list[Any]]:
    """The rows of a raw GRAPH.RO_QUERY reply; a graph that does not exist yet has none."""
    if isinstance(reply, Exception):
        if _EMPTY_GRAPH in str(reply) or optional:
            return []
        raise BackupError(f"a query for the backup failed: {reply}")
    return [[text(value) for value in row] for row in reply[1]]


def text(value: Any) -> Any:
    """A raw reply's value, with bytes decoded."""
    return value.decode() if isinstance(value, bytes) else value


def parse_state(replies: list[Any]) -> GraphState:
    count_replies = replies[: len(_COUNT_QUERIES)]
    counts = StateCounts(
        **{
            name: int(rows[0][0]) if (rows := _rows(reply)) else 0
            for name, reply in zip(_COUNT_QUERIES, count_replies, strict=True)
        }
    )
    schema_rows = _rows(replies[len(_COUNT_QUERIES)])
    embedder_rows = _rows(replies[len(_COUNT_QUERIES) + 1])
    # No vector index (a new store, or mid re-embed) fails the probe: the backup then has none.
    probe_rows = (
        _rows(replies[len(_COUNT_QUERIES) + 2], optional=True) if len(replies) > _state_replies(probe=False) else []
    )
    return GraphState(
        schema_version=int(schema_rows[0][0]) if schema_rows else 0,
        embedder=EmbedderClaim(str(embedder_rows[0][0]), int(embedder_rows[0][1])) if embedder_rows else None,
        counts=counts,
        probe=Probe(chunk_id=probe_rows[0][0], k=PROBE_K, ids=[row[1] for row in probe_rows]) if probe_rows else None,
    )


def read_state(client: redis.Redis, graph: str, *, probe_chunk_id: str | None = None) -> GraphState:
    """Counts, schema version, embedder claim and the probe (with `probe_chunk_id`'s vector, or the
    first linked chunk's), read in one transaction."""
    pipe = client.pipeline(transaction=True)
    queue_state(pipe, graph, probe=True, probe_chunk_id=probe_chunk_id)
    return parse_state(pipe.execute(raise_on_error=False))


def wait_for_indexes(client: redis.Redis, graph: str, timeout_s: float = 600.0) -> None:
    """A server that just loaded an RDB rebuilds its indexes in the background: wait until they are built."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            rows = _rows(client.execute_command("GRAPH.RO_QUERY", graph, _INDEX_STATUS))
        except redis.ResponseError as exc:
            rows = _rows(exc)
        if all(status == "OPERATIONAL" for _label, status in rows):
            return
        if time.monotonic() > deadline:
            raise BackupError("the indexes of the loaded backup did not finish building in time")
        time.sleep(0.1)


def state_differences(expected: GraphState, actual: GraphState, *, probe: bool = True) -> list[str]:
    """What differs between two states, in words; empty when they match."""
    differences = []
    for name in _COUNT_QUERIES:
        want, got = getattr(expected.counts, name), getattr(actual.counts, name)
        if want != got:
            differences.append(f"{name}: expected {want}, found {got}")
    if expected.schema_version != actual.schema_version:
        differences.append(f"schema version: expected {expected.schema_version}, found {actual.schema_version}")
    if expected.embedder != actual.embedder:
        differences.append(f"embedder: expected {expected.embedder}, found {actual.embedder}")
    if probe and expected.probe != actual.probe:
        differences.append("the probe vector query returned different chunks")
    return differences
