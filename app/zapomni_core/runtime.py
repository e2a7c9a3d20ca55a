"""Start-up and shutdown: build every dependency once, in order, and take it down in reverse."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import structlog

from zapomni_core.chunking import Chunker
from zapomni_core.embedders import CachedEmbedder, Embedder, build_cache, build_embedder
from zapomni_core.engine import ZapomniCore
from zapomni_core.errors import ConfigurationError, StorageUnavailable
from zapomni_core.search import KeywordRetriever, SearchPipeline, VectorRetriever
from zapomni_core.search.analyzer import Analyzer
from zapomni_core.search.bm25 import SyncedBm25Index
from zapomni_core.settings import Settings
from zapomni_db import (
    DatabaseUnavailable,
    EmbeddedDatabase,
    GraphClient,
    MemoryRepository,
    SchemaMismatch,
    SchemaSettings,
    migrate,
    wait_for_indexes,
)

log = structlog.get_logger(__name__)

# A large add that crashed leaves unlinked chunks; anything this old is certainly not in progress.
ORPHAN_GRACE_S = 3600.0


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
        client, location, started_db = await _open_database(settings, stack)
        embedder = CachedEmbedder(await build_embedder(settings), build_cache(settings))
        stack.push_async_callback(embedder.aclose)
        await migrate(client, SchemaSettings(dimension=embedder.dimension, ef_runtime=settings.vector_ef_runtime))
        await wait_for_indexes(client)
        repository = MemoryRepository(client)
        try:
            await repository.claim_embedder(embedder.name, embedder.dimension)
        except SchemaMismatch as exc:
            raise ConfigurationError(
                f"{exc}. Use the embedder that built it (ZAPOMNI_EMBEDDER / EMBEDDING_MODEL), or point "
                "ZAPOMNI_DATA_DIR or GRAPH_NAME at a new store; moving existing memories to another "
                "embedder means re-embedding them (a `reembed` migration is planned)."
            ) from None
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
        stack.push_async_callback(core.drain)
        info = RuntimeInfo(
            data_location=location,
            embedder=embedder.name,
            dimension=embedder.dimension,
            started_database=started_db,
            startup_s=round(time.perf_counter() - started, 3),
        )
        yield core, info


async def _open_database(settings: Settings, stack: AsyncExitStack) -> tuple[GraphClient, str, bool]:
    try:
        client, location, started = await _connect(settings, stack)
        await client.ping()
    except DatabaseUnavailable as exc:
        where = (
            f"FalkorDB at FALKORDB_HOST={settings.falkordb_host} FALKORDB_PORT={settings.falkordb_port}"
            if settings.db_mode == "server"
            else f"the embedded FalkorDB in ZAPOMNI_DATA_DIR={settings.data_dir} (see db/redis.log there)"
        )
        cause = f": {exc.__cause__}" if exc.__cause__ else f": {exc}"
        raise StorageUnavailable(f"cannot use {where}{cause}") from exc
    return client, location, started


async def _connect(settings: Settings, stack: AsyncExitStack) -> tuple[GraphClient, str, bool]:
    if settings.db_mode == "server":
        password = settings.falkordb_password.get_secret_value() if settings.falkordb_password else None
        client = GraphClient.over_tcp(
            settings.falkordb_host,
            settings.falkordb_port,
            settings.graph_name,
            password=password,
            max_connections=settings.db_pool_size,
        )
        stack.push_async_callback(client.close)
        return client, f"falkordb://{settings.falkordb_host}:{settings.falkordb_port}", False
    database = EmbeddedDatabase(settings.data_dir, appendfsync=settings.appendfsync)
    await asyncio.to_thread(database.open)
    stack.push_async_callback(asyncio.to_thread, database.close)
    client = GraphClient.over_unix_socket(
        str(database.socket), settings.graph_name, max_connections=settings.db_pool_size
    )
    stack.push_async_callback(client.close)
    return client, str(database.paths.data_dir), database.started_here
