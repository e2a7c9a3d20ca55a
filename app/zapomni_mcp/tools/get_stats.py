"""get_stats: counts, size and health figures of the memory store."""

from __future__ import annotations

import mcp_types as types
from pydantic import BaseModel, ConfigDict

from zapomni_core.models import Stats
from zapomni_mcp.registry import Tool


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GetStatsTool(Tool[NoArguments, Stats]):
    name = "get_stats"
    description = "Statistics of the memory store: memories, chunks, size, embedder, query latency, uptime."
    input_model = NoArguments
    output_model = Stats
    annotations = types.ToolAnnotations(title="Memory statistics", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: NoArguments) -> Stats:
        return await self.core.stats()

    def render(self, result: Stats) -> str:
        return "\n".join(f"{key}: {value}" for key, value in result.model_dump().items())
