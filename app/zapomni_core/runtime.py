"""Start-up and shutdown: build every dependency once, in order, and take it down in reverse."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import structlog

from zapomni_core.access.oauth import OAuthService
from zapomni_core.access.service import AccessService
from zapomni_core.code.indexing import CodeReader, IndexCodebase
from zapomni_core.code.service import CodeService
from zapomni_core.content.chunking import Chunker
from zapomni_core.content.metadata import MAX_TEXT_BYTES
from zapomni_core.context import ShutdownGate
from zapomni_core.database import database_disk, open_database
from zapomni_core.disk import MB, DiskGuard
from zapomni_core.embedders import CachedEmbedder, Embedder, build_cache, build_embedder
from zapomni_core.engine import ZapomniCore
from zapomni_core.errors import ConfigurationError
from zapomni_core.faults import storage_faults
from zapomni_core.files.ingesting import DocumentReader, IngestPath
from zapomni_core.files.service import FileService
from zapomni_core.files.sync import FileLimits, FileWalk
from zapomni_core.files.walker import allowed_roots
from zapomni_core.graph import BuildGraph, GraphService, build_extractor, extractor_name
from zapomni_core.graph.expansion import GraphExpansion
from zapomni_core.jobs import JobRunner, JobService, JobSettings
from zapomni_core.kernel.registry import EmbedderIdentity, Workspace, Workspaces, in_progress_message
from zapomni_core.kernel.runner import JobHandler
from zapomni_core.kernel.writing import WritePipeline
from zapomni_core.memories.indexing_job import IndexMemory, withdraw
from zapomni_core.memories.service import MemoryService
from zapomni_core.memories.supersession import UpdateLinker
from zapomni_core.memories.updates_job import FindUpdates
from zapomni_core.search import KeywordRetriever, SearchPipeline, VectorRetriever
from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.keyword_index import KeywordIndex
from zapomni_core.settings import Settings
from zapomni_core.transfer.import_job import ImportSource
from zapomni_core.transfer.service import TransferService
from zapomni_core.workspaces.service import WorkspaceService
from zapomni_db import (
    AccessStore,
    DatabaseError,
    GraphClient,
    GraphStores,
    JobRunners,
    Maintenance,
    OAuthStore,
    SchemaSettings,
    rewrite_append_only_file,
)

log = structlog.get_logger(__name__)

# How long a closing process waits for the append-only file to be compacted; past it, it goes on alone.
COMPACT_WAIT_S = 10.0


@dataclass(frozen=True)
class RuntimeInfo:
    """What the server tells a person at start-up."""

    data_location: str
    embedder: str
    dimension: int
    started_database: bool
    startup_s: float


def chunker_for(embedder: Embedder, settings: Settings) -> Chunker:
    # Up to 512 tokens, and never more than the model reads (256 for MiniLM).
    max_tokens = min(settings.chunk_max_tokens or 512, embedder.max_tokens)
    return Chunker(
        embedder.count_tokens, max_tokens=max_tokens, overlap_tokens=int(max_tokens * settings.chunk_overlap)
    )


@asynccontextmanager
async def open_core(
    settings: Settings, *, background_jobs: bool = True, model: Embedder | None = None
) -> AsyncIterator[tuple[ZapomniCore, RuntimeInfo]]:
    """Yield a ready engine; on exit drain writes, close the embedder and pool, release the database.

    `background_jobs`: run a job worker, and answer large adds before indexing them (the server).
    A short-lived command (the CLI) passes False: it indexes every add itself before it returns.
    `model`: an embedder already built, which stays the caller's to close (the test suite loads the ONNX
    model once for hundreds of engines); None builds the one the settings name.
    """
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        building: asyncio.Task[Embedder] | None = None
        if model is None:  # loaded while the database loads its data (seconds at a million chunks)
            # A command (no job worker) loads the ONNX model at its first embedding: most commands embed nothing.
            building = asyncio.create_task(build_embedder(settings, preload=background_jobs))
            stack.push_async_callback(_close_built, building)
        database = await open_database(settings, stack)
        # Mid re-embed the vector index is gone and the vectors come from two models: neither works.
        with storage_faults(None):
            reembed_state = await Maintenance(database.client).reembed_state()
        if reembed_state is not None:
            raise ConfigurationError(in_progress_message(reembed_state))
        if building is not None:
            model = await building
        assert model is not None
        embedder = CachedEmbedder(model, build_cache(settings))
        stack.push_async_callback(embedder.cache.aclose)
        analyzer = Analyzer()

        def search_for(stores: GraphStores, keyword_index: KeywordIndex) -> SearchPipeline:
            expansion = GraphExpansion(stores.neighbours, stores.search) if settings.graph_expansion else None
            return SearchPipeline(
                [
                    VectorRetriever(stores.search, exact_within_ms=settings.vector_exact_limit_ms),
                    KeywordRetriever(stores.search, keyword_index, analyzer),
                ],
                rrf_k=settings.rrf_k,
                leg_depth=settings.search_leg_depth,
                relevance_floor=settings.relevance_floor,
                vector_weight=settings.vector_weight,
                fusion=settings.fusion,
                vector_share=settings.vector_share,
                expansion=expansion,
                days_weight=settings.time_days_weight,
                when_weight=settings.time_when_weight,
            )

        workspaces = Workspaces(
            database.connection,
            base_graph=settings.graph_name,
            default=settings.workspace,
            schema=SchemaSettings(dimension=embedder.dimension, ef_runtime=settings.vector_ef_runtime),
            embedder=EmbedderIdentity(embedder.name, embedder.dimension),
            search_for=search_for,
            # Kept beside the embedded database only: every process that writes to it shares its directory.
            keyword_dirs=database.keyword_dirs,
            presence=database.presence,
        )
        # After the writes drain, before the database closes.
        stack.push_async_callback(workspaces.close_keyword_indexes)
        stack.push_async_callback(workspaces.close)
        # The default workspace is made ready now, so a broken store fails at start-up, not on a request.
        with storage_faults(None):
            await workspaces.get(None, create=True)
        shutdown = ShutdownGate()
        writer = WritePipeline(chunker_for(embedder, settings), embedder, shutdown)
        disk = DiskGuard(database_disk(settings), settings.min_free_mb * MB)
        runners = JobRunners(database.connection, settings.graph_name)
        jobs = JobService(workspaces, disk, runners, on_cancelled=withdraw)
        code = CodeService(workspaces)
        graph = GraphService(
            workspaces,
            jobs,
            extractor=extractor_name(settings),
            match_threshold=settings.entity_match_threshold,
            auto=settings.graph_auto,
            wake_jobs=lambda: runner.wake(),
            code=code,
        )
        limits = FileLimits(allowed_roots(settings.allowed_roots), settings.max_file_bytes)
        document_walk = FileWalk(DocumentReader(writer.chunker), writer, disk, limits)
        # Files are read where jobs run; the CLI runs its own ingest jobs (`JobRunner.run_now`).
        supersession = UpdateLinker(enabled=settings.update_detection)
        transfer = TransferService(
            workspaces=workspaces,
            embedder=embedder,
            writer=writer,
            graph=graph,
            disk=disk,
            graph_name=settings.graph_name,
            roots=limits.roots,
            wake_jobs=lambda: runner.wake(),
        )
        handlers: dict[str, JobHandler[Workspace]] = {
            ImportSource.kind: ImportSource(transfer.import_source, limits.roots),
            IndexMemory.kind: IndexMemory(writer, disk, on_indexed=graph.queue_new_memories),
            FindUpdates.kind: FindUpdates(supersession),
            IngestPath.kind: IngestPath(document_walk, on_changed=graph.queue_new_memories),
            IndexCodebase.kind: IndexCodebase(FileWalk(CodeReader(writer.chunker), writer, disk, limits)),
        }
        if background_jobs:  # the extractor (a spaCy model, or an Ollama client) is loaded only where jobs run
            extractor = build_extractor(settings)
            stack.push_async_callback(extractor.aclose)
            handlers[BuildGraph.kind] = BuildGraph(extractor, settings.entity_match_threshold)
        runner = JobRunner(
            workspaces,
            handlers,
            JobSettings(lease_s=settings.job_lease_s, poll_s=settings.job_poll_s, slots=settings.job_slots),
            disk,
            runners if background_jobs else None,  # a command runs its own jobs only (run_now), no others
        )
        memories = MemoryService(
            workspaces=workspaces,
            embedder=embedder,
            writer=writer,
            shutdown=shutdown,
            queue_extraction=graph.queue_new_memories,
            graph_context=graph.hit_context,
            disk=disk,
            wake_jobs=runner.wake,
            background_add_bytes=settings.background_add_bytes if background_jobs else MAX_TEXT_BYTES + 1,
            supersession=supersession,
        )
        core = ZapomniCore(
            memories=memories,
            workspaces=WorkspaceService(
                registry=workspaces,
                memories=memories,
                embedder=embedder,
                graph=graph,
                jobs=jobs,
                disk=disk,
                graph_name=settings.graph_name,
            ),
            graph=graph,
            code=code,
            files=FileService(workspaces, document_walk, wake_jobs=runner.wake),
            jobs=jobs,
            transfer=transfer,
            access=AccessService(AccessStore(database.connection, settings.graph_name)),
            oauth=OAuthService(
                OAuthStore(database.connection, settings.graph_name),
                AccessStore(database.connection, settings.graph_name),
            ),
            embedder=embedder,
            disk=disk,
            run_job_here=runner.run_now,
        )
        stack.push_async_callback(_compact_if_written, database.client, core)
        stack.push_async_callback(core.drain)
        if background_jobs:
            await runner.start()  # stopped first on the way out: a job in hand is handed back before anything closes
            stack.push_async_callback(runner.stop)
        info = RuntimeInfo(
            data_location=database.location,
            embedder=embedder.name,
            dimension=embedder.dimension,
            started_database=database.started_here,
            startup_s=round(time.perf_counter() - started, 3),
        )
        yield core, info


async def _close_built(building: asyncio.Task[Embedder]) -> None:
    """Close the embedder `building` made, waiting for it if the start-up failed first; one that failed is gone."""
    try:
        model = await building
    except Exception:  # raised where it was awaited, or never needed: the start-up already failed
        return
    await model.aclose()


async def _compact_if_written(client: GraphClient, core: ZapomniCore) -> None:
    """After writes, have the database compact its append-only file, so the next start loads a snapshot.

    Replaying logged writes is slow and leaves FalkorDB's vector index with duplicates (see
    `repair_vector_index`); a compacted file avoids both. Best effort: shutdown never fails on it.
    """
    if not core.writes_committed:
        return
    try:
        finished = await rewrite_append_only_file(client, wait_s=COMPACT_WAIT_S)
        log.info("db.aof_compacted", finished=finished)
    except DatabaseError as exc:
        log.warning("db.aof_compact_failed", error=str(exc))
