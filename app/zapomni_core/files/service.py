"""Queueing ingest_path and index_codebase jobs: the path is checked now, the files are read by the job."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from zapomni_core.faults import storage_boundary
from zapomni_core.files.replies import WalkKind, WalkQueued
from zapomni_core.files.requests import IndexCodebaseRequest, IngestPathRequest
from zapomni_core.files.sync import FileWalk, WalkArgs, walk_job
from zapomni_core.kernel.registry import Workspaces

log = structlog.get_logger(__name__)


@storage_boundary
class FileService:
    def __init__(self, workspaces: Workspaces, walk: FileWalk, wake_jobs: Callable[[], None]) -> None:
        self._workspaces = workspaces
        self._walk = walk  # checks paths the way the jobs will read them
        self._wake_jobs = wake_jobs

    async def ingest(self, request: IngestPathRequest) -> WalkQueued:
        return await self._queue(
            "ingest_path", request.workspace, request.path, request.include, request.exclude, tags=request.tags
        )

    async def index_codebase(self, request: IndexCodebaseRequest) -> WalkQueued:
        return await self._queue(
            "index_codebase",
            request.workspace,
            request.path,
            request.include,
            request.exclude,
            languages=request.languages,
        )

    async def _queue(
        self,
        kind: WalkKind,
        workspace_name: str | None,
        path: str,
        include: list[str] | None,
        exclude: list[str] | None,
        *,
        tags: list[str] | None = None,
        languages: Sequence[str] | None = None,
    ) -> WalkQueued:
        plan = self._walk.plan(path)  # refused paths are refused now, with nothing queued
        workspace = await self._workspaces.get(workspace_name, create=True)
        assert workspace is not None
        args = WalkArgs(
            path=str(plan.target),
            include=list(include or []),
            exclude=list(exclude or []),
            tags=list(tags or []),
            languages=list(languages or []),
            asked=path,
        )
        job = walk_job(kind, args)
        await workspace.stores.jobs.create(job)
        self._wake_jobs()
        log.info("files.queued", workspace=workspace.name, job_id=job.id, kind=kind, path=args.path)
        return WalkQueued(job_id=job.id, workspace=workspace.name, kind=kind, path=args.path).asked_as(path)
