"""list_memories: page through what is stored, newest or oldest first."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import ListMemoriesRequest, MemoryPage, RequestContext
from zapomni_mcp.registry import Tool
from zapomni_mcp.tools.links import link_lines


class ListMemoriesTool(Tool[ListMemoriesRequest, MemoryPage]):
    name = "list_memories"
    description = (
        "List stored memories, newest first (order: oldest for the reverse), optionally filtered like "
        "search_memory. Each item has id, preview, tags, source, date, created/updated time and chunk "
        "count, and superseded_by / supersedes when a newer memory replaced it (filters.current_only: true lists "
        "only current ones). Pass next_cursor back as cursor for the next page; pages neither skip nor repeat while "
        "memories are added or deleted."
    )
    input_model = ListMemoriesRequest
    output_model = MemoryPage
    role = "read"
    annotations = types.ToolAnnotations(title="List memories", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: ListMemoriesRequest, ctx: RequestContext) -> MemoryPage:
        return await self.core.memories.page(arguments)

    @staticmethod
    def render(result: MemoryPage) -> str:
        if not result.memories:
            return f"No memories in workspace {result.workspace!r}" + (" match." if result.next_cursor else ".")
        lines = [f"{result.count} memor{'y' if result.count == 1 else 'ies'} in workspace {result.workspace!r}:"]
        for item in result.memories:
            labels = ", ".join(filter(None, [item.source, *item.tags]))
            lines.append(
                f"- {item.memory_id} ({item.created_at[:19]}){f' [{labels}]' if labels else ''}: {item.preview}"
            )
            lines += link_lines(item, indent="  ")
        if result.next_cursor:
            lines.append(f"More: call again with cursor={result.next_cursor}")
        return "\n".join(lines)
