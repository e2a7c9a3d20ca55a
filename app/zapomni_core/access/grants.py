"""What a verified token may do: its role and workspaces, as the HTTP server checks them on every request.

Roles are ordered, each doing what the ones before it do: read (search, get, list, graph and job
status), write (adds, updates, deletes, ingest, builds), admin (workspace deletion, tokens, operator
actions).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import get_args

from zapomni_db import Role as Role  # re-exported: the roles are stored with each token

ROLES: tuple[Role, ...] = get_args(Role)


@dataclass(frozen=True)
class Grant:
    """A token that verified. `workspaces` None: every workspace, including those made later."""

    token_id: str
    name: str
    role: Role
    workspaces: frozenset[str] | None
    expires_at: float | None

    def sees(self, workspace: str) -> bool:
        return self.workspaces is None or workspace in self.workspaces

    def refusal(self, role: Role, workspace: str | None) -> str | None:
        """None when this token may do what needs `role` in `workspace`, else one line naming what it lacks.

        `workspace`: the workspace the call acts on, already resolved (a call naming none acts on the
        server's default). None for a call on no single workspace: the role decides, and an admin call
        there acts on the whole store (tokens, operator actions), so it needs a token for every workspace:
        an admin of some workspaces cannot make itself a token for the others.
        """
        if self.expires_at is not None and self.expires_at <= time.time():
            return f"token {self.name!r} expired at {_when(self.expires_at)}"
        if ROLES.index(self.role) < ROLES.index(role):
            return f"token {self.name!r} has role {self.role}; this needs {role}"
        if workspace is None:
            if role == "admin" and self.workspaces is not None:
                return (
                    f"token {self.name!r} is limited to workspaces {self._listed()}; this acts on the whole store "
                    "and needs an admin token for all workspaces"
                )
            return None
        if not self.sees(workspace):
            return f"token {self.name!r} may not use workspace {workspace!r} (its workspaces: {self._listed()})"
        return None

    def _listed(self) -> str:
        return ", ".join(sorted(self.workspaces or ()))


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
