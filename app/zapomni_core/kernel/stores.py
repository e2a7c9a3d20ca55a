"""What the job runner needs from storage, as Protocols: the seam between the runner's logic and FalkorDB.

`zapomni_db.JobStore`, `zapomni_db.JobRunners` and the workspace registry satisfy them in a server; the runner's
tests of its own logic (slots, fairness, leases, attempts, refusals, release at shutdown) run on in-memory fakes
(tests/fakes/job_store.py), while the stores' own behaviour stays tested against a real FalkorDB.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from zapomni_db import JobRow

W_co = TypeVar("W_co", covariant=True)


class DurableJobs(Protocol):
    """A workspace's durable jobs. Every write made for a claimed job is fenced: it changes nothing, and says
    False, once the job is no longer `running` under that owner."""

    async def get(self, job_id: str) -> JobRow | None: ...

    async def active(self, limit: int = 20) -> list[JobRow]:
        """Pending and running jobs, oldest first."""
        ...

    async def claim(self, seen: JobRow, owner: str, lease_s: float) -> JobRow | None:
        """`seen`, now running under `owner`, if it is still as it was seen (state and attempts); else None."""
        ...

    async def heartbeat(
        self, job_id: str, owner: str, lease_s: float, *, done: int, total: int | None, message: str | None
    ) -> bool: ...

    async def record_failure(self, job_id: str, owner: str, line: str, hidden: Sequence[str] = ()) -> bool: ...

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
    ) -> bool: ...

    async def release(self, job_id: str, owner: str) -> bool:
        """Back to pending, the claim's attempt not counted: the owner is stopping."""
        ...

    async def note_pending(self, job_id: str, message: str) -> bool: ...

    async def give_up(self, seen: JobRow, error: str) -> bool:
        """Failed without running, if still as seen (compare-and-set like `claim`)."""
        ...


class JobQueues(Protocol[W_co]):
    """Where a runner finds its jobs: the workspaces by name, each with its job store, and the workspace (of
    whatever type the handlers work on) a claimed job runs in."""

    async def names(self) -> list[str]: ...

    def jobs(self, name: str) -> DurableJobs:
        """The workspace's job store; raises zapomni_db.GraphMissing once the workspace is deleted."""
        ...

    async def open(self, name: str) -> W_co | None:
        """The workspace ready for a handler; None when it was deleted."""
        ...


class RunnerPresence(Protocol):
    """Where runners say they are there, so a job status can tell whether anything will run a pending job."""

    async def announce(self, owner: str, kinds: Iterable[str], ttl_s: float) -> None: ...

    async def withdraw(self, owner: str) -> None: ...
