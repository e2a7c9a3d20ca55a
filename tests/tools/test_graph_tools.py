"""The knowledge graph through the official MCP client (in process, tests.helpers.local_session): built in the
background, followed, traversed, used by search, cleaned on delete; the local-LLM path against a real HTTP
stand-in for Ollama, with superseded facts. Servers killed mid-build: tests/e2e/test_graph_jobs_across_servers.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import ClientSession

from tests.fakes.ollama_server import FakeOllama
from tests.helpers import configured, graph_client, local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

NOTES = [
    ("Maria Garcia lives in Berlin and works for Siemens.", "2023-01-10"),
    ("Maria Garcia moved to Lisbon in 2024.", "2024-03-01"),
    ("Our payments service uses PostgreSQL. Acme Corp owns the payments service.", None),
    ("Apple Inc. opened a new office in Cupertino.", None),
]


async def add_notes(session: ClientSession, notes: list[tuple[str, str | None]] = NOTES) -> list[str]:
    ids = []
    for text, date in notes:
        metadata = {"date": date} if date else None
        ids.append((await call(session, "add_memory", {"text": text, "metadata": metadata}))["memory_id"])
    return ids


async def graph_settled(session: ClientSession, timeout_s: float = 120) -> dict[str, Any]:
    """graph_status once nothing is pending and the latest build job has ended."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status = await call(session, "graph_status", {"wait_s": 5})
        job = status["job"]
        if status["graph"]["memories_pending"] == 0 and job and job["state"] not in ("pending", "running"):
            return status
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.5)


def related_names(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["entity"]["name"]: item for item in result["related"]}


async def test_new_memories_are_extracted_in_the_background_and_the_graph_answers(settings: Settings) -> None:
    async with local_session(configured(settings, ZAPOMNI_JOB_POLL_S="0.2", ZAPOMNI_GRAPH_AUTO="true")) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"build_graph", "graph_status", "get_related"} <= set(tools)
        ids = await add_notes(session)

        status = await graph_settled(session)
        assert status["extractor"] == "spacy" and status["graph"]["memories_processed"] == len(NOTES)
        assert status["graph"]["entities_by_type"]["PERSON"] >= 1 and status["graph"]["relations"] >= 3
        assert status["job"]["state"] == "completed" and status["job"]["failed_items"] == 0

        # Fuzzy resolution: lower case, without the suffix.
        maria = await call(session, "get_related", {"entity": "maria garcia"})
        assert maria["matched"]["name"] == "Maria Garcia" and maria["matched"]["type"] == "PERSON"
        found = related_names(maria)
        assert found["Berlin"]["relation"]["type"] == "LIVES_IN"
        assert found["Siemens"]["relation"]["type"] == "WORKS_FOR"
        # Each fact comes with the memory that says so, and the date it holds from.
        berlin = found["Berlin"]
        assert berlin["evidence"][0]["memory_id"] == ids[0] and "Berlin" in berlin["evidence"][0]["text"]
        assert berlin["evidence"][0]["valid_from"].startswith("2023-01-10")
        # No LLM: a typed relation was found by a pattern or the parse, never presented as an LLM's claim.
        assert berlin["relation"]["method"] in ("pattern", "dependency") and not berlin["relation"]["superseded"]

        only_work = await call(session, "get_related", {"entity": "Maria Garcia", "relation_types": ["WORKS_FOR"]})
        assert set(related_names(only_work)) == {"Siemens"}
        apple = await call(session, "get_related", {"entity": "apple inc"})
        assert apple["matched"]["name"].startswith("Apple")
        nobody = await call(session, "get_related", {"entity": "Zebulon Quartermaine"})
        assert nobody["matched"] is None and nobody["related"] == []

        hits = await call(session, "search_memory", {"query": "where does Maria live", "graph_context": True})
        top = hits["results"][0]
        assert top["memory_id"] in ids[:2]
        names = {entity["name"] for entity in top["entities"]}
        assert "Maria Garcia" in names
        plain = await call(session, "search_memory", {"query": "where does Maria live"})
        assert plain["results"][0]["entities"] is None

        stats = await call(session, "get_stats")
        assert stats["entities"] == status["graph"]["entities"] and stats["relations"] == status["graph"]["relations"]
        assert stats["extraction_pending"] == 0

        # Deleting a memory takes its evidence, and every entity only it mentioned, with it.
        await call(session, "delete_memory", {"memory_ids": [ids[3]]})
        gone = await call(session, "get_related", {"entity": "Cupertino"})
        assert gone["matched"] is None or gone["matched"]["name"] != "Cupertino"
        after = await call(session, "graph_status")
        assert after["graph"]["memories_processed"] == len(NOTES) - 1
        assert after["graph"]["entities"] < status["graph"]["entities"]
        async with graph_client(
            settings.data_dir, settings.graph_name
        ) as graph:  # while the server keeps the database up
            orphans = await graph.query("MATCH (e:Entity) WHERE NOT ()-[:MENTIONS]->(e) RETURN count(e)")
            stale = await graph.query("MATCH ()-[r:RELATED_TO {memory_id: $id}]->() RETURN count(r)", {"id": ids[3]})
        assert orphans[0][0] == 0 and stale[0][0] == 0


