"""In-memory stand-ins behind the job runner's Protocols (zapomni_core.kernel.stores), for tests of the runner's
own logic. They keep the contract the FalkorDB stores keep (compare-and-set claims, writes fenced by owner and
state, progress that only moves forward), which tests/integration/test_job_store.py checks on the real ones."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from zapomni_db import GraphMissing, JobRow

ACTIVE = ("pending", "running")


def pending_job(job_id: str, kind: str, *, created_at: float, args_json: str = "{}") -> JobRow:
    return JobRow(
        id=job_id,
        kind=kind,
        state="pending",
        memory_id=None,
        args_json=args_json,
        done=0,
        total=None,
        unit="items",
        counts_json="{}",
        failed=0,
        failures=[],
        error=None,
        message=None,
        attempts=0,
        owner=None,
        lease_until=None,
        created_at=created_at,
        started_at=None,
        updated_at=created_at,
        finished_at=None,
        hidden=[],
    )


@dataclass
class FakeJobStore:
    """One workspace's jobs, by id."""

    rows: dict[str, JobRow] = field(default_factory=dict)
    pending_notes: list[tuple[str, str]] = field(default_factory=list)  # every note_pending that changed a job

    def add(self, job: JobRow) -> JobRow:
        self.rows[job.id] = job
        return job

    def _mine(self, job_id: str, owner: str) -> JobRow | None:
        row = self.rows.get(job_id)
        return row if row is not None and row.state == "running" and row.owner == owner else None

    async def get(self, job_id: str) -> JobRow | None:
        return self.rows.get(job_id)

    async def active(self, limit: int = 20) -> list[JobRow]:
        return sorted((r for r in self.rows.values() if r.state in ACTIVE), key=lambda r: r.created_at)[:limit]

    async def claim(self, seen: JobRow, owner: str, lease_s: float) -> JobRow | None:
        row = self.rows.get(seen.id)
        if row is None or (row.state, row.attempts) != (seen.state, seen.attempts):
            return None
        now = time.time()
        self.rows[row.id] = replace(
            row,
            state="running",
            owner=owner,
            lease_until=now + lease_s,
            attempts=row.attempts + 1,
            started_at=row.started_at or now,
            updated_at=now,
            message=None,
        )
        return self.rows[row.id]

    async def heartbeat(
        self, job_id: str, owner: str, lease_s: float, *, done: int, total: int | None, message: str | None
    ) -> bool:
        row = self._mine(job_id, owner)
        if row is None:
            return False
        now = time.time()
        self.rows[job_id] = replace(
            row, lease_until=now + lease_s, updated_at=now, done=max(row.done, done), total=total, message=message
        )
        return True

    async def record_failure(self, job_id: str, owner: str, line: str, hidden: Sequence[str] = ()) -> bool:
        row = self._mine(job_id, owner)
        if row is None:
            return False
        self.rows[job_id] = replace(row, failed=row.failed + 1, failures=[*row.failures, line])
        return True

    async def finish(
        self,
        job_id: str,
        owner: str,
        *,
        state: str,
        done: int,
        counts_json: str,
        error: str | None = None,
        message: str | None = None,
        hidden: Sequence[str] = (),
    ) -> bool:
        row = self._mine(job_id, owner)
        if row is None:
            return False
        now = time.time()
        self.rows[job_id] = replace(
            row,
            state=state,  # type: ignore[arg-type]  # the runner passes JobState values as str, as to FalkorDB
            done=done,
            counts_json=counts_json,
            error=error,
            message=message,
            owner=None,
            lease_until=None,
            finished_at=now,
            updated_at=now,
        )
        return True

    async def release(self, job_id: str, owner: str) -> bool:
        row = self._mine(job_id, owner)
        if row is None:
            return False
        self.rows[job_id] = replace(
            row, state="pending", owner=None, lease_until=None, attempts=max(row.attempts - 1, 0)
        )
        return True

    async def note_pending(self, job_id: str, message: str) -> bool:
        row = self.rows.get(job_id)
        if row is None or row.state != "pending":
            return False
        self.rows[job_id] = replace(row, message=message)
        self.pending_notes.append((job_id, message))
        return True

    async def give_up(self, seen: JobRow, error: str) -> bool:
        row = self.rows.get(seen.id)
        if row is None or (row.state, row.attempts) != (seen.state, seen.attempts):
            return False
        self.rows[row.id] = replace(row, state="failed", error=error, owner=None, finished_at=time.time())
        return True

    def cancel(self, job_id: str) -> None:
        """What `cancel_job` does to a job: its owner's next fenced write finds it gone."""
        self.rows[job_id] = replace(self.rows[job_id], state="cancelled", owner=None)


@dataclass
class FakeQueues:
    """Workspaces by name, each a job store; the workspace handed to handlers is its name."""

    stores: dict[str, FakeJobStore] = field(default_factory=dict)

    def workspace(self, name: str) -> FakeJobStore:
        return self.stores.setdefault(name, FakeJobStore())

    async def names(self) -> list[str]:
        return list(self.stores)

    def jobs(self, name: str) -> FakeJobStore:
        if name not in self.stores:
            raise GraphMissing(f"graph of {name} was deleted")
        return self.stores[name]

    async def open(self, name: str) -> str | None:
        return name if name in self.stores else None


@dataclass
class FakePresence:
    announced: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)

    async def announce(self, owner: str, kinds: Iterable[str], ttl_s: float) -> None:
        self.announced.append((owner, tuple(kinds)))

    async def withdraw(self, owner: str) -> None:
        self.withdrawn.append(owner)
