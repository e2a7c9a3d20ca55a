"""`index_memory`: make a large add searchable — chunk, embed and store its chunks in the background.

The memory's text was stored when the add was acknowledged. Chunks are staged a slice at a time
(`STAGED` edges: durable, invisible to search), so an attempt that dies resumes after the last
slice it stored; the last write links them all and completes the job at once, so a search sees
none of a memory's chunks or all of them. Small slices keep each database write short: searches
never queue behind a long one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable

import structlog

from zapomni_core.content.conversation import reading_context
from zapomni_core.context import JOB_CONTEXT
from zapomni_core.disk import DiskGuard, write_estimate
from zapomni_core.errors import EmbedderUnavailable, ZapomniError
from zapomni_core.kernel.registry import Workspace
from zapomni_core.kernel.runner import JobLost, JobOutcome, JobRun
from zapomni_core.kernel.writing import WritePipeline, chunk_rows, metadata_of, new_id
from zapomni_core.progress import Progress
from zapomni_db import GraphStores, JobRecord, JobRow, StoredMemory

log = structlog.get_logger(__name__)

KIND = "index_memory"
# Chunks embedded and stored per step: progress every second or two, and short database writes.
JOB_SLICE = 32


def index_job(memory_id: str, context: str | None) -> JobRecord:
    """The job that will index a memory stored ahead of its chunks, read in `context` (`reading_context`)."""
    args = json.dumps({"context": context})
    return JobRecord(id=new_id(), kind=KIND, created_at=time.time(), memory_id=memory_id, unit="chunks", args_json=args)


def _context(job: JobRow, memory: StoredMemory) -> str | None:
    args = json.loads(job.args_json or "{}")
    if "context" in args:
        return None if args["context"] is None else str(args["context"])
    return reading_context(metadata_of(memory))  # a job queued by a version that did not carry it


async def withdraw(stores: GraphStores, cancelled: JobRow) -> bool:
    """A cancelled large add's job takes its memory with it: the add is withdrawn, and nothing of it stays in any
    index. True when a memory was deleted."""
    if cancelled.kind != KIND or not cancelled.memory_id:
        return False
    return bool(await stores.writes.delete([cancelled.memory_id]))


class IndexMemory:
    kind = KIND

    def __init__(
        self,
        writer: WritePipeline,
        disk: DiskGuard,
        on_indexed: Callable[[Workspace], Awaitable[None]] | None = None,
    ) -> None:
        self._writer = writer
        self._disk = disk
        self._on_indexed = on_indexed  # e.g. queue the new memory's entity extraction

    def refuses(self, job: JobRow) -> ZapomniError | None:
        return None  # every server on the store can

    async def run(self, job: JobRow, run: JobRun[Workspace]) -> JobOutcome | None:
        stores = run.workspace.stores
        memory_id = job.memory_id or ""
        memory = await stores.reads.get(memory_id)
        if memory is None:  # deleted before it was indexed (the delete cancelled this job too)
            return JobOutcome("cancelled", run.progress.done, {}, error="the memory was deleted")
        if memory.info.status != "indexing" or memory.info.job_id != job.id:
            # An earlier attempt published it and stopped before it could say so.
            return JobOutcome("completed", memory.info.chunk_count, {"chunks": memory.info.chunk_count})
        split = await self._writer.split_async(memory.text, _context(job, memory))
        total = len(split.pieces)
        staged = await stores.jobs.staged_indexes(memory_id)
        todo = [i for i in range(total) if i not in staged]
        done = total - len(todo)
        await run.report(Progress(done, total, "chunks", "embedding"))
        for start in range(0, len(todo), JOB_SLICE):
            batch = todo[start : start + JOB_SLICE]
            try:
                vectors = await self._writer.embed([split.indexed[i] for i in batch], JOB_CONTEXT)
            except EmbedderUnavailable as exc:
                # Recorded, never dropped: the memory shows "failed" and adding its text again retries.
                item = f"chunks {batch[0]}-{batch[-1]}"
                await run.fail_item(item, str(exc))
                return JobOutcome("failed", done, {"chunks": done}, error=f"embedding {item} of {total} failed: {exc}")
            text_bytes = sum(len(split.pieces[i].encode(errors="surrogatepass")) for i in batch)
            await self._disk.ensure_writable(write_estimate(text_bytes, len(vectors[0]), chunks=len(batch)))
            rows = chunk_rows(split, vectors, indexes=batch)
            done += len(batch)
            if not await stores.jobs.stage_chunks(
                job.id, run.owner, memory_id, rows, done=done, lease_s=run.settings.lease_s
            ):
                raise JobLost(job.id)
            run.progress = Progress(done, total, "chunks", "embedding")
        chunks = await stores.jobs.publish_staged(
            job.id, run.owner, memory_id, counts_json=json.dumps({"chunks": total})
        )
        if chunks is None:
            raise JobLost(job.id)
        log.info("memory.indexed", workspace=run.workspace.name, memory_id=memory_id, job_id=job.id, chunks=chunks)
        if self._on_indexed is not None:
            await self._on_indexed(run.workspace)
        return None
