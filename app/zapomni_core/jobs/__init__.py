"""Durable background jobs: the runner, the job kinds, and what the job tools ask of them."""

from zapomni_core.jobs.replies import CancelJobResult, JobInfo, JobList, for_remote
from zapomni_core.jobs.requests import CancelJobRequest, JobStatusRequest, ListJobsRequest
from zapomni_core.jobs.service import JobService
from zapomni_core.kernel.runner import JobRunner, JobSettings

__all__ = [
    "CancelJobRequest",
    "CancelJobResult",
    "JobInfo",
    "JobList",
    "JobRunner",
    "JobService",
    "JobSettings",
    "JobStatusRequest",
    "ListJobsRequest",
    "for_remote",
]
