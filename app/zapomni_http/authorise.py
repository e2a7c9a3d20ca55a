"""Per-call authorisation: which role and workspace a JSON-RPC request needs, checked against the token's grant.

Only two methods act on the store: `tools/call` (each tool declares its role; the workspace is its
argument, or the server's default, or a job's own) and `resources/read` (read, the URI's workspace).
Listings are filtered by the handlers themselves (zapomni_mcp.access); the rest touch nothing.
"""

from __future__ import annotations

from typing import Any

from zapomni_core import Grant
from zapomni_mcp import resources
from zapomni_mcp.registry import ToolRegistry


async def refusal(grant: Grant, request: dict[str, Any], registry: ToolRegistry, default_workspace: str) -> str | None:
    """None when the grant allows the request, else one line naming the call and what the token lacks."""
    params = request.get("params")
    params = params if isinstance(params, dict) else {}
    method = request.get("method")
    if method == "tools/call":
        name = params.get("name")
        tool = registry.get(name) if isinstance(name, str) else None
        if tool is None:
            return None  # no tool of that name: the server says so, and nothing is done
        arguments = params.get("arguments")
        workspace = await tool.workspace(arguments if isinstance(arguments, dict) else {}, default_workspace)
        reason = grant.refusal(tool.role, workspace)
        return f"{tool.name} needs the {tool.role} role{_in(workspace)}: {reason}" if reason else None
    if method == "resources/read":
        uri = params.get("uri")
        workspace = resources.workspace_of(uri) if isinstance(uri, str) else None
        reason = grant.refusal("read", workspace)
        return f"resources/read needs the read role{_in(workspace)}: {reason}" if reason else None
    return None


def _in(workspace: str | None) -> str:
    return f" in workspace {workspace!r}" if workspace is not None else ""
