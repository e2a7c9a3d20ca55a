"""What `OAuthStore` takes and returns: registered clients, authorizations awaiting consent, codes, grants' secrets.

Secrets (codes, refresh tokens) are stored by their SHA-256, like access tokens (docs/decisions/0018).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zapomni_db.records.access import Role


@dataclass(frozen=True)
class OAuthClientRow:
    """A client registered itself (RFC 7591); `metadata` is what it registered, as JSON, kept as given."""

    id: str
    name: str
    metadata: str
    created_at: float
    granted_at: float | None  # its first grant; a client never granted anything expires

    PROJECTION = "c.id, c.name, c.metadata, c.created_at, c.granted_at"

    @classmethod
    def from_row(cls, r: list[Any]) -> OAuthClientRow:
        return cls(r[0], r[1], r[2], float(r[3]), None if r[4] is None else float(r[4]))


@dataclass(frozen=True)
class PendingAuthorization:
    """An authorization request the person has not answered yet: what the client asked, checked by the SDK."""

    id: str
    client_id: str
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    state: str
    role: Role | None  # the role the client asked for (its scope); None: it asked for none
    resource: str
    expires_at: float

    PROJECTION = (
        "p.id, p.client_id, p.redirect_uri, p.redirect_explicit, p.code_challenge, p.state, p.role, p.resource, "
        "p.expires_at"
    )

    @classmethod
    def from_row(cls, r: list[Any]) -> PendingAuthorization:
        return cls(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6], r[7], float(r[8]))


@dataclass(frozen=True)
class IssuedCode:
    """An authorization code, stored by its hash until it is exchanged (once) or expires."""

    code_hash: str
    client_id: str
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    resource: str
    role: Role
    workspaces: tuple[str, ...] | None  # None: every workspace
    subject: str  # the token id of the person who consented
    expires_at: float

    PROJECTION = (
        "k.code_hash, k.client_id, k.redirect_uri, k.redirect_explicit, k.code_challenge, k.resource, k.role, "
        "k.all_workspaces, k.workspaces, k.subject, k.expires_at"
    )
    WIDTH = 11  # all_workspaces and workspaces make one field

    @classmethod
    def from_row(cls, r: list[Any]) -> IssuedCode:
        workspaces = None if r[7] else tuple(r[8] or ())
        return cls(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6], workspaces, r[9], float(r[10]))

    def params(self) -> dict[str, Any]:
        return {
            "code_hash": self.code_hash,
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "redirect_explicit": self.redirect_explicit,
            "code_challenge": self.code_challenge,
            "resource": self.resource,
            "role": self.role,
            "all_workspaces": self.workspaces is None,
            "workspaces": list(self.workspaces) if self.workspaces is not None else None,
            "subject": self.subject,
            "expires_at": self.expires_at,
        }


@dataclass(frozen=True)
class GrantSecrets:
    """A grant's current secrets, replaced together at each refresh: its access token's hash and end, and its
    refresh token's hash and end (the grant row's own expiry)."""

    access_hash: str
    access_expires_at: float
    refresh_hash: str
    refresh_expires_at: float
