"""`zapomni serve --http` through the official SDK's Streamable HTTP client: every tool and the resources, on the
current protocol (2026-07-28, sessionless) and on 2025-11-25; progress of a job streamed over SSE; an HTTP and
a stdio server on one store at once.

One server serves the module (each start costs seconds); the tests use workspaces of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_large_adds import document
from tests.helpers import SMALL_CHUNKS, make_tokens, resource_text, text_of
from tests.processes import HttpServer, call, call_with_progress, http_server, http_session, mcp_session
from zapomni_mcp.tools import TOOLS

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ingest_path and index_codebase may read: a note and a small program."""
    root = tmp_path_factory.mktemp("roots")
    (root / "notes").mkdir()
    (root / "notes" / "kiln.md").write_text("# Kiln\n\nThe kiln in the garden studio fires at 1240 degrees.\n")
    (root / "code").mkdir()
    (root / "code" / "app.py").write_text(
        "def load(path):\n    return open(path).read()\n\n\ndef main():\n    return load('config.toml')\n"
    )
    return root


@pytest.fixture(scope="module")
def server(store: Path, roots: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    log = tmp_path_factory.mktemp("tools") / "server.log"
    with http_server(store, log, ZAPOMNI_ALLOWED_ROOTS=str(roots), ZAPOMNI_HTTP_RATE="0", **SMALL_CHUNKS) as started:
        yield started


@pytest.fixture(scope="module")
def admin(server: HttpServer, store: Path) -> str:
    return asyncio.run(make_tokens(store, {"admin": {"role": "admin", "workspaces": None}}))["admin"]


async def test_every_tool_and_the_resources_answer_over_http(server: HttpServer, admin: str, roots: Path) -> None:
    ws = {"workspace": "tools"}
    async with http_session(server, admin) as session:
        assert session.discover_result is not None  # 2026-07-28: no handshake, no session id
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == sorted(tool.name for tool in TOOLS)

        added = await call(session, "add_memory", {"text": "Marta repaired the kiln thermostat on Friday.", **ws})
        found = await call(session, "search_memory", {"query": "who fixed the kiln thermostat", **ws})
        assert found["results"][0]["memory_id"] == added["memory_id"]
        memory = await call(session, "get_memory", {"memory_id": added["memory_id"], **ws})
        assert memory["text"].startswith("Marta repaired")
        assert [m["memory_id"] for m in (await call(session, "list_memories", ws))["memories"]] == [added["memory_id"]]
        updated = await call(
            session, "update_memory", {"memory_id": added["memory_id"], "text": "Marta fixed it.", **ws}
        )
        assert updated["memory_id"] == added["memory_id"]
        updates = await call(session, "find_updates", ws)
        assert (await call(session, "job_status", {"job_id": updates["job_id"], "wait_s": 50}))["state"] == "completed"
        assert (await call(session, "get_stats", ws))["total_memories"] == 1
        names = [w["name"] for w in (await call(session, "list_workspaces"))["workspaces"]]
        assert "tools" in names

        ingest = await call(session, "ingest_path", {"path": str(roots / "notes"), **ws})
        done = await call(session, "job_status", {"job_id": ingest["job_id"], "wait_s": 50})
        assert done["state"] == "completed", done
        assert ingest["job_id"] in [j["job_id"] for j in (await call(session, "list_jobs", ws))["jobs"]]
        index = await call(session, "index_codebase", {"path": str(roots / "code"), **ws})
        assert (await call(session, "job_status", {"job_id": index["job_id"], "wait_s": 50}))["state"] == "completed"
        symbols = await call(session, "find_symbol", {"name": "load", **ws})
        assert symbols["symbols"][0]["name"] == "load"
        callers = await call(session, "get_callers", {"symbol": "load", **ws})
        assert [s["name"] for s in callers["symbols"]] == ["main"]
        callees = await call(session, "get_callees", {"symbol": "main", **ws})
        assert "load" in [s["name"] for s in callees["symbols"]]

        build = await call(session, "build_graph", ws)
        graph = await call(session, "graph_status", {"job_id": build["job_id"], "wait_s": 50, **ws})
        assert graph["job"]["state"] == "completed", graph
        related = await call(session, "get_related", {"entity": "load", **ws})
        assert related["workspace"] == "tools" and related["code"], related  # the indexed function's neighbours
        cancelled = await call(session, "cancel_job", {"job_id": build["job_id"]})
        assert cancelled["cancelled"] is False  # it had ended: left as it was

        # Resources: listed and read like stdio's.
        resources = await session.list_resources()
        uri = f"memory://tools/{added['memory_id']}"
        assert uri in [str(r.uri) for r in resources.resources]
        assert resource_text(await session.read_resource(uri)) == "Marta fixed it."

        # A remote client is told what went wrong without the server's paths.
        outside = await session.call_tool("ingest_path", {"path": "/etc", **ws})
        assert outside.is_error and str(roots) not in text_of(outside), outside.content

        deleted = await call(session, "delete_memory", {"memory_ids": [added["memory_id"]], **ws})
        assert deleted["deleted_count"] == 1
        gone = await call(session, "delete_workspace", {"name": "tools", "confirm": "tools"})
        assert gone["name"] == "tools"


async def test_a_2025_11_25_client_is_served_too(server: HttpServer, admin: str) -> None:
    ws = {"workspace": "legacy"}
    async with http_session(server, admin, legacy=True) as session:
        assert session.initialize_result is not None
        assert session.initialize_result.protocol_version == "2025-11-25"
        added = await call(session, "add_memory", {"text": "The legacy client stored this.", **ws})
        found = await call(session, "search_memory", {"query": "what did the legacy client store", **ws})
        assert found["results"][0]["memory_id"] == added["memory_id"]
        await call(session, "delete_workspace", {"name": "legacy", "confirm": "legacy"})


async def test_a_large_add_is_a_job_whose_progress_streams_over_sse(server: HttpServer, admin: str) -> None:
    ws = {"workspace": "large"}
    async with http_session(server, admin) as session:
        added = await call(session, "add_memory", {"text": document("glacier", 40), **ws})
        assert added["status"] == "indexing" and added["job_id"]

        updates: list[tuple[float, float | None, str | None]] = []
        for _ in range(5):  # a loaded machine may need more than one wait of 50 s
            result, more = await call_with_progress(session, "job_status", {"job_id": added["job_id"], "wait_s": 50})
            updates += more
            final = result.structured_content
            assert not result.is_error and final is not None, result
            if final["state"] != "running" and final["state"] != "pending":
                break
        assert final["state"] == "completed", final
        assert len(updates) >= 2, updates
        assert [u[0] for u in updates] == sorted(u[0] for u in updates)
        await call(session, "delete_workspace", {"name": "large", "confirm": "large"})


async def test_stdio_and_http_servers_share_one_store_at_once(server: HttpServer, admin: str, store: Path) -> None:
    ws = {"workspace": "shared"}
    async with mcp_session(store) as local, http_session(server, admin) as remote:
        by_stdio = await call(local, "add_memory", {"text": "Written through stdio: the gate code is 4711.", **ws})
        found = await call(remote, "search_memory", {"query": "what is the gate code", **ws})
        assert found["results"][0]["memory_id"] == by_stdio["memory_id"]
        by_http = await call(remote, "add_memory", {"text": "Written over HTTP: the bins go out on Tuesday.", **ws})
        found = await call(local, "search_memory", {"query": "when do the bins go out", **ws})
        assert found["results"][0]["memory_id"] == by_http["memory_id"]
        await call(local, "delete_workspace", {"name": "shared", "confirm": "shared"})
