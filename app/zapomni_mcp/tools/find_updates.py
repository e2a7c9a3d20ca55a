"""find_updates: link the memories stored before update detection, in the background."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import FindUpdatesRequest, FindUpdatesResult, RequestContext
from zapomni_mcp.registry import Tool


class FindUpdatesTool(Tool[FindUpdatesRequest, FindUpdatesResult]):
    name = "find_updates"
    description = (
        "Find, among the memories already stored in a workspace, those that a newer memory replaced (a move, a new "
        "job or number, a changed plan) and link them, as add_memory does for each new memory. For a store filled "
        "before this existed, with ZAPOMNI_UPDATE_DETECTION off, or by an import without update lines. Answers at "
        "once with a job_id (job_status follows it); running it again adds nothing twice."
    )
    input_model = FindUpdatesRequest
    output_model = FindUpdatesResult
    role = "write"
    # It adds links only (update_memory not_replaced_by removes one); no memory changes.
    annotations = types.ToolAnnotations(
        title="Find updates", read_only_hint=False, destructive_hint=False, idempotent_hint=True
    )

    async def execute(self, arguments: FindUpdatesRequest, ctx: RequestContext) -> FindUpdatesResult:
        return await self.core.memories.find_updates(arguments)

    @staticmethod
    def render(result: FindUpdatesResult) -> str:
        how = "Queued" if result.queued else "Already queued:"
        return (
            f"{how} job {result.job_id}: it reads the {result.memories} memories of {result.workspace!r} and links "
            "those a newer memory replaced. Follow it with job_status."
        )
