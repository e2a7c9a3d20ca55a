"""Hostile strings in every tool's string arguments, through the official client and a real `zapomni serve`.

FalkorDB's client writes query parameters into the query text (`CYPHER name="value" ...`), and a NUL
character ends that text early: such a string must be refused at the edge, naming the field, and no
other string may break the encoding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.conftest import call, mcp_session

pytestmark = pytest.mark.anyio

NUL = "\x00"

# The places the hostile client found, and the rest of each tool's free-text fields.
NUL_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_memory", {"text": f"before{NUL}after"}, "text"),
    ("add_memory", {"text": "ok", "metadata": {"source": f"notes{NUL}.md"}}, "metadata.source"),
    ("add_memory", {"text": "ok", "metadata": {"tags": ["fine", f"ta{NUL}g"]}}, "metadata.tags.1"),
    ("add_memory", {"text": "ok", "metadata": {"speaker": f"Ann{NUL}"}}, "metadata.speaker"),
    ("add_memory", {"text": "ok", "metadata": {"colour": f"bl{NUL}ue"}}, "metadata.colour"),
    ("add_memory", {"text": "ok", "metadata": {f"col{NUL}our": "blue"}}, "metadata"),
    ("search_memory", {"query": f"what{NUL}"}, "query"),
    ("search_memory", {"query": "x", "filters": {"tags": [f"t{NUL}"]}}, "filters.tags.0"),
    ("search_memory", {"query": "x", "filters": {"source": f"s{NUL}"}}, "filters.source"),
    ("list_memories", {"cursor": f"c{NUL}"}, "cursor"),
    ("delete_memory", {"filters": {"source": f"s{NUL}"}}, "filters.source"),
    ("get_related", {"entity": f"Maria{NUL}Garcia"}, "entity"),
    ("find_symbol", {"name": f"load{NUL}config"}, "name"),
    ("get_callers", {"symbol": f"main{NUL}"}, "symbol"),
    ("ingest_path", {"path": f"/tmp/x{NUL}y"}, "path"),
    ("index_codebase", {"path": "/tmp", "exclude": [f"*{NUL}"]}, "exclude.0"),
]


async def totals(session: ClientSession) -> tuple[int, int, int]:
    """Workspaces, memories and chunks in the whole store."""
    listed = await call(session, "list_workspaces")
    spaces = listed["workspaces"]
    return len(spaces), sum(w["memories"] for w in spaces), sum(w["chunks"] for w in spaces)


async def test_a_nul_character_is_refused_naming_the_field(data_dir: Path) -> None:
    async with mcp_session(data_dir) as session:
        await call(session, "add_memory", {"text": "The only memory.", "metadata": {"tags": ["t"], "source": "s"}})
        before = await totals(session)
        for tool, arguments, field in NUL_CALLS:
            result = await session.call_tool(tool, arguments)
            text = result.content[0].text
            assert result.is_error, (tool, arguments, text)
            assert f"- {field}: " in text and "NUL" in text, (tool, field, text)
            assert await totals(session) == before, (tool, arguments)
