"""Memories: add, update and delete them (chunked, embedded and indexed in one write), search, read and list them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace

import anyio
import structlog
from pydantic import ValidationError

from zapomni_core.content.conversation import reading_context
from zapomni_core.content.turns import Inferred, ThreadTracker, inferred_speaker
from zapomni_core.context import NO_CONTEXT, RequestContext, ShutdownGate, until_committed
from zapomni_core.disk import DiskGuard, write_estimate
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.errors import Conflict, InvalidRequest, NotFound, ShuttingDown, ZapomniError
from zapomni_core.faults import storage_boundary
from zapomni_core.kernel.registry import Workspace, Workspaces
from zapomni_core.kernel.writing import WritePipeline, content_hash, memory_record, metadata_of, new_id
from zapomni_core.memories import cursors, replies
from zapomni_core.memories.indexing_job import index_job
from zapomni_core.memories.replies import (
    AddMemoryResult,
    DeleteMemoryResult,
    FindUpdatesResult,
    HitEntity,
    MemoryChunks,
    MemoryDetail,
    MemoryPage,
    SearchResult,
    UpdateMemoryResult,
)
from zapomni_core.memories.requests import (
    MAX_DELETE_IDS,
    AddMemoryRequest,
    DeleteMemoryRequest,
    FindUpdatesRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    MemoryMetadata,
    SearchFilters,
    SearchRequest,
    UpdateMemoryRequest,
)
from zapomni_core.memories.supersession import Detection, F, UpdateLinker, abandon, order_current_first
from zapomni_core.memories.updates_job import KIND as FIND_UPDATES
from zapomni_core.memories.updates_job import find_updates_job
from zapomni_core.search import RetrievalQuery, SearchOptions
from zapomni_db import DatabaseError, GraphStores, MemoryRecord, SearchFilter, StoredMemory

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


@storage_boundary
class MemoryService:
    """Stores and retrieves memories; counts the writes it commits and drains them at shutdown."""

    def __init__(
        self,
        *,
        workspaces: Workspaces,
        embedder: CachedEmbedder,
        writer: WritePipeline,
        shutdown: ShutdownGate,
        queue_extraction: Callable[[Workspace], Awaitable[None]],
        graph_context: Callable[[GraphStores, Sequence[str]], Awaitable[dict[str, list[HitEntity]]]],
        disk: DiskGuard,
        wake_jobs: Callable[[], None],
        background_add_bytes: int,
        threads: ThreadTracker | None = None,
        supersession: UpdateLinker | None = None,
    ) -> None:
        self._workspaces = workspaces
        self._embedder = embedder
        self._writer = writer
        self._shutdown = shutdown
        # The knowledge graph, reached through what `runtime` wires in: new memories queued for entity extraction,
        # and the entities of search hits (graph_context).
        self._queue_extraction = queue_extraction
        self._graph_context = graph_context
        self._disk = disk  # free space on the data directory's disk: checked before every add and update
        self._wake_jobs = wake_jobs
        self._background_add_bytes = background_add_bytes
        self._threads = threads or ThreadTracker()  # each client's open conversation, for turns sent without one
        # Which memory replaced which: found at each add and text change, shown on every result.
        self._supersession = supersession or UpdateLinker()
        self.latency = _LatencyMeter()
        self._writes_in_flight = 0
        self._writes_done = asyncio.Event()
        self._writes_done.set()
        self.writes_committed = 0

    # -- writing ----------------------------------------------------------------------------------

    async def add(self, request: AddMemoryRequest, ctx: RequestContext = NO_CONTEXT) -> AddMemoryResult:
        """Chunk, embed and store one memory; the same text already stored returns that memory.

        A cancelled call (a client's `notifications/cancelled`) stops while embedding and stores
        nothing; once the database write has begun it completes. At shutdown, embedding stops at
        the grace deadline; a write never stops half way, so a memory is stored whole or not at all.
        A text of `background_add_bytes` or more is stored at once and indexed by a job instead.
        """
        async with self._write_slot():
            text_bytes = len(request.text.encode(errors="surrogatepass"))
            await self._disk.ensure_writable(write_estimate(text_bytes, self._embedder.dimension))
            if text_bytes >= self._background_add_bytes:
                return await until_committed(lambda c: self._add_in_background(request, c), ctx, honour=lambda: False)
            return await until_committed(lambda c: self._add(request, c), ctx, honour=self._cancellable)

    async def _add_in_background(self, request: AddMemoryRequest, ctx: RequestContext) -> AddMemoryResult:
        """Store the text durably with a job that indexes it, and answer before any embedding."""
        workspace = await self._add_workspace(request)
        existing = await workspace.stores.reads.by_content_hash(content_hash(request.text))
        if existing is not None:
            return await self._merge_duplicate(workspace, existing, request)
        inferred = self._infer(request, ctx, workspace.name)
        record = memory_record(new_id(), request.text, request.metadata, created_at=time.time(), inferred=inferred)
        job = index_job(record.id, reading_context(request.metadata, inferred.speaker))
        if not await workspace.stores.writes.insert_pending(record, job):
            existing = await workspace.stores.reads.by_content_hash(record.content_hash)
            if existing is None:
                raise Conflict("the memory changed while it was being stored; retry")
            return await self._merge_duplicate(workspace, existing, request)
        self.writes_committed += 1
        self._wake_jobs()
        log.info("memory.queued", workspace=workspace.name, memory_id=record.id, job_id=job.id, bytes=len(record.text))
        result = AddMemoryResult(
            memory_id=record.id,
            workspace=workspace.name,
            chunks_created=0,
            text_preview=replies.preview(request.text),
            status="indexing",
            job_id=job.id,
        )
        return await self._stated(workspace, result, request.replaces, request.text) if request.replaces else result

    async def _add(self, request: AddMemoryRequest, ctx: RequestContext) -> AddMemoryResult:
        started = time.perf_counter()
        workspace = await self._add_workspace(request)
        existing = await workspace.stores.reads.by_content_hash(content_hash(request.text))
        if existing is not None:
            return await self._merge_duplicate(workspace, existing, request)
        inferred = self._infer(request, ctx, workspace.name)
        record = memory_record(new_id(), request.text, request.metadata, created_at=time.time(), inferred=inferred)
        # What update detection compares the memory by is read while the model embeds it, its candidates read and
        # compared while it is stored.
        detection = self._supersession.start(workspace, record)
        try:
            chunks = await self._writer.rows(request.text, ctx, reading_context(request.metadata, inferred.speaker))
            ctx.check_cancelled()  # the last point where a cancelled add leaves nothing behind
            if detection is not None and chunks:  # by its first chunk, as a stored memory is compared
                detection.compare_while_stored(chunks[0].embedding)
            if not await workspace.stores.writes.insert(record, chunks):
                # Another caller stored the same text meanwhile: this add becomes a duplicate of it.
                existing = await workspace.stores.reads.by_content_hash(record.content_hash)
                if existing is None:
                    raise Conflict("the memory changed while it was being stored; retry")
                return await self._merge_duplicate(workspace, existing, request)
        except BaseException:
            abandon(detection)
            raise
        self.writes_committed += 1
        await self._queue_extraction(workspace)
        linked = await self._detect_updates(workspace, record, bool(chunks), detection)
        log.info(
            "memory.added",
            workspace=workspace.name,
            memory_id=record.id,
            chunks=len(chunks),
            bytes=len(request.text.encode(errors="surrogatepass")),
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        result = AddMemoryResult(
            memory_id=record.id,
            workspace=workspace.name,
            chunks_created=len(chunks),
            text_preview=replies.preview(request.text),
        )
        if request.replaces:
            return await self._stated(workspace, result, request.replaces, request.text)
        return await self._annotated(workspace, result) if linked else result

    async def _add_workspace(self, request: AddMemoryRequest) -> Workspace:
        """The workspace an add writes to, made when new; with `replaces`, one that holds every memory it names."""
        if not request.replaces:
            workspace = await self._workspaces.get(request.workspace, create=True)
            assert workspace is not None
            return workspace
        workspace = await self._workspaces.require(request.workspace)
        await self._targets(workspace, None, request.replaces, "replaces")
        return workspace

    async def _stated(self, workspace: Workspace, result: F, replaces: Sequence[str], text: str) -> F:
        """`result`'s memory linked as replacing each of `replaces` (the client said so), with its links."""
        await self._state(workspace, result.memory_id, replaces, text)
        return await self._annotated(workspace, result)

    async def _state(self, workspace: Workspace, memory_id: str, replaces: Sequence[str], text: str) -> list[str]:
        """Link `memory_id` as replacing each of `replaces` (the client said so); those linked (one deleted since
        it was checked is not)."""
        updates = workspace.stores.updates
        stated = [older for older in replaces if await updates.state(older, memory_id, evidence=text[:300])]
        if stated:
            self.writes_committed += 1
            log.info("memory.replaces_stated", workspace=workspace.name, memory_id=memory_id, older=stated)
        return stated

    async def _annotated(self, workspace: Workspace, result: F) -> F:
        """`result` with its memory's update links."""
        return (await self._supersession.annotate(workspace.stores, [result]))[0]

    async def _detect_updates(
        self,
        workspace: Workspace,
        record: MemoryRecord,
        embedded: bool,
        detection: Detection | None = None,
    ) -> bool:
        """Link `record`, already stored (`embedded` as one chunk), with the memories it replaces or that replace
        it (its `detection` begun already, or begun now); whether any link was made. A failure here is logged and
        the write stands: links are found again at the memory's next change."""
        if not embedded:
            abandon(detection)
            return False
        detection = detection or self._supersession.start(workspace, record)
        if detection is None:
            return False
        try:
            return bool(await self._supersession.detect(detection))
        except (DatabaseError, ZapomniError) as exc:
            log.warning("memory.update_detection_failed", workspace=workspace.name, memory_id=record.id, error=str(exc))
            return False

    def _infer(self, request: AddMemoryRequest, ctx: RequestContext, workspace: str) -> Inferred:
        return self._threads.infer(request.text, request.metadata, ctx.client, workspace, time.time())

    async def _merge_duplicate(
        self, workspace: Workspace, existing: StoredMemory, request: AddMemoryRequest
    ) -> AddMemoryResult:
        if existing.info.id in (request.replaces or ()):
            raise InvalidRequest(
                f"replaces: this text is memory {existing.info.id} already, which cannot replace itself"
            )
        merged = _merged_metadata(existing, request.metadata)
        if merged is not None:
            record = memory_record(
                existing.info.id,
                existing.text,
                merged,
                created_at=existing.info.created_at,
                updated_at=time.time(),
                inferred=Inferred.from_json(existing.inferred_json),
            )
            await workspace.stores.writes.update_fields(record)
        info = existing.info
        if info.status == "failed":  # adding it again is the way to retry its indexing
            inferred = Inferred.from_json(existing.inferred_json)
            job = index_job(info.id, reading_context(metadata_of(existing), inferred.speaker))
            if await workspace.stores.writes.requeue(info.id, job):
                info = replace(info, status="indexing", job_id=job.id)
                self._wake_jobs()
        log.info("memory.deduplicated", workspace=workspace.name, memory_id=info.id, merged=merged is not None)
        result = AddMemoryResult(
            memory_id=info.id,
            workspace=workspace.name,
            chunks_created=0,
            deduplicated=True,
            text_preview=replies.preview(existing.text),
            status=info.status,
            job_id=info.job_id if info.status != "indexed" else None,
        )
        return await self._stated(workspace, result, request.replaces, existing.text) if request.replaces else result

    async def update(self, request: UpdateMemoryRequest, ctx: RequestContext = NO_CONTEXT) -> UpdateMemoryResult:
        """Change a memory's text and/or metadata under the same id; readers see old or new, never a mix."""
        async with self._write_slot():
            text_bytes = len(request.text.encode(errors="surrogatepass")) if request.text is not None else 0
            await self._disk.ensure_writable(write_estimate(text_bytes, self._embedder.dimension))
            return await until_committed(lambda c: self._update(request, c), ctx, honour=self._cancellable)

    async def _update(self, request: UpdateMemoryRequest, ctx: RequestContext) -> UpdateMemoryResult:
        workspace = await self._workspaces.require(request.workspace)
        stored = await workspace.stores.reads.get(request.memory_id)
        if stored is None:
            raise NotFound(f"memory_id: no memory {request.memory_id} in workspace {workspace.name!r}")
        if stored.info.status != "indexed":
            raise Conflict(
                f"memory_id: memory {stored.info.id} is {stored.info.status} (job {stored.info.job_id}); update it "
                "once job_status says the job completed, or delete it and add it again"
            )
        unlink = await self._targets(workspace, stored.info.id, request.not_replaced_by or [], "not_replaced_by")
        replaces = await self._targets(workspace, stored.info.id, request.replaces or [], "replaces")
        old_metadata = metadata_of(stored)
        metadata = request.metadata if request.metadata is not None else old_metadata
        text_changed = request.text is not None and content_hash(request.text) != stored.content_hash
        # The same text differently spaced is no change: the stored text stays, nothing is re-embedded.
        text = request.text if text_changed and request.text is not None else stored.text
        # The thread inferred when the turn arrived stays (it came from the client and the time); a speaker is
        # read from the text again, as an add reads it, so an edit of the `Name:` lead moves the turn. A thread
        # or speaker the agent now gives wins.
        old_inferred = Inferred.from_json(stored.inferred_json)
        inferred = replace(old_inferred, speaker=inferred_speaker(text, metadata).speaker)
        record = memory_record(
            stored.info.id, text, metadata, created_at=stored.info.created_at, updated_at=time.time(), inferred=inferred
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
            return await self._relink(workspace, record, result, unlink, replaces, redetect=False)
        context = reading_context(metadata, inferred.speaker)
        # A turn's new speaker, date or thread changes how its chunks are indexed, not only its fields.
        rethread = (metadata.thread or inferred.thread) != (old_metadata.thread or old_inferred.thread)
        reindex = text_changed or rethread or context != reading_context(old_metadata, old_inferred.speaker)
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
            await self._queue_extraction(workspace)
        log.info("memory.updated", workspace=workspace.name, **result.model_dump(exclude={"workspace"}))
        # What it says, who says it or when changed: the links it had are found again.
        redetect = reindex or (record.date, record.speaker) != (stored.info.date, stored.info.speaker)
        return await self._relink(workspace, record, result, unlink, replaces, redetect=redetect)

    async def _targets(
        self, workspace: Workspace, memory_id: str | None, others: Sequence[str], field: str
    ) -> list[str]:
        """`not_replaced_by` or `replaces`, checked before anything changes: every id a memory of this workspace,
        not the memory itself."""
        wanted = list(dict.fromkeys(others))
        if memory_id in wanted:
            raise InvalidRequest(f"{field}: a memory cannot replace itself; give the ids of other memories")
        missing = [mid for mid in wanted if mid not in await workspace.stores.reads.existing_ids(wanted)]
        if missing:
            raise NotFound(f"{field}: no memory {missing[0]} in workspace {workspace.name!r}")
        return wanted

    async def _relink(
        self, workspace: Workspace, record: MemoryRecord, result: UpdateMemoryResult, unlink: Sequence[str],
        replaces: Sequence[str], *, redetect: bool,
    ) -> UpdateMemoryResult:  # fmt: skip
        """The links of an updated memory: those the user undid removed (for good), the rest found again when
        its text, speaker or date changed, and those the user stated made (kept through later changes)."""
        stores = workspace.stores
        for other in unlink:  # the pair is no update, whichever way it was linked
            removed = [await stores.updates.undo(record.id, other), await stores.updates.undo(other, record.id)]
            if any(removed):
                result.unlinked.append(other)
        if redetect:
            await stores.updates.forget(record.id)
            chunks = await stores.reads.chunks(record.id)
            await self._detect_updates(workspace, record, len(chunks) == 1)
        if unlink:
            self.writes_committed += 1
            log.info("memory.unlinked", workspace=workspace.name, memory_id=record.id, unlinked=result.unlinked)
        if replaces:
            result.stated = await self._state(workspace, record.id, replaces, record.text)
        return await self._annotated(workspace, result)

    async def find_updates(self, request: FindUpdatesRequest) -> FindUpdatesResult:
        """Queue the job that links a workspace's stored memories as adds do (`updates_job`)."""
        workspace = await self._workspaces.require(request.workspace)
        stores = workspace.stores
        total = (await stores.maintenance.counts()).memories
        for row in await stores.jobs.active():
            if row.kind == FIND_UPDATES:
                return FindUpdatesResult(job_id=row.id, workspace=workspace.name, memories=total, queued=False)
        job = find_updates_job(total)
        await stores.jobs.create(job)
        self._wake_jobs()
        log.info("memory.find_updates_queued", workspace=workspace.name, job_id=job.id, memories=total)
        return FindUpdatesResult(job_id=job.id, workspace=workspace.name, memories=total, queued=True)

    async def delete(self, request: DeleteMemoryRequest) -> DeleteMemoryResult:
        """Delete by ids or by filters: the memories, their chunks and every index entry, everywhere."""
        workspace = await self._workspaces.get(request.workspace, create=False)
        name = self._workspaces.resolve(request.workspace)
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
        name = self._workspaces.resolve(request.workspace)
        workspace = await self._workspaces.get(name, create=False)
        if workspace is None:
            return SearchResult(workspace=name, results=[], count=0)
        vector = await self._embedder.embed_query(request.query)
        query = RetrievalQuery(text=request.query, vector=vector, filters=_search_filter(request.filters))
        options = SearchOptions(
            limit=request.limit,
            mode=request.mode,
            min_score=request.min_score,
            all_chunks=request.all_chunks,
            include_unrelated=request.include_unrelated,
        )
        answer = await workspace.search.answer(query, options)
        ranked = answer.ranked
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.latency.record(elapsed_ms)
        log.info(
            "memory.searched",
            workspace=name,
            mode=request.mode,
            results=len(ranked),
            limit=request.limit,
            duration_ms=round(elapsed_ms, 2),
            **({"unavailable": answer.unavailable} if answer.unavailable else {}),
        )
        found = [replies.hit(r, name) for r in ranked]
        nodes = [r.candidate.hit.memory.node for r in ranked]
        annotated = await self._supersession.annotate(workspace.stores, found, nodes)
        annotated = await self._supersession.bring_replacements(
            workspace.stores, annotated, query, limit=request.limit, min_score=request.min_score
        )
        hits = order_current_first(annotated, request.query)
        if request.graph_context and hits:
            context = await self._graph_context(workspace.stores, [hit.chunk_id for hit in hits])
            hits = [hit.model_copy(update={"entities": context.get(hit.chunk_id, [])}) for hit in hits]
        note = "; ".join(f"the {leg} leg did not answer: {why}" for leg, why in answer.unavailable.items()) or None
        return SearchResult(workspace=name, results=hits, count=len(hits), legs=answer.legs, note=note)

    async def get(self, request: GetMemoryRequest) -> MemoryDetail:
        workspace = await self._workspaces.require(request.workspace)
        stored = await workspace.stores.reads.get(request.memory_id)
        if stored is None:
            raise NotFound(f"memory_id: no memory {request.memory_id} in workspace {workspace.name!r}")
        return (await self._supersession.annotate(workspace.stores, [replies.detail(stored, workspace.name)]))[0]

    async def chunks(self, request: GetMemoryRequest) -> MemoryChunks:
        """A memory's chunks in order, each with its place in the file it came from (no vectors)."""
        workspace = await self._workspaces.require(request.workspace)
        if not await workspace.stores.reads.existing_ids([request.memory_id]):
            raise NotFound(f"memory_id: no memory {request.memory_id} in workspace {workspace.name!r}")
        chunks = await workspace.stores.reads.chunks(request.memory_id)
        return MemoryChunks(
            memory_id=request.memory_id, workspace=workspace.name, chunks=[replies.chunk_out(c) for c in chunks]
        )

    async def speakers(self, workspace: str | None, limit: int = 200) -> list[str]:
        """The speakers of a workspace's turns (sent or inferred), in order: what its speaker filter can match."""
        found = await self._workspaces.get(workspace, create=False)
        return await found.stores.reads.speakers(limit) if found is not None else []

    async def page(self, request: ListMemoriesRequest) -> MemoryPage:
        name = self._workspaces.resolve(request.workspace)
        after = cursors.decode_cursor(request.cursor, request.order) if request.cursor else None
        workspace = await self._workspaces.get(name, create=False)
        if workspace is None:
            return MemoryPage(workspace=name, memories=[], count=0, next_cursor=None)
        rows = await workspace.stores.reads.page(
            _search_filter(request.filters), order=request.order, after=after, limit=request.limit + 1
        )
        page = rows[: request.limit]
        next_cursor = cursors.encode_cursor(page[-1][2], request.order) if len(rows) > request.limit else None
        memories = await self._supersession.annotate(
            workspace.stores, [replies.summary(info, text, name) for info, text, _key in page]
        )
        return MemoryPage(workspace=name, memories=memories, count=len(memories), next_cursor=next_cursor)

    @asynccontextmanager
    async def _write_slot(self) -> AsyncIterator[None]:
        if self._shutdown.closed:
            raise ShuttingDown("the server is shutting down; nothing was stored, retry after it restarts")
        self._writes_in_flight += 1
        self._writes_done.clear()
        try:
            yield
        finally:
            self._writes_in_flight -= 1
            if self._writes_in_flight == 0:
                self._writes_done.set()

    @property
    def writes_in_flight(self) -> int:
        """Writes begun and not yet stored or abandoned (a shutdown waits for them)."""
        return self._writes_in_flight

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


def _search_filter(filters: SearchFilters | None) -> SearchFilter:
    return filters.to_store() if filters is not None else SearchFilter()


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
