"""delete_memory: forget memories by id or by filter, leaving no trace in any index."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import DeleteMemoryRequest, DeleteMemoryResult, RequestContext
from zapomni_mcp.registry import Tool


class DeleteMemoryTool(Tool[DeleteMemoryRequest, DeleteMemoryResult]):
    name = "delete_memory"
    description = (
        "Forget memories: by memory_ids (1-1000) or by filters as in search_memory (at least one filter). "
        "Removes the memories, their chunks and every index entry; no search, list, get or export finds "
        "them afterwards, in this or any other server on the same store. dry_run: true only reports what "
        "would be deleted."
    )
    input_model = DeleteMemoryRequest
    output_model = DeleteMemoryResult
    role = "write"
    annotations = types.ToolAnnotations(
        title="Delete memories", read_only_hint=False, destructive_hint=True, idempotent_hint=True
    )

    async def execute(self, arguments: DeleteMemoryRequest, ctx: RequestContext) -> DeleteMemoryResult:
        return await self.core.memories.delete(arguments)

    @staticmethod
    def render(result: DeleteMemoryResult) -> str:
        verb = "Would delete" if result.dry_run else "Deleted"
        lines = [f"{verb} {result.deleted_count} memor{'y' if result.deleted_count == 1 else 'ies'} "
                 f"from workspace {result.workspace!r}."]  # fmt: skip
        lines += [f"- {memory_id}" for memory_id in result.memory_ids[:50]]
        if len(result.memory_ids) > 50:
            lines.append(f"... and {len(result.memory_ids) - 50} more (see the structured result)")
        if result.not_found:
            lines.append(f"Not found: {', '.join(result.not_found[:20])}")
        return "\n".join(lines)
