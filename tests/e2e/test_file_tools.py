"""ingest_path, index_codebase and the code tools through the official MCP client and the command line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_cli import zapomni
from tests.helpers import text_of
from tests.processes import call, mcp_session

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"


def tree(root: Path) -> tuple[Path, Path]:
    docs = root / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text(
        "# Runbook\n\n## Restarts\n\nRestart the ingest worker with systemctl restart zebra-worker.\n\n"
        "## Backups\n\nBackups are copied to the cold bucket every night at two.\n"
    )
    code = root / "code"
    shutil.copytree(FIXTURES / "python", code)
    return docs, code


async def test_files_and_code_through_the_mcp_client(data_dir: Path, tmp_path: Path) -> None:
    docs, code = tree(tmp_path)
    async with mcp_session(data_dir, ZAPOMNI_ALLOWED_ROOTS=str(tmp_path)) as session:
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


def test_ingest_and_the_code_commands_on_the_command_line(data_dir: Path, tmp_path: Path) -> None:
    docs, code = tree(tmp_path)
    roots = {"ZAPOMNI_ALLOWED_ROOTS": str(tmp_path)}
    done = zapomni(data_dir, "ingest", str(docs), str(code / "shop" / "base.py"), "--json", **roots)
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    assert [(j["kind"], j["state"], j["counts"]["added"]) for j in jobs] == [
        ("ingest_path", "completed", 1),
        ("ingest_path", "completed_with_errors", 0),  # a .py file is not a document: refused, with the reason
    ]
    assert "unsupported file type '.py'" in jobs[1]["failures"][0]

    done = zapomni(data_dir, "index-codebase", str(code), **roots)
    assert done.returncode == 0 and "completed" in done.stdout and "calls 11" in done.stdout, done.stderr
    callees = zapomni(data_dir, "callees", "shop.models.make_order", "--json", **roots)
    assert [s["qualified_name"] for s in json.loads(callees.stdout)["symbols"]] == ["shop.models.Order"]
    outside = zapomni(data_dir, "ingest", "/etc", **roots)
    assert outside.returncode == 1 and "outside the allowed roots" in outside.stderr
