"""The token commands' requests: create (name, role, workspaces or all, expiry) and revoke (name or id)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from zapomni_core.access.grants import Role
from zapomni_core.access.tokens import token_id
from zapomni_core.validation import StrictModel, WorkspaceName, parse_iso8601

TOKEN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
TOKEN_NAME_RULE = "1-64 letters, digits, '.', '-' or '_', starting with a letter or digit"
MAX_TOKEN_WORKSPACES = 100
_DURATION = re.compile(r"(\d{1,6})([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
EXPIRY_RULE = "a duration such as 30d, 12h, 45m or 2w (m: minutes), or an ISO 8601 date such as 2027-01-01"

TokenName = Annotated[str, Field(pattern=TOKEN_NAME_PATTERN, description=f"A token's name: {TOKEN_NAME_RULE}.")]


class CreateTokenRequest(StrictModel):
    name: TokenName = Field(description=f"Unique among the tokens that still work: {TOKEN_NAME_RULE}.")
    role: Role = Field(
        description="read: search and look; write: also add, change and delete; admin: also delete workspaces, "
        "manage tokens and run operator actions."
    )
    all_workspaces: bool = Field(False, description="Every workspace, including those made later.")
    # After all_workspaces, so that its validator sees it; validated when left out too, which is an error
    # unless all_workspaces is set.
    workspaces: list[WorkspaceName] = Field(
        default_factory=list,
        max_length=MAX_TOKEN_WORKSPACES,
        validate_default=True,
        description="The workspaces the token may use (or all_workspaces).",
    )
    expires: str | None = Field(None, description=f"When the token stops working: {EXPIRY_RULE}; none: never.")

    @field_validator("workspaces")
    @classmethod
    def _scope(cls, workspaces: list[str], info: ValidationInfo) -> list[str]:
        if "all_workspaces" not in info.data:  # refused already, and named there
            return workspaces
        if info.data["all_workspaces"] and workspaces:
            raise ValueError("not with all_workspaces, which already grants every workspace")
        if not info.data["all_workspaces"] and not workspaces:
            raise ValueError("name at least one workspace, or set all_workspaces to grant every workspace")
        return sorted(set(workspaces))

    @field_validator("expires")
    @classmethod
    def _future(cls, expires: str | None) -> str | None:
        """A duration or a date, made an absolute time (ISO 8601, UTC) that lies ahead."""
        if expires is None:
            return None
        now = datetime.now(UTC)
        duration = _DURATION.fullmatch(expires.strip())
        try:
            if duration:
                when = now + timedelta(**{_UNITS[duration.group(2)]: int(duration.group(1))})
            else:
                when = parse_iso8601(expires).astimezone(UTC)
        except OverflowError:
            raise ValueError(f"must be before the year 10000 (got {expires!r:.40})") from None
        except ValueError:
            raise ValueError(f"must be {EXPIRY_RULE} (got {expires!r:.40})") from None
        if when <= now:
            raise ValueError(f"must be in the future (got {expires!r:.40}, which has passed)")
        return when.isoformat(timespec="seconds")

    @property
    def expires_at(self) -> float | None:
        return parse_iso8601(self.expires).timestamp() if self.expires else None

    @property
    def scope(self) -> tuple[str, ...] | None:
        """The workspaces granted; None for every workspace."""
        return None if self.all_workspaces else tuple(self.workspaces)


class RevokeTokenRequest(StrictModel):
    name_or_id: str = Field(
        min_length=1,
        max_length=200,
        description="The token's name or id, as the token list shows them; the token itself will do too.",
    )

    @field_validator("name_or_id")
    @classmethod
    def _named(cls, value: str) -> str:
        # A token found where it should not be (a log, a repository) can be revoked with its own text; only its
        # id is kept, so the secret goes no further (into a message, a log line).
        embedded = token_id(value)
        if embedded is not None:
            return embedded
        if not re.fullmatch(TOKEN_NAME_PATTERN, value):
            raise ValueError(f"must be a token's name ({TOKEN_NAME_RULE}) or id")
        return value