async def test_build_graph_processes_memories_stored_without_it_and_refuses_unknown_ids(settings: Settings) -> None:
    async with local_session(configured(settings, ZAPOMNI_GRAPH_AUTO="false", ZAPOMNI_JOB_POLL_S="0.2")) as session:
        ids = await add_notes(session)
        before = await call(session, "graph_status")
        assert before["graph"]["memories_pending"] == len(NOTES) and before["job"] is None

        refused = await session.call_tool("build_graph", {"memory_ids": ["00000000-0000-4000-8000-000000000000"]})
        assert refused.is_error and "memory_ids" in text_of(refused)
        assert (await call(session, "graph_status"))["job"] is None  # nothing was queued

        one = await call(session, "build_graph", {"memory_ids": [ids[0]]})
        assert one["memories"] == 1 and one["extractor"] == "spacy"
        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        done = await session.call_tool(
            "graph_status", {"job_id": one["job_id"], "wait_s": 50}, progress_callback=on_progress
        )
        assert not done.is_error and done.structured_content["job"]["state"] == "completed"
        assert done.structured_content["graph"]["memories_pending"] == len(NOTES) - 1

        rest = await call(session, "build_graph", {})
        assert rest["memories"] == len(NOTES) - 1
        status = await graph_settled(session)
        assert status["graph"]["memories_processed"] == len(NOTES)
        # Rebuilding a memory replaces its evidence instead of adding to it.
        relations = status["graph"]["relations"]
        again = await call(session, "build_graph", {"memory_ids": ids})
        await call(session, "graph_status", {"job_id": again["job_id"], "wait_s": 50})
        assert (await call(session, "graph_status"))["graph"]["relations"] == relations


async def test_with_a_local_llm_a_newer_fact_supersedes_the_older_and_both_stay_visible(settings: Settings) -> None:
    with FakeOllama(models=["llama3.1:8b"]) as ollama:
        env = {"ZAPOMNI_GRAPH_EXTRACTOR": "ollama", "OLLAMA_HOST": ollama.url, "ZAPOMNI_JOB_POLL_S": "0.2"}
        async with local_session(configured(settings, ZAPOMNI_GRAPH_AUTO="true", **env)) as session:
            await add_notes(session, NOTES[:2])
            status = await graph_settled(session)
            assert status["extractor"] == "ollama:llama3.1:8b"
            assert len(ollama.chat_requests) >= 1 and "format" in ollama.chat_requests[0].body
            maria = await call(session, "get_related", {"entity": "Maria Garcia", "relation_types": ["LIVES_IN"]})
            lives = related_names(maria)
            assert set(lives) == {"Berlin", "Lisbon"}
            assert lives["Berlin"]["relation"]["superseded"] is True
            assert lives["Lisbon"]["relation"]["superseded"] is False
            assert lives["Berlin"]["relation"]["method"] == "llm"
            assert lives["Lisbon"]["evidence"][0]["valid_from"].startswith("2024-03-01")


