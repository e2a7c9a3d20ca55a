"""The job runner: one worker per process claims durable jobs from every workspace and runs them.

It runs up to `slots` jobs at once, claiming the oldest claimable job of any workspace whenever a slot is
free, one job of a kind per workspace at a time: a large add queued behind a folder ingest starts beside it
instead of waiting for it to end (a 1 MB add waited over 5 minutes behind a 150-file ingest when jobs ran one
at a time; issue 38). Their embeddings share the background lane, which interactive requests always go ahead
of (decision 0039).

A job is claimed under a lease that the worker renews as it reports progress; a worker that dies
(kill -9) stops renewing, and any server on the store takes the job over once the lease lapses
(at once when the dead owner was a process on this machine). Handlers resume from what they
stored durably, and every write they make is fenced by the claim, so a job is never done twice.

Transient trouble does not fail a job: while the database restarts or the disk is full the job
waits and goes on afterwards. Anything else fails it with the reason recorded; a job that keeps
killing its worker is given up after `max_attempts` claims.

While writes are refused for want of space (this process's free-space guard, or the database's
keeper suspending writes on a full disk) the runner pauses: it claims nothing, and the job in hand
waits without redoing work until the disk has room. The reason cannot be written into the jobs
then (that is a write too): `JobService` shows it on every unfinished job from the disk's status.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import structlog

from zapomni_core.disk import DiskGuard, DiskStatus
from zapomni_core.errors import ShuttingDown, StorageFull, ZapomniError
from zapomni_core.kernel.stores import DurableJobs, JobQueues, RunnerPresence
from zapomni_core.processes import process_alive
from zapomni_core.progress import Progress
from zapomni_db import DatabaseError, DatabaseUnavailable, GraphMissing, JobRow, PersistenceFailed

log = structlog.get_logger(__name__)

W = TypeVar("W")  # the workspace handlers work in (zapomni_core.kernel.registry.Workspace in a server)

_HOST = socket.gethostname()
# How often a running job runner renews the key that says it is there (zapomni_db.runners).
PRESENCE_S = 5.0


@dataclass(frozen=True)
class JobSettings:
    lease_s: float = 30.0  # a dead worker's job is taken over this long after its last progress report
    poll_s: float = 2.0  # how often idle workers look for jobs other processes queued
    max_attempts: int = 3  # claims before a job that keeps dying with its worker is given up
    retry_s: float = 1.0  # first wait after a database failure (doubles, up to `lease_s / 3`)
    disk_wait_s: float = 5.0  # between free-space checks while a job waits for disk space
    slots: int = 2  # jobs one process runs at once


@dataclass(frozen=True)
class JobOutcome:
    """How a handler ended a job it did not complete in its own last write."""

    state: str  # completed | completed_with_errors | failed | cancelled
    done: int
    counts: Mapping[str, int]
    error: str | None = None
    message: str | None = None  # what the finished job's status should say beside its counts


class JobLost(ZapomniError):
    """The job was cancelled or taken over by another worker: stop, and write nothing more."""


class JobHandler(Protocol[W]):
    kind: str

    def refuses(self, job: JobRow) -> ZapomniError | None:
        """Why this process must leave `job` to another server (a path outside its allowed roots); None: it may
        run it. Replicas of one store may be configured differently."""

    async def run(self, job: JobRow, run: JobRun[W]) -> JobOutcome | None:
        """Do the job, resuming from whatever an earlier attempt stored; None when the handler's own
        last write completed it."""


class JobRun(Generic[W]):
    """What a handler gets: the job's workspace, its claim, and a way to report progress."""

    def __init__(self, job: JobRow, workspace: W, jobs: DurableJobs, owner: str, settings: JobSettings) -> None:
        self.job = job
        self.workspace = workspace
        self.jobs = jobs  # the workspace's job store, where the claim is fenced
        self.owner = owner
        self.settings = settings
        self.progress = Progress(job.done, job.total, job.unit)

    async def report(self, progress: Progress) -> None:
        """Record progress and renew the lease; raises JobLost when the job is no longer ours to run."""
        self.progress = progress
        alive = await self.jobs.heartbeat(
            self.job.id,
            self.owner,
            self.settings.lease_s,
            done=progress.done,
            total=progress.total,
            message=progress.message,
        )
        if not alive:
            raise JobLost(self.job.id)

    async def fail_item(self, item: str, reason: str, hidden: Sequence[str] = ()) -> None:
        """Record a failed item; `hidden`: the server paths and hosts its line names (kept from remote clients)."""
        log.warning("job.item_failed", job_id=self.job.id, item=item, reason=reason)
        if not await self.jobs.record_failure(self.job.id, self.owner, f"{item}: {reason}", hidden):
            raise JobLost(self.job.id)


