"""job_status, list_jobs and cancel_job: following the background work (large adds, for now)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from zapomni_core import (
    MAX_WAIT_S,
    UUID_PATTERN,
    CancelJobRequest,
    CancelJobResult,
    JobInfo,
    JobList,
    JobStatusRequest,
    ListJobsRequest,
    RequestContext,
    ZapomniCore,
)
from zapomni_mcp.registry import Tool


def describe(job: JobInfo) -> str:
    total = f"/{job.progress.total}" if job.progress.total is not None else ""
    progress = f"{job.progress.done}{total} {job.progress.unit}"
    line = f"Job {job.job_id} ({job.kind}) in {job.workspace!r}: {job.state}, {progress}"
    details = [
        f"memory {job.memory_id}" if job.memory_id else "",
        job.message or "",
        f"{job.failed_items} failed item(s): {'; '.join(job.failures[:5])}" if job.failed_items else "",
        f"error: {job.error}" if job.error else "",
    ]
    return "; ".join([line, *filter(None, details)])


class _ActsOnTheJobsWorkspace:
    core: ZapomniCore

    async def workspace(self, arguments: Mapping[str, Any], default: str) -> str | None:
        """Job ids are unique across workspaces, so a call names none: it acts on its job's."""
        job_id = arguments.get("job_id")
        if not isinstance(job_id, str) or not re.fullmatch(UUID_PATTERN, job_id):
            return None  # refused by validation, with nothing looked up
        return await self.core.jobs.workspace_of(job_id)


class JobStatusTool(_ActsOnTheJobsWorkspace, Tool[JobStatusRequest, JobInfo]):
    name = "job_status"
    description = (
        "The state and progress of a background job (e.g. the job_id a large add_memory returned): pending, "
        "running, completed, completed_with_errors, failed or cancelled, with failed items and their reasons. "
        f"wait_s (up to {MAX_WAIT_S}) waits for the job to end and sends progress notifications meanwhile."
    )
    input_model = JobStatusRequest
    output_model = JobInfo
    role = "read"
    annotations = types.ToolAnnotations(title="Job status", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: JobStatusRequest, ctx: RequestContext) -> JobInfo:
        return await self.core.jobs.status(arguments, ctx)

    @staticmethod
    def render(result: JobInfo) -> str:
        return describe(result)


class ListJobsTool(Tool[ListJobsRequest, JobList]):
    name = "list_jobs"
    description = "A workspace's background jobs, newest first, optionally only those in one state (e.g. failed)."
    input_model = ListJobsRequest
    output_model = JobList
    role = "read"
    annotations = types.ToolAnnotations(title="List jobs", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: ListJobsRequest, ctx: RequestContext) -> JobList:
        return await self.core.jobs.list(arguments)

    @staticmethod
    def render(result: JobList) -> str:
        if not result.jobs:
            return f"No jobs in {result.workspace!r}."
        return "\n".join(describe(job) for job in result.jobs)


class CancelJobTool(_ActsOnTheJobsWorkspace, Tool[CancelJobRequest, CancelJobResult]):
    name = "cancel_job"
    description = (
        "Stop a pending or running job. Cancelling a large add's indexing job withdraws that add: the memory "
        "is deleted and nothing of it stays searchable. A job that already ended is left as it is."
    )
    input_model = CancelJobRequest
    output_model = CancelJobResult
    role = "write"
    annotations = types.ToolAnnotations(title="Cancel job", read_only_hint=False, destructive_hint=True)

    async def execute(self, arguments: CancelJobRequest, ctx: RequestContext) -> CancelJobResult:
        return await self.core.jobs.cancel(arguments)

    @staticmethod
    def render(result: CancelJobResult) -> str:
        if not result.cancelled:
            return f"Nothing to cancel: {describe(result.job)}"
        withdrawn = f"; memory {result.job.memory_id} was deleted" if result.memory_deleted else ""
        return f"Cancelled job {result.job.job_id}{withdrawn}."
