"""End to end: `zapomni serve` driven by the official MCP SDK client over stdio."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers import text_of
from tests.processes import call, mcp_session, server_env

pytestmark = pytest.mark.anyio

MEMORIES = [
    (
        "Our production Kubernetes cluster runs in the Frankfurt region.",
        {"tags": ["infra"], "source": "wiki"},
    ),
    (
        "Maria's birthday is on the 14th of March; she likes orchids.",
        {"tags": ["personal"], "date": "2024-03-14"},
    ),
    ("The billing service retries failed card payments three times.", {"tags": ["infra", "billing"]}),
]


async def test_store_search_filter_and_count(data_dir: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "server.log"
    with stderr.open("w") as errlog:
        async with mcp_session(data_dir, errlog=errlog) as session:
            ids = [(await call(session, "add_memory", {"text": t, "metadata": m}))["memory_id"] for t, m in MEMORIES]
            assert len(set(ids)) == 3

            found = await call(session, "search_memory", {"query": "which cloud region hosts our cluster?"})
            assert found["results"][0]["memory_id"] == ids[0]
            assert found["results"][0]["source"] == "wiki"
            assert 0.0 <= found["results"][0]["similarity_score"] <= 1.0

            result = await session.call_tool("search_memory", {"query": "flowers for a birthday"})
            assert result.structured_content["results"][0]["memory_id"] == ids[1]
            assert "orchids" in text_of(result)  # the readable block says the same

            # Filters restrict what both legs may return; unrelated results are asked for here, so the
            # filter alone decides (by default "birthday" finds nothing relevant among infra notes).
            unrelated = {"include_unrelated": True}
            infra = await call(
                session, "search_memory", {"query": "birthday", "filters": {"tags": ["infra"]}, **unrelated}
            )
            assert {r["memory_id"] for r in infra["results"]} == {ids[0], ids[2]}
            relevant = await call(session, "search_memory", {"query": "birthday", "filters": {"tags": ["infra"]}})
            assert relevant["results"] == []
            dated = await call(
                session, "search_memory", {"query": "x", "filters": {"date_to": "2024-12-31"}, **unrelated}
            )
            assert [r["memory_id"] for r in dated["results"]] == [ids[1]]
            limited = await call(session, "search_memory", {"query": "infrastructure", "limit": 1, **unrelated})
            assert limited["count"] == 1

            stats = await call(session, "get_stats")
            assert (stats["total_memories"], stats["total_chunks"]) == (3, 3)
            assert stats["embedder"] == "onnx:all-MiniLM-L6-v2-int8"
            assert stats["avg_query_latency_ms"] > 0
    # Logs are JSON lines on stderr and never carry the text of a memory.
    lines = [json.loads(line) for line in stderr.read_text().splitlines() if line.startswith("{")]
    events = {line["event"] for line in lines}
    assert {"server.config", "server.ready", "tool.called", "memory.added"} <= events
    # The database was started before the engine loaded (`zapomni_cli.launch`): a large store decodes meanwhile.
    order = [line["event"] for line in lines]
    assert order.index("db.embedded.ready") < order.index("server.config")
    assert "orchids" not in stderr.read_text()


async def test_memories_survive_a_server_restart(data_dir: Path) -> None:
    async with mcp_session(data_dir) as session:
        memory_id = (await call(session, "add_memory", {"text": MEMORIES[1][0]}))["memory_id"]
    async with mcp_session(data_dir) as session:
        found = await call(session, "search_memory", {"query": "when is Maria's birthday?"})
        assert found["results"][0]["memory_id"] == memory_id
        assert (await call(session, "get_stats"))["total_memories"] == 1


async def test_two_servers_on_one_data_dir_see_each_others_writes(data_dir: Path) -> None:
    async with mcp_session(data_dir) as first, mcp_session(data_dir) as second:
        a = (await call(first, "add_memory", {"text": MEMORIES[0][0]}))["memory_id"]
        b = (await call(second, "add_memory", {"text": MEMORIES[2][0]}))["memory_id"]
        assert (await call(second, "search_memory", {"query": "Kubernetes region"}))["results"][0]["memory_id"] == a
        assert (await call(first, "search_memory", {"query": "card payment retries"}))["results"][0]["memory_id"] == b
        assert (await call(first, "get_stats"))["total_memories"] == 2


async def test_concurrent_calls_are_all_answered(data_dir: Path) -> None:
    async with mcp_session(data_dir) as session:
        results: list[dict[str, Any]] = []

        async def add(i: int) -> None:
            results.append(await call(session, "add_memory", {"text": f"Concurrent fact number {i}."}))

        async with anyio.create_task_group() as tasks:
            for i in range(12):
                tasks.start_soon(add, i)
        assert len({r["memory_id"] for r in results}) == 12
        assert (await call(session, "get_stats"))["total_memories"] == 12


async def test_make_run_is_a_working_mcp_command(data_dir: Path) -> None:
    """The README's `make run` (quiet, from anywhere) serves MCP on stdout with nothing else mixed in."""
    repo = Path(__file__).resolve().parents[2]
    params = StdioServerParameters(command="make", args=["-s", "-C", str(repo), "run"], env=server_env(data_dir))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert {tool.name for tool in (await session.list_tools()).tools} >= {"add_memory", "search_memory"}
            assert (await call(session, "get_stats"))["total_memories"] == 0
