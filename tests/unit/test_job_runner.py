"""The job runner's own logic on in-memory stores (tests/fakes/job_store.py, whose contract
tests/integration/test_job_store.py checks against FalkorDB): slots, one job of a kind per workspace, oldest
first across workspaces, leases and attempts, refusals said once, failures recorded, database restarts waited
out, release at shutdown. The runner with real jobs on a real store: tests/integration/test_jobs.py."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

import pytest

from tests.fakes.job_store import FakePresence, FakeQueues, pending_job
from tests.helpers import until
from zapomni_core.errors import ZapomniError
from zapomni_core.jobs.service import JobWaits
from zapomni_core.kernel.runner import JobHandler, JobOutcome, JobRun, JobRunner, JobSettings
from zapomni_core.progress import Progress
from zapomni_db import DatabaseUnavailable, JobRow

pytestmark = pytest.mark.anyio

FAST = JobSettings(lease_s=30.0, poll_s=0.05, retry_s=0.01, slots=2)


@dataclass
class Handler:
    """A handler of `kind` whose jobs wait for `gate` (when given), then run `body`."""

    kind: str
    gate: asyncio.Event | None = None
    body: Callable[[JobRow, int], None] | None = None  # (job, call number): raise to fail the call
    refusal: ZapomniError | None = None
    calls: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)

    def refuses(self, job: JobRow) -> ZapomniError | None:
        return self.refusal

    async def run(self, job: JobRow, run: JobRun[str]) -> JobOutcome | None:
        self.calls.append(job.id)
        if job.id not in self.started:
            self.started.append(job.id)
        if self.gate is not None:
            await self.gate.wait()
        if self.body is not None:
            self.body(job, self.calls.count(job.id))
        return JobOutcome(state="completed", done=1, counts={"done": 1})


@asynccontextmanager
async def running(
    queues: FakeQueues, *handlers: JobHandler[str], settings: JobSettings = FAST, presence: FakePresence | None = None
) -> AsyncIterator[JobRunner[str]]:
    runner = JobRunner(queues, {h.kind: h for h in handlers}, settings, runners=presence)
    await runner.start()
    try:
        yield runner
    finally:
        await runner.stop()


def state(queues: FakeQueues, workspace: str, job_id: str) -> str:
    return queues.workspace(workspace).rows[job_id].state


async def test_a_small_job_starts_beside_a_large_one_but_never_beside_one_of_its_kind_in_its_workspace() -> None:
    queues = FakeQueues()
    home, work = queues.workspace("home"), queues.workspace("work")
    home.add(pending_job("walk", "ingest", created_at=1))
    home.add(pending_job("walk-2", "ingest", created_at=2))
    home.add(pending_job("add", "index", created_at=3))
    work.add(pending_job("work-walk", "ingest", created_at=4))
    gate = asyncio.Event()
    ingest, index = Handler("ingest", gate=gate), Handler("index")
    async with running(queues, ingest, index):
        await until(lambda: state(queues, "home", "add") == "completed", 5, "the add done beside the walk")
        await until(lambda: "work-walk" in ingest.started, 5, "the other workspace's walk started")
        assert state(queues, "home", "walk") == "running"
        assert state(queues, "home", "walk-2") == "pending"  # same kind, same workspace: after the first
        assert ingest.started == ["walk", "work-walk"]  # oldest first; two slots, both taken
        gate.set()
        await until(lambda: state(queues, "home", "walk-2") == "completed", 5, "the second walk done")
    assert ingest.started == ["walk", "work-walk", "walk-2"]
    assert {row.state for store in queues.stores.values() for row in store.rows.values()} == {"completed"}


async def test_a_dead_workers_job_is_taken_over_once_its_lease_lapses_and_given_up_after_its_attempts() -> None:
    queues = FakeQueues()
    jobs = queues.workspace("default")
    elsewhere = "another-host:4242:abcd1234"  # not a process of this machine: only its lease tells
    lapsed, now = time.time() - 1, time.time()
    jobs.add(replace(pending_job("lapsed", "index", created_at=1), state="running", owner=elsewhere,
                     attempts=1, lease_until=lapsed))  # fmt: skip
    jobs.add(replace(pending_job("doomed", "index", created_at=2), state="running", owner=elsewhere,
                     attempts=FAST.max_attempts, lease_until=lapsed))  # fmt: skip
    jobs.add(replace(pending_job("alive", "index", created_at=3), state="running", owner=elsewhere,
                     attempts=1, lease_until=now + 600))  # fmt: skip
    index = Handler("index")
    async with running(queues, index):
        await until(lambda: state(queues, "default", "lapsed") == "completed", 5, "the lapsed job taken over")
        await until(lambda: state(queues, "default", "doomed") == "failed", 5, "the job out of attempts given up")
        await asyncio.sleep(FAST.poll_s * 4)
    assert jobs.rows["lapsed"].attempts == 2
    gave_up = f"gave up after {FAST.max_attempts} attempts: each ended with its server stopping"
    assert jobs.rows["doomed"].error == gave_up
    assert jobs.rows["alive"].owner == elsewhere and jobs.rows["alive"].state == "running"  # its lease holds
    assert index.calls == ["lapsed"]


async def test_a_job_this_server_may_not_run_waits_for_another_and_says_why_once() -> None:
    queues = FakeQueues()
    jobs = queues.workspace("default")
    jobs.add(pending_job("walk", "ingest", created_at=1))
    ingest = Handler("ingest", refusal=ZapomniError("/srv/notes is outside the allowed roots", paths=["/srv/notes"]))
    async with running(queues, ingest):
        await until(lambda: bool(jobs.pending_notes), 5, "the reason said on the job")
        await asyncio.sleep(FAST.poll_s * 6)  # several more polls
    assert ingest.calls == [] and jobs.rows["walk"].state == "pending"
    assert len(jobs.pending_notes) == 1
    note = jobs.pending_notes[0][1]
    assert note.startswith(f"waiting for a server that may run it: the one on {socket.gethostname()} cannot (")
    assert "is outside the allowed roots" in note and "/srv/notes" not in note  # no server path for other hosts


async def test_stopping_hands_the_job_in_hand_back_and_withdraws_the_runner() -> None:
    queues = FakeQueues()
    jobs = queues.workspace("default")
    jobs.add(pending_job("walk", "ingest", created_at=1))
    presence = FakePresence()
    ingest = Handler("ingest", gate=asyncio.Event())  # never opened
    async with running(queues, ingest, presence=presence) as runner:
        await until(lambda: jobs.rows["walk"].state == "running", 5, "the walk started")
        owner = runner.owner
    back = jobs.rows["walk"]
    assert (back.state, back.owner, back.attempts) == ("pending", None, 0)
    assert presence.announced[0] == (owner, ("ingest",)) and presence.withdrawn == [owner]


async def test_a_failed_job_says_why_when_the_reason_is_ours_to_tell_and_internal_error_otherwise() -> None:
    queues = FakeQueues()
    jobs = queues.workspace("default")
    jobs.add(pending_job("told", "told", created_at=1))
    jobs.add(pending_job("internal", "internal", created_at=2))

    def told(job: JobRow, call: int) -> None:
        raise ZapomniError("the file changed while it was read: run the ingest again")

    def internal(job: JobRow, call: int) -> None:
        raise RuntimeError("secret detail")

    async with running(queues, Handler("told", body=told), Handler("internal", body=internal)):
        await until(lambda: {r.state for r in jobs.rows.values()} == {"failed"}, 5, "both jobs failed")
    assert jobs.rows["told"].error == "the file changed while it was read: run the ingest again"
    assert jobs.rows["internal"].error == "internal error (the server log has the details)"


async def test_a_database_restart_under_a_job_is_waited_out_and_the_job_resumes() -> None:
    queues = FakeQueues()
    jobs = queues.workspace("default")
    jobs.add(pending_job("add", "index", created_at=1))

    def flaky(job: JobRow, call: int) -> None:
        if call < 3:
            raise DatabaseUnavailable("the database is restarting")

    index = Handler("index", body=flaky)
    async with running(queues, index):
        await until(lambda: jobs.rows["add"].state == "completed", 5, "the job finished after the restart")
    assert index.calls == ["add", "add", "add"] and jobs.rows["add"].attempts == 1  # one claim, resumed twice


async def test_a_job_cancelled_while_it_runs_stops_at_its_next_report_and_writes_nothing_more() -> None:
    queues = FakeQueues()
    jobs = queues.workspace("default")
    jobs.add(pending_job("walk", "ingest", created_at=1))
    reports: list[int] = []

    class Reporting:
        kind = "ingest"

        def refuses(self, job: JobRow) -> ZapomniError | None:
            return None

        async def run(self, job: JobRow, run: JobRun[str]) -> JobOutcome | None:
            for done in range(1, 1000):
                await run.report(Progress(done, 1000, "files"))
                reports.append(done)
                await asyncio.sleep(0.01)
            return JobOutcome(state="completed", done=1000, counts={})

    async with running(queues, Reporting()):
        await until(lambda: len(reports) >= 3, 5, "progress reported")
        jobs.cancel("walk")
        stopped_at = len(reports)
        await asyncio.sleep(0.2)
    assert len(reports) <= stopped_at + 1  # at most the report in flight
    assert jobs.rows["walk"].state == "cancelled" and jobs.rows["walk"].done < 1000


def test_a_running_job_under_a_live_lease_waits_for_no_server_whatever_the_presence_key_says() -> None:
    """The presence key lapses while a full disk refuses its renewals; a job a server is running still has one."""
    nobody = JobWaits(runner_kinds=set(), now=1_000.0)
    running = replace(pending_job("add", "index", created_at=1), state="running", owner="here:1:ab",
                      attempts=1, lease_until=1_030.0)  # fmt: skip
    assert nobody.of(running) == (None, None)
    lapsed = replace(running, lease_until=999.0)
    assert nobody.of(lapsed)[0] == "server"
    assert nobody.of(pending_job("walk", "ingest", created_at=2))[0] == "server"
