"""What every request shares: strict models, the workspace a request acts on, names and ids, dates.

The MCP tools expose the request models as their input schemas and the CLI builds the same
requests, so every adapter enforces one set of constraints.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_WORKSPACE = "default"
WORKSPACE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
WORKSPACE_RULE = "1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit"
UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

WorkspaceName = Annotated[str, Field(pattern=WORKSPACE_PATTERN, description=f"Workspace name: {WORKSPACE_RULE}.")]


def parse_iso8601(value: str) -> datetime:
    """Parse an ISO 8601 date or datetime; naive values are taken as UTC."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise ValueError(
            f"must be an ISO 8601 date or datetime such as 2024-05-01 or 2024-05-01T13:45:00Z (got {value!r:.40})"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class StrictModel(BaseModel):
    # strict: "5" is not a number and true is not 1; agents get told instead of silently coerced.
    model_config = ConfigDict(extra="forbid", strict=True)


class ScopedRequest(StrictModel):
    """A request that acts on one workspace; None means the server's default (ZAPOMNI_WORKSPACE)."""

    workspace: WorkspaceName | None = Field(
        None,
        description=f"Which workspace ({WORKSPACE_RULE}); default: the server's, normally 'default'. "
        "Workspaces are fully isolated from each other.",
    )


class NoArguments(StrictModel):
    pass
