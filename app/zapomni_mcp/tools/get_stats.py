"""get_stats: counts, size and health figures of the memory store."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import RequestContext, Stats, StatsRequest
from zapomni_mcp.access import current_grant
from zapomni_mcp.registry import Tool


class GetStatsTool(Tool[StatsRequest, Stats]):
    name = "get_stats"
    description = (
        "Statistics of a workspace (default: the server's) and the store: memories, chunks, workspaces, "
        "size, free disk space (with a warning while writes are refused for lack of it), embedder, query latency, "
        "uptime."
    )
    input_model = StatsRequest
    output_model = Stats
    role = "read"
    annotations = types.ToolAnnotations(title="Memory statistics", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: StatsRequest, ctx: RequestContext) -> Stats:
        stats = await self.core.workspaces.stats(arguments)
        grant = current_grant()
        if grant is None or grant.workspaces is None:
            return stats
        # A token for some workspaces learns nothing of the others: not how many there are, nor the store's size.
        seen = [name for name in await self.core.workspaces.names() if grant.sees(name)]
        return stats.model_copy(update={"workspaces": len(seen), "database_size_mb": None})

    @staticmethod
    def render(result: Stats) -> str:
        return "\n".join(f"{key}: {value}" for key, value in result.model_dump().items())
