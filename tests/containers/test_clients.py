"""MCP clients started exactly as the README's Claude Desktop entries start them (`docker run -i ...`, run
here with podman), against the running stack (serve mode) and on their own (standalone), through the
official MCP client: every tool listed, add, search, a large add that becomes a job, build_graph, and
ingest_path on a folder mounted into the container."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.containers.harness import call, mcp_client, podman, readme_client_entry, standalone_entry, with_options

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("stack")]

TOOLS = {
    "add_memory", "search_memory", "get_memory", "list_memories", "update_memory", "delete_memory",
    "get_stats", "list_workspaces", "delete_workspace", "job_status", "list_jobs", "cancel_job",
    "build_graph", "graph_status", "get_related", "ingest_path", "index_codebase", "find_symbol",
    "get_callers", "get_callees", "find_updates", "import_memories",
}  # fmt: skip


def large_text(kilobytes: int) -> str:
    """Prose above the 32 KB large-add threshold: answered at once, indexed by a job."""
    lines = [
        f"Survey note {i}: the glacier team logged {i * 3} stakes at camp {i % 11} and compared the melt "
        f"with last season's figures before radioing the base."
        for i in range(kilobytes * 8)
    ]
    return "\n\n".join(lines)


async def test_the_readme_stack_entry_serves_every_tool_against_the_stack(tmp_path: Path) -> None:
    docs = tmp_path / "runbooks"
    docs.mkdir()
    (docs / "restarts.md").write_text(
        "# Runbook\n\n## Restarts\n\nRestart the ingest worker with systemctl restart zebra-worker.\n"
    )
    docs.chmod(0o755)
    entry = with_options(readme_client_entry("zapomni_default"), "-v", f"{docs}:/files/runbooks:ro")
    workspace = f"clients-{uuid.uuid4().hex[:8]}"
    with (tmp_path / "server.log").open("w") as errlog:
        async with mcp_client(entry, errlog) as session:
            assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS

            added = await call(
                session,
                "add_memory",
                {"text": "Maria Lopez founded Acme Robotics in Berlin.", "workspace": workspace},
            )
            found = await call(session, "search_memory", {"query": "who founded Acme Robotics", "workspace": workspace})
            assert found["results"][0]["memory_id"] == added["memory_id"]

            big = await call(session, "add_memory", {"text": large_text(40), "workspace": workspace})
            assert big["status"] == "indexing" and big["job_id"], big
            job = await call(session, "job_status", {"job_id": big["job_id"], "wait_s": 50})
            assert job["state"] == "completed", f"the job ended {job['state']}: {job}"  # in full: a repr is cut
            shown = await call(session, "get_memory", {"memory_id": big["memory_id"], "workspace": workspace})
            assert shown["status"] == "indexed" and shown["chunk_count"] > 1, shown

            graph = await call(session, "build_graph", {"memory_ids": [added["memory_id"]], "workspace": workspace})
            built = await call(
                session, "graph_status", {"job_id": graph["job_id"], "wait_s": 50, "workspace": workspace}
            )
            assert built["job"]["state"] == "completed", built
            related = await call(session, "get_related", {"entity": "Maria Lopez", "workspace": workspace})
            assert related["matched"]["name"] == "Maria Lopez", related
            assert "Acme Robotics" in str(related["related"]), related

            queued = await call(session, "ingest_path", {"path": "/files/runbooks", "workspace": workspace})
            job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 50})
            assert job["state"] == "completed" and job["counts"]["added"] == 1, job
            hit = (
                await call(
                    session,
                    "search_memory",
                    {"query": "how to restart the worker", "workspace": workspace, "filters": {"kind": "document"}},
                )
            )["results"][0]
            assert "zebra-worker" in hit["text"] and hit["section"] == "Runbook > Restarts"
    assert "unable to get systemd connection" not in (tmp_path / "server.log").read_text()


async def test_the_readme_standalone_entry_keeps_its_memories_on_its_volume(tmp_path: Path) -> None:
    volume = f"zapomni-test-standalone-{uuid.uuid4().hex[:8]}"
    entry = standalone_entry(volume)
    assert f"{volume}:/data" in entry, entry
    with (tmp_path / "standalone.log").open("w") as errlog:
        async with mcp_client(entry, errlog) as session:
            assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
            added = await call(session, "add_memory", {"text": "The boiler is serviced every October."})
        # A new container on the same volume: the memory is there (FalkorDB saved on the way down).
        async with mcp_client(entry, errlog) as session:
            found = await call(session, "search_memory", {"query": "when is the boiler serviced"})
            assert [hit["memory_id"] for hit in found["results"]][:1] == [added["memory_id"]]
    # The image's health check, on a host without systemd, printed two errors into the client's log.
    assert "unable to get systemd connection" not in (tmp_path / "standalone.log").read_text()
    podman("volume", "rm", "-f", volume, check=False)
