"""Large adds through durable jobs, on the real store and embedder: answered at once, indexed in the
background, failures recorded, deletes and cancellations leaving nothing behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ollama_server import FakeOllama
from tests.helpers import (
    SMALL_CHUNKS,
    chunk_node_count,
    configured,
    fill_disk,
    logged_events,
    mounted_tmpfs,
    open_core,
    until,
)
from zapomni_core import Settings, ZapomniCore
from zapomni_core.context import RequestContext
from zapomni_core.errors import Conflict
from zapomni_core.files.requests import IngestPathRequest
from zapomni_core.jobs import CancelJobRequest, JobInfo, JobStatusRequest, ListJobsRequest
from zapomni_core.memories.requests import (
    AddMemoryRequest,
    DeleteMemoryRequest,
    GetMemoryRequest,
    ListMemoriesRequest,
    MemoryMetadata,
    SearchRequest,
    UpdateMemoryRequest,
)
from zapomni_core.progress import Progress

pytestmark = pytest.mark.anyio

THRESHOLD = 4096


def long_text(topic: str, paragraphs: int) -> str:
    return "\n\n".join(
        f"Note {i} on {topic}: the {topic} survey counted {i * 7} sightings near station {i % 13}, "
        f"and the field team logged weather, tide and the {topic} behaviour in detail for later review."
        for i in range(paragraphs)
    )


def job_settings(data_dir: Path, **extra: object) -> Settings:
    return Settings.from_variables(
        ZAPOMNI_DATA_DIR=data_dir,
        ZAPOMNI_BACKGROUND_ADD_BYTES=THRESHOLD,
        ZAPOMNI_JOB_POLL_S=0.2,
        LOG_LEVEL="WARNING",
        **extra,
    )


@asynccontextmanager
async def job_core(data_dir: Path, **extra: object) -> AsyncIterator[ZapomniCore]:
    async with open_core(job_settings(data_dir, **extra)) as (core, _info):
        yield core


async def wait_job(core: ZapomniCore, job_id: str) -> JobInfo:
    info = await core.jobs.status(JobStatusRequest(job_id=job_id, wait_s=50))
    assert info.state not in ("pending", "running"), info
    return info


async def wait_started(core: ZapomniCore, job_id: str) -> JobInfo:
    """Until the job has stored some chunks (and has more to do)."""
    for _ in range(600):
        info = await core.jobs.status(JobStatusRequest(job_id=job_id))
        if info.progress.done > 0 or info.state not in ("pending", "running"):
            return info
        await asyncio.sleep(0.05)
    raise AssertionError("the job never started")


# What the worker logs when it lets go of a job, whichever way the job ended.
LET_GO = {"job.finished", "job.lost", "job.failed", "job.released"}


async def worker_let_go(events: Sequence[Mapping[str, Any]], job_id: str) -> None:
    """Until the worker has stopped working on `job_id`: past this, nothing more of it can be written."""
    await until(lambda: any(e["event"] in LET_GO and e.get("job_id") == job_id for e in events), what="the worker")


async def test_a_large_add_answers_at_once_and_becomes_searchable_when_its_job_completes(data_dir: Path) -> None:
    async with job_core(data_dir, **SMALL_CHUNKS) as core:
        small = await core.memories.add(AddMemoryRequest(text="Kestrels hover over the motorway verge."))
        assert small.status == "indexed" and small.job_id is None

        added = await core.memories.add(
            AddMemoryRequest(text=long_text("otter", 30), metadata=MemoryMetadata(tags=["survey"]))
        )
        assert added.status == "indexing" and added.job_id and added.chunks_created == 0
        shown = await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))
        assert (shown.status, shown.job_id, shown.chunk_count) == ("indexing", added.job_id, 0)
        listed = {m.memory_id: m.status for m in (await core.memories.page(ListMemoriesRequest())).memories}
        assert listed == {small.memory_id: "indexed", added.memory_id: "indexing"}

        # Adding the same text again while it is indexed is deduplicated to the same memory and job.
        again = await core.memories.add(AddMemoryRequest(text=long_text("otter", 30)))
        assert (again.memory_id, again.deduplicated, again.status, again.job_id) == (
            added.memory_id,
            True,
            "indexing",
            added.job_id,
        )
        with pytest.raises(Conflict, match="indexing"):
            await core.memories.update(UpdateMemoryRequest(memory_id=added.memory_id, text="changed"))

        info = await wait_job(core, added.job_id)
        assert info.state == "completed" and info.error is None
        assert info.progress.done == info.progress.total == info.counts["chunks"] > 10
        assert (info.memory_id, info.kind, info.attempts) == (added.memory_id, "index_memory", 1)

        detail = await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))
        assert (detail.status, detail.chunk_count) == ("indexed", info.counts["chunks"])
        hits = (await core.memories.search(SearchRequest(query="otter sightings near station 5"))).results
        assert hits and hits[0].memory_id == added.memory_id
        assert await chunk_node_count(data_dir) == info.counts["chunks"] + 1  # nothing staged is left over
        stats = await core.workspaces.stats()
        assert stats.jobs == {"completed": 1} and stats.total_chunks == info.counts["chunks"] + 1
        jobs = await core.jobs.list(ListJobsRequest(state="completed"))
        assert [j.job_id for j in jobs.jobs] == [added.job_id]


async def test_job_status_sends_progress_while_it_waits(data_dir: Path) -> None:
    seen: list[Progress] = []

    async def sink(progress: Progress) -> None:
        seen.append(progress)

    async with job_core(data_dir, **SMALL_CHUNKS) as core:
        added = await core.memories.add(AddMemoryRequest(text=long_text("heron", 150)))
        assert added.job_id is not None
        info = await core.jobs.status(
            JobStatusRequest(job_id=added.job_id, wait_s=50), RequestContext(progress_sink=sink)
        )
    assert info.state == "completed"
    assert len(seen) >= 2 and all(p.unit == "chunks" for p in seen)
    done = [p.done for p in seen]
    # Reported while it ran (a count between none and all), never backwards; the last report may come once
    # every chunk is staged and before the job publishes them.
    assert done == sorted(done) and any(0 < d < info.counts["chunks"] for d in done)
    assert {p.total for p in seen if p.done} == {info.counts["chunks"]}


async def test_deleting_a_memory_mid_indexing_cancels_its_job_and_leaves_nothing(data_dir: Path) -> None:
    with logged_events() as events:
        async with job_core(data_dir, **SMALL_CHUNKS) as core:
            added = await core.memories.add(AddMemoryRequest(text=long_text("puffin", 60)))
            assert added.job_id is not None
            started = await wait_started(core, added.job_id)
            assert started.state == "running" and 0 < started.progress.done < (started.progress.total or 0)

            deleted = await core.memories.delete(DeleteMemoryRequest(memory_ids=[added.memory_id]))
            assert deleted.memory_ids == [added.memory_id]
            info = await wait_job(core, added.job_id)
            assert (info.state, info.error) == ("cancelled", "the memory was deleted")
            await worker_let_go(events, added.job_id)  # it finished the slice it was embedding, and wrote nothing
            assert await chunk_node_count(data_dir) == 0
            assert (await core.memories.search(SearchRequest(query="puffin sightings"))).count == 0
            assert (await core.workspaces.stats()).total_memories == 0


async def test_cancel_job_withdraws_the_add(data_dir: Path) -> None:
    with logged_events() as events:
        async with job_core(data_dir, **SMALL_CHUNKS) as core:
            added = await core.memories.add(AddMemoryRequest(text=long_text("walrus", 60)))
            assert added.job_id is not None
            await wait_started(core, added.job_id)
            result = await core.jobs.cancel(CancelJobRequest(job_id=added.job_id))
            assert result.cancelled and result.memory_deleted and result.job.state == "cancelled"
            await worker_let_go(events, added.job_id)
            assert await chunk_node_count(data_dir) == 0
            assert (await core.memories.page(ListMemoriesRequest())).count == 0
            again = await core.jobs.cancel(CancelJobRequest(job_id=added.job_id))
            assert not again.cancelled and not again.memory_deleted and again.job.state == "cancelled"


async def test_an_embedder_failure_fails_the_job_visibly_and_adding_again_retries(data_dir: Path) -> None:
    with FakeOllama(models=["nomic-embed-text"]) as fake:
        extra = {"ZAPOMNI_EMBEDDER": "ollama", "OLLAMA_HOST": fake.url, "ZAPOMNI_OLLAMA_RETRIES": 0}
        async with job_core(data_dir, **extra) as core:
            fake.fail_next(10_000)
            text = long_text("gannet", 40)
            added = await core.memories.add(AddMemoryRequest(text=text))
            assert added.job_id is not None
            info = await wait_job(core, added.job_id)
            assert info.state == "failed" and info.error and info.error.startswith("embedding chunks 0-")
            assert "HTTP 503" in info.error and info.failed_items == 1 and info.failures[0].startswith("chunks 0-")
            shown = await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))
            assert shown.status == "failed"
            assert (await core.workspaces.stats()).jobs == {"failed": 1}
            assert [j.job_id for j in (await core.jobs.list(ListJobsRequest(state="failed"))).jobs] == [added.job_id]

            fake.fail_next(0)
            retried = await core.memories.add(AddMemoryRequest(text=text))
            assert retried.memory_id == added.memory_id and retried.deduplicated and retried.status == "indexing"
            assert retried.job_id and retried.job_id != added.job_id
            assert (await wait_job(core, retried.job_id)).state == "completed"
            assert (await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))).status == "indexed"
            assert (await core.memories.search(SearchRequest(query="gannet survey"))).results[
                0
            ].memory_id == added.memory_id


async def test_a_job_pauses_on_a_full_disk_and_resumes_when_space_is_freed() -> None:
    with mounted_tmpfs("96m") as disk, logged_events() as events:
        async with job_core(disk, ZAPOMNI_MIN_FREE_MB=16, **SMALL_CHUNKS) as core:
            added = await core.memories.add(AddMemoryRequest(text=long_text("plover", 140)))
            assert added.job_id is not None
            await wait_started(core, added.job_id)
            filler = fill_disk(disk, leave_bytes=8 * 1024 * 1024)  # below the 16 MB the guard keeps free
            try:
                for _ in range(600):
                    paused = await core.jobs.status(JobStatusRequest(job_id=added.job_id))
                    if (paused.message or "").startswith("paused:"):
                        break
                    assert paused.state == "running", paused
                    await asyncio.sleep(0.05)
                assert paused.message and "ZAPOMNI_MIN_FREE_MB" in paused.message and str(disk) in paused.message
                # The guard refused the worker's next write (the log says so; the job can say "paused" before it,
                # from the runner's own look at the disk), and the worker stores nothing while it waits: it looks
                # at the disk again every 5 s and finds it still too full.
                await until(lambda: any(e["event"] == "job.waiting_for_disk" for e in events), what="the refused write")
                await asyncio.sleep(6)
                still = await core.jobs.status(JobStatusRequest(job_id=added.job_id))
                assert (still.state, still.progress.done) == ("running", paused.progress.done), "nothing done unstored"
                assert (await core.memories.search(SearchRequest(query="anything"))).count == 0  # reads go on
            finally:
                filler.unlink()
            info = await wait_job(core, added.job_id)
            assert info.state == "completed" and info.message is None
            assert (await core.memories.get(GetMemoryRequest(memory_id=added.memory_id))).chunk_count == info.counts[
                "chunks"
            ]
            assert await chunk_node_count(disk) == info.counts["chunks"]


async def test_a_job_says_it_waits_for_a_server_only_while_none_runs_jobs(settings: Settings) -> None:
    """A command (no job runner) queues the graph's extraction; a server that starts takes it; one that stops
    is no longer counted."""
    auto = Settings.from_variables(
        ZAPOMNI_DATA_DIR=settings.data_dir, GRAPH_NAME=settings.graph_name, ZAPOMNI_GRAPH_AUTO="true"
    )
    async with open_core(auto, background_jobs=False) as (command, _info):
        await command.memories.add(AddMemoryRequest(text="Maria Garcia works for Siemens in Berlin."))
        (job,) = (await command.jobs.list(ListJobsRequest())).jobs
        assert (job.kind, job.state, job.waiting_for) == ("build_graph", "pending", "server")
        assert job.message is not None and "no `zapomni serve` runs jobs" in job.message
        async with open_core(auto) as (server, _info):
            done = await server.jobs.status(JobStatusRequest(job_id=job.job_id, wait_s=50))
            assert done.state == "completed" and done.waiting_for is None
            await server.memories.add(AddMemoryRequest(text="Tom Becker founded Acme Robotics."))
        # The server stopped: the next add's job waits for a server again, and says so at once.
        await command.memories.add(AddMemoryRequest(text="Lena Vogel was hired by Zalando."))
        pending = [j for j in (await command.jobs.list(ListJobsRequest())).jobs if j.state == "pending"]
        assert pending and all(j.waiting_for == "server" for j in pending)


async def test_a_small_job_runs_beside_a_large_one_instead_of_waiting_for_it(
    settings: Settings, tmp_path: Path
) -> None:
    """Issue 38 #2: a large add queued behind a long folder ingest is indexed while the ingest still runs (one job
    at a time, it waited for the whole ingest)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        (folder / f"note-{i:03}.md").write_text(f"# Note {i}\n\n{long_text(f'heron {i}', 6)}\n")
    aliases = {"ZAPOMNI_ALLOWED_ROOTS": str(tmp_path), "ZAPOMNI_BACKGROUND_ADD_BYTES": str(THRESHOLD)}
    async with open_core(configured(settings, ZAPOMNI_JOB_POLL_S="0.2", **aliases)) as (core, _info):
        ingest = await core.files.ingest(IngestPathRequest(path=str(folder)))
        assert (await wait_started(core, ingest.job_id)).state == "running"
        added = await core.memories.add(AddMemoryRequest(text=long_text("otter", 40)))
        assert added.job_id is not None
        indexed = await wait_job(core, added.job_id)
        walking = await core.jobs.status(JobStatusRequest(job_id=ingest.job_id))
        assert indexed.state == "completed", indexed
        assert walking.state == "running" and walking.progress.done < 40, walking
        while walking.state in ("pending", "running"):  # a loaded machine walks slowly: ~0.5 s a file
            walking = await core.jobs.status(JobStatusRequest(job_id=ingest.job_id, wait_s=50))
        assert walking.counts["added"] == 40, walking
