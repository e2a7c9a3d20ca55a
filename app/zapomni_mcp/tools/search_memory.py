"""search_memory: find stored memories by meaning, optionally filtered."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import RequestContext, SearchRequest, SearchResult
from zapomni_mcp.registry import Tool
from zapomni_mcp.tools.links import link_lines


class SearchMemoryTool(Tool[SearchRequest, SearchResult]):
    name = "search_memory"
    description = (
        "Search stored memories by meaning and by exact words (names, identifiers, error codes), "
        "the two legs' scores fused. Returns the best chunk of each matching memory with a "
        "similarity_score in [0, 1] and the legs that found it. mode: hybrid (default), vector or "
        "keyword. Filters: tags (matches any), source (exact), date_from / date_to (ISO 8601, inclusive). "
        "Memories neither leg finds relevant are left out (fewer than limit results is normal); "
        "include_unrelated: true returns them too. A memory that a newer one replaced (a new address, job, number, "
        "plan...) says so in superseded_by and comes right after the one that replaced it, unless the query asks "
        "about the past ('before', 'used to', 'old'); filters.current_only leaves replaced memories out. Right after "
        "the server starts, while the database still loads, a search without filters may be answered from the "
        "keyword index alone: legs ['keyword'], similarity_score null, and a note saying so."
    )
    input_model = SearchRequest
    output_model = SearchResult
    role = "read"
    annotations = types.ToolAnnotations(title="Search memory", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: SearchRequest, ctx: RequestContext) -> SearchResult:
        return await self.core.memories.search(arguments)

    @staticmethod
    def render(result: SearchResult) -> str:
        note = [f"Note: {result.note}."] if result.note else []
        if not result.results:
            return "\n".join([f"No memories matched in workspace {result.workspace!r}.", *note])
        lines = [*note, f"{result.count} result(s) in workspace {result.workspace!r}:"]
        for rank, hit in enumerate(result.results, start=1):
            labels = ", ".join(filter(None, [hit.location(), *hit.tags]))
            suffix = f" [{labels}]" if labels else ""
            found = "+".join(hit.matched_by)
            score = "" if hit.similarity_score is None else f"{hit.similarity_score:.3f}, "
            lines.append(f"{rank}. ({score}{found}) {hit.text}{suffix} — memory {hit.memory_id}")
            lines += link_lines(hit)
        return "\n".join(lines)
