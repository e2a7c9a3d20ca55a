"""Large adds as durable jobs through the official MCP client: answered at once, progress notifications,
searches that do not wait for the ingestion, and jobs that survive a kill -9 of the server or the database."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.helpers import SMALL_CHUNKS, chunk_node_count, server_pids, wait_for
from tests.processes import RawServer, call, call_with_progress, mcp_session, raw_call

pytestmark = pytest.mark.anyio


def document(topic: str, kilobytes: int) -> str:
    """About `kilobytes` KB of prose on `topic` (a large add: above the 32 KB default threshold when ≥ 33)."""
    paragraphs: list[str] = []
    i = 0
    while sum(len(p) + 2 for p in paragraphs) < kilobytes * 1024:
        paragraphs.append(
            f"Entry {i} of the {topic} log: crews measured {i * 3} units at site {i % 17}, compared them with "
            f"the previous season and wrote down what the {topic} data suggests for planning."
        )
        i += 1
    return "\n\n".join(paragraphs)


async def job(session: ClientSession, job_id: str, **arguments: Any) -> dict[str, Any]:
    return await call(session, "job_status", {"job_id": job_id, **arguments})


async def ended(session: ClientSession, job_id: str) -> dict[str, Any]:
    """The job's status once it has ended, waited for 50 s at a time for as long as each wait sees it advance:
    a loaded 2-core CI machine embeds several times slower than a quiet one, and a stuck job still fails."""
    done = -1
    while (status := await job(session, job_id, wait_s=50))["state"] in ("pending", "running"):
        assert status["progress"]["done"] > done, f"the job did not advance in 50 s: {status}"
        done = status["progress"]["done"]
    return status


async def test_a_large_add_is_answered_at_once_and_searches_do_not_wait_for_its_indexing(data_dir: Path) -> None:
    async with mcp_session(data_dir, errlog=None, **SMALL_CHUNKS) as session:
        small = await call(session, "add_memory", {"text": "The spare key is under the blue flowerpot."})
        added = await call(session, "add_memory", {"text": document("glacier", 40)})
        assert added["status"] == "indexing" and added["chunks_created"] == 0 and added["job_id"]

        # While the job embeds, a search answers from what is indexed; the job is still running after it.
        found = await call(session, "search_memory", {"query": "where is the spare key"})
        during = await job(session, added["job_id"])
        assert [hit["memory_id"] for hit in found["results"]] == [small["memory_id"]]
        assert during["state"] in ("pending", "running"), "the job ended before the search could overlap it"
        shown = await call(session, "get_memory", {"memory_id": added["memory_id"]})
        assert shown["status"] == "indexing" and shown["job_id"] == added["job_id"]

        result, updates = await call_with_progress(session, "job_status", {"job_id": added["job_id"], "wait_s": 50})
        final = result.structured_content
        assert not result.is_error and final is not None
        assert final["state"] == "completed" and final["counts"]["chunks"] > 64
        assert len(updates) >= 2, updates
        assert [u[0] for u in updates] == sorted(u[0] for u in updates)
        assert all(u[1] == final["counts"]["chunks"] for u in updates if u[0] > 0)
        assert all(u[2] and "chunks" in u[2] for u in updates)

        hits = await call(session, "search_memory", {"query": "glacier log site 5 measured units"})
        assert hits["results"][0]["memory_id"] == added["memory_id"]
        listed = await call(session, "list_jobs", {})
        assert [(j["job_id"], j["state"]) for j in listed["jobs"]] == [(added["job_id"], "completed")]
        assert (await call(session, "get_stats", {}))["jobs"] == {"completed": 1}


async def test_a_job_killed_with_its_server_is_finished_by_the_next_server(data_dir: Path, tmp_path: Path) -> None:
    server = RawServer(data_dir, tmp_path / "first.log", extra_env=SMALL_CHUNKS)
    try:
        server.initialize()
        before = raw_call(server, 2, "add_memory", {"text": "Acknowledged before the crash."})
        added = raw_call(server, 3, "add_memory", {"text": document("estuary", 40)})
        request_id = 4
        while (progress := raw_call(server, request_id, "job_status", {"job_id": added["job_id"]}))["progress"][
            "done"
        ] < 32:
            assert progress["state"] in ("pending", "running"), progress
            request_id += 1
            time.sleep(0.2)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()
    finally:
        server.kill()
    assert progress["progress"]["done"] < progress["progress"]["total"], "the job finished before the kill"
    assert wait_for(lambda: not server_pids(data_dir)), "the database stops once its last client is gone"

    async with mcp_session(data_dir, errlog=None, **SMALL_CHUNKS) as session:
        final = await ended(session, added["job_id"])
        assert final["state"] == "completed" and final["attempts"] == 2
        chunks = final["counts"]["chunks"]
        memory = await call(session, "get_memory", {"memory_id": added["memory_id"]})
        assert (memory["status"], memory["chunk_count"]) == ("indexed", chunks)
        stats = await call(session, "get_stats", {})
        assert stats["total_memories"] == 2 and stats["total_chunks"] == chunks + 1
        assert await chunk_node_count(data_dir) == chunks + 1, "no chunk stored twice, none left staged"
        hits = await call(session, "search_memory", {"query": "estuary log site 3"})
        assert hits["results"][0]["memory_id"] == added["memory_id"]
        kept = await call(session, "search_memory", {"query": "acknowledged before the crash"})
        assert kept["results"][0]["memory_id"] == before["memory_id"]


async def test_a_job_goes_on_after_the_database_is_killed_under_it(data_dir: Path) -> None:
    async with mcp_session(data_dir, errlog=None, **SMALL_CHUNKS) as session:
        added = await call(session, "add_memory", {"text": document("delta", 40)})
        while (progress := await job(session, added["job_id"]))["progress"]["done"] < 32:
            assert progress["state"] in ("pending", "running"), progress
            time.sleep(0.2)
        (pid,) = server_pids(data_dir)
        os.kill(pid, signal.SIGKILL)  # the keeper starts it again; the job waits for it and resumes

        final = await ended(session, added["job_id"])
        assert final["state"] == "completed", final
        chunks = final["counts"]["chunks"]
        memory = await call(session, "get_memory", {"memory_id": added["memory_id"]})
        assert (memory["status"], memory["chunk_count"]) == ("indexed", chunks)
        assert await chunk_node_count(data_dir) == chunks, "no chunk stored twice, none left staged"
        hits = await call(session, "search_memory", {"query": "delta log site 4"})
        assert hits["results"][0]["memory_id"] == added["memory_id"]
