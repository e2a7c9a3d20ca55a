"""ZapomniCore: the one object the adapters (MCP tools, CLI) talk to."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import BinaryIO, TextIO

import anyio
import structlog

from zapomni_core import transfer
from zapomni_core.chunking import Chunker
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.errors import ShuttingDown
from zapomni_core.models import (
    PREVIEW_CHARS,
    AddMemoryRequest,
    AddMemoryResult,
    SearchFilters,
    SearchHit,
    SearchRequest,
    SearchResult,
    Stats,
    parse_iso8601,
)
from zapomni_core.records import chunk_rows, memory_record
from zapomni_core.search import Ranked, RetrievalQuery, SearchOptions, SearchPipeline
from zapomni_core.search.analyzer import Analyzer, TermCounts
from zapomni_db import MemoryRepository, SearchFilter

log = structlog.get_logger(__name__)

# Chunks embedded between two checks of the shutdown deadline (a few seconds of work at most).
EMBED_SLICE = 64


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
        repository: MemoryRepository,
        embedder: CachedEmbedder,
        chunker: Chunker,
        search: SearchPipeline,
        analyzer: Analyzer,
        graph_name: str,
    ) -> None:
        self._repository = repository
        self._embedder = embedder
        self._chunker = chunker
        self._search = search
        self._analyzer = analyzer
        self._graph_name = graph_name
        self._started = time.monotonic()
        self._latency = _LatencyMeter()
        self._writes_in_flight = 0
        self._writes_done = asyncio.Event()
        self._writes_done.set()
        self._shutdown_deadline: float | None = None

    async def add_memory(self, request: AddMemoryRequest) -> AddMemoryResult:
        """Chunk, embed and store one memory.

        Once started, the add runs to the end even if its caller is cancelled (a client that
        went away, a shutdown), unless a shutdown's grace period runs out while it is still
        embedding: then it stops before writing anything. The database write itself is
        never interrupted, so a memory is stored whole or not at all.
        """
        if self._shutdown_deadline is not None:
            raise ShuttingDown("the server is shutting down; nothing was stored, retry after it restarts")
        self._writes_in_flight += 1
        self._writes_done.clear()
        try:
            # Shielded: a cancelled request or a shutdown must not leave a write half done.
            with anyio.CancelScope(shield=True):
                return await self._add(request)
        finally:
            self._writes_in_flight -= 1
            if self._writes_in_flight == 0:
                self._writes_done.set()

    async def _add(self, request: AddMemoryRequest) -> AddMemoryResult:
        started = time.perf_counter()
        pieces, term_counts = await asyncio.to_thread(self._analyse, request.text)
        vectors = await self._embed_until_deadline(pieces)
        memory = memory_record(str(uuid.uuid4()), request.text, time.time(), request.metadata)
        chunks = chunk_rows(pieces, vectors, term_counts)
        await self._repository.insert(memory, chunks)
        log.info(
            "memory.added",
            memory_id=memory.id,
            chunks=len(chunks),
            bytes=len(request.text.encode()),
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return AddMemoryResult(memory_id=memory.id, chunks_created=len(chunks), text_preview=_preview(request.text))

    def _analyse(self, text: str) -> tuple[list[str], list[TermCounts]]:
        pieces = self._chunker.split(text)
        return pieces, [self._analyzer.count(piece) for piece in pieces]

    async def _embed_until_deadline(self, pieces: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(pieces), EMBED_SLICE):
            if self._shutdown_deadline is not None and time.monotonic() > self._shutdown_deadline:
                log.warning("memory.add_abandoned", reason="shutdown grace period over", chunks=len(pieces))
                raise ShuttingDown("the server shut down before this memory was embedded; nothing was stored")
            vectors.extend(await self._embedder.embed_documents(pieces[start : start + EMBED_SLICE]))
        return vectors

    async def search(self, request: SearchRequest) -> SearchResult:
        started = time.perf_counter()
        vector = await self._embedder.embed_query(request.query)
        query = RetrievalQuery(text=request.query, vector=vector, filters=_search_filter(request.filters))
        options = SearchOptions(
            limit=request.limit, mode=request.mode, min_score=request.min_score, all_chunks=request.all_chunks
        )
        ranked = await self._search.run(query, options)
        elapsed_ms = (time.perf_counter() - started) * 1000
        self._latency.record(elapsed_ms)
        log.info(
            "memory.searched",
            mode=request.mode,
            results=len(ranked),
            limit=request.limit,
            duration_ms=round(elapsed_ms, 2),
        )
        hits = [_hit(r) for r in ranked]
        return SearchResult(results=hits, count=len(hits))

    async def stats(self) -> Stats:
        counts = await self._repository.counts()
        size = await self._repository.database_size_bytes()
        return Stats(
            total_memories=counts.memories,
            total_chunks=counts.chunks,
            database_size_mb=round(size / (1024 * 1024), 3),
            graph_name=self._graph_name,
            embedder=self._embedder.name,
            embedding_dimension=self._embedder.dimension,
            avg_query_latency_ms=self._latency.mean_ms,
            cache_hit_rate=self._embedder.hit_rate,
            cache_backend=self._embedder.cache.backend,
            uptime_s=round(time.monotonic() - self._started, 3),
        )

    async def export_memories(self, out: TextIO, progress: transfer.ProgressFn | None = None) -> transfer.ExportReport:
        """Write every memory to `out` as portable JSONL (`zapomni_core.transfer`, docs/export-format.md)."""
        embedder = transfer.EmbedderInfo(self._embedder.name, self._embedder.dimension)
        return await transfer.export_memories(self._repository, embedder, out, progress, graph_name=self._graph_name)

    async def import_memories(
        self, src: BinaryIO, progress: transfer.ProgressFn | None = None
    ) -> transfer.ImportReport:
        """Store the memories of a JSONL export that this store lacks; a bad file changes nothing."""
        target = transfer.ImportTarget(self._repository, self._embedder, self._analyzer, self._analyse)
        return await transfer.import_memories(target, src, progress)

    def begin_shutdown(self, grace_s: float) -> None:
        """Refuse new writes; let the ones in flight finish within `grace_s` seconds."""
        if self._shutdown_deadline is None:
            self._shutdown_deadline = time.monotonic() + grace_s
            log.info("core.shutting_down", writes_in_flight=self._writes_in_flight, grace_s=grace_s)

    async def drain(self) -> None:
        """Wait until every write already started has been stored or abandoned."""
        await self._writes_done.wait()


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _search_filter(filters: SearchFilters | None) -> SearchFilter:
    if filters is None:
        return SearchFilter()
    return SearchFilter(
        tags=filters.tags,
        source=filters.source,
        date_from_ts=parse_iso8601(filters.date_from).timestamp() if filters.date_from else None,
        date_to_ts=parse_iso8601(filters.date_to).timestamp() if filters.date_to else None,
    )


def _hit(ranked: Ranked) -> SearchHit:
    candidate = ranked.candidate
    return SearchHit(
        memory_id=candidate.memory_id,
        chunk_id=candidate.chunk_id,
        text=candidate.text,
        similarity_score=round(candidate.similarity, 6),
        rank_score=ranked.rank_score,
        matched_by=ranked.legs,
        tags=candidate.tags,
        source=candidate.source,
        timestamp=datetime.fromtimestamp(candidate.created_at, UTC).isoformat(),
        date=candidate.date,
    )
