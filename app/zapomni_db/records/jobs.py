"""What `JobStore` takes and returns: durable background jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

JobState = Literal["pending", "running", "completed", "completed_with_errors", "failed", "cancelled"]


@dataclass(frozen=True)
class JobRecord:
    """A job to create: what to do (`kind`, `args_json`) and, for a job about one memory, which."""

    id: str
    kind: str
    created_at: float
    args_json: str = "{}"
    memory_id: str | None = None
    unit: str = "items"
    total: int | None = None


@dataclass(frozen=True)
class JobRow:
    """A job as stored. `failures` holds the first failed items' "item: reason" lines; `failed` counts all."""

    id: str
    kind: str
    state: JobState
    memory_id: str | None
    args_json: str
    done: int
    total: int | None
    unit: str
    counts_json: str
    failed: int
    failures: list[str]
    error: str | None
    message: str | None
    attempts: int
    owner: str | None
    lease_until: float | None
    created_at: float
    started_at: float | None
    updated_at: float
    finished_at: float | None
    hidden: list[str]  # the server paths and hosts its lines name (never shown to a client on another machine)

    # The Cypher projection that `from_row` reads, for a job bound to `j`.
    PROJECTION = (
        "j.id, j.kind, j.state, j.memory_id, j.args, j.done, j.total, j.unit, j.counts, j.failed, j.failures, "
        "j.error, j.message, j.attempts, j.owner, j.lease_until, j.created_at, j.started_at, j.updated_at, "
        "j.finished_at, j.hidden"
    )

    @classmethod
    def from_row(cls, r: list[Any]) -> JobRow:
        return cls(
            id=r[0],
            kind=r[1],
            state=r[2],
            memory_id=r[3],
            args_json=r[4] or "{}",
            done=int(r[5] or 0),
            total=None if r[6] is None else int(r[6]),
            unit=r[7] or "items",
            counts_json=r[8] or "{}",
            failed=int(r[9] or 0),
            failures=list(r[10] or []),
            error=r[11],
            message=r[12],
            attempts=int(r[13] or 0),
            owner=r[14],
            lease_until=None if r[15] is None else float(r[15]),
            created_at=float(r[16]),
            started_at=None if r[17] is None else float(r[17]),
            updated_at=float(r[18] or r[16]),
            finished_at=None if r[19] is None else float(r[19]),
            hidden=list(r[20] or []),
        )
