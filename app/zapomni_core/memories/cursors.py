"""Page cursors: opaque to clients, checked when they come back."""

from __future__ import annotations

import base64
import binascii
import json

from zapomni_core.errors import InvalidRequest
from zapomni_db import PageKey


def encode_cursor(key: PageKey, order: str) -> str:
    raw = json.dumps([order, key.created_us, key.memory_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, order: str) -> PageKey:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        cursor_order, created_us, memory_id = json.loads(raw)
        key = PageKey(created_us=int(created_us), memory_id=str(memory_id))
    except (binascii.Error, ValueError, TypeError) as exc:
        raise InvalidRequest("cursor: not a cursor this server made (pass next_cursor back unchanged)") from exc
    if cursor_order != order:
        raise InvalidRequest(f"cursor: it continues an order={cursor_order!r} listing; ask with that order")
    return key
