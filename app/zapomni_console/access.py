"""Who is asking and what they may do: a signed-in session or an `Authorization: Bearer` token, checked on
every request against the same tokens and roles as the HTTP API (read < write < admin)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from zapomni_console.sessions import COOKIE, Session, Sessions
from zapomni_core import Grant, Role, ZapomniCore

CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD"})


class NotAllowed(Exception):
    """The request may not do this: `status` 401 (not signed in), 403 (no right), 400 (no CSRF proof), 413 (too
    large) or 429 (rate limit, with `retry_after` seconds)."""

    def __init__(self, status: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Caller:
    """A verified caller: its grant, and its session when it came with the cookie (None: a bearer token)."""

    grant: Grant
    session: Session | None

    @property
    def csrf(self) -> str | None:
        return self.session.csrf if self.session else None

    def may(self, role: Role, workspace: str | None) -> bool:
        return self.grant.refusal(role, workspace) is None

    def require(self, role: Role, workspace: str | None) -> None:
        refusal = self.grant.refusal(role, workspace)
        if refusal is not None:
            raise NotAllowed(403, refusal)


async def identify(request: Request, core: ZapomniCore, sessions: Sessions) -> Caller | None:
    """The caller of `request`, or None when it brings no working token (none, unknown, revoked, expired)."""
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() == "bearer" and secret.strip():
        grant = await core.access.verify(secret.strip())
        return Caller(grant, None) if grant is not None else None
    session = sessions.get(request.cookies.get(COOKIE))
    if session is None:
        return None
    grant = await core.access.verify(session.token)
    if grant is None:
        sessions.close(request.cookies.get(COOKIE))
        return None
    return Caller(grant, session)


def check_origin(request: Request) -> None:
    """A browser names the page a request came from: another site's page is refused outright."""
    origin = request.headers.get("origin")
    if origin is None or request.method in SAFE_METHODS:
        return
    if origin == "null" or urlsplit(origin).netloc != request.headers.get("host", ""):
        raise NotAllowed(403, "cross-origin request refused")


def check_csrf(request: Request, caller: Caller, form_value: str | None) -> None:
    """A state change by cookie must also prove it comes from a console page: the session's CSRF secret in
    the X-CSRF-Token header or the csrf_token form field. A bearer token needs none (no browser sends it
    by itself)."""
    if caller.session is None:
        return
    given = request.headers.get(CSRF_HEADER) or form_value or ""
    if not hmac.compare_digest(given.encode(), caller.session.csrf.encode()):
        raise NotAllowed(400, "csrf_token: missing or wrong; reload the page and try again")
