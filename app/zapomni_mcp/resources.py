"""Memories as MCP resources: `memory://{workspace}/{memory_id}`, listed page by page, read whole."""

from __future__ import annotations

import base64
import binascii
import json
import re

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from zapomni_core import GetMemoryRequest, ListMemoriesRequest, ZapomniCore, ZapomniError
from zapomni_mcp.access import visible
from zapomni_mcp.errors import public_message

TEMPLATE = "memory://{workspace}/{memory_id}"
_URI = re.compile(r"^memory://(?P<workspace>[^/]+)/(?P<memory_id>[^/]+)$")
PAGE = 50
# JSON-RPC error code MCP uses for a resource that does not exist.
RESOURCE_NOT_FOUND = -32002


def uri_of(workspace: str, memory_id: str) -> str:
    return f"memory://{workspace}/{memory_id}"


def templates() -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(
                name="memory",
                title="A stored memory",
                uri_template=TEMPLATE,
                description="One memory's full text, by workspace and id (as list_memories and search_memory "
                "give them).",
                mime_type="text/plain",
            )
        ]
    )


async def list_page(core: ZapomniCore, cursor: str | None) -> types.ListResourcesResult:
    """Every workspace's memories (that the caller sees), newest first within each workspace, a page at a time."""
    names = [name for name in await core.workspaces.names() if visible(name)]
    position, inner = _decode(cursor) if cursor else (0, None)
    resources: list[types.Resource] = []
    while position < len(names) and len(resources) < PAGE:
        page = await core.memories.page(
            ListMemoriesRequest(workspace=names[position], limit=PAGE - len(resources), cursor=inner)
        )
        resources += [
            types.Resource(
                name=item.memory_id,
                title=item.preview[:80],
                uri=uri_of(item.workspace, item.memory_id),
                description=item.preview,
                mime_type="text/plain",
            )
            for item in page.memories
        ]
        if page.next_cursor:
            inner = page.next_cursor
        else:
            position, inner = position + 1, None
    more = position < len(names)
    return types.ListResourcesResult(resources=resources, next_cursor=_encode(position, inner) if more else None)


def workspace_of(uri: str) -> str | None:
    """The workspace a resource URI names (None: not one of ours, which `read` refuses)."""
    match = _URI.match(uri)
    return match.group("workspace") if match else None


async def read(core: ZapomniCore, uri: str, *, local: bool) -> types.ReadResourceResult:
    match = _URI.match(uri)
    if match is None:
        raise MCPError(types.INVALID_PARAMS, f"uri: expected {TEMPLATE}, got {uri[:200]!r}")
    try:
        memory = await core.memories.get(GetMemoryRequest.model_validate(match.groupdict()))
    except ValidationError:
        raise MCPError(RESOURCE_NOT_FOUND, f"no memory at {uri[:200]}: malformed workspace or memory id") from None
    except ZapomniError as exc:
        raise MCPError(RESOURCE_NOT_FOUND, public_message(exc, local=local)) from None
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=memory.text)]
    )


def _encode(position: int, inner: str | None) -> str:
    return base64.urlsafe_b64encode(json.dumps([position, inner]).encode()).decode()


def _decode(cursor: str) -> tuple[int, str | None]:
    try:
        position, inner = json.loads(base64.urlsafe_b64decode(cursor))
        return int(position), inner
    except (binascii.Error, ValueError, TypeError):
        raise MCPError(types.INVALID_PARAMS, "cursor: not a cursor this server made") from None
