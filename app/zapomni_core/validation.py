"""What every request shares: strict models, the workspace a request acts on, names and ids, dates.

The MCP tools expose the request models as their input schemas and the CLI builds the same
requests, so every adapter enforces one set of constraints.
"""

from __future__ import annotations

import math
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

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


def unstorable(value: str) -> str | None:
    """Why a string cannot be taken as text, or None: the one rule for every string of every request.

    FalkorDB's client writes query parameters into the query text, which a NUL character ends;
    a lone surrogate (a CLI argument that was not UTF-8, or a JSON escape) cannot be encoded at all.
    """
    if "\x00" in value:
        return "must not contain the NUL character (U+0000)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode: it holds a lone surrogate (U+D800 to U+DFFF)"
    return None


# FalkorDB stores integers as signed 64-bit; a larger one would be refused or wrapped by the database.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def unstorable_number(value: int | float) -> str | None:
    """Why a number cannot be stored, or None: NaN and the infinities have no JSON form to give back."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number (not NaN or Infinity)"
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        return "must be an integer between -2^63 and 2^63-1 (the database stores 64-bit integers)"
    return None


def _unstorable_values(data: Any, loc: tuple[str | int, ...]) -> list[InitErrorDetails]:
    problems: list[InitErrorDetails] = []
    if isinstance(data, str):
        reason = unstorable(data)
        if reason is not None:
            problems.append(_problem(reason, loc, data))
    elif isinstance(data, int | float):
        reason = unstorable_number(data)
        if reason is not None:
            problems.append(_problem(reason, loc, data))
    elif isinstance(data, dict):
        for key, value in data.items():
            # A bad key is named by where it is, not by itself: echoing it would carry the bad character on.
            key_reason = unstorable(key) if isinstance(key, str) else None
            if key_reason is not None:
                problems.append(_problem(f"keys {key_reason}", loc, key))
                continue
            problems += _unstorable_values(value, (*loc, key))
    elif isinstance(data, list | tuple):
        for index, value in enumerate(data):
            problems += _unstorable_values(value, (*loc, index))
    return problems


def _problem(reason: str, loc: tuple[str | int, ...], value: object) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError("string_unstorable", reason), loc=loc, input=value)


class StrictModel(BaseModel):
    # strict: "5" is not a number and true is not 1; agents get told instead of silently coerced.
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _storable_values(cls, data: Any) -> Any:
        """Every string and number anywhere in a request (nested values and keys too) can be stored and given back."""
        problems = _unstorable_values(data, ())
        if problems:
            raise ValidationError.from_exception_data(cls.__name__, problems)
        return data


class ScopedRequest(StrictModel):
    """A request that acts on one workspace; None means the server's default (ZAPOMNI_WORKSPACE)."""

    workspace: WorkspaceName | None = Field(
        None,
        description=f"Which workspace ({WORKSPACE_RULE}); default: the server's, normally 'default'. "
        "Workspaces are fully isolated from each other.",
    )


class NoArguments(StrictModel):
    pass


# Whitespace, controls and format characters (zero-width spaces and joiners, byte-order marks): nothing to read.
_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})
BLANK_RULE = "must contain something other than whitespace and invisible characters (zero-width spaces, BOMs)"


def is_blank(text: str) -> bool:
    """True when `text` holds nothing a person could read (it stops at the first visible character)."""
    return not any(unicodedata.category(char) not in _INVISIBLE for char in text.strip())


def iso(timestamp: float) -> str:
    """A stored time (seconds since the epoch) as replies show it: ISO 8601 in UTC."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()
