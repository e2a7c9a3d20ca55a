"""Tokens as the CLI and the HTTP server use them: create, list, revoke, and verify on every request.

`verify` reads the token's row on every call, with no cache: a revocation or an expiry takes effect
at once in every process sharing the database. One indexed read costs well under a millisecond
(measured: docs/decisions/0018-access-tokens.md).
"""

from __future__ import annotations

import hmac
import time

import structlog

from zapomni_core.access.grants import Grant
from zapomni_core.access.replies import CreatedToken, RevokedToken, TokenInfo, TokenList, TokenState
from zapomni_core.access.requests import CreateTokenRequest, RevokeTokenRequest
from zapomni_core.access.tokens import digest, new_token, token_id
from zapomni_core.errors import Conflict, NotFound, StorageFailed
from zapomni_core.faults import storage_boundary
from zapomni_core.validation import iso
from zapomni_db import AccessStore, DatabaseError, TokenRow

log = structlog.get_logger(__name__)

# A token's last use is written when the stored one is older than this: a write an hour per token at most,
# not one per request.
LAST_USED_RESOLUTION_S = 3600.0
# Ids are 48 random bits; a clash with an existing id is retried with a fresh token.
_CREATE_ATTEMPTS = 3


@storage_boundary
class AccessService:
    def __init__(self, store: AccessStore) -> None:
        self._store = store
        self._prepared = False

    async def create(self, request: CreateTokenRequest) -> CreatedToken:
        if not self._prepared:
            await self._store.prepare()
            self._prepared = True
        for _attempt in range(_CREATE_ATTEMPTS):
            now = time.time()
            new_id, token = new_token()
            fresh = TokenRow(
                id=new_id,
                name=request.name,
                role=request.role,
                workspaces=request.scope,
                created_at=now,
                expires_at=request.expires_at,
                revoked_at=None,
                last_used_at=None,
                secret_hash=digest(token),
            )
            row = await self._store.create(fresh, now)
            if row is not None:
                log.info("access.token_created", token_id=row.id, name=row.name, role=row.role, scope=row.workspaces)
                return CreatedToken(token=token, info=token_info(row, now))
            if await self._store.live_named(request.name, now) is not None:
                raise Conflict(
                    f"name: a token named {request.name!r} exists and still works; revoke it first or pick another name"
                )
        raise StorageFailed(f"no free token id in {_CREATE_ATTEMPTS} random draws; try again")

    async def list(self) -> TokenList:
        now = time.time()
        return TokenList(tokens=[token_info(row, now) for row in await self._store.list()])

    async def revoke(self, request: RevokeTokenRequest) -> RevokedToken:
        """Revoke by id, or by the name of a token not revoked yet (the one that works, if one does); a name whose
        tokens are all revoked answers as the id does: already revoked (the newest of them)."""
        value = request.name_or_id
        found = await self._store.named_or_with_id(value)
        by_id = [row for row in found if row.id == value]
        now = time.time()
        named = [row for row in found if row.name == value]  # newest first
        # Several not-yet-revoked tokens may share a name once all but one have expired.
        unrevoked = sorted((r for r in named if r.revoked_at is None), key=lambda r: r.live(now), reverse=True)
        if by_id and unrevoked and by_id[0].id != unrevoked[0].id:
            raise Conflict(
                f"name_or_id: {value!r} is the id of token {by_id[0].name!r} and the name of another; "
                "give the other's id"
            )
        candidates = by_id or unrevoked or named[:1]
        if not candidates:
            raise NotFound(f"name_or_id: no token has the id or the name {value!r}")
        revoked = await self._store.revoke(candidates[0].id, now)
        if revoked is None:  # deleted meanwhile: tokens are never deleted, so only by a restore
            raise NotFound(f"name_or_id: token {value!r} is gone")
        row, already = revoked
        if not already:
            log.warning("access.token_revoked", token_id=row.id, name=row.name)
        return RevokedToken(info=token_info(row, now), already_revoked=already)

    async def verify(self, secret: str) -> Grant | None:
        """The grant of a token that works now; None for an unknown, malformed, revoked or expired one.

        A database that cannot answer is not a refusal: that raises StorageUnavailable (an HTTP 503, not a 401).
        """
        presented = token_id(secret)
        if presented is None:
            return None
        row = await self._store.get(presented)
        if row is None or not hmac.compare_digest(row.secret_hash, digest(secret)):
            return None
        now = time.time()
        ends = row.access_ends()
        if row.revoked_at is not None or (ends is not None and ends <= now):
            return None
        if row.last_used_at is None or row.last_used_at < now - LAST_USED_RESOLUTION_S:
            await self._record_use(row, now)
        workspaces = frozenset(row.workspaces) if row.workspaces is not None else None
        return Grant(row.id, row.name, row.role, workspaces, ends)

    async def _record_use(self, row: TokenRow, now: float) -> None:
        # Best effort: a database refusing writes (a full disk) must not refuse a token that works.
        try:
            await self._store.touch(row.id, now, now - LAST_USED_RESOLUTION_S)
        except DatabaseError as exc:
            log.warning("access.last_use_not_recorded", token_id=row.id, error=type(exc).__name__)


def token_state(row: TokenRow, now: float) -> TokenState:
    if row.revoked_at is not None:
        return "revoked"
    return "active" if row.live(now) else "expired"


def token_info(row: TokenRow, now: float) -> TokenInfo:
    return TokenInfo(
        token_id=row.id,
        name=row.name,
        role=row.role,
        workspaces=list(row.workspaces) if row.workspaces is not None else None,
        state=token_state(row, now),
        created_at=iso(row.created_at),
        expires_at=iso(row.expires_at) if row.expires_at is not None else None,
        revoked_at=iso(row.revoked_at) if row.revoked_at is not None else None,
        last_used_at=iso(row.last_used_at) if row.last_used_at is not None else None,
        client_id=row.client_id,
    )
