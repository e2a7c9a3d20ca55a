"""Bad tool arguments: the right kind of error naming the field and the constraint, nothing stored, and the server
keeps serving; an unknown tool is a protocol error that says what exists. Through the official client and the real
server object (in process; tests/e2e/test_bad_input.py has what needs a process)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.helpers import local_session, text_of
from tests.processes import call
from zapomni_core import Settings

pytestmark = pytest.mark.anyio

TEN_MB = 10 * 1024 * 1024

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("add_memory", {"text": ""}, "text"),
    ("add_memory", {"text": "   \n\t "}, "text: must contain something other than whitespace"),
    ("add_memory", {"text": "a" * (TEN_MB + 1)}, "text: must be at most 10485760 bytes"),
    ("add_memory", {"text": 12345}, "text: input should be a valid string"),
    ("add_memory", {"text": "ok", "colour": "blue"}, "colour: unknown argument"),
    ("add_memory", {"text": "ok", "metadata": {"owner": {"name": "x"}}}, "metadata.owner: must be a string"),
    ("add_memory", {"text": "ok", "metadata": {"date": "31/12/2024"}}, "metadata.date: must be an ISO 8601"),
    (
        "add_memory",
        {"text": "ok", "metadata": {"tags": "solo"}},
        "metadata.tags: input should be a valid list",
    ),
    ("search_memory", {"query": "x", "limit": 0}, "limit: input should be greater than or equal to 1"),
    ("search_memory", {"query": "x", "limit": 101}, "limit: input should be less than or equal to 100"),
    ("search_memory", {"query": "x", "limit": "ten"}, "limit: input should be a valid integer"),
    ("search_memory", {"query": "q" * 1001}, "query: string should have at most 1000 characters"),
    (
        "search_memory",
        {"query": "x", "filters": {"date_from": "not-a-date"}},
        "filters.date_from: must be an ISO",
    ),
    ("search_memory", {}, "query: is required"),
    ("search_memory", {"query": "x", "mode": "semantic"}, "mode: input should be 'hybrid', 'vector' or 'keyword'"),
    ("search_memory", {"query": "x", "min_score": 1.5}, "min_score: input should be less than or equal to 1"),
    ("search_memory", {"query": "x", "all_chunks": "yes"}, "all_chunks: input should be a valid boolean"),
    ("get_stats", {"verbose": True}, "verbose: unknown argument"),
    ("get_related", {"entity": ""}, "entity: string should have at least 1 character"),
    ("get_related", {"entity": "Maria", "depth": 4}, "depth: input should be less than or equal to 3"),
    ("get_related", {"entity": "Maria", "relation_types": ["HATES"]}, "relation_types.0: input should be"),
    ("build_graph", {"memory_ids": ["not-a-uuid"]}, "memory_ids.0: string should match pattern"),
    ("build_graph", {"memory_ids": []}, "memory_ids: list should have at least 1 item"),
    ("graph_status", {"wait_s": 51}, "wait_s: input should be less than or equal to 50"),
]


async def test_each_bad_call_is_refused_and_changes_nothing(settings: Settings) -> None:
    async with local_session(settings) as session:
        await call(session, "add_memory", {"text": "A memory that must stay the only one."})
        for tool, arguments, expected in BAD_CALLS:
            result = await session.call_tool(tool, arguments)
            text = text_of(result)
            assert result.is_error, (tool, arguments)
            assert expected in text, (expected, text)
            assert "Allowed arguments:" in text
            # The server answers the next valid request, and nothing was stored.
            stats = await call(session, "get_stats")
            assert (stats["total_memories"], stats["total_chunks"]) == (1, 1), (tool, arguments)


async def test_an_unknown_tool_is_a_protocol_error(settings: Settings) -> None:
    async with local_session(settings) as session:
        with pytest.raises(MCPError) as caught:
            await session.call_tool("forget_everything", {})
        assert caught.value.code == types.INVALID_PARAMS
        assert "add_memory" in caught.value.message  # it says what exists
        assert (await call(session, "get_stats"))["total_memories"] == 0
