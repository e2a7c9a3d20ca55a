"""ingest_path and index_codebase: files and source trees read into memories by a background job."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import IndexCodebaseRequest, IngestPathRequest, RequestContext, WalkQueued
from zapomni_mcp.registry import Tool

_INCREMENTAL = (
    "Incremental: run it again after files change and only new or changed files are read; files deleted from "
    "disk are forgotten. Answers at once with a job_id; job_status(job_id, wait_s) follows it, and lists every "
    "file refused or unreadable with the reason."
)


def _queued(result: WalkQueued, what: str) -> str:
    return f"Queued job {result.job_id}: {what} {result.path} into {result.workspace!r}. Follow it with job_status."


class IngestPathTool(Tool[IngestPathRequest, WalkQueued]):
    name = "ingest_path"
    description = (
        "Remember documents from disk: a file or a whole directory of PDF (text per page), DOCX, HTML (main content), "
        "Markdown and plain text files. Each file becomes one searchable memory (kind 'document', source = its "
        "path) whose search results carry the page and heading path. .gitignore is respected. " + _INCREMENTAL
    )
    input_model = IngestPathRequest
    output_model = WalkQueued
    role = "write"
    # Destructive: a re-ingest removes the memories of files deleted from the folder.
    annotations = types.ToolAnnotations(
        title="Ingest files", read_only_hint=False, destructive_hint=True, idempotent_hint=True
    )

    async def execute(self, arguments: IngestPathRequest, ctx: RequestContext) -> WalkQueued:
        return await self.core.files.ingest(arguments)

    @staticmethod
    def render(result: WalkQueued) -> str:
        return _queued(result, "reading documents under")


class IndexCodebaseTool(Tool[IndexCodebaseRequest, WalkQueued]):
    name = "index_codebase"
    description = (
        "Index source code (Python, JavaScript, TypeScript, Go, Rust) with tree-sitter: functions, methods and "
        "classes become searchable chunks (search_memory with filters.kind='code' returns file and lines) and a "
        "code graph of calls, inheritance and imports (find_symbol, get_callers, get_callees, get_related). "
        ".gitignore is respected. " + _INCREMENTAL
    )
    input_model = IndexCodebaseRequest
    output_model = WalkQueued
    role = "write"
    # Destructive: a re-index removes the code memories and symbols of deleted files.
    annotations = types.ToolAnnotations(
        title="Index codebase", read_only_hint=False, destructive_hint=True, idempotent_hint=True
    )

    async def execute(self, arguments: IndexCodebaseRequest, ctx: RequestContext) -> WalkQueued:
        return await self.core.files.index_codebase(arguments)

    @staticmethod
    def render(result: WalkQueued) -> str:
        return _queued(result, "indexing the code under")
