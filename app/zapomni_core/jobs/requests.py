"""The job tools' requests (job_status, list_jobs, cancel_job), and the states a job goes through."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from zapomni_core.validation import UUID_PATTERN, ScopedRequest, StrictModel
from zapomni_db import JobState as JobState  # re-exported: the states are stored by the job store

ACTIVE_STATES: tuple[JobState, ...] = ("pending", "running")
# Under the 60 s after which MCP clients give up on a request by default.
MAX_WAIT_S = 50
MAX_JOBS = 100

JobId = Annotated[str, Field(pattern=UUID_PATTERN, description="A job's id, as the call that queued it returned it.")]
# How long job_status and graph_status may hold a request open for a job to end.
WaitSeconds = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_WAIT_S,
        description=f"Wait up to this many seconds (0-{MAX_WAIT_S}) for the job to end, sending progress "
        "notifications meanwhile when the request carries a progressToken; 0 answers at once.",
    ),
]


class JobStatusRequest(StrictModel):
    job_id: JobId
    wait_s: WaitSeconds = 0


class ListJobsRequest(ScopedRequest):
    state: JobState | None = Field(None, description="Only jobs in this state.")
    limit: int = Field(20, ge=1, le=MAX_JOBS, description=f"At most this many jobs (1-{MAX_JOBS}), newest first.")


class CancelJobRequest(StrictModel):
    job_id: JobId
