"""ZapomniCore: the one object the adapters (MCP tools, CLI) talk to."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import BinaryIO, TextIO

import anyio
import structlog
from pydantic import ValidationError

from zapomni_core import results, transfer
from zapomni_core.code.service import CodeService
from zapomni_core.context import NO_CONTEXT, RequestContext, ShutdownGate, until_committed
from zapomni_core.conversation import reading_context
from zapomni_core.disk import MB, DiskGuard, write_estimate
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.errors import Conflict, NotFound, ShuttingDown
from zapomni_core.faults import storage_faults
from zapomni_core.files.service import FileService
from zapomni_core.graph.service import GraphService
from zapomni_core.jobs import JobService
from zapomni_core.jobs.indexing import index_job
from zapomni_core.models import (
    MAX_DELETE_IDS,
    AddMemoryRequest,
    AddMemoryResult,
    DeleteMemoryRequest,
    DeleteMemoryResult,
    DeleteWorkspaceRequest,
    DeleteWorkspaceResult,
    GetMemoryRequest,
    ListMemoriesRequest,
    MemoryDetail,
    MemoryMetadata,
    MemoryPage,
    SearchFilters,
    SearchRequest,
    SearchResult,
    Stats,
    StatsRequest,
    UpdateMemoryRequest,
    UpdateMemoryResult,
    WorkspaceInfo,
    WorkspaceList,
    parse_iso8601,
)
from zapomni_core.search import RetrievalQuery, SearchOptions
from zapomni_core.workspaces import Workspace, Workspaces
from zapomni_core.writes import WritePipeline, content_hash, memory_record, metadata_of, new_id
from zapomni_db import SearchFilter, StoredMemory

log = structlog.get_logger(__name__)


class _LatencyMeter:
    def __init__(self) -> None:
        self.count = 0
        self.total_ms = 0.0

    def record(self, ms: float) -> None:
        self.count += 1
        self.total_ms += ms

    @property
    def mean_ms(self) -> float | None:
        return round(self.total_ms / self.count, 3) if self.count else None


class ZapomniCore:
    """Stores and retrieves memories. Built once at start-up with everything it needs."""

    def __init__(
        self,
        *,
        workspaces: Workspaces,
        embedder: CachedEmbedder,
        writer: WritePipeline,
        shutdown: ShutdownGate,
        graph_name: str,
        jobs: JobService,
        graph: GraphService,
        files: FileService,
        code: CodeService,
        wake_jobs: Callable[[], None],
        run_job_here: Callable[[str, str], Awaitable[bool]],
        background_add_bytes: int,
        disk: DiskGuard,
    ) -> None:
        self.workspaces = workspaces
        self.embedder = embedder
        self.jobs = jobs
        self.graph = graph
        self.files = files  # ingest_path, index_codebase
        self.code = code  # find_symbol, get_callers, get_callees
        self._wake_jobs = wake_jobs
        # (workspace, job id) -> run that job in this process now; False when another worker has it.
        self.run_job_here = run_job_here
        self._background_add_bytes = background_add_bytes
        self.disk = disk  # free space on the data directory's disk: checked before every add, update, import
        self._writer = writer
        self._graph_name = graph_name
        self._started = time.monotonic()
        self._latency = _LatencyMeter()
        self._writes_in_flight = 0
        self._writes_done = asyncio.Event()
        self._writes_done.set()
        self._shutdown = shutdown
        self.writes_committed = 0

    # -- writing ----------------------------------------------------------------------------------

    async def add_memory(self, request: AddMemoryRequest, ctx: RequestContext = NO_CONTEXT) -> AddMemoryResult:
        """Chunk, embed and store one memory; the same text already stored returns that memory.

        A cancelled call (a client's `notifications/cancelled`) stops while embedding and stores
        nothing; once the database write has begun it completes. At shutdown, embedding stops at
        the grace deadline; a write never stops half way, so a memory is stored whole or not at all.
        A text of `background_add_bytes` or more is stored at once and indexed by a job instead.
        """
        async with self._write_slot():
            text_bytes = len(request.text.encode(errors="surrogatepass"))
            await self.disk.ensure_writable(write_estimate(text_bytes, self.embedder.dimension))
            if text_bytes >= self._background_add_bytes:
                return await until_committed(lambda c: self._add_in_background(request), ctx, honour=lambda: False)
            return await until_committed(lambda c: self._add(request, c), ctx, honour=self._cancellable)

    async def _add_in_background(self, request: AddMemoryRequest) -> AddMemoryResult:
        """Store the text durably with a job that indexes it, and answer before any embedding."""
        workspace = await self.workspaces.get(request.workspace, create=True)
        assert workspace is not None
        record = memory_record(new_id(), request.text, request.metadata, created_at=time.time())
        existing = await workspace.stores.reads.by_content_hash(record.content_hash)
        if existing is not None:
            return await self._merge_duplicate(workspace, existing, request)
        job = index_job(record.id)
        if not await workspace.stores.writes.insert_pending(record, job):
            existing = await workspace.stores.reads.by_content_hash(record.content_hash)
            if existing is None:
                raise Conflict("the memory changed while it was being stored; retry")
            return await self._merge_duplicate(workspace, existing, request)
        self.writes_committed += 1
        self._wake_jobs()
        log.info("memory.queued", workspace=workspace.name, memory_id=record.id, job_id=job.id, bytes=len(record.text))
        return AddMemoryResult(
            memory_id=record.id,
            workspace=workspace.name,
            chunks_created=0,
            text_preview=results.preview(request.text),
            status="indexing",
            job_id=job.id,
        )

    async def _add(self, request: AddMemoryRequest, ctx: RequestContext) -> AddMemoryResult:
        started = time.perf_counter()
        workspace = await self.workspaces.get(request.workspace, create=True)
        assert workspace is not None
        existing = await workspace.stores.reads.by_content_hash(content_hash(request.text))
        if existing is not None:
            return await self._merge_duplicate(workspace, existing, request)
        chunks = await self._writer.rows(request.text, ctx, reading_context(request.metadata))
        record = memory_record(new_id(), request.text, request.metadata, created_at=time.time())
        ctx.check_cancelled()  # the last point where a cancelled add leaves nothing behind
        if not await workspace.stores.writes.insert(record, chunks):
            # Another caller stored the same text meanwhile: this add becomes a duplicate of it.
            existing = await workspace.stores.reads.by_content_hash(record.content_hash)
            if existing is None:
                raise Conflict("the memory changed while it was being stored; retry")
            return await self._merge_duplicate(workspace, existing, request)
        self.writes_committed += 1
        await self.graph.queue_new_memories(workspace)
        log.info(
            "memory.added",
            workspace=workspace.name,
            memory_id=record.id,
            chunks=len(chunks),
            bytes=len(request.text.encode(errors="surrogatepass")),
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return AddMemoryResult(
            memory_id=record.id,
            workspace=workspace.name,
            chunks_created=len(chunks),
            text_preview=results.preview(request.text),
        )

    async def _merge_duplicate(
        self, workspace: Workspace, existing: StoredMemory, request: AddMemoryRequest
    ) -> AddMemoryResult:
        merged = _merged_metadata(existing, request.metadata)
        if merged is not None:
            record = memory_record(
                existing.info.id,
                existing.text,
                merged,
                created_at=existing.info.created_at,
                updated_at=time.time(),
            )
            await workspace.stores.writes.update_fields(record)
        info = existing.info
        if info.status == "failed":  # adding it again is the way to retry its indexing
            job = index_job(info.id)
            if await workspace.stores.writes.requeue(info.id, job):
                info = replace(info, status="indexing", job_id=job.id)
                self._wake_jobs()
        log.info("memory.deduplicated", workspace=workspace.name, memory_id=info.id, merged=merged is not None)
        return AddMemoryResult(
            memory_id=info.id,
            workspace=workspace.name,
            chunks_created=0,
            deduplicated=True,
            text_preview=results.preview(existing.text),
            status=info.status,  # type: ignore[arg-type]
            job_id=info.job_id if info.status != "indexed" else None,
        )

    async def update_memory(self, request: UpdateMemoryRequest, ctx: RequestContext = NO_CONTEXT) -> UpdateMemoryResult:
        """Change a memory's text and/or metadata under the same id; readers see old or new, never a mix."""
        async with self._write_slot():
            text_bytes = len(request.text.encode(errors="surrogatepass")) if request.text is not None else 0
            await self.disk.ensure_writable(write_estimate(text_bytes, self.embedder.dimension))
            return await until_committed(lambda c: self._update(request, c), ctx, honour=self._cancellable)

    async def _update(self, request: UpdateMemoryRequest, ctx: RequestContext) -> UpdateMemoryResult:
        workspace = await self.workspaces.require(request.workspace)
        stored = await workspace.stores.reads.get(request.memory_id)
        if stored is None:
            raise NotFound(f"memory_id: no memory {request.memory_id} in workspace {workspace.name!r}")
        if stored.info.status != "indexed":
            raise Conflict(
                f"memory_id: memory {stored.info.id} is {stored.info.status} (job {stored.info.job_id}); update it "
                "once job_status says the job completed, or delete it and add it again"
            )
        old_metadata = metadata_of(stored)
        metadata = request.metadata if request.metadata is not None else old_metadata
        text_changed = request.text is not None and content_hash(request.text) != stored.content_hash
        # The same text differently spaced is no change: the stored text stays, nothing is re-embedded.
        text = request.text if text_changed and request.text is not None else stored.text
        record = memory_record(
            stored.info.id, text, metadata, created_at=stored.info.created_at, updated_at=time.time()
        )
        result = UpdateMemoryResult(
            memory_id=stored.info.id,
            workspace=workspace.name,
            text_changed=text_changed,
            metadata_changed=metadata != old_metadata,
            chunk_count=stored.info.chunk_count,
            chunks_embedded=0,
            chunks_kept=stored.info.chunk_count,
        )
        if not result.text_changed and not result.metadata_changed:
            return result
        context = reading_context(metadata)
        # A turn's new speaker, date or thread changes how its chunks are indexed, not only its fields.
        rethread = metadata.thread != old_metadata.thread
        reindex = text_changed or rethread or context != reading_context(old_metadata)
        if text_changed:
            duplicate = await workspace.stores.reads.by_content_hash(record.content_hash)
            if duplicate is not None:
                raise Conflict(f"text: memory {duplicate.info.id} already holds this text in this workspace")
        if reindex:
            old_chunks = await workspace.stores.reads.chunks(stored.info.id)
            plan = await self._writer.plan_update(text, old_chunks, ctx, context=context, rewrite=rethread)
            ctx.check_cancelled()
            found = await workspace.stores.writes.update(record, keep=plan.keep, drop=plan.drop, new=plan.new)
            chunk_count = len(plan.keep) + len(plan.new)
            result.chunk_count, result.chunks_embedded = chunk_count, plan.embedded
            result.chunks_kept = chunk_count - plan.embedded
        else:
            ctx.check_cancelled()
            found = await workspace.stores.writes.update_fields(record)
        if not found:
            raise NotFound(f"memory_id: memory {request.memory_id} was deleted while it was being updated")
        self.writes_committed += 1
        if reindex:  # its graph evidence went with its old chunks; extraction runs again
            await self.graph.queue_new_memories(workspace)
        log.info("memory.updated", workspace=workspace.name, **result.model_dump(exclude={"workspace"}))
        return result

    async def delete_memory(self, request: DeleteMemoryRequest) -> DeleteMemoryResult:
        """Delete by ids or by filters: the memories, their chunks and every index entry, everywhere."""
        workspace = await self.workspaces.get(request.workspace, create=False)
        name = self.workspaces.resolve(request.workspace)
        if workspace is None:
            return DeleteMemoryResult(
                workspace=name, dry_run=request.dry_run, deleted_count=0, memory_ids=[],
                not_found=list(request.memory_ids or []),
            )  # fmt: skip
        started = time.perf_counter()
        reads, writes = workspace.stores.reads, workspace.stores.writes
        if request.memory_ids is not None:
            wanted = list(dict.fromkeys(request.memory_ids))
            present = await reads.existing_ids(wanted)
            targets = [mid for mid in wanted if mid in present]
            not_found = [mid for mid in wanted if mid not in present]
        else:
            targets, not_found = await reads.matching_ids(_search_filter(request.filters)), []
        deleted: list[str] = []
        if not request.dry_run:
            with anyio.CancelScope(shield=True):  # a delete that began finishes
                for start in range(0, len(targets), MAX_DELETE_IDS):
                    deleted += await writes.delete(targets[start : start + MAX_DELETE_IDS])
                # A large add still being indexed: its job stops (its writes need the memory) and says why.
                await workspace.stores.jobs.cancel_for_memories(deleted, "the memory was deleted")
            self.writes_committed += 1
            gone = set(deleted)
            not_found += [mid for mid in targets if mid not in gone]  # deleted by someone else meanwhile
            targets = [mid for mid in targets if mid in gone]
        log.info(
            "memory.deleted",
            workspace=name,
            count=len(targets),
            dry_run=request.dry_run,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return DeleteMemoryResult(
            workspace=name, dry_run=request.dry_run, deleted_count=len(targets), memory_ids=targets,
            not_found=not_found,
        )  # fmt: skip

    # -- reading ----------------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> SearchResult:
        started = time.perf_counter()
        name = self.workspaces.resolve(request.workspace)
        workspace = await self.workspaces.get(name, create=False)
        if workspace is None:
            return SearchResult(workspace=name, results=[], count=0)
        vector = await self.embedder.embed_query(request.query)
        query = RetrievalQuery(text=request.query, vector=vector, filters=_search_filter(request.filters))
        options = SearchOptions(
            limit=request.limit,
            mode=request.mode,
            min_score=request.min_score,
            all_chunks=request.all_chunks,
            include_unrelated=request.include_unrelated,
        )
        ranked = await workspace.search.run(query, options)
        elapsed_ms = (time.perf_counter() - started) * 1000
        self._latency.record(elapsed_ms)
        log.info(
            "memory.searched",
            workspace=name,
            mode=request.mode,
            results=len(ranked),
            limit=request.limit,
            duration_ms=round(elapsed_ms, 2),
        )
        hits = [results.hit(r, name) for r in ranked]
        if request.graph_context and hits:
            context = await self.graph.hit_context(workspace.stores, [hit.chunk_id for hit in hits])
            hits = [hit.model_copy(update={"entities": context.get(hit.chunk_id, [])}) for hit in hits]
        return SearchResult(workspace=name, results=hits, count=len(hits))

    async def get_memory(self, request: GetMemoryRequest) -> MemoryDetail:
        workspace = await self.workspaces.require(request.workspace)
        stored = await workspace.stores.reads.get(request.memory_id)
        if stored is None:
            raise NotFound(f"memory_id: no memory {request.memory_id} in workspace {workspace.name!r}")
        return results.detail(stored, workspace.name)

    async def list_memories(self, request: ListMemoriesRequest) -> MemoryPage:
        name = self.workspaces.resolve(request.workspace)
        after = results.decode_cursor(request.cursor, request.order) if request.cursor else None
        workspace = await self.workspaces.get(name, create=False)
        if workspace is None:
            return MemoryPage(workspace=name, memories=[], count=0, next_cursor=None)
        rows = await workspace.stores.reads.page(
            _search_filter(request.filters), order=request.order, after=after, limit=request.limit + 1
        )
        page = rows[: request.limit]
        next_cursor = results.encode_cursor(page[-1][2], request.order) if len(rows) > request.limit else None
        memories = [results.summary(info, text, name) for info, text, _key in page]
        return MemoryPage(workspace=name, memories=memories, count=len(memories), next_cursor=next_cursor)

    async def stats(self, request: StatsRequest | None = None) -> Stats:
        name = self.workspaces.resolve(request.workspace if request else None)
        maintenance = self.workspaces.stores(name).maintenance
        counts = await maintenance.counts()
        disk = await asyncio.to_thread(self.disk.status)
        entities, relations, pending = await self.graph.counts(name)
        return Stats(
            workspace=name,
            total_memories=counts.memories,
            total_chunks=counts.chunks,
            workspaces=len(await self.workspaces.names()),
            database_size_mb=round(await maintenance.database_size_bytes() / (1024 * 1024), 3),
            graph_name=self._graph_name,
            embedder=self.embedder.name,
            embedding_dimension=self.embedder.dimension,
            avg_query_latency_ms=self._latency.mean_ms,
            cache_hit_rate=self.embedder.hit_rate,
            cache_backend=self.embedder.cache.backend,
            jobs=await self.jobs.counts(name),
            entities=entities,
            relations=relations,
            extraction_pending=pending,
            uptime_s=round(time.monotonic() - self._started, 3),
            disk_free_mb=round(disk.free_bytes / MB, 1) if disk else None,
            disk_warning=disk.warning if disk else None,
        )

    # -- workspaces -------------------------------------------------------------------------------

    async def list_workspaces(self) -> WorkspaceList:
        infos = []
        for name in await self.workspaces.names():
            counts = await self.workspaces.stores(name).maintenance.counts()
            infos.append(WorkspaceInfo(name=name, memories=counts.memories, chunks=counts.chunks))
        return WorkspaceList(workspaces=infos, default=self.workspaces.default)

    async def delete_workspace(self, request: DeleteWorkspaceRequest) -> DeleteWorkspaceResult:
        counts = await (await self.workspaces.existing_stores(request.name)).maintenance.counts()
        with anyio.CancelScope(shield=True):
            await self.workspaces.drop(request.name)
        self.writes_committed += 1
        log.warning("workspace.deleted", workspace=request.name, memories=counts.memories)
        return DeleteWorkspaceResult(name=request.name, deleted_memories=counts.memories, deleted_chunks=counts.chunks)

    # -- export / import --------------------------------------------------------------------------

    async def export_memories(self, out: TextIO, progress: transfer.ProgressFn | None = None) -> transfer.ExportReport:
        """Write every memory of every workspace to `out` as portable JSONL (docs/export-format.md)."""
        embedder = transfer.EmbedderInfo(self.embedder.name, self.embedder.dimension)
        sources = [transfer.ExportSource(name, self.workspaces.stores(name)) for name in await self.workspaces.names()]
        return await transfer.export_memories(sources, embedder, out, progress, graph_name=self._graph_name)

    async def import_memories(
        self, src: BinaryIO, progress: transfer.ProgressFn | None = None
    ) -> transfer.ImportReport:
        """Store the memories of a JSONL export that this store lacks; a bad file changes nothing."""
        target = transfer.ImportTarget(self.workspaces, self.embedder, self._writer)
        # The file's size stands in for what it adds: an export holds each vector as text too.
        await self.disk.ensure_writable(_size_of(src))
        with storage_faults(self.disk):
            report = await transfer.import_memories(target, src, progress)
        self.writes_committed += report.imported
        for name in await self.workspaces.names():  # memories imported without their graph get one
            workspace = await self.workspaces.get(name, create=False)
            if workspace is not None and await workspace.stores.graph.count_pending():
                await self.graph.queue_new_memories(workspace)
        return report

    # -- shutdown ---------------------------------------------------------------------------------

    @asynccontextmanager
    async def _write_slot(self) -> AsyncIterator[None]:
        if self._shutdown.closed:
            raise ShuttingDown("the server is shutting down; nothing was stored, retry after it restarts")
        self._writes_in_flight += 1
        self._writes_done.clear()
        try:
            with storage_faults(self.disk):  # a restarted or full database: a clear, retriable answer
                yield
        finally:
            self._writes_in_flight -= 1
            if self._writes_in_flight == 0:
                self._writes_done.set()

    def _cancellable(self) -> bool:
        # A shutdown cancels every request too; then the grace deadline decides, not the cancellation.
        return not self._shutdown.closed

    def begin_shutdown(self, grace_s: float) -> None:
        """Refuse new writes; let the ones in flight finish within `grace_s` seconds."""
        if self._shutdown.close(grace_s):
            log.info("core.shutting_down", writes_in_flight=self._writes_in_flight, grace_s=grace_s)

    async def drain(self) -> None:
        """Wait until every write already started has been stored or abandoned."""
        await self._writes_done.wait()


def _size_of(src: BinaryIO) -> int:
    """The bytes left to read in `src`, or 0 when it cannot tell (a pipe)."""
    try:
        return max(os.fstat(src.fileno()).st_size - src.tell(), 0)
    except (OSError, ValueError, AttributeError):
        return 0


def _search_filter(filters: SearchFilters | None) -> SearchFilter:
    if filters is None:
        return SearchFilter()
    return SearchFilter(
        tags=filters.tags,
        source=filters.source,
        date_from_ts=parse_iso8601(filters.date_from).timestamp() if filters.date_from else None,
        date_to_ts=parse_iso8601(filters.date_to).timestamp() if filters.date_to else None,
        kind=filters.kind,
    )


def _merged_metadata(stored: StoredMemory, new: MemoryMetadata | None) -> MemoryMetadata | None:
    """A duplicate add's metadata folded into the stored one; None when nothing changes.

    Tags are united (stored first); source, date and extra keys are filled in where the stored
    memory has none. Nothing stored is overwritten: an agent's retry can only add information.
    """
    if new is None:
        return None
    old = metadata_of(stored)
    try:
        merged = MemoryMetadata.model_validate(
            {
                "tags": list(dict.fromkeys([*old.tags, *new.tags])),
                "source": old.source or new.source,
                "date": old.date or new.date,
                **{**new.extra(), **old.extra()},
            }
        )
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
        raise Conflict(
            f"metadata: this text is already stored as memory {stored.info.id}, and adding this metadata to it "
            f"would break a limit ({problem}); use update_memory"
        ) from None
    return None if merged == old else merged
