"""OAuth 2.1 for clients that cannot be handed a token: registration, consent, codes, grants and their refresh.

The HTTP adapter speaks the protocol (the MCP SDK's handlers check the requests: redirect URIs registered exactly,
PKCE S256); this service keeps the state and decides. A grant is a Zapomni token (`zapomni token list` shows it
under the client's name, `revoke` ends it) whose text changes at every refresh: the access token lives
`access_ttl_s`, the refresh token `refresh_ttl_s` from its last use, and a refresh token used twice revokes the
grant (the second use is a thief's or a replay: RFC 9700, 4.14.2). Codes and refresh tokens are stored by their
SHA-256 only, like tokens (decision 0018). Nothing is cached: a revocation holds on every replica at once.
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from dataclasses import dataclass

import structlog

from zapomni_core.access.grants import ROLES, Grant, Role
from zapomni_core.access.tokens import digest, new_token, token_id, token_with_id
from zapomni_core.errors import ZapomniError
from zapomni_core.faults import storage_boundary
from zapomni_db import (
    AccessStore,
    GrantSecrets,
    IssuedCode,
    OAuthClientRow,
    OAuthStore,
    PendingAuthorization,
    TokenRow,
)

log = structlog.get_logger(__name__)

REFRESH_PREFIX = "zapr"
_REFRESH = re.compile(rf"{REFRESH_PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{43}})")


class OAuthRefused(ZapomniError):
    """An OAuth request refused; `error` is the RFC's code for it (RFC 6749 5.2, RFC 7591 3.2.2, RFC 8707)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class OAuthPolicy:
    access_ttl_s: float = 3600.0
    refresh_ttl_s: float = 30 * 86400.0
    code_ttl_s: float = 300.0
    consent_ttl_s: float = 600.0
    max_clients: int = 100
    unused_client_ttl_s: float = 86400.0


@dataclass(frozen=True)
class Issued:
    """What the token endpoint answers: the access token, its lifetime, the refresh token, the role granted."""

    access_token: str
    expires_in: int
    refresh_token: str
    role: Role


@dataclass(frozen=True)
class Consent:
    """An authorization waiting for the person, as the consent page shows it."""

    pending: PendingAuthorization
    client_name: str


