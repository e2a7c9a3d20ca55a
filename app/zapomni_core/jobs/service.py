"""What the job tools ask of the engine: a job's status (optionally waiting for it), lists, cancellation."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from zapomni_core.context import NO_CONTEXT, RequestContext
from zapomni_core.disk import DiskGuard
from zapomni_core.errors import NotFound
from zapomni_core.faults import storage_boundary
from zapomni_core.jobs.replies import CancelJobResult, JobInfo, JobList, JobProgress, WaitingFor
from zapomni_core.jobs.requests import ACTIVE_STATES, CancelJobRequest, JobStatusRequest, ListJobsRequest
from zapomni_core.kernel.registry import Workspaces
from zapomni_core.progress import Progress
from zapomni_core.validation import iso
from zapomni_db import GraphStores, JobRow, JobRunners

log = structlog.get_logger(__name__)

# How often a waiting job_status looks at the job (and may send a progress notification).
WAIT_POLL_S = 0.5


@storage_boundary
class JobService:
    def __init__(
        self,
        workspaces: Workspaces,
        disk: DiskGuard | None = None,
        runners: JobRunners | None = None,
        on_cancelled: Callable[[GraphStores, JobRow], Awaitable[bool]] | None = None,
    ) -> None:
        self._workspaces = workspaces
        # What a cancelled job takes with it (a large add's memory: zapomni_core.memories.indexing_job.withdraw);
        # True when it deleted a memory.
        self._on_cancelled = on_cancelled
        self._disk = disk  # while it refuses writes, unfinished jobs are paused (see JobRunner)
        self._runners = runners  # which servers run jobs now; None: not known (then no job waits "for a server")

    async def status(self, request: JobStatusRequest, ctx: RequestContext = NO_CONTEXT) -> JobInfo:
        workspace, job = await self._find(request.job_id)
        deadline = time.monotonic() + request.wait_s
        reported: Progress | None = None
        while job.state in ACTIVE_STATES:
            waits = await self._waits()
            waiting_for, said = waits.of(job)
            if waiting_for == "server" or time.monotonic() >= deadline:  # no server: waiting would change nothing
                break
            progress = Progress(job.done, job.total, job.unit, said or job.message or job.state)
            if progress != reported:
                await ctx.progress(progress)
                reported = progress
            await asyncio.sleep(WAIT_POLL_S)
            job = await self._get(workspace, request.job_id)
        return job_info(job, workspace, await self._waits())

    async def list(self, request: ListJobsRequest) -> JobList:
        name = self._workspaces.resolve(request.workspace)
        rows = await self._workspaces.stores(name).jobs.list(request.state, request.limit)
        waits = await self._waits()
        return JobList(workspace=name, jobs=[job_info(row, name, waits) for row in rows], count=len(rows))

    async def _waits(self) -> JobWaits:
        """What unfinished jobs wait for now: the job rows cannot say it while the database refuses writes, nor
        whether any server is there to take them."""
        status = await asyncio.to_thread(self._disk.status) if self._disk is not None else None
        kinds = await self._runners.kinds() if self._runners is not None else None
        return JobWaits(status.pause_reason if status is not None else None, kinds)

    async def cancel(self, request: CancelJobRequest) -> CancelJobResult:
        """Cancel a pending or running job, and what it takes with it (`on_cancelled`)."""
        workspace, job = await self._find(request.job_id)
        stores = self._workspaces.stores(workspace)
        cancelled = await stores.jobs.cancel(job.id, "cancelled by cancel_job")
        memory_deleted = False
        if cancelled is not None and self._on_cancelled is not None:
            memory_deleted = await self._on_cancelled(stores, cancelled)
        log.info("job.cancelled", workspace=workspace, job_id=job.id, was=job.state, memory_deleted=memory_deleted)
        return CancelJobResult(
            job=job_info(cancelled or job, workspace), cancelled=cancelled is not None, memory_deleted=memory_deleted
        )

    async def counts(self, workspace: str) -> dict[str, int]:
        return await self._workspaces.stores(workspace).jobs.count_by_state()

    async def workspace_of(self, job_id: str) -> str | None:
        """The workspace a job belongs to (None: no such job), for an adapter that authorises per workspace."""
        try:
            return (await self._find(job_id))[0]
        except NotFound:
            return None

    async def _find(self, job_id: str) -> tuple[str, JobRow]:
        """The job and its workspace: job ids are unique across workspaces, so callers need not say which."""
        names = await self._workspaces.names()
        default = self._workspaces.default
        for name in sorted(names, key=lambda n: n != default):
            job = await self._workspaces.stores(name).jobs.get(job_id)
            if job is not None:
                return name, job
        raise NotFound(f"job_id: no job {job_id} in any workspace (list_jobs shows a workspace's jobs)")

    async def _get(self, workspace: str, job_id: str) -> JobRow:
        job = await self._workspaces.stores(workspace).jobs.get(job_id)
        if job is None:
            raise NotFound(f"job_id: job {job_id} is gone (its workspace {workspace!r} was deleted)")
        return job


NO_SERVER = (
    "waiting for a server: no `zapomni serve` runs jobs on this store right now; the job runs when one starts "
    "(an MCP client starts one)"
)


@dataclass(frozen=True)
class JobWaits:
    """What every unfinished job's wait depends on right now."""

    disk: str | None = None  # why writes are refused, if they are
    runner_kinds: set[str] | None = None  # the job kinds some server runs; None: not known
    now: float = field(default_factory=time.time)  # when these were read (a lease is live until then)

    def of(self, job: JobRow) -> tuple[WaitingFor | None, str | None]:
        """What `job` waits for, and what to say of it (None: the job's own message says enough)."""
        if job.state not in ACTIVE_STATES:
            return None, None
        if self.disk:
            return "disk", f"paused: {self.disk}"
        # A running job under a live lease has a server, whatever the presence key says: the key lapses when a
        # full disk refuses its renewals, and a job_status waiting on such a job returned at once (seen in a test).
        held = job.state == "running" and (job.lease_until or 0.0) > self.now
        if self.runner_kinds is not None and job.kind not in self.runner_kinds and not held:
            return "server", NO_SERVER
        return ("turn", None) if job.state == "pending" else (None, None)


def job_info(job: JobRow, workspace: str, waits: JobWaits | None = None) -> JobInfo:
    """The job as the tools show it; `waits`: what unfinished jobs wait for now (the disk, a server), if known."""
    waiting_for, said = (waits or JobWaits()).of(job)
    return JobInfo(
        job_id=job.id,
        workspace=workspace,
        kind=job.kind,
        state=job.state,
        memory_id=job.memory_id,
        progress=JobProgress(done=job.done, total=job.total, unit=job.unit),
        message=said or job.message,
        waiting_for=waiting_for,
        counts=json.loads(job.counts_json),
        failed_items=job.failed,
        failures=job.failures,
        error=job.error,
        attempts=job.attempts,
        created_at=iso(job.created_at),
        started_at=iso(job.started_at) if job.started_at is not None else None,
        updated_at=iso(job.updated_at),
        finished_at=iso(job.finished_at) if job.finished_at is not None else None,
    ).hiding(job.hidden)
