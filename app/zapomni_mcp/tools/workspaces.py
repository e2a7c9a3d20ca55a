"""list_workspaces and delete_workspace: the separate memory spaces of one store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from zapomni_core import (
    WORKSPACE_RULE,
    DeleteWorkspaceRequest,
    DeleteWorkspaceResult,
    NoArguments,
    RequestContext,
    WorkspaceList,
)
from zapomni_mcp.access import visible
from zapomni_mcp.registry import Tool, named


class ListWorkspacesTool(Tool[NoArguments, WorkspaceList]):
    name = "list_workspaces"
    description = (
        "The workspaces in this store with their memory and chunk counts, and the default one. Every other "
        f"tool takes an optional workspace ({WORKSPACE_RULE}); a workspace is created by its first add_memory."
    )
    input_model = NoArguments
    output_model = WorkspaceList
    role = "read"
    annotations = types.ToolAnnotations(title="List workspaces", read_only_hint=True, idempotent_hint=True)

    async def workspace(self, arguments: Mapping[str, Any], default: str) -> str | None:
        return None  # every workspace: the list shows those the caller's token sees

    async def execute(self, arguments: NoArguments, ctx: RequestContext) -> WorkspaceList:
        listed = await self.core.workspaces.list()
        return listed.model_copy(update={"workspaces": [w for w in listed.workspaces if visible(w.name)]})

    @staticmethod
    def render(result: WorkspaceList) -> str:
        lines = [f"{len(result.workspaces)} workspace(s); default: {result.default!r}"]
        lines += [f"- {w.name}: {w.memories} memories, {w.chunks} chunks" for w in result.workspaces]
        return "\n".join(lines)


class DeleteWorkspaceTool(Tool[DeleteWorkspaceRequest, DeleteWorkspaceResult]):
    name = "delete_workspace"
    description = "Delete a workspace and every memory in it, irreversibly. confirm must repeat the name exactly."
    input_model = DeleteWorkspaceRequest
    output_model = DeleteWorkspaceResult
    role = "admin"
    annotations = types.ToolAnnotations(title="Delete workspace", read_only_hint=False, destructive_hint=True)

    async def workspace(self, arguments: Mapping[str, Any], default: str) -> str | None:
        name = arguments.get("name")
        return None if name is None else named(name, default)

    async def execute(self, arguments: DeleteWorkspaceRequest, ctx: RequestContext) -> DeleteWorkspaceResult:
        return await self.core.workspaces.delete(arguments)

    @staticmethod
    def render(result: DeleteWorkspaceResult) -> str:
        return f"Deleted workspace {result.name!r}: {result.deleted_memories} memories, {result.deleted_chunks} chunks."
