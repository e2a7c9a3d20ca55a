"""get_memory: one memory in full."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import GetMemoryRequest, MemoryDetail, RequestContext
from zapomni_mcp.registry import Tool
from zapomni_mcp.tools.links import link_lines


class GetMemoryTool(Tool[GetMemoryRequest, MemoryDetail]):
    name = "get_memory"
    description = (
        "One memory in full by its id: the whole text, its metadata, chunk count and timestamps, and its update "
        "links: superseded_by (newer memories that replaced it) and supersedes (older ones it replaced)."
    )
    input_model = GetMemoryRequest
    output_model = MemoryDetail
    role = "read"
    annotations = types.ToolAnnotations(title="Get memory", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: GetMemoryRequest, ctx: RequestContext) -> MemoryDetail:
        return await self.core.memories.get(arguments)

    @staticmethod
    def render(result: MemoryDetail) -> str:
        labels = ", ".join(filter(None, [result.source, *result.tags]))
        return (
            f"Memory {result.memory_id} in {result.workspace!r}"
            f"{f' [{labels}]' if labels else ''}, added {result.created_at}, updated {result.updated_at}, "
            f"{result.chunk_count} chunk(s){_inferred(result.inferred)}:\n{result.text}"
        ) + "".join(f"\n{line}" for line in link_lines(result, indent=""))


def _inferred(inferred: dict[str, str]) -> str:
    return f" (inferred: {', '.join(f'{k} {v}' for k, v in sorted(inferred.items()))})" if inferred else ""
