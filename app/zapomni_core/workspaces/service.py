"""Workspaces as a user sees them: which exist, what each holds, deleting one, and the store's vital signs."""

from __future__ import annotations

import asyncio
import time

import anyio
import structlog

from zapomni_core.disk import MB, DiskGuard
from zapomni_core.embedders import CachedEmbedder
from zapomni_core.faults import storage_boundary
from zapomni_core.graph.service import GraphService
from zapomni_core.jobs import JobService
from zapomni_core.kernel.registry import Workspaces
from zapomni_core.memories.service import MemoryService
from zapomni_core.workspaces.replies import (
    DayCount,
    DeleteWorkspaceResult,
    Growth,
    Stats,
    WorkspaceInfo,
    WorkspaceList,
)
from zapomni_core.workspaces.requests import DeleteWorkspaceRequest, StatsRequest

log = structlog.get_logger(__name__)


@storage_boundary
class WorkspaceService:
    def __init__(
        self,
        *,
        registry: Workspaces,
        memories: MemoryService,
        embedder: CachedEmbedder,
        graph: GraphService,
        jobs: JobService,
        disk: DiskGuard,
        graph_name: str,
    ) -> None:
        self._registry = registry
        self._memories = memories
        self._embedder = embedder
        self._graph = graph
        self._jobs = jobs
        self._disk = disk
        self._graph_name = graph_name
        self._started = time.monotonic()
        self.writes_committed = 0

    @property
    def registry(self) -> Workspaces:
        """The open workspaces and their stores: for the core's own services and for tests that look inside."""
        return self._registry

    async def names(self) -> list[str]:
        return await self._registry.names()

    async def list(self) -> WorkspaceList:
        infos = []
        for name in await self._registry.names():
            counts = await self._registry.stores(name).maintenance.counts()
            infos.append(WorkspaceInfo(name=name, memories=counts.memories, chunks=counts.chunks))
        return WorkspaceList(workspaces=infos, default=self._registry.default)

    async def delete(self, request: DeleteWorkspaceRequest) -> DeleteWorkspaceResult:
        counts = await (await self._registry.existing_stores(request.name)).maintenance.counts()
        with anyio.CancelScope(shield=True):
            await self._registry.drop(request.name)
        self.writes_committed += 1
        log.warning("workspace.deleted", workspace=request.name, memories=counts.memories)
        return DeleteWorkspaceResult(name=request.name, deleted_memories=counts.memories, deleted_chunks=counts.chunks)

    async def growth(self, request: StatsRequest) -> Growth:
        """Memories added per day, as they stand now (a deleted memory no longer counts on its day)."""
        name = self._registry.resolve(request.workspace)
        workspace = await self._registry.get(name, create=False)
        days = await workspace.stores.reads.created_per_day() if workspace is not None else []
        return Growth(workspace=name, days=[DayCount(day=day, memories=n) for day, n in days])

    async def stats(self, request: StatsRequest | None = None) -> Stats:
        name = self._registry.resolve(request.workspace if request else None)
        maintenance = self._registry.stores(name).maintenance
        counts = await maintenance.counts()
        disk = await asyncio.to_thread(self._disk.status)
        entities, relations, pending = await self._graph.counts(name)
        return Stats(
            workspace=name,
            total_memories=counts.memories,
            total_chunks=counts.chunks,
            workspaces=len(await self._registry.names()),
            database_size_mb=round(await maintenance.database_size_bytes() / (1024 * 1024), 3),
            graph_name=self._graph_name,
            embedder=self._embedder.name,
            embedding_dimension=self._embedder.dimension,
            avg_query_latency_ms=self._memories.latency.mean_ms,
            cache_hit_rate=self._embedder.hit_rate,
            cache_backend=self._embedder.cache.backend,
            jobs=await self._jobs.counts(name),
            entities=entities,
            relations=relations,
            extraction_pending=pending,
            uptime_s=round(time.monotonic() - self._started, 3),
            disk_free_mb=round(disk.free_bytes / MB, 1) if disk else None,
            disk_warning=disk.warning if disk else None,
            writes_held=self._registry.held_writes(name),
        )
