"""What ingest_path and index_codebase answer: the job that will read the files."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from zapomni_core.jobs.replies import AskedPath

WalkKind = Literal["ingest_path", "index_codebase"]


class WalkQueued(AskedPath):
    job_id: str = Field(description="Follow it with job_status(job_id) (wait_s waits for the end).")
    workspace: str
    kind: WalkKind
    path: str = Field(
        description="The resolved file or directory that will be read (for a client on another machine: the path "
        "as it was given, since a link's target or the server's working directory is the server's own)."
    )
