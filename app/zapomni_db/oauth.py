"""OAuth's state in the access graph (`GRAPH_NAME#access`), beside the tokens it issues.

A grant is a `Token` like those `zapomni token create` makes, with the client that holds it and two secrets that
change together at every refresh: the access token (its hash is the token's `secret_hash`, valid until
`access_expires_at`) and the refresh token (`refresh_hash`; the one before it is kept, to notice its reuse).
Clients, authorizations waiting for consent and codes are nodes of their own. Each "use once" is one write query
that deletes what it returns (FalkorDB runs writes one at a time): two replicas cannot both use one code.
"""

from __future__ import annotations

from zapomni_db.access import access_graph, token_params
from zapomni_db.client import GraphClient
from zapomni_db.connection import Connection
from zapomni_db.records.access import TokenRow
from zapomni_db.records.oauth import GrantSecrets, IssuedCode, OAuthClientRow, PendingAuthorization
from zapomni_db.schema import create_indexes

_INDEXES = (
    "CREATE INDEX FOR (c:OAuthClient) ON (c.id)",
    "CREATE INDEX FOR (p:OAuthPending) ON (p.id)",
    "CREATE INDEX FOR (k:OAuthCode) ON (k.code_hash)",
)
# A client never granted anything counts only until `$unused_before`.
_CURRENT_CLIENT = "(c.granted_at IS NOT NULL OR c.created_at >= $unused_before)"


