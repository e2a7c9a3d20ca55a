"""The knowledge graph's jobs across `zapomni serve` processes: a server killed or stopped mid-build leaves its job
to the next, which finishes it once. What one server does with the graph: tests/tools/test_graph_tools.py."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.ollama_server import FakeOllama, slow
from tests.helpers import SMALL_CHUNKS, graph_client, server_pids, wait_for
from tests.processes import RawServer, call, mcp_session, raw_call
from tests.tools.test_graph_tools import graph_settled

pytestmark = pytest.mark.anyio


def test_a_server_killed_mid_build_leaves_the_job_to_the_next_which_finishes_it_once(
    data_dir: Path, tmp_path: Path
) -> None:
    notes = [f"Engineer {name} Smith works for Globex in Springfield." for name in "ABCDEFGH"]
    with FakeOllama(models=["llama3.1:8b"]) as ollama:
        env = {"ZAPOMNI_GRAPH_EXTRACTOR": "ollama", "OLLAMA_HOST": ollama.url, "ZAPOMNI_JOB_POLL_S": "0.2",
               "ZAPOMNI_GRAPH_AUTO": "true"}  # fmt: skip
        ollama.script_chat([slow(1.0) for _ in notes])  # one answer a second: time to kill mid-job
        server = RawServer(data_dir, tmp_path / "first.log", env)
        try:
            server.initialize()
            for request_id, text in enumerate(notes, start=2):
                raw_call(server, request_id, "add_memory", {"text": text})
            request_id = 100
            while (status := raw_call(server, request_id, "graph_status", {}))["graph"]["memories_processed"] < 2:
                request_id += 1
                time.sleep(0.2)
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait()
        finally:
            server.kill()
        assert status["graph"]["memories_pending"] > 0, "the build finished before the kill"
        assert wait_for(lambda: not server_pids(data_dir), 60)

        async def second() -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
            async with mcp_session(data_dir, None, **env) as session:
                status = await graph_settled(session)
                jobs = (await call(session, "list_jobs", {}))["jobs"]
                async with graph_client(data_dir, "zapomni") as graph:
                    rows = await graph.query("MATCH ()-[r:RELATED_TO {type: 'WORKS_FOR'}]->() RETURN r.memory_id")
            return status, [row[0] for row in rows], jobs

        status, works_for, jobs = asyncio.run(second())
    assert status["graph"]["memories_processed"] == len(notes) and status["graph"]["memories_pending"] == 0
    # Each memory's evidence exactly once, however many attempts it took.
    assert len(works_for) == len(set(works_for)) == len(notes)
    assert any(job["kind"] == "build_graph" and job["attempts"] == 2 for job in jobs), jobs


def large_notes(chunks: int) -> str:
    """A memory of about `chunks` chunks, every paragraph naming people, companies and places."""
    people = ["Maria Garcia", "John Smith", "Aiko Tanaka", "Lars Eriksen", "Priya Patel", "Omar Haddad"]
    companies = ["Siemens", "Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries"]
    cities = ["Berlin", "Lisbon", "Tokyo", "Oslo", "Mumbai", "Cairo", "Toronto"]
    paragraphs = []
    for i in range(chunks * 4):
        person, company, city = people[i % 6], companies[(i // 6) % 6], cities[i % 7]
        paragraphs.append(
            f"In meeting {i}, {person} said that {company} opened an office in {city}. {person} works for "
            f"{company} and lives in {city}; the team uses PostgreSQL and reviewed ticket ERR_{i:04d} together."
        )
    return "\n\n".join(paragraphs)


async def test_a_large_memorys_extraction_resumes_after_a_server_stop_where_it_stopped(
    data_dir: Path, tmp_path: Path
) -> None:
    env = {
        "ZAPOMNI_GRAPH_AUTO": "false",
        "ZAPOMNI_JOB_POLL_S": "0.2",
        "ZAPOMNI_BACKGROUND_ADD_BYTES": "8192",
        **SMALL_CHUNKS,
    }
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    with first_log.open("w") as errlog:
        async with mcp_session(data_dir, errlog=errlog, **env) as session:
            added = await call(session, "add_memory", {"text": large_notes(24)})
            indexed = await call(session, "job_status", {"job_id": added["job_id"], "wait_s": 50})
            assert indexed["state"] == "completed", indexed
            chunks = indexed["progress"]["total"]
            assert chunks > 64, indexed
            build = await call(session, "build_graph", {})
            # Stop the server the way a client does (stdin closed) once a few slices of the memory are written.
            deadline = asyncio.get_running_loop().time() + 120
            while True:
                running = await call(session, "job_status", {"job_id": build["job_id"]})
                assert running["state"] in ("pending", "running"), f"the job ended before the stop: {running}"
                reached = re.search(r"chunk (\d+)/(\d+)", running["message"] or "")
                if reached and int(reached[1]) >= 32:
                    break
                assert asyncio.get_running_loop().time() < deadline, running
                await asyncio.sleep(0.1)
    assert wait_for(lambda: not server_pids(data_dir), 60)
    assert '"event": "job.released"' in first_log.read_text()

    with second_log.open("w") as errlog:
        async with mcp_session(data_dir, errlog=errlog, **env) as session:
            done = await call(session, "graph_status", {"job_id": build["job_id"], "wait_s": 50})
            while done["job"]["state"] in ("pending", "running"):
                done = await call(session, "graph_status", {"job_id": build["job_id"], "wait_s": 50})
            assert done["job"]["state"] == "completed" and done["graph"]["memories_pending"] == 0, done
            resumed = [json.loads(line) for line in second_log.read_text().splitlines() if "memory_resumed" in line]
            assert resumed, "the second server started the memory over"
            assert resumed[0]["chunks_done"] >= 32 and resumed[0]["chunks"] == chunks
            async with graph_client(data_dir, "zapomni") as graph:
                twice = await graph.query(
                    "MATCH (c:Chunk)-[x:MENTIONS]->(e:Entity) WITH c, e, count(x) AS n WHERE n > 1 RETURN count(*)"
                )
                mentions = await graph.query("MATCH (:Chunk)-[x:MENTIONS]->(:Entity) RETURN count(x)")
                leftovers = await graph.query(
                    "MATCH (m:Memory) WHERE m.graph_chunks IS NOT NULL OR m.graph_stale IS NOT NULL RETURN count(m)"
                )
            assert twice[0][0] == 0 and leftovers[0][0] == 0
            # The resumed graph is the one an uninterrupted build makes: rebuilding it changes no count.
            relations = done["graph"]["relations"]
            rebuild = await call(session, "build_graph", {"memory_ids": [added["memory_id"]]})
            rebuilt = await call(session, "graph_status", {"job_id": rebuild["job_id"], "wait_s": 50})
            while rebuilt["job"]["state"] in ("pending", "running"):
                rebuilt = await call(session, "graph_status", {"job_id": rebuild["job_id"], "wait_s": 50})
            assert rebuilt["graph"]["relations"] == relations
            assert rebuilt["graph"]["entities"] == done["graph"]["entities"]
            async with graph_client(data_dir, "zapomni") as graph:
                again = await graph.query("MATCH (:Chunk)-[x:MENTIONS]->(:Entity) RETURN count(x)")
            assert again[0][0] == mentions[0][0]

            # Deleting it leaves nothing of its graph.
            await call(session, "delete_memory", {"memory_ids": [added["memory_id"]]})
            empty = await call(session, "graph_status", {})
            assert empty["graph"]["entities"] == 0 and empty["graph"]["relations"] == 0
