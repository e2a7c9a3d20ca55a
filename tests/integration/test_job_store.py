"""The job store's contract, on the real FalkorDB store and on the in-memory fake the runner's logic tests use
(tests/fakes/job_store.py): the same calls, the same answers, so the fake cannot drift from what it stands in for."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.job_store import FakeJobStore, pending_job
from tests.helpers import graph_client
from zapomni_core import Settings
from zapomni_core.embedders.onnx_minilm import DIMENSION
from zapomni_core.kernel.stores import DurableJobs
from zapomni_db import JobRecord, JobRow, JobStore, SchemaSettings, migrate

pytestmark = pytest.mark.anyio


@dataclass
class Subject:
    store: DurableJobs
    queue: Callable[[str, float], Coroutine[Any, Any, JobRow]]  # (kind, created_at) -> the pending job


@pytest.fixture(params=["falkordb", "fake"])
async def subject(request: pytest.FixtureRequest) -> AsyncIterator[Subject]:
    if request.param == "fake":
        fake = FakeJobStore()

        async def queue_fake(kind: str, created_at: float) -> JobRow:
            return fake.add(pending_job(str(uuid.uuid4()), kind, created_at=created_at))

        yield Subject(fake, queue_fake)
        return
    settings: Settings = request.getfixturevalue("settings")
    async with graph_client(settings.data_dir, settings.graph_name) as client:
        await migrate(client, SchemaSettings(dimension=DIMENSION))
        real = JobStore(client)

        async def queue_real(kind: str, created_at: float) -> JobRow:
            job_id = str(uuid.uuid4())
            await real.create(JobRecord(id=job_id, kind=kind, created_at=created_at))
            row = await real.get(job_id)
            assert row is not None
            return row

        yield Subject(real, queue_real)


async def test_a_claim_is_won_once_and_counts_an_attempt(subject: Subject) -> None:
    seen = await subject.queue("index", 1.0)
    first = await subject.store.claim(seen, "a", 30.0)
    assert first is not None and (first.state, first.owner, first.attempts) == ("running", "a", 1)
    assert first.lease_until is not None and first.started_at is not None
    assert await subject.store.claim(seen, "b", 30.0) is None  # seen as pending: it no longer is
    assert (await subject.store.get(seen.id)) == first


async def test_writes_for_a_job_are_fenced_by_its_owner(subject: Subject) -> None:
    seen = await subject.queue("index", 1.0)
    assert await subject.store.claim(seen, "a", 30.0) is not None
    before = await subject.store.get(seen.id)
    assert not await subject.store.heartbeat(seen.id, "b", 30.0, done=5, total=9, message="not mine")
    assert not await subject.store.record_failure(seen.id, "b", "x: no")
    assert not await subject.store.finish(seen.id, "b", state="completed", done=9, counts_json="{}")
    assert not await subject.store.release(seen.id, "b")
    assert await subject.store.get(seen.id) == before


async def test_progress_only_moves_forward_and_failures_are_counted(subject: Subject) -> None:
    seen = await subject.queue("index", 1.0)
    assert await subject.store.claim(seen, "a", 30.0) is not None
    assert await subject.store.heartbeat(seen.id, "a", 30.0, done=7, total=10, message="busy")
    assert await subject.store.heartbeat(seen.id, "a", 30.0, done=3, total=10, message="late")
    assert await subject.store.record_failure(seen.id, "a", "note.md: unreadable")
    row = await subject.store.get(seen.id)
    assert row is not None and (row.done, row.total, row.message) == (7, 10, "late")
    assert (row.failed, row.failures) == (1, ["note.md: unreadable"])
    assert await subject.store.finish(seen.id, "a", state="completed_with_errors", done=10, counts_json='{"n": 9}')
    done = await subject.store.get(seen.id)
    assert done is not None and (done.state, done.owner) == ("completed_with_errors", None)
    assert done.counts_json == '{"n": 9}'
    assert not await subject.store.heartbeat(seen.id, "a", 30.0, done=10, total=10, message=None)  # ended


async def test_a_released_job_is_pending_again_with_its_attempt_given_back(subject: Subject) -> None:
    seen = await subject.queue("index", 1.0)
    assert await subject.store.claim(seen, "a", 30.0) is not None
    assert await subject.store.release(seen.id, "a")
    back = await subject.store.get(seen.id)
    assert back is not None and (back.state, back.owner, back.attempts) == ("pending", None, 0)
    again = await subject.store.claim(back, "b", 30.0)
    assert again is not None and (again.owner, again.attempts) == ("b", 1)


async def test_active_lists_what_may_be_claimed_oldest_first(subject: Subject) -> None:
    late_row = await subject.queue("b", 3.0)
    early_row = await subject.queue("a", 1.0)
    done_row = await subject.queue("c", 2.0)
    claimed = await subject.store.claim(done_row, "a", 30.0)
    assert claimed is not None
    assert await subject.store.finish(done_row.id, "a", state="completed", done=1, counts_json="{}")
    running = await subject.store.claim(late_row, "a", 30.0)
    assert [job.id for job in await subject.store.active()] == [early_row.id, late_row.id]
    assert running is not None and (await subject.store.active())[1].state == "running"


async def test_a_note_is_kept_only_on_a_waiting_job_and_giving_up_is_compare_and_set(subject: Subject) -> None:
    seen = await subject.queue("ingest", 1.0)
    assert await subject.store.note_pending(seen.id, "waiting for a server that may run it")
    noted = await subject.store.get(seen.id)
    assert noted is not None and noted.message == "waiting for a server that may run it"
    claimed = await subject.store.claim(noted, "a", 30.0)
    assert claimed is not None and claimed.message is None
    assert not await subject.store.note_pending(seen.id, "too late")
    assert not await subject.store.give_up(noted, "stale view")  # seen before the claim
    assert await subject.store.give_up(claimed, "gave up after 1 attempts")
    failed = await subject.store.get(seen.id)
    assert failed is not None and (failed.state, failed.owner) == ("failed", None)
    assert failed.error == "gave up after 1 attempts"
