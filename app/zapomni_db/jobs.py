"""Durable jobs: `(:Job)` nodes in the workspace's graph, claimed under a lease, fenced by owner.

A worker claims a job by compare-and-set on its `attempts` counter (FalkorDB runs one write query
at a time, so two workers cannot both win). Every write a worker makes for a job checks that the
job is still `running` and still its own, so a worker whose lease lapsed (or whose job was
cancelled) changes nothing. A job about one memory names it in `memory_id`.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence

from zapomni_db._cypher import CHUNK_PROPERTIES, JOB_PROPERTIES
from zapomni_db.client import GraphClient
from zapomni_db.memories import chunk_param, job_params
from zapomni_db.records.jobs import JobRecord, JobRow
from zapomni_db.records.memories import ChunkRow

ACTIVE = ("pending", "running")
MAX_FAILURE_LINES = 100

_MINE = "MATCH (j:Job {id: $job_id}) WHERE j.state = 'running' AND j.owner = $owner "
# The server paths and hosts the job's lines name, each once (a walk's lines name the same few again and again).
_HIDE = "j.hidden = coalesce(j.hidden, []) + [h IN $hidden WHERE NOT h IN coalesce(j.hidden, [])]"
_FINISH_FIELDS = "j.finished_at = $now, j.updated_at = $now, j.owner = null, j.lease_until = null"
# A job about a memory that fails leaves that memory marked failed (in the same write).
_MARK_MEMORY_FAILED = (
    "WITH j OPTIONAL MATCH (m:Memory {id: j.memory_id}) WHERE j.state = 'failed' AND m.job_id = j.id "
    "AND m.status = 'indexing' FOREACH (x IN CASE WHEN m IS NULL THEN [] ELSE [m] END | SET x.status = 'failed') "
)


class JobStore:
    def __init__(self, client: GraphClient) -> None:
        self._client = client

    async def create(self, job: JobRecord) -> None:
        await self._client.query(f"CREATE (j:Job {JOB_PROPERTIES})", job_params(job))

    async def get(self, job_id: str) -> JobRow | None:
        rows = await self._client.ro_query(f"MATCH (j:Job {{id: $id}}) RETURN {JobRow.PROJECTION}", {"id": job_id})
        return JobRow.from_row(rows[0]) if rows else None

    async def list(self, state: str | None, limit: int) -> list[JobRow]:
        rows = await self._client.ro_query(
            f"MATCH (j:Job) WHERE $state IS NULL OR j.state = $state RETURN {JobRow.PROJECTION} "
            "ORDER BY j.created_at DESC, j.id LIMIT $limit",
            {"state": state, "limit": limit},
        )
        return [JobRow.from_row(row) for row in rows]

    async def count_by_state(self) -> dict[str, int]:
        rows = await self._client.ro_query("MATCH (j:Job) RETURN j.state, count(j)")
        return {state: int(n) for state, n in rows}

    # builtins.list: in this class's scope `list` is the method above.
    async def active(self, limit: int = 20) -> builtins.list[JobRow]:
        """Pending and running jobs, oldest first: what a worker may claim."""
        rows = await self._client.ro_query(
            f"MATCH (j:Job) WHERE j.state IN $active RETURN {JobRow.PROJECTION} ORDER BY j.created_at LIMIT $limit",
            {"active": list(ACTIVE), "limit": limit},
        )
        return [JobRow.from_row(row) for row in rows]

    async def claim(self, seen: JobRow, owner: str, lease_s: float) -> JobRow | None:
        """Take `seen` if it is still as it was seen (same state, same attempt count); None if someone else did."""
        now = time.time()
        rows = await self._client.query(
            "MATCH (j:Job {id: $job_id}) WHERE j.state = $state AND coalesce(j.attempts, 0) = $attempts "
            "SET j.state = 'running', j.owner = $owner, j.lease_until = $until, j.attempts = $attempts + 1, "
            "j.started_at = coalesce(j.started_at, $now), j.updated_at = $now, j.message = null "
            f"RETURN {JobRow.PROJECTION}",
            {
                "job_id": seen.id,
                "state": seen.state,
                "attempts": seen.attempts,
                "owner": owner,
                "until": now + lease_s,
                "now": now,
            },
        )
        return JobRow.from_row(rows[0]) if rows else None

    async def heartbeat(
        self, job_id: str, owner: str, lease_s: float, *, done: int, total: int | None, message: str | None
    ) -> bool:
        """Renew the lease and record progress; False when the job is no longer this owner's to run."""
        now = time.time()
        rows = await self._client.query(
            # Progress only moves forward: a renewal may race a write that already counted further.
            f"{_MINE}SET j.lease_until = $until, j.updated_at = $now, "
            "j.done = CASE WHEN coalesce(j.done, 0) > $done THEN j.done ELSE $done END, j.total = $total, "
            "j.message = $message RETURN j.id",
            {
                "job_id": job_id,
                "owner": owner,
                "until": now + lease_s,
                "now": now,
                "done": done,
                "total": total,
                "message": message,
            },
        )
        return bool(rows)

    async def record_failure(self, job_id: str, owner: str, line: str, hidden: Sequence[str] = ()) -> bool:
        """Count one failed item; its "item: reason" line is kept among the first MAX_FAILURE_LINES, with the
        server paths and hosts it names (`hidden`: left out for a client on another machine)."""
        rows = await self._client.query(
            f"{_MINE}SET j.failed = coalesce(j.failed, 0) + 1, j.failures = CASE WHEN "
            "size(coalesce(j.failures, [])) < $cap THEN coalesce(j.failures, []) + [$line] ELSE j.failures END, "
            f"{_HIDE} RETURN j.id",
            {"job_id": job_id, "owner": owner, "line": line, "cap": MAX_FAILURE_LINES, "hidden": list(hidden)},
        )
        return bool(rows)

    async def finish(
        self,
        job_id: str,
        owner: str,
        *,
        state: str,
        done: int,
        counts_json: str,
        error: str | None = None,
        message: str | None = None,
        hidden: Sequence[str] = (),
    ) -> bool:
        rows = await self._client.query(
            # A completed job's total is what it did: a graph build counted the memories pending when it was
            # queued, and another job may have processed some of them meanwhile (its `message` says so).
            f"{_MINE}SET j.state = $state, j.done = $done, j.counts = $counts, j.error = $error, j.message = $message, "
            f"j.total = CASE WHEN $state = 'completed' THEN $done ELSE j.total END, {_HIDE}, "
            f"{_FINISH_FIELDS} {_MARK_MEMORY_FAILED}RETURN j.id",
            {
                "hidden": list(hidden),
                "job_id": job_id,
                "owner": owner,
                "state": state,
                "done": done,
                "counts": counts_json,
                "error": error,
                "message": message,
                "now": time.time(),
            },
        )
        return bool(rows)

    async def release(self, job_id: str, owner: str) -> bool:
        """Hand a job back unfinished (this process is stopping): the next worker starts it at once."""
        rows = await self._client.query(
            f"{_MINE}SET j.state = 'pending', j.owner = null, j.lease_until = null, "
            "j.attempts = coalesce(j.attempts, 1) - 1, j.message = 'handed back by a stopping server' RETURN j.id",
            {"job_id": job_id, "owner": owner},
        )
        return bool(rows)

    async def note_pending(self, job_id: str, message: str) -> bool:
        """Say on a job that still waits to be claimed what it waits for; False when it no longer waits."""
        rows = await self._client.query(
            "MATCH (j:Job {id: $job_id}) WHERE j.state = 'pending' SET j.message = $message RETURN j.id",
            {"job_id": job_id, "message": message},
        )
        return bool(rows)

    async def give_up(self, seen: JobRow, error: str) -> bool:
        """Mark a job failed without running it (it used up its attempts); compare-and-set like `claim`."""
        rows = await self._client.query(
            "MATCH (j:Job {id: $job_id}) WHERE j.state = $state AND coalesce(j.attempts, 0) = $attempts "
            f"SET j.state = 'failed', j.error = $error, {_FINISH_FIELDS} {_MARK_MEMORY_FAILED}RETURN j.id",
            {"job_id": seen.id, "state": seen.state, "attempts": seen.attempts, "error": error, "now": time.time()},
        )
        return bool(rows)

    async def cancel(self, job_id: str, reason: str) -> JobRow | None:
        """Cancel a pending or running job; None when it had already ended (or does not exist)."""
        rows = await self._client.query(
            f"MATCH (j:Job {{id: $job_id}}) WHERE j.state IN $active SET j.state = 'cancelled', j.error = $reason, "
            f"{_FINISH_FIELDS} RETURN {JobRow.PROJECTION}",
            {"job_id": job_id, "active": list(ACTIVE), "reason": reason, "now": time.time()},
        )
        return JobRow.from_row(rows[0]) if rows else None

    async def cancel_for_memories(self, memory_ids: Sequence[str], reason: str) -> builtins.list[str]:
        """Cancel the active jobs about these memories (they were deleted); return the jobs' ids."""
        rows = await self._client.query(
            "UNWIND $ids AS mid MATCH (j:Job {memory_id: mid}) WHERE j.state IN $active "
            f"SET j.state = 'cancelled', j.error = $reason, {_FINISH_FIELDS} RETURN j.id",
            {"ids": list(memory_ids), "active": list(ACTIVE), "reason": reason, "now": time.time()},
        )
        return [row[0] for row in rows]

    # -- indexing a memory stored ahead of its chunks (a large add) ------------------------------

    async def staged_indexes(self, memory_id: str) -> set[int]:
        """Positions of the chunks already staged for a memory being indexed."""
        rows = await self._client.ro_query(
            "MATCH (:Memory {id: $id})-[:STAGED]->(c:Chunk) RETURN c.idx", {"id": memory_id}
        )
        return {int(row[0]) for row in rows}

    async def stage_chunks(
        self, job_id: str, owner: str, memory_id: str, chunks: Sequence[ChunkRow], *, done: int, lease_s: float
    ) -> bool:
        """Write chunks for a memory being indexed, not yet searchable; False (nothing written) when
        the job is not this owner's any more or the memory is gone (deleted meanwhile)."""
        now = time.time()
        rows = await self._client.query(
            f"{_MINE}MATCH (m:Memory {{id: $memory_id}}) WHERE m.status = 'indexing' "
            "SET j.done = $done, j.updated_at = $now, j.lease_until = $until WITH j, m "
            f"FOREACH (c IN $chunks | CREATE (m)-[:STAGED]->(:Chunk {CHUNK_PROPERTIES})) RETURN j.id",
            {
                "job_id": job_id,
                "owner": owner,
                "memory_id": memory_id,
                "chunks": [chunk_param(c) for c in chunks],
                "created_at": now,
                "done": done,
                "now": now,
                "until": now + lease_s,
            },
        )
        return bool(rows)

    async def publish_staged(self, job_id: str, owner: str, memory_id: str, *, counts_json: str) -> int | None:
        """Make a memory's staged chunks searchable and complete its job, in one write.

        Returns the memory's chunk count; None when the job is not this owner's any more or the
        memory is not being indexed (deleted, or already published by an earlier attempt).
        """
        now = time.time()
        rows = await self._client.query(
            f"{_MINE}MATCH (m:Memory {{id: $memory_id}}) WHERE m.status = 'indexing' "
            # The next sequence number (as NEXT_SEQ takes it): the keyword indexes pick the chunks up by it.
            "WITH j, m MERGE (q:Sequence {id: 'chunks'}) SET q.value = coalesce(q.value, 0) + 1 "
            "WITH j, m, q.value AS seq "
            "OPTIONAL MATCH (m)-[s:STAGED]->(c:Chunk) WITH j, m, seq, collect(s) AS links, collect(c) AS cs "
            "FOREACH (c IN cs | CREATE (m)-[:HAS_CHUNK]->(c)) FOREACH (s IN links | DELETE s) "
            "SET m.status = null, m.chunk_count = size(cs), m.seq = seq, j.state = 'completed', "
            f"j.done = size(cs), j.total = size(cs), j.counts = $counts, j.message = null, {_FINISH_FIELDS} "
            "RETURN size(cs)",
            {"job_id": job_id, "owner": owner, "memory_id": memory_id, "counts": counts_json, "now": now},
        )
        return int(rows[0][0]) if rows else None
