"""Bearer tokens through the SDK's own hooks: a `TokenVerifier` over `core.access`, and the resource server's settings.

The SDK's middleware reads `Authorization: Bearer`, asks the verifier, and answers 401 with
`WWW-Authenticate: Bearer ... resource_metadata=...` when there is no valid token. The tokens are made by
`zapomni token create`, or by the authorization server of `serve --http --oauth` (`oauth_routes`), whose grants
are tokens too; the protected-resource metadata (RFC 9728) names that server only when it is on.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import structlog
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl

from zapomni_core import ZapomniCore, ZapomniError
from zapomni_http.metrics import Metrics
from zapomni_mcp.access import for_grant

log = structlog.get_logger(__name__)


class UncheckedToken(AccessToken):
    """A bearer token that could not be looked up because the database is away: the guard answers 503.

    Refusing it as invalid (401) would tell a client to drop a token that is fine; letting it through
    is out of the question. So authentication passes it on marked, and nothing past the guard sees it.
    """


UNAVAILABLE_MESSAGE = (
    "The database is not answering, so the token could not be checked; nothing was done. Retry in a moment."
)
RETRY_AFTER_S = 5


class CoreTokenVerifier:
    """Every request's token is looked up in the database (no cache: a revocation holds at once on every replica)."""

    def __init__(self, core: ZapomniCore, metrics: Metrics) -> None:
        self._core = core
        self._metrics = metrics

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            grant = await self._core.access.verify(token)
        except ZapomniError as exc:  # the database is away: no one gets in, and the log says why
            log.error("auth.unavailable", error=type(exc).__name__)
            self._metrics.refused("TokenUncheckable")
            return UncheckedToken(token="unchecked", client_id="unchecked", scopes=[])
        if grant is None:
            self._metrics.refused("InvalidToken")
            return None
        return for_grant(grant)


def issuer_of(public_url: str) -> str:
    """The authorization server's identifier: the origin /mcp is served at (its metadata at the root's well-known
    paths)."""
    base = urlsplit(public_url)
    return f"{base.scheme}://{base.netloc}"


def auth_settings(public_url: str) -> AuthSettings:
    return AuthSettings(
        issuer_url=AnyHttpUrl(issuer_of(public_url)),
        resource_server_url=AnyHttpUrl(public_url),
        # Our tokens have no audience: each is looked up, and one store is one resource.
        validate_token_resource=False,
    )