class JobRunner(Generic[W]):
    def __init__(
        self,
        queues: JobQueues[W],
        handlers: Mapping[str, JobHandler[W]],
        settings: JobSettings,
        disk: DiskGuard | None = None,
        runners: RunnerPresence | None = None,
    ) -> None:
        self._queues = queues
        self._handlers = dict(handlers)
        self.settings = settings
        self._disk = disk
        self._runners = runners  # where this runner says it is there, while it runs
        self.paused: str | None = None  # why no job runs now (the disk), for the log
        self.owner = f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._running: dict[str, asyncio.Task[None]] = {}  # by job id: the jobs in hand
        self._busy: dict[str, tuple[str, str]] = {}  # by job id: the workspace and kind of each job in hand
        self._left: dict[str, set[str]] = {}  # by workspace: the jobs this process refused and said so on
        self._presence: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self) -> None:
        if self._runners is not None:  # said before the first job status is asked for, then renewed
            await self._announce_once(self._runners)
            self._presence = asyncio.create_task(self._announce(self._runners), name="zapomni-jobs-presence")
        self._task = asyncio.create_task(self._loop(), name="zapomni-jobs")

    async def _announce(self, runners: RunnerPresence) -> None:
        """Say every PRESENCE_S that this process runs jobs of its kinds; said for 3 × as long, so a killed
        process stops counting soon after, and a busy one never misses a renewal."""
        while True:
            await asyncio.sleep(PRESENCE_S)
            await self._announce_once(runners)

    async def _announce_once(self, runners: RunnerPresence) -> None:
        try:
            await runners.announce(self.owner, self._handlers, PRESENCE_S * 3)
        except DatabaseError as exc:  # a database refusing writes (a full disk): said again at the next turn
            log.info("jobs.presence_not_renewed", error=str(exc))

    def wake(self) -> None:
        """A job was queued here: look now instead of at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop working; a job in hand goes back to pending so the next server starts it at once."""
        if self._task is None:
            return
        # The flag ends the loop even if the cancellation is lost: on 3.11 one that lands as the idle
        # wait times out is swallowed (seen: `stop` then waited for ever).
        self._stopping = True
        self._wake.set()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        running = list(self._running.values())
        for task in running:  # each hands its job back (`_execute`)
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if self._presence is not None and self._runners is not None:
            self._presence.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._presence
            self._presence = None
            with contextlib.suppress(DatabaseError):  # else the key expires by itself
                await self._runners.withdraw(self.owner)

    async def _loop(self) -> None:
        while not self._stopping:
            try:
                full = len(self._running) >= self.settings.slots
                ran = False if full or await self._pause_for_disk() else await self._start_next()
            except asyncio.CancelledError:
                raise
            except (StorageFull, PersistenceFailed) as exc:  # a claim refused: the disk filled meanwhile
                self._pause(str(exc))
                ran = False
            except DatabaseUnavailable:
                log.warning("jobs.database_unavailable", retry_in_s=self.settings.poll_s)
                ran = False
            except GraphMissing:  # a workspace deleted between listing its jobs and claiming one
                ran = True
            except Exception:  # the worker outlives any one failure; the next poll tries again
                log.exception("jobs.loop_failed")
                ran = False
            if not ran:
                await self._idle()

    async def _idle(self) -> None:
        """Until a job is queued here, one in hand ends, or the next poll."""
        waker = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait(
                [waker, *self._running.values()], timeout=self.settings.poll_s, return_when="FIRST_COMPLETED"
            )
        finally:
            waker.cancel()
        self._wake.clear()

    async def _disk_status(self) -> DiskStatus | None:
        return await asyncio.to_thread(self._disk.status) if self._disk is not None else None

    async def _pause_for_disk(self) -> bool:
        """True (paused) while writes are refused for want of space; logs the pause and the resumption once."""
        status = await self._disk_status()
        reason = status.pause_reason if status is not None else None
        if reason is not None:
            self._pause(reason)
            return True
        if self.paused is not None:
            log.info("jobs.resumed", after=self.paused)
            self.paused = None
        return False

    def _pause(self, reason: str) -> None:
        if self.paused is None:
            log.warning("jobs.paused", reason=reason)
        self.paused = reason

    async def _wait_for_room(self) -> None:
        """Until writes are no longer refused for want of space: checked every `disk_wait_s`."""
        await asyncio.sleep(self.settings.disk_wait_s)
        while await self._pause_for_disk():
            await asyncio.sleep(self.settings.disk_wait_s)

    async def _start_next(self) -> bool:
        """Claim the oldest claimable job of any workspace and start it in a free slot; False when there was none."""
        queued = [(name, seen) for name in await self._queues.names() for seen in await self._active(name)]
        for name, seen in sorted(queued, key=lambda pair: pair[1].created_at):
            if (name, seen.kind) in self._busy.values():
                # One job of a kind per workspace at a time here, as before slots: two graph builds over the
                # same pending memories would both extract them.
                continue
            jobs = self._queues.jobs(name)
            if seen.state == "running" and seen.attempts >= self.settings.max_attempts:
                await jobs.give_up(seen, f"gave up after {seen.attempts} attempts: each ended with its server stopping")
                log.error("job.given_up", workspace=name, job_id=seen.id, attempts=seen.attempts)
                continue
            job = await jobs.claim(seen, self.owner, self.settings.lease_s)
            if job is None:
                continue  # another worker was quicker
            workspace = await self._queues.open(name)
            if workspace is None:  # the workspace was deleted meanwhile, and its jobs with it
                continue
            task = asyncio.create_task(self._execute(job, name, workspace, jobs), name=f"zapomni-job-{job.id}")
            self._running[job.id] = task
            self._busy[job.id] = (name, job.kind)
            task.add_done_callback(functools.partial(self._ended, job.id))
            return True
        return False

    def _ended(self, job_id: str, task: asyncio.Task[None]) -> None:
        self._running.pop(job_id, None)
        self._busy.pop(job_id, None)
        if not task.cancelled() and task.exception() is not None:  # `_execute` records every failure it can
            log.error("job.ended_unrecorded", job_id=job_id, error=repr(task.exception()))

    async def _active(self, workspace: str) -> list[JobRow]:
        """The workspace's jobs this runner may claim now (not those it runs already, nor those it must leave)."""
        try:
            jobs = self._queues.jobs(workspace)
            listed = await jobs.active()
        except GraphMissing:  # deleted since it was listed
            self._left.pop(workspace, None)
            return []
        left = self._left.setdefault(workspace, set())
        left &= {job.id for job in listed}  # a job that ended is no longer ours to say anything of
        claimable = []
        for job in listed:
            if job.id in self._running or not self._claimable(job):
                continue
            refused = self._handlers[job.kind].refuses(job)
            if refused is None:
                claimable.append(job)
            elif job.id not in left and job.state == "pending" and await self._leave(jobs, job, refused):
                left.add(job.id)
        return claimable

    async def _leave(self, jobs: DurableJobs, job: JobRow, refused: ZapomniError) -> bool:
        """Say on a pending job why this server leaves it to another (without this server's paths); False when it
        no longer waits."""
        message = f"waiting for a server that may run it: the one on {_HOST} cannot ({refused.public()})"
        if not await jobs.note_pending(job.id, message):
            return False
        log.info("job.left_to_another_server", job_id=job.id, kind=job.kind, reason=str(refused))
        return True

    async def run_now(self, workspace_name: str, job_id: str) -> bool:
        """Run one job in this process now (a command that reads files itself); False when it is not ours to run
        (another worker holds it, it ended, or this process has no handler for it)."""
        workspace = await self._queues.open(workspace_name)
        jobs = self._queues.jobs(workspace_name)
        seen = await jobs.get(job_id) if workspace else None
        if workspace is None or seen is None or seen.state not in ("pending", "running") or not self._claimable(seen):
            return False
        if self._handlers[seen.kind].refuses(seen) is not None:
            return False
        job = await jobs.claim(seen, self.owner, self.settings.lease_s)
        if job is None:
            return False
        await self._execute(job, workspace_name, workspace, jobs)
        return True

    def _claimable(self, job: JobRow) -> bool:
        if job.kind not in self._handlers:
            return False
        if job.state == "pending":
            return True
        return (job.lease_until or 0.0) < time.time() or _owner_gone(job.owner)

    async def _execute(self, job: JobRow, name: str, workspace: W, jobs: DurableJobs) -> None:
        handler = self._handlers[job.kind]
        run = JobRun(job, workspace, jobs, self.owner, self.settings)
        started = time.perf_counter()
        log.info("job.started", workspace=name, job_id=job.id, kind=job.kind, attempt=job.attempts)
        keep_alive = asyncio.create_task(self._keep_alive(run), name=f"zapomni-job-lease-{job.id}")
        try:
            try:
                outcome = await self._until_done(handler, job, run)
            finally:
                keep_alive.cancel()
            if outcome is not None:
                await jobs.finish(
                    job.id,
                    self.owner,
                    state=outcome.state,
                    done=outcome.done,
                    counts_json=json.dumps(dict(outcome.counts), sort_keys=True),
                    error=outcome.error,
                    message=outcome.message,
                )
            log.info(
                "job.finished",
                workspace=name,
                job_id=job.id,
                kind=job.kind,
                state=outcome.state if outcome else "completed",
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        except JobLost:
            log.info("job.lost", workspace=name, job_id=job.id, reason="cancelled or taken over")
        except GraphMissing:  # its workspace was deleted: writing anything would bring it back
            log.info("job.dropped", workspace=name, job_id=job.id, reason="the workspace was deleted")
        except (asyncio.CancelledError, ShuttingDown) as exc:
            with contextlib.suppress(Exception):
                await asyncio.shield(jobs.release(job.id, self.owner))
            log.info("job.released", workspace=name, job_id=job.id, reason="the server is stopping")
            if isinstance(exc, asyncio.CancelledError):
                raise
        except Exception as exc:
            reason = str(exc) if isinstance(exc, ZapomniError) else "internal error (the server log has the details)"
            hidden = (*exc.paths, *exc.hosts) if isinstance(exc, ZapomniError) else ()
            log.exception("job.failed", workspace=name, job_id=job.id, kind=job.kind)
            with contextlib.suppress(Exception):
                await jobs.finish(
                    job.id,
                    self.owner,
                    state="failed",
                    done=run.progress.done,
                    counts_json="{}",
                    error=reason,
                    hidden=hidden,
                )

    async def _keep_alive(self, run: JobRun[W]) -> None:
        """Renew the lease (with the latest progress) while the handler works, however long one step takes."""
        while True:
            await asyncio.sleep(self.settings.lease_s / 3)
            try:
                await run.report(run.progress)
            except (JobLost, GraphMissing):
                return  # the handler's next fenced write finds out too, and stops
            except (DatabaseUnavailable, PersistenceFailed):
                continue

    async def _until_done(self, handler: JobHandler[W], job: JobRow, run: JobRun[W]) -> JobOutcome | None:
        """Run the handler, and again (resuming) after each database restart or wait for disk space."""
        delay = self.settings.retry_s
        while True:
            try:
                return await handler.run(job, run)
            except DatabaseUnavailable:
                log.warning("job.database_unavailable", job_id=job.id, retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.lease_s / 3)
            except (StorageFull, PersistenceFailed) as exc:  # the guard's refusal, or the database's own
                log.warning("job.waiting_for_disk", job_id=job.id, reason=str(exc))
                reason = str(exc) if isinstance(exc, StorageFull) else "the database cannot save to its disk"
                self._pause(reason)
                # Recorded while the database still takes writes (the guard refused, not the database).
                with contextlib.suppress(DatabaseUnavailable, PersistenceFailed):
                    await run.report(run.progress.with_message(f"paused: {reason}"))
                await self._wait_for_room()


def _owner_gone(owner: str | None) -> bool:
    """True when the job's owner was a process on this machine that no longer exists."""
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != _HOST or not pid.isdigit() or int(pid) == os.getpid():
        return False
    return not process_alive(int(pid))
