"""The text of a token: `zap_<id>_<secret>`, and what is stored of it (its SHA-256, never the text).

The prefix lets secret scanners and people recognise a leaked token; the id (public, 12 hex digits)
finds its row with one indexed read; the secret is 256 random bits (`secrets.token_urlsafe(32)`: 43
characters). With that much entropy a plain SHA-256 cannot be reversed or guessed, so neither a salt
nor a slow hash would add anything but cost on every request (docs/decisions/0018).
"""

from __future__ import annotations

import hashlib
import re
import secrets

PREFIX = "zap"
ID_BYTES = 6
SECRET_BYTES = 32
_TOKEN = re.compile(rf"{PREFIX}_([0-9a-f]{{{2 * ID_BYTES}}})_([A-Za-z0-9_-]{{43}})")


def new_token() -> tuple[str, str]:
    """(id, token): a fresh token and the id embedded in it."""
    token_id = secrets.token_hex(ID_BYTES)
    return token_id, token_with_id(token_id)


def token_with_id(token_id: str) -> str:
    """A fresh secret under an id: an OAuth grant's access token after a refresh (zapomni_core.access.oauth)."""
    return f"{PREFIX}_{token_id}_{secrets.token_urlsafe(SECRET_BYTES)}"


def token_id(text: str) -> str | None:
    """The id in a well-formed token, or None for anything else."""
    match = _TOKEN.fullmatch(text)
    return match.group(1) if match else None


def digest(token: str) -> str:
    """What is stored of a token, and compared (in constant time) when one is presented."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()
