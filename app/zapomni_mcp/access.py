"""Who is calling: the grant of the HTTP request's bearer token, or no one in particular (stdio's local owner).

The SDK's bearer middleware keeps the verified `AccessToken` in a context variable for the request;
ours carries the `Grant` too, so a handler that filters what it shows (the workspaces a token sees)
finds it there. Requests without one (stdio) are unrestricted.
"""

from __future__ import annotations

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from pydantic import ConfigDict

from zapomni_core import ROLES, Grant, Role


class GrantToken(AccessToken):
    """The SDK's view of a verified token, with our grant inside (never the token's text: see `for_grant`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    grant: Grant


def for_grant(grant: Grant) -> GrantToken:
    # `token` holds the id, not the secret: nothing downstream needs the secret, so nothing can leak it.
    return GrantToken(token=grant.token_id, client_id=grant.token_id, scopes=scopes(grant.role), grant=grant)


def scopes(role: Role) -> list[str]:
    """A role and the roles below it, as OAuth-style scopes (a write token may also read)."""
    return list(ROLES[: ROLES.index(role) + 1])


def current_grant() -> Grant | None:
    """The caller's grant; None for stdio's local owner. Any other token fails closed: it never reads as the owner."""
    token = get_access_token()
    if token is None:
        return None
    if not isinstance(token, GrantToken):
        raise RuntimeError(f"a request authenticated without a grant ({type(token).__name__}) reached a handler")
    return token.grant


def visible(workspace: str) -> bool:
    """Whether the caller may see this workspace exists (stdio: always)."""
    grant = current_grant()
    return grant is None or grant.sees(workspace)
