"""Signed-in browsers: a random session id in an HttpOnly cookie, the token kept in this process only.

The token itself never goes back to the browser after sign-in. Each request verifies the session's
token again (`core.access.verify`, one indexed read), so a revoked or expired token stops working at
once. Each session has its own CSRF secret: a state-changing request must carry it (header or form
field) besides the cookie, which a page on another site cannot read (decision 0022).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

COOKIE = "zapomni_console"
IDLE_S = 12 * 3600  # a session unused this long is forgotten
# Bounds on memory that never sign anyone out for someone else: a token's own oldest session makes room for its
# new one, and when every slot is taken by sessions in use a new sign-in is refused.
MAX_SESSIONS = 1000
MAX_PER_TOKEN = 20


@dataclass
class Session:
    token: str
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    last_seen: float = field(default_factory=time.monotonic)


class Sessions:
    """The sessions of one console process; a restart signs everyone out."""

    def __init__(self, idle_s: float = IDLE_S, limit: int = MAX_SESSIONS, per_token: int = MAX_PER_TOKEN) -> None:
        self._idle_s = idle_s
        self._limit = limit
        self._per_token = per_token
        self._by_id: OrderedDict[str, Session] = OrderedDict()  # least recently used first

    def open(self, token: str) -> tuple[str, Session] | None:
        """A new session for `token`; None when every slot is held by other tokens' sessions still in use."""
        self._forget_idle()
        own = [session_id for session_id, session in self._by_id.items() if session.token == token]
        for session_id in own[: max(len(own) - self._per_token + 1, 0)]:
            del self._by_id[session_id]
        if len(self._by_id) >= self._limit:
            return None
        session_id = secrets.token_urlsafe(32)
        self._by_id[session_id] = session = Session(token)
        return session_id, session

    def _forget_idle(self) -> None:
        now = time.monotonic()
        while self._by_id:
            session_id, session = next(iter(self._by_id.items()))
            if now - session.last_seen <= self._idle_s:
                return
            del self._by_id[session_id]

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        session = self._by_id.get(session_id)
        if session is None:
            return None
        now = time.monotonic()
        if now - session.last_seen > self._idle_s:
            del self._by_id[session_id]
            return None
        session.last_seen = now
        self._by_id.move_to_end(session_id)
        return session

    def close(self, session_id: str | None) -> None:
        if session_id:
            self._by_id.pop(session_id, None)
