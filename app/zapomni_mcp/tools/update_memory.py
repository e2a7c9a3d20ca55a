"""update_memory: correct a memory's text or metadata, keeping its id."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import RequestContext, UpdateMemoryRequest, UpdateMemoryResult
from zapomni_mcp.registry import Tool
from zapomni_mcp.tools.links import link_lines


class UpdateMemoryTool(Tool[UpdateMemoryRequest, UpdateMemoryResult]):
    name = "update_memory"
    description = (
        "Change a memory's text and/or metadata; the id stays. New metadata replaces the old as a whole "
        "(give every tag you want to keep). A metadata-only change re-embeds nothing; a text change "
        "re-embeds only the chunks whose text changed. Searches see the old memory or the new one, never a mix. "
        "not_replaced_by: ids of newer memories wrongly linked as replacing this one (superseded_by); the links "
        "are removed and never made again. replaces: ids of older memories this one replaces, when the automatic "
        "links missed it."
    )
    input_model = UpdateMemoryRequest
    output_model = UpdateMemoryResult
    role = "write"
    annotations = types.ToolAnnotations(
        title="Update memory", read_only_hint=False, destructive_hint=True, idempotent_hint=True
    )

    async def execute(self, arguments: UpdateMemoryRequest, ctx: RequestContext) -> UpdateMemoryResult:
        return await self.core.memories.update(arguments, ctx)

    @staticmethod
    def render(result: UpdateMemoryResult) -> str:
        unlinked = (
            f"Memory {result.memory_id} is no longer linked as replaced by {', '.join(result.unlinked)}."
            if (result.unlinked)
            else ""
        )
        stated = f"Memory {result.memory_id} now replaces {', '.join(result.stated)}." if result.stated else ""
        return "\n".join(filter(None, [_changed(result), unlinked, stated, *link_lines(result, indent="")]))


def _changed(result: UpdateMemoryResult) -> str:
    if not result.text_changed and not result.metadata_changed:
        linked = result.unlinked or result.stated
        return "" if linked else f"Memory {result.memory_id} already says that; nothing changed."
    changed = " and ".join(n for n, c in (("text", result.text_changed), ("metadata", result.metadata_changed)) if c)
    return (
        f"Updated the {changed} of memory {result.memory_id}: {result.chunk_count} chunk(s), "
        f"{result.chunks_embedded} re-embedded, {result.chunks_kept} kept."
    )