@storage_boundary
class OAuthService:
    def __init__(self, store: OAuthStore, tokens: AccessStore, policy: OAuthPolicy | None = None) -> None:
        self._store = store
        self._tokens = tokens
        self.policy = policy or OAuthPolicy()
        self._prepared = False

    async def _prepare(self) -> None:
        if not self._prepared:
            await self._tokens.prepare()
            await self._store.prepare()
            self._prepared = True

    def _unused_before(self, now: float) -> float:
        return now - self.policy.unused_client_ttl_s

    async def register(self, client_id: str, name: str, metadata: str) -> None:
        await self._prepare()
        now = time.time()
        row = OAuthClientRow(client_id, name, metadata, now, None)
        if not await self._store.register(row, cap=self.policy.max_clients, unused_before=self._unused_before(now)):
            raise OAuthRefused(
                "invalid_client_metadata",
                f"this server holds {self.policy.max_clients} registered clients, its limit; a registration that "
                "was never granted anything expires a day after it was made",
            )
        log.info("oauth.client_registered", client_id=client_id, client_name=name)

    async def client(self, client_id: str) -> OAuthClientRow | None:
        await self._prepare()
        return await self._store.client(client_id, unused_before=self._unused_before(time.time()))

    async def await_consent(
        self, client_id: str, *, redirect_uri: str, redirect_explicit: bool, code_challenge: str, state: str,
        role: Role | None, resource: str,
    ) -> str:  # fmt: skip
        """Keep an authorization request until the person answers it; its id, for the consent page."""
        now = time.time()
        await self._store.forget_expired(now)
        pending = PendingAuthorization(
            id=secrets.token_urlsafe(24), client_id=client_id, redirect_uri=redirect_uri,
            redirect_explicit=redirect_explicit, code_challenge=code_challenge, state=state, role=role,
            resource=resource, expires_at=now + self.policy.consent_ttl_s,
        )  # fmt: skip
        await self._store.await_consent(pending)
        return pending.id

    async def consent(self, pending_id: str) -> Consent | None:
        """The request behind a consent page, while it may still be answered."""
        pending = await self._store.pending(pending_id, time.time())
        if pending is None:
            return None
        client = await self.client(pending.client_id)
        return Consent(pending, client.name if client else pending.client_id) if client else None

    async def allow(
        self, pending_id: str, signer: Grant, role: Role, workspaces: frozenset[str] | None
    ) -> tuple[PendingAuthorization, str]:
        """The person's yes: a code for `role` in `workspaces` (None: all), never more than the signer holds or
        the client asked for. The request answered (once) and the code to send back with it."""
        pending = await self._store.pending(pending_id, time.time())
        if pending is None:
            raise OAuthRefused("invalid_request", "this authorization request is unknown, answered or expired")
        _check_within(signer, role, workspaces, asked=pending.role)
        code = secrets.token_urlsafe(32)
        issued = IssuedCode(
            code_hash=digest(code), client_id=pending.client_id, redirect_uri=pending.redirect_uri,
            redirect_explicit=pending.redirect_explicit, code_challenge=pending.code_challenge,
            resource=pending.resource, role=role, workspaces=tuple(sorted(workspaces)) if workspaces else None,
            subject=signer.token_id, expires_at=time.time() + self.policy.code_ttl_s,
        )  # fmt: skip
        taken = await self._store.answer(pending_id, time.time(), issued)
        if taken is None:  # answered meanwhile (another tab, another replica)
            raise OAuthRefused("invalid_request", "this authorization request was answered already")
        log.info("oauth.consented", client_id=pending.client_id, role=role, by=signer.token_id)
        return taken, code

    async def deny(self, pending_id: str) -> PendingAuthorization | None:
        return await self._store.answer(pending_id, time.time(), None)

    async def code(self, code: str) -> IssuedCode | None:
        return await self._store.code(digest(code))

    async def exchange(self, code: str) -> Issued:
        """A grant for a code, which is used up (a second exchange of it finds nothing)."""
        taken = await self._store.take_code(digest(code))
        if taken is None:
            raise OAuthRefused("invalid_grant", "authorization code already used")
        if taken.expires_at <= time.time():
            raise OAuthRefused("invalid_grant", "authorization code has expired")
        client = await self.client(taken.client_id)
        if client is None:
            raise OAuthRefused("invalid_client", "the client that asked for this code is no longer registered")
        now = time.time()
        grant_id, access = new_token()
        refresh = _refresh_token(grant_id)
        row = TokenRow(
            id=grant_id, name=_grant_name(client.name, grant_id), role=taken.role, workspaces=taken.workspaces,
            created_at=now, expires_at=None, revoked_at=None, last_used_at=None, secret_hash="",
            client_id=taken.client_id,
        )  # fmt: skip
        stored = await self._store.create_grant(row, self._secrets(access, refresh, now), taken.code_hash)
        if stored is None:
            raise OAuthRefused("invalid_client", "the client that asked for this code is no longer registered")
        log.info("oauth.granted", token_id=grant_id, client_id=taken.client_id, role=taken.role, by=taken.subject)
        return Issued(access, int(self.policy.access_ttl_s), refresh, taken.role)

    async def replayed(self, code: str) -> None:
        """A code presented again after its exchange: the grant it gave is revoked (RFC 6749 4.1.2: whoever holds
        the code now, the holder or a thief, one of them should not have it)."""
        grant_id = await self._store.made_with(digest(code))
        if grant_id is not None:
            revoked = await self._tokens.revoke(grant_id, time.time())
            if revoked is not None and not revoked[1]:
                log.warning("oauth.code_reused", token_id=grant_id, action="grant revoked")

    async def holder(self, token: str) -> TokenRow | None:
        """The live grant an access token or a refresh token (the current one, or the one before it) belongs to."""
        refresh = _REFRESH.fullmatch(token)
        grant_id = refresh.group(1) if refresh else token_id(token)
        found = await self._store.refresh_hashes(grant_id) if grant_id else None
        if found is None or found[0].client_id is None or not found[0].live(time.time()):
            return None
        row, current, previous = found
        presented = digest(token)
        held = (current, previous) if refresh else (row.secret_hash,)
        return row if any(h is not None and hmac.compare_digest(h, presented) for h in held) else None

    async def refresh(self, refresh_token: str, grant: TokenRow) -> Issued:
        """New access and refresh tokens for the grant's refresh token, which stops working; a refresh token
        used a second time revokes the grant."""
        presented = digest(refresh_token)
        now = time.time()
        access, refresh = token_with_id(grant.id), _refresh_token(grant.id)
        rotated = await self._store.rotate(grant.id, presented, self._secrets(access, refresh, now), now)
        if rotated is None:  # not its current refresh token: one used before (or revoked, expired meanwhile)
            await self._tokens.revoke(grant.id, now)
            log.warning("oauth.refresh_reused", token_id=grant.id, client_id=grant.client_id, action="grant revoked")
            raise OAuthRefused("invalid_grant", "refresh token already used: the grant is revoked")
        return Issued(access, int(self.policy.access_ttl_s), refresh, rotated.role)

    async def end(self, grant: TokenRow) -> None:
        await self._tokens.revoke(grant.id, time.time())
        log.warning("access.token_revoked", token_id=grant.id, name=grant.name, by="oauth revocation")

    def _secrets(self, access: str, refresh: str, now: float) -> GrantSecrets:
        return GrantSecrets(
            access_hash=digest(access),
            access_expires_at=now + self.policy.access_ttl_s,
            refresh_hash=digest(refresh),
            refresh_expires_at=now + self.policy.refresh_ttl_s,
        )


def _check_within(signer: Grant, role: Role, workspaces: frozenset[str] | None, *, asked: Role | None) -> None:
    if ROLES.index(signer.role) < ROLES.index("write"):
        raise OAuthRefused("access_denied", f"token {signer.name!r} may not grant access: it needs role write or admin")
    if role not in grantable(signer.role, asked):
        raise OAuthRefused("access_denied", f"role {role} is more than the client asked for or the signer holds")
    if signer.workspaces is not None and (workspaces is None or not workspaces <= signer.workspaces):
        raise OAuthRefused("access_denied", f"token {signer.name!r} may grant only its workspaces")


def grantable(signer: Role, asked: Role | None) -> tuple[Role, ...]:
    """The roles a signer may grant a client: none above its own, nor above what the client asked for."""
    ceiling = min(ROLES.index(signer), ROLES.index(asked) if asked else len(ROLES) - 1)
    return ROLES[: ceiling + 1]


def is_refresh_token(text: str) -> bool:
    return _REFRESH.fullmatch(text) is not None


def _grant_name(client_name: str, grant_id: str) -> str:
    """A token name (decision 0018's rule) that says which client holds it; unique by its id."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", client_name).strip("-._")[:38] or "client"
    return f"oauth-{safe}-{grant_id}"


def _refresh_token(grant_id: str) -> str:
    return f"{REFRESH_PREFIX}_{grant_id}_{secrets.token_urlsafe(32)}"
