"""The MCP SDK's authorization server provider, over `core.oauth`: the SDK speaks OAuth, the engine decides.

The SDK's handlers check what the RFCs ask of a request (a registered redirect URI matched exactly, PKCE with
S256, the code's verifier, client authentication); this provider adds Zapomni's rules: `state` required, only
this server's `/mcp` as the resource (RFC 8707), scopes that are roles, redirect URIs on https or the loopback,
and the person's consent in the console before any code is issued.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from zapomni_core import ROLES, OAuthRefused, Role, ZapomniCore, is_refresh_token
from zapomni_http.binding import is_loopback

CONSENT_PATH = "/oauth/consent"


class ZapomniAuthorizationServer(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self, core: ZapomniCore, resource: str) -> None:
        self._oauth = core.oauth
        self._resource = resource  # this server's /mcp, the only resource its grants are for
        parts = urlsplit(resource)
        self._origin = f"{parts.scheme}://{parts.netloc}"

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        row = await self._oauth.client(client_id)
        return OAuthClientInformationFull.model_validate_json(row.metadata) if row else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            parts = urlsplit(str(uri))
            if parts.scheme != "https" and not (parts.scheme == "http" and is_loopback(parts.hostname or "")):
                raise RegistrationError(
                    "invalid_redirect_uri", f"redirect_uris: {uri} is neither https nor http on the loopback"
                )
        assert client_info.client_id is not None  # the SDK's handler draws it
        name = (client_info.client_name or "").strip() or urlsplit(str(client_info.client_uri or "")).netloc
        try:
            await self._oauth.register(client_info.client_id, name or "unnamed client", client_info.model_dump_json())
        except OAuthRefused as exc:
            raise RegistrationError("invalid_client_metadata", str(exc)) from exc

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if not params.state:
            raise AuthorizeError("invalid_request", "state: required")
        if params.resource is not None and params.resource.rstrip("/") != self._resource:
            raise AuthorizeError("invalid_target", f"resource: this server grants access to {self._resource} only")
        assert client.client_id is not None
        pending = await self._oauth.await_consent(
            client.client_id,
            redirect_uri=str(params.redirect_uri),
            redirect_explicit=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state,
            role=_role_of(params.scopes),
            resource=self._resource,
        )
        return f"{self._origin}{CONSENT_PATH}/{pending}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        issued = await self._oauth.code(authorization_code)
        if issued is None:
            await self._oauth.replayed(authorization_code)
            return None
        if issued.client_id != client.client_id:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=[issued.role],
            expires_at=issued.expires_at,
            client_id=issued.client_id,
            code_challenge=issued.code_challenge,
            redirect_uri=AnyUrl(issued.redirect_uri),
            redirect_uri_provided_explicitly=issued.redirect_explicit,
            resource=issued.resource,
            subject=issued.subject,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        try:
            issued = await self._oauth.exchange(authorization_code.code)
        except OAuthRefused as exc:
            raise TokenError("invalid_grant", str(exc)) from exc
        return _token_reply(issued.access_token, issued.expires_in, issued.refresh_token, issued.role)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        grant = await self._oauth.holder(refresh_token)
        if grant is None or grant.client_id != client.client_id or not is_refresh_token(refresh_token):
            return None
        expires = int(grant.expires_at) if grant.expires_at is not None else None
        return RefreshToken(
            token=refresh_token, client_id=grant.client_id, scopes=list(_roles_up_to(grant.role)), expires_at=expires,
            resource=self._resource,
        )  # fmt: skip

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        grant = await self._oauth.holder(refresh_token.token)
        if grant is None:
            raise TokenError("invalid_grant", "refresh token does not exist, expired or was revoked")
        try:
            issued = await self._oauth.refresh(refresh_token.token, grant)
        except OAuthRefused as exc:
            raise TokenError("invalid_grant", str(exc)) from exc
        return _token_reply(issued.access_token, issued.expires_in, issued.refresh_token, issued.role)

    async def load_access_token(self, token: str) -> AccessToken | None:
        grant = await self._oauth.holder(token)
        if grant is None or grant.client_id is None or is_refresh_token(token):
            return None
        ends = grant.access_ends()
        return AccessToken(
            token=token, client_id=grant.client_id, scopes=list(_roles_up_to(grant.role)),
            expires_at=int(ends) if ends is not None else None, resource=self._resource,
        )  # fmt: skip

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        grant = await self._oauth.holder(token.token)
        if grant is not None:
            await self._oauth.end(grant)


def _role_of(scopes: list[str] | None) -> Role | None:
    """The role a client's scopes ask for (the highest named); None when it names none."""
    if not scopes:
        return None
    unknown = [scope for scope in scopes if scope not in ROLES]
    if unknown:
        raise AuthorizeError("invalid_scope", f"scope: {' '.join(unknown)} unknown; the scopes are {' '.join(ROLES)}")
    return ROLES[max(ROLES.index(scope) for scope in scopes)]


def _roles_up_to(role: Role) -> tuple[Role, ...]:
    return ROLES[: ROLES.index(role) + 1]


def _token_reply(access: str, expires_in: int, refresh: str, role: Role) -> OAuthToken:
    return OAuthToken(
        access_token=access, token_type="Bearer", expires_in=expires_in, refresh_token=refresh,
        scope=" ".join(_roles_up_to(role)),
    )  # fmt: skip