async def test_an_unreachable_llm_fails_items_visibly_and_leaves_them_pending(settings: Settings) -> None:
    env = {"ZAPOMNI_GRAPH_EXTRACTOR": "ollama", "OLLAMA_HOST": "http://127.0.0.1:9", "ZAPOMNI_LLM_RETRIES": "0",
           "ZAPOMNI_GRAPH_AUTO": "true"}  # fmt: skip
    async with local_session(configured(settings, ZAPOMNI_JOB_POLL_S="0.2", **env)) as session:
        await add_notes(session, NOTES[:1])
        deadline = asyncio.get_running_loop().time() + 60
        while (status := await call(session, "graph_status", {"wait_s": 5}))["job"] is None or status["job"][
            "state"
        ] in ("pending", "running"):
            assert asyncio.get_running_loop().time() < deadline, status
        job = status["job"]
        assert job["state"] in ("failed", "completed_with_errors") and job["failed_items"] >= 1
        assert "OLLAMA_HOST" in job["failures"][0] or "Ollama" in job["failures"][0]
        assert status["graph"]["memories_pending"] == 1  # not marked done: build_graph retries it later
        assert (await call(session, "get_stats"))["extraction_pending"] == 1


async def test_build_graph_says_when_another_job_already_did_or_does_the_work(settings: Settings) -> None:
    async with local_session(configured(settings, ZAPOMNI_GRAPH_AUTO="true", ZAPOMNI_JOB_POLL_S="0.2")) as session:
        await add_notes(session)

        async def build_jobs() -> dict[str, dict[str, Any]]:
            jobs = (await call(session, "list_jobs", {}))["jobs"]
            return {job["job_id"]: job for job in jobs if job["kind"] == "build_graph"}

        # Right after the adds the automatic extraction is queued or running: build_graph points at it
        # (or, if it already finished, says nothing is left) instead of queuing a job that will find nothing.
        automatic = await build_jobs()
        asked = await call(session, "build_graph", {})
        assert set(await build_jobs()) == set(automatic), "build_graph queued a second job"
        assert (asked["job_id"] in automatic or asked["job_id"] is None) and asked["note"], asked
        await graph_settled(session)
        # An automatic job queued while another ran may find its memories done: it says so, never a bare "0/0".
        for job in (await build_jobs()).values():
            assert job["state"] == "completed", job
            if job["progress"]["done"] == 0:
                assert "processed by another job" in job["message"], job

        again = await session.call_tool("build_graph", {})
        assert not again.is_error
        nothing = again.structured_content
        assert nothing["job_id"] is None and nothing["memories"] == 0
        assert f"all {len(NOTES)} memories are processed already" in nothing["note"]
        assert "No job queued" in text_of(again) and "memory_ids" in text_of(again)

    # A job over every pending memory that finds them done by another job says so, rather than "0/0".
    async with local_session(configured(settings, ZAPOMNI_GRAPH_AUTO="false", ZAPOMNI_JOB_POLL_S="0.2")) as session:
        ids = await add_notes(session, [("Rosa Diaz works for Initech in Dayton.", None), ("Ohio is cold.", None)])
        explicit = await call(session, "build_graph", {"memory_ids": ids})  # runs first: jobs go oldest first
        whole = await call(session, "build_graph", {})
        assert whole["job_id"] != explicit["job_id"] and whole["memories"] == 2 and whole["note"] is None
        status = (await call(session, "graph_status", {"job_id": whole["job_id"], "wait_s": 50}))["job"]
        assert status["state"] == "completed" and status["progress"]["done"] == 0, status
        assert "the 2 memories pending when it was queued were processed by another job" in status["message"]
        described = await session.call_tool("job_status", {"job_id": whole["job_id"]})
        assert "processed by another job" in text_of(described)