class OAuthStore:
    def __init__(self, connection: Connection, base: str) -> None:
        self._client = GraphClient(connection, access_graph(base))

    async def prepare(self) -> None:
        await create_indexes(self._client, _INDEXES)

    async def register(self, client: OAuthClientRow, *, cap: int, unused_before: float) -> bool:
        """Store a client unless `cap` current clients exist (those never granted anything since `unused_before`
        are deleted first); whether it was stored."""
        await self._client.query(
            f"MATCH (c:OAuthClient) WHERE NOT {_CURRENT_CLIENT} DELETE c", {"unused_before": unused_before}
        )
        rows = await self._client.query(
            "OPTIONAL MATCH (c:OAuthClient) WITH count(c) AS n WHERE n < $cap "
            "CREATE (c:OAuthClient {id: $id, name: $name, metadata: $metadata, created_at: $created_at}) RETURN c.id",
            {"cap": cap, "id": client.id, "name": client.name, "metadata": client.metadata,
             "created_at": client.created_at},
        )  # fmt: skip
        return bool(rows)

    async def client(self, client_id: str, *, unused_before: float) -> OAuthClientRow | None:
        rows = await self._client.ro_query(
            f"MATCH (c:OAuthClient {{id: $id}}) WHERE {_CURRENT_CLIENT} RETURN {OAuthClientRow.PROJECTION}",
            {"id": client_id, "unused_before": unused_before},
        )
        return OAuthClientRow.from_row(rows[0]) if rows else None

    async def await_consent(self, pending: PendingAuthorization) -> None:
        await self._client.query(
            "CREATE (p:OAuthPending {id: $id, client_id: $client_id, redirect_uri: $redirect_uri, "
            "redirect_explicit: $redirect_explicit, code_challenge: $code_challenge, state: $state, role: $role, "
            "resource: $resource, expires_at: $expires_at})",
            vars(pending),
        )

    async def pending(self, pending_id: str, now: float) -> PendingAuthorization | None:
        rows = await self._client.ro_query(
            f"MATCH (p:OAuthPending {{id: $id}}) WHERE p.expires_at > $now RETURN {PendingAuthorization.PROJECTION}",
            {"id": pending_id, "now": now},
        )
        return PendingAuthorization.from_row(rows[0]) if rows else None

    async def answer(self, pending_id: str, now: float, code: IssuedCode | None) -> PendingAuthorization | None:
        """Take an authorization waiting for consent (once: it is deleted) and, if it was there and `code` is
        given, store the code in the same write; the authorization taken, or None."""
        create = (
            "CREATE (k:OAuthCode {code_hash: $code_hash, client_id: $client_id, redirect_uri: $redirect_uri, "
            "redirect_explicit: $redirect_explicit, code_challenge: $code_challenge, resource: $resource, "
            "role: $role, all_workspaces: $all_workspaces, workspaces: $workspaces, subject: $subject, "
            "expires_at: $expires_at}) "
            if code is not None
            else ""
        )
        rows = await self._client.query(
            f"MATCH (p:OAuthPending {{id: $pending_id}}) WHERE p.expires_at > $now "
            f"WITH p, [{PendingAuthorization.PROJECTION}] AS taken DELETE p {create}RETURN taken",
            {"pending_id": pending_id, "now": now, **(code.params() if code is not None else {})},
        )
        return PendingAuthorization.from_row(rows[0][0]) if rows else None

    async def code(self, code_hash: str) -> IssuedCode | None:
        rows = await self._client.ro_query(
            f"MATCH (k:OAuthCode {{code_hash: $h}}) RETURN {IssuedCode.PROJECTION}", {"h": code_hash}
        )
        return IssuedCode.from_row(rows[0]) if rows else None

    async def take_code(self, code_hash: str) -> IssuedCode | None:
        """The code, deleted: only the first of two exchanges of one code gets it."""
        rows = await self._client.query(
            f"MATCH (k:OAuthCode {{code_hash: $h}}) WITH k, [{IssuedCode.PROJECTION}] AS taken DELETE k RETURN taken",
            {"h": code_hash},
        )
        return IssuedCode.from_row(rows[0][0]) if rows else None

    async def forget_expired(self, now: float) -> None:
        """Codes and authorizations nobody used in time."""
        await self._client.query("MATCH (k:OAuthCode) WHERE k.expires_at <= $now DELETE k", {"now": now})
        await self._client.query("MATCH (p:OAuthPending) WHERE p.expires_at <= $now DELETE p", {"now": now})

    async def create_grant(self, token: TokenRow, secrets: GrantSecrets, code_hash: str) -> TokenRow | None:
        """A new grant made with a code, its client marked as granted; None, storing nothing, when the client is
        gone."""
        rows = await self._client.query(
            "MATCH (c:OAuthClient {id: $client_id}) SET c.granted_at = coalesce(c.granted_at, $created_at) "
            "CREATE (t:Token {id: $id, name: $name, role: $role, all_workspaces: $all_workspaces, "
            "workspaces: $workspaces, created_at: $created_at, expires_at: $refresh_expires_at, "
            "secret_hash: $access_hash, client_id: $client_id, access_expires_at: $access_expires_at, "
            f"refresh_hash: $refresh_hash, from_code: $code_hash}}) RETURN {TokenRow.PROJECTION}",
            {**token_params(token), **vars(secrets), "code_hash": code_hash},
        )
        return TokenRow.from_row(rows[0]) if rows else None

    async def made_with(self, code_hash: str) -> str | None:
        """The id of the grant a code was exchanged for, if it was."""
        rows = await self._client.ro_query("MATCH (t:Token {from_code: $h}) RETURN t.id", {"h": code_hash})
        return str(rows[0][0]) if rows else None

    async def refresh_hashes(self, token_id: str) -> tuple[TokenRow, str | None, str | None] | None:
        """A grant, its refresh token's hash and the one before it."""
        rows = await self._client.ro_query(
            f"MATCH (t:Token {{id: $id}}) RETURN t.refresh_hash, t.previous_refresh_hash, {TokenRow.PROJECTION}",
            {"id": token_id},
        )
        return (TokenRow.from_row(rows[0][2:]), rows[0][0], rows[0][1]) if rows else None

    async def rotate(self, token_id: str, presented_hash: str, secrets: GrantSecrets, now: float) -> TokenRow | None:
        """Replace a live grant's secrets if `presented_hash` is still its refresh token's; else None."""
        rows = await self._client.query(
            "MATCH (t:Token {id: $id}) WHERE t.refresh_hash = $presented AND t.revoked_at IS NULL "
            "AND t.expires_at > $now SET t.previous_refresh_hash = t.refresh_hash, t.refresh_hash = $refresh_hash, "
            "t.secret_hash = $access_hash, t.access_expires_at = $access_expires_at, "
            f"t.expires_at = $refresh_expires_at RETURN {TokenRow.PROJECTION}",
            {"id": token_id, "presented": presented_hash, "now": now, **vars(secrets)},
        )
        return TokenRow.from_row(rows[0]) if rows else None
