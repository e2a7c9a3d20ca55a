"""What `AccessStore` takes and returns: access tokens, by their hash (the token's text is never stored)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# Ordered: each role can do what the ones before it can (zapomni_core.access.grants).
Role = Literal["read", "write", "admin"]


@dataclass(frozen=True)
class TokenRow:
    """A token as stored, or to store (a new one is neither revoked nor used). `workspaces` None: every workspace,
    present and future. `last_used_at` is coarse: refreshed at most once an hour (see AccessService.verify)."""

    id: str
    name: str
    role: Role
    workspaces: tuple[str, ...] | None
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    last_used_at: float | None
    secret_hash: str
    client_id: str | None = None  # the OAuth client holding it: a grant (zapomni_db.oauth)
    access_expires_at: float | None = None  # a grant's current access token stops working then

    # The Cypher projection that `from_row` reads, for a token bound to `t` (all_workspaces and workspaces
    # make one field).
    PROJECTION = (
        "t.id, t.name, t.role, t.all_workspaces, t.workspaces, t.created_at, t.expires_at, t.revoked_at, "
        "t.last_used_at, t.secret_hash, t.client_id, t.access_expires_at"
    )
    WIDTH = 12

    @classmethod
    def from_row(cls, r: list[Any]) -> TokenRow:
        return cls(
            id=r[0],
            name=r[1],
            role=r[2],
            workspaces=None if r[3] else tuple(r[4] or ()),
            created_at=float(r[5]),
            expires_at=_seconds(r[6]),
            revoked_at=_seconds(r[7]),
            last_used_at=_seconds(r[8]),
            secret_hash=r[9],
            client_id=r[10],
            access_expires_at=_seconds(r[11]),
        )

    def live(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    def access_ends(self) -> float | None:
        """When its text stops working: a grant's access token ends before the grant does."""
        ends = [t for t in (self.expires_at, self.access_expires_at) if t is not None]
        return min(ends) if ends else None


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)
