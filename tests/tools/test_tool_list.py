"""The tools a client is offered: every one, each with a description, strict input and output schemas, and hints
that say which ones read only and which can remove what was stored. Through the official client and the real server
object (in process)."""

from __future__ import annotations

import pytest

from tests.helpers import annotations_of, local_session
from zapomni_core import Settings

pytestmark = pytest.mark.anyio


async def test_tools_are_listed_with_strict_schemas(settings: Settings) -> None:
    async with local_session(settings) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {
        "add_memory", "search_memory", "get_memory", "list_memories", "update_memory", "delete_memory",
        "get_stats", "list_workspaces", "delete_workspace", "job_status", "list_jobs", "cancel_job",
        "build_graph", "graph_status", "get_related", "ingest_path", "index_codebase", "find_symbol",
        "get_callers", "get_callees", "find_updates", "import_memories",
    }  # fmt: skip
    for tool in tools.values():
        assert tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    assert tools["add_memory"].input_schema["required"] == ["text"]
    assert tools["search_memory"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["search_memory"].annotations is not None and tools["search_memory"].annotations.read_only_hint
    # Every tool that writes says whether it can remove what was stored (MCP's default would be "yes").
    writers = {name: annotations_of(tool) for name, tool in tools.items() if not annotations_of(tool).read_only_hint}
    assert all(annotations.destructive_hint is not None for annotations in writers.values()), writers
    destructive = {name for name, annotations in writers.items() if annotations.destructive_hint}
    assert destructive == {"delete_memory", "update_memory", "delete_workspace", "cancel_job", "ingest_path",
                           "index_codebase"}  # fmt: skip
