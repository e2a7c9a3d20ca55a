"""add_memory: store text (with optional metadata) as a searchable memory."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import AddMemoryRequest, AddMemoryResult, RequestContext
from zapomni_mcp.registry import Tool
from zapomni_mcp.tools.links import link_lines


class AddMemoryTool(Tool[AddMemoryRequest, AddMemoryResult]):
    name = "add_memory"
    description = (
        "Remember a piece of text for later. The text is chunked, embedded locally and stored; "
        "find it again with search_memory. Optional metadata: tags (list of strings), source "
        "(string), date (ISO 8601), and any other flat string/number/boolean keys. For a conversation, add one "
        "memory per turn, in order, with metadata speaker (who said it), date (when) and thread (one id per "
        "chat session): the turn is then found by who said it, when, and the turns before it. A turn sent as "
        "'Name: text' without them gets its speaker from the name and its thread from this client session, "
        "a new one after 30 minutes without a turn (get_memory shows them as inferred). Adding the same "
        "text again (whitespace aside) is harmless: it returns the existing memory (deduplicated: true) "
        "and adds the new tags to it. Optional workspace keeps memories of different projects apart. A large text "
        "(32 KB or more by default) is stored at once and answered with status 'indexing' and a job_id: a background "
        "job makes it searchable within seconds to minutes; job_status follows it. When the text states a new value "
        "of something an older memory said (a move, a new job or number, a changed plan), the older one is linked as "
        "replaced (supersedes in the reply; update_memory not_replaced_by undoes a wrong link). When you know the text "
        "updates memories you found, pass their ids in replaces: they are linked as replaced whatever the wording."
    )
    input_model = AddMemoryRequest
    output_model = AddMemoryResult
    role = "write"
    annotations = types.ToolAnnotations(
        title="Add memory", read_only_hint=False, destructive_hint=False, idempotent_hint=True
    )

    async def execute(self, arguments: AddMemoryRequest, ctx: RequestContext) -> AddMemoryResult:
        return await self.core.memories.add(arguments, ctx)

    @staticmethod
    def render(result: AddMemoryResult) -> str:
        if result.status == "indexing":
            return (
                f"Stored memory {result.memory_id} in {result.workspace!r}; it becomes searchable when job "
                f"{result.job_id} has indexed it (job_status shows progress): {result.text_preview}"
            )
        if result.deduplicated:
            return f"Already stored as memory {result.memory_id} in {result.workspace!r}: {result.text_preview}"
        return "\n".join(
            [
                f"Stored memory {result.memory_id} in {result.workspace!r} ({result.chunks_created} chunk(s)): "
                f"{result.text_preview}",
                *link_lines(result),
            ]
        )
