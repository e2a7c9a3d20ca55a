"""ingest_path, index_codebase and the code tools through the official MCP client and the real server object (in
process), their jobs run by its engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import configured, docs_and_code, local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio


async def test_files_and_code_through_the_mcp_client(settings: Settings, tmp_path: Path) -> None:
    docs, code = docs_and_code(tmp_path)
    async with local_session(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(tmp_path))) as session:
        queued = await call(session, "ingest_path", {"path": str(docs), "tags": ["ops"]})
        assert queued["kind"] == "ingest_path" and queued["path"] == str(docs)
        job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 30})
        assert job["state"] == "completed" and job["counts"]["added"] == 1

        found = await call(
            session, "search_memory", {"query": "how to restart the worker", "filters": {"kind": "document"}}
        )
        hit = found["results"][0]
        assert (hit["section"], hit["tags"], hit["kind"]) == ("Runbook > Restarts", ["ops"], "document")
        assert "zebra-worker" in hit["text"] and "cold bucket" not in hit["text"]

        queued = await call(session, "index_codebase", {"path": str(code), "languages": ["python"]})
        job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 30})
        assert job["state"] == "completed" and job["counts"]["calls"] == 11

        symbols = await call(session, "find_symbol", {"name": "OrderService.place"})
        assert symbols["symbols"][0]["qualified_name"] == "shop.service.OrderService.place"
        assert symbols["symbols"][0]["docstring"].startswith("Place an order and render it.")
        callers = await call(session, "get_callers", {"symbol": "shop.service.render"})
        assert {s["qualified_name"] for s in callers["symbols"]} == {"shop.service.OrderService.place"}
        related = await call(session, "get_related", {"entity": "shop.models.Order"})
        assert {s["qualified_name"] for s in related["code"][0]["inherits_from"]} == {"shop.base.Entity"}
        code_hits = await call(session, "search_memory", {"query": "restart worker", "filters": {"kind": "code"}})
        assert all(h["kind"] == "code" for h in code_hits["results"])

        refused = await session.call_tool("ingest_path", {"path": "/etc"})
        assert refused.is_error and "outside the allowed roots" in text_of(refused)
        unknown = await session.call_tool("get_callees", {"symbol": "no_such_function_anywhere"})
        assert unknown.is_error and "symbol" in text_of(unknown)
        assert (await call(session, "list_jobs", {}))["count"] == 2  # nothing was queued for the refusal
