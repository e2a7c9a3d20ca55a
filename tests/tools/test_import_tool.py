"""import_memories through the official MCP client and the real server object (in process): the import runs as a
background job that job_status follows; paths outside the allowed roots and unknown formats are refused at once;
a file that cannot be read fails its job with the reason and writes nothing; one import is deleted by its tag."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.chat_export import write_chatgpt_export
from tests.helpers import configured, local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parent.parent / "fixtures" / "imports"


async def test_an_import_is_a_job_followed_by_job_status_and_removed_by_its_tag(
    settings: Settings, tmp_path: Path
) -> None:
    export = shutil.copytree(FIXTURES / "claude", tmp_path / "claude-export")
    async with local_session(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(tmp_path))) as session:
        dry = await call(session, "import_memories", {"format": "claude", "path": str(export), "dry_run": True})
        job = await call(session, "job_status", {"job_id": dry["job_id"], "wait_s": 30})
        assert job["state"] == "completed" and job["counts"]["would_add"] == 6, job
        assert (await call(session, "get_stats", {}))["total_memories"] == 0

        queued = await call(session, "import_memories", {"format": "claude", "path": str(export), "workspace": "team"})
        assert (queued["workspace"], queued["path"]) == ("team", str(export))
        job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 30})
        assert job["state"] == "completed" and job["counts"]["added"] == 6 and job["counts"]["left_out"] == 4, job
        assert "2 messages with no text" in job["message"]
        again = await call(session, "import_memories", {"format": "claude", "path": str(export), "workspace": "team"})
        job = await call(session, "job_status", {"job_id": again["job_id"], "wait_s": 30})
        assert job["counts"]["added"] == 0 and job["counts"]["already_there"] == 6

        hits = await call(session, "search_memory", {"query": "co-working near Alfama", "workspace": "team"})
        assert hits["results"][0]["tags"] == ["imported:claude"]
        gone = await call(session, "delete_memory", {"workspace": "team", "filters": {"tags": ["imported:claude"]}})
        assert gone["deleted_count"] == 6


async def test_a_bad_import_is_refused_at_once_or_fails_its_job_with_the_reason(
    settings: Settings, tmp_path: Path
) -> None:
    broken = tmp_path / "conversations.json"
    broken.write_text('[{"conversation_id": "c1", "mapping": {}, "title": "x"}, {"conver')
    async with local_session(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(tmp_path))) as session:
        outside = await session.call_tool("import_memories", {"format": "chatgpt", "path": str(FIXTURES / "chatgpt")})
        assert outside.is_error and "outside the allowed roots" in text_of(outside)
        unknown = await session.call_tool("import_memories", {"format": "evernote", "path": str(broken)})
        assert (
            unknown.is_error
            and "format: must be one of mcp-memory, mcp-memory-service, markdown, chatgpt, claude" in text_of(unknown)
        )

        queued = await call(session, "import_memories", {"format": "chatgpt", "path": str(broken)})
        job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 30})
        assert job["state"] == "failed" and "ends inside conversation 2: it is truncated" in job["error"], job
        assert (await call(session, "get_stats", {}))["total_memories"] == 0


async def test_a_cancelled_import_job_stops_and_keeps_only_whole_memories(settings: Settings, tmp_path: Path) -> None:
    texts = [f"Note {i}: the harbour logged {i % 13} ferries and wind {i % 7} knots." for i in range(1500)]
    export = write_chatgpt_export(tmp_path / "export", texts)
    async with local_session(configured(settings, ZAPOMNI_ALLOWED_ROOTS=str(tmp_path))) as session:
        queued = await call(session, "import_memories", {"format": "chatgpt", "path": str(export)})
        await call(session, "cancel_job", {"job_id": queued["job_id"]})
        job = await call(session, "job_status", {"job_id": queued["job_id"], "wait_s": 30})
        assert job["state"] == "cancelled", job
        stored = (await call(session, "get_stats", {}))["total_memories"]
        assert stored < len(texts)
        listed = await call(session, "list_memories", {"limit": 100})
        assert all(m["status"] == "indexed" for m in listed["memories"])  # whole, searchable, or not there
