"""Start-up and shutdown: build every dependency once, in order, and take it down in reverse."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import structlog
from redis.exceptions import RedisError

from zapomni_core.chunking import Chunker
from zapomni_core.database import open_database
from zapomni_core.embedders import CachedEmbedder, Embedder, build_cache, build_embedder
from zapomni_core.engine import ZapomniCore
from zapomni_core.errors import ConfigurationError
from zapomni_core.reembed import in_progress_message
from zapomni_core.search import KeywordRetriever, SearchPipeline, VectorRetriever
from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.bm25 import SyncedBm25Index
from zapomni_core.settings import Settings
from zapomni_db import (
    DatabaseError,
    GraphClient,
    MemoryRepository,
    SchemaMismatch,
    SchemaSettings,
    migrate,
    repair_vector_index,
    rewrite_append_only_file,
    wait_for_indexes,
)

log = structlog.get_logger(__name__)

# A large add that crashed leaves unlinked chunks; anything this old is certainly not in progress.
ORPHAN_GRACE_S = 3600.0
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
async def open_core(settings: Settings) -> AsyncIterator[tuple[ZapomniCore, RuntimeInfo]]:
    """Yield a ready engine; on exit drain writes, close the embedder and pool, release the database."""
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        database = await open_database(settings, stack)
        client = database.client
        repository = MemoryRepository(client)
        # Mid re-embed the vector index is gone and the vectors come from two models: neither works.
        reembed_state = await repository.reembed_state()
        if reembed_state is not None:
            raise ConfigurationError(in_progress_message(reembed_state))
        embedder = CachedEmbedder(await build_embedder(settings), build_cache(settings))
        stack.push_async_callback(embedder.aclose)
        schema = SchemaSettings(dimension=embedder.dimension, ef_runtime=settings.vector_ef_runtime)
        try:
            await migrate(client, schema)
        except SchemaMismatch as exc:  # an old, unversioned graph whose vectors have another dimension
            raise ConfigurationError(f"{exc} (`zapomni migrate status` shows what is stored)") from None
        await wait_for_indexes(client)
        try:
            await repository.claim_embedder(embedder.name, embedder.dimension)
        except SchemaMismatch as exc:
            raise ConfigurationError(
                f"{exc}. Use the embedder that built it (ZAPOMNI_EMBEDDER / EMBEDDING_MODEL), point "
                "ZAPOMNI_DATA_DIR or GRAPH_NAME at a new store, or re-embed the stored memories with the "
                "configured embedder: stop every Zapomni server on this store, then run `zapomni migrate reembed`."
            ) from None
        await repair_vector_index(client, schema)
        removed = await repository.remove_orphan_chunks(time.time() - ORPHAN_GRACE_S)
        if removed:
            log.warning("db.orphans_removed", chunks=removed)
        analyzer = Analyzer()
        keyword_index = SyncedBm25Index(repository)
        await keyword_index.sync()  # rebuild from the stored term counts before the first search
        core = ZapomniCore(
            repository=repository,
            embedder=embedder,
            chunker=chunker_for(embedder, settings),
            search=SearchPipeline(
                [VectorRetriever(repository), KeywordRetriever(repository, keyword_index, analyzer)],
                rrf_k=settings.rrf_k,
                leg_depth=settings.search_leg_depth,
            ),
            analyzer=analyzer,
            graph_name=settings.graph_name,
        )
        stack.push_async_callback(_compact_if_written, client, repository, await repository.chunk_sequence())
        stack.push_async_callback(core.drain)
        info = RuntimeInfo(
            data_location=database.location,
            embedder=embedder.name,
            dimension=embedder.dimension,
            started_database=database.started_here,
            startup_s=round(time.perf_counter() - started, 3),
        )
        yield core, info


async def _compact_if_written(client: GraphClient, repository: MemoryRepository, sequence_at_open: int) -> None:
    """After writes, have the database compact its append-only file, so the next start loads a snapshot.

    Replaying logged writes is slow and leaves FalkorDB's vector index with duplicates (see
    `repair_vector_index`); a compacted file avoids both. Best effort: shutdown never fails on it.
    """
    try:
        if await repository.chunk_sequence() == sequence_at_open:
            return
        finished = await rewrite_append_only_file(client, wait_s=COMPACT_WAIT_S)
        log.info("db.aof_compacted", finished=finished)
    except (DatabaseError, RedisError) as exc:
        log.warning("db.aof_compact_failed", error=str(exc))
