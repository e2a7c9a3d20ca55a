"""Access tokens in a graph of their own, `GRAPH_NAME#access`, beside the workspaces' graphs.

'#' can be in neither GRAPH_NAME nor a workspace name (settings and zapomni_core.validation), so this
graph is never taken for a workspace (`workspaces.workspace_of`): listing, stats, export and re-embed
never see it, and `delete_workspace` cannot name it. A backup holds it with everything else.

A token is stored by the SHA-256 of its text, never the text (docs/decisions/0018-access-tokens.md).
FalkorDB runs one write query at a time, so the check that a name is free and the creation are one
query, and two processes cannot both create a live token of one name.
"""

from __future__ import annotations

import builtins
from typing import Any

from zapomni_db.client import GraphClient
from zapomni_db.connection import Connection
from zapomni_db.records.access import TokenRow
from zapomni_db.schema import create_indexes

ACCESS_SUFFIX = "#access"

_INDEXES = ("CREATE INDEX FOR (t:Token) ON (t.id)", "CREATE INDEX FOR (t:Token) ON (t.name)")
_LIVE = "t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > $now)"
_PROPERTIES = (
    "{id: $id, name: $name, role: $role, all_workspaces: $all_workspaces, workspaces: $workspaces, "
    "created_at: $created_at, expires_at: $expires_at, secret_hash: $secret_hash}"
)


def access_graph(base: str) -> str:
    return f"{base}{ACCESS_SUFFIX}"


class AccessStore:
    def __init__(self, connection: Connection, base: str) -> None:
        self._client = GraphClient(connection, access_graph(base))

    async def prepare(self) -> None:
        """Create the graph and its indexes (idempotent; another process may be doing the same)."""
        await create_indexes(self._client, _INDEXES)

    async def create(self, token: TokenRow, now: float) -> TokenRow | None:
        """Store a new token; None, storing nothing, when its id is taken or a live token has its name."""
        rows = await self._client.query(
            f"OPTIONAL MATCH (t:Token) WHERE t.id = $id OR (t.name = $name AND {_LIVE}) "
            f"WITH count(t) AS clashes WHERE clashes = 0 CREATE (t:Token {_PROPERTIES}) RETURN {TokenRow.PROJECTION}",
            {**token_params(token), "now": now},
        )
        return TokenRow.from_row(rows[0]) if rows else None

    async def get(self, token_id: str) -> TokenRow | None:
        rows = await self._client.ro_query(
            f"MATCH (t:Token {{id: $id}}) RETURN {TokenRow.PROJECTION}", {"id": token_id}
        )
        return TokenRow.from_row(rows[0]) if rows else None

    async def list(self) -> builtins.list[TokenRow]:
        rows = await self._client.ro_query(f"MATCH (t:Token) RETURN {TokenRow.PROJECTION} ORDER BY t.created_at, t.id")
        return [TokenRow.from_row(row) for row in rows]

    async def live_named(self, name: str, now: float) -> TokenRow | None:
        rows = await self._client.ro_query(
            f"MATCH (t:Token {{name: $name}}) WHERE {_LIVE} RETURN {TokenRow.PROJECTION}", {"name": name, "now": now}
        )
        return TokenRow.from_row(rows[0]) if rows else None

    async def named_or_with_id(self, value: str) -> builtins.list[TokenRow]:
        """Tokens with the id `value` or named `value` (revoked ones too), newest first."""
        rows = await self._client.ro_query(
            f"MATCH (t:Token) WHERE t.id = $value OR t.name = $value "
            f"RETURN {TokenRow.PROJECTION} ORDER BY t.created_at DESC",
            {"value": value},
        )
        return [TokenRow.from_row(row) for row in rows]

    async def revoke(self, token_id: str, now: float) -> tuple[TokenRow, bool] | None:
        """Revoke a token (a revoked one keeps its first revocation time); with whether it already was."""
        rows = await self._client.query(
            "MATCH (t:Token {id: $id}) WITH t, t.revoked_at IS NOT NULL AS was "
            f"SET t.revoked_at = coalesce(t.revoked_at, $now) RETURN was, {TokenRow.PROJECTION}",
            {"id": token_id, "now": now},
        )
        return (TokenRow.from_row(rows[0][1:]), bool(rows[0][0])) if rows else None

    async def touch(self, token_id: str, now: float, older_than: float) -> None:
        """Record a use, unless one was recorded after `older_than` (every process shares the stored time)."""
        await self._client.query(
            "MATCH (t:Token {id: $id}) WHERE t.last_used_at IS NULL OR t.last_used_at < $older_than "
            "SET t.last_used_at = $now",
            {"id": token_id, "now": now, "older_than": older_than},
        )


def token_params(token: TokenRow) -> dict[str, Any]:
    return {
        "id": token.id,
        "name": token.name,
        "role": token.role,
        "all_workspaces": token.workspaces is None,
        "workspaces": list(token.workspaces) if token.workspaces is not None else None,
        "created_at": token.created_at,
        "expires_at": token.expires_at,
        "secret_hash": token.secret_hash,
        "client_id": token.client_id,
    }
