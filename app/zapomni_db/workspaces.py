"""Workspaces are FalkorDB graphs: `default` is GRAPH_NAME itself, any other `w` is `GRAPH_NAME:w`.

One graph per workspace makes isolation structural: a `GraphClient` is bound to one graph and
no query can name another (docs/decisions/0009-workspaces.md has the measurements).
"""

from __future__ import annotations

from zapomni_db.connection import Connection
from zapomni_db.errors import QueryFailed
from zapomni_db.maintenance import keyword_stamp_key

DEFAULT = "default"
# GRAPH_NAME may not contain ':' (settings), so a workspace graph can never be mistaken for another store's.
# Nor '#', which no workspace name holds either: the store's tokens live in `GRAPH_NAME#access` (zapomni_db.access),
# which is therefore never listed as a workspace.
SEPARATOR = ":"


def graph_for(base: str, workspace: str) -> str:
    return base if workspace == DEFAULT else f"{base}{SEPARATOR}{workspace}"


def workspace_of(base: str, graph: str) -> str | None:
    """The workspace a graph name belongs to in the store `base`, or None for another store's graph."""
    if graph == base:
        return DEFAULT
    prefix = base + SEPARATOR
    return graph[len(prefix) :] if graph.startswith(prefix) and len(graph) > len(prefix) else None


async def existing_workspaces(connection: Connection, base: str) -> list[str]:
    """The workspaces whose graph exists, sorted (a workspace exists from its first write)."""
    graphs = await connection.command("GRAPH.LIST")
    names = {workspace_of(base, g.decode() if isinstance(g, bytes) else str(g)) for g in graphs or []}
    return sorted(n for n in names if n is not None)


async def drop_workspace_graph(connection: Connection, base: str, workspace: str) -> bool:
    """Delete the workspace's graph and everything in it; False when there was none."""
    graph = graph_for(base, workspace)
    try:
        async with connection.fence(graph).deleting():
            await connection.command("GRAPH.DELETE", graph)
    except QueryFailed as exc:
        if "empty" in str(exc).lower() or "invalid graph" in str(exc).lower():
            return False
        raise
    return True


async def drop_keyword_stamp(connection: Connection, graph: str) -> None:
    """Delete the key a saved keyword index stamped beside a deleted graph (after its file is gone: a save that
    was writing it when the graph was deleted stamped last)."""
    await connection.command("DEL", keyword_stamp_key(graph))
