"""The token commands' replies. Only `CreatedToken` holds a token's text, once; nothing holds its hash."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from zapomni_core.access.grants import Role

TokenState = Literal["active", "expired", "revoked"]


class TokenInfo(BaseModel):
    token_id: str = Field(description="Public: the 12 hex digits after `zap_` in the token.")
    name: str
    role: Role
    workspaces: list[str] | None = Field(description="The workspaces it may use; null: every workspace.")
    state: TokenState
    created_at: str
    expires_at: str | None = Field(description="When it stops working; null: never.")
    revoked_at: str | None
    last_used_at: str | None = Field(description="A verified use, to the hour; null: never used.")
    client_id: str | None = Field(None, description="The OAuth client it was granted to; null: made by a person.")


class CreatedToken(BaseModel):
    token: str = Field(description="The bearer token. Shown this once: only its hash is stored.")
    info: TokenInfo


class TokenList(BaseModel):
    tokens: list[TokenInfo] = Field(description="Every token ever made, oldest first, revoked and expired ones too.")


class RevokedToken(BaseModel):
    info: TokenInfo
    already_revoked: bool = Field(description="It had been revoked before: nothing changed.")
