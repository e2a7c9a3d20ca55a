"""import_memories: another tool's memories, graph or chat history, read from this machine by a background job."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import IMPORT_FORMATS, ImportQueued, ImportSourceRequest, RequestContext
from zapomni_mcp.registry import Tool


class ImportMemoriesTool(Tool[ImportSourceRequest, ImportQueued]):
    name = "import_memories"
    description = (
        "Import what another tool kept, from a file or folder on the server's machine (inside its allowed roots): "
        + "; ".join(f"{f.name}: {f.reads}" for f in IMPORT_FORMATS.values())
        + ". Each memory keeps its speaker, date and thread where the source has them, is tagged "
        "imported:<format> (list_memories or delete_memory with that tag finds one import) and records its "
        "original id. Idempotent: a second run adds only what is new. Answers at once with a job_id; "
        "job_status(job_id, wait_s) gives the counts (added, already there, left out and why). dry_run: the job "
        "only reads and counts."
    )
    input_model = ImportSourceRequest
    output_model = ImportQueued
    role = "write"
    annotations = types.ToolAnnotations(
        title="Import memories", read_only_hint=False, destructive_hint=False, idempotent_hint=True
    )

    async def execute(self, arguments: ImportSourceRequest, ctx: RequestContext) -> ImportQueued:
        return await self.core.transfer.queue_import(arguments)

    @staticmethod
    def render(result: ImportQueued) -> str:
        return (
            f"Queued job {result.job_id}: importing {result.path} ({result.format}) into {result.workspace!r}. "
            "Follow it with job_status."
        )
