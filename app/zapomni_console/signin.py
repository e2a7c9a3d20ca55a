"""Sign in with a token (it is verified, then kept server-side behind a session cookie) and sign out."""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from zapomni_console.access import NotAllowed, check_csrf, check_origin, identify
from zapomni_console.console import Console
from zapomni_console.sessions import COOKIE, IDLE_S


def _next(raw: str | None) -> str:
    # Only a path on this site: never an open redirect to another one.
    return raw if raw and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw else "/"


def _too_many(console: Console, request: Request, key: str, where: str) -> Response | None:
    wait = console.limits.sign_in(key) if console.limits.sign_in else 0.0
    if not wait:
        return None
    retry = math.ceil(wait)
    response = console.error(request, 429, f"Too many sign-in attempts {where}; try again in {retry} s")
    response.headers["Retry-After"] = str(retry)
    return response


def routes(console: Console) -> list[Route]:
    async def show(request: Request) -> Response:
        return console.renderer.page(request, "login.html", next=_next(request.query_params.get("next")))

    async def sign_in(request: Request) -> Response:
        try:
            check_origin(request)
        except NotAllowed as exc:
            return console.error(request, exc.status, exc.message)
        address = request.client.host if request.client else "?"
        if refused := _too_many(console, request, f"address:{address}", "from this address"):
            return refused
        form = await request.form()
        token = form.get("token")
        raw_next = form.get("next")
        target = _next(raw_next if isinstance(raw_next, str) else None)
        secret = token.strip() if isinstance(token, str) else ""
        grant = await console.core.access.verify(secret) if secret else None
        if grant is None:
            return console.renderer.page(
                request,
                "login.html",
                401,
                next=target,
                message="token: not a working token (unknown, revoked or expired)",
            )
        if refused := _too_many(console, request, f"token:{grant.token_id}", f"with token {grant.name!r}"):
            return refused
        opened = console.sessions.open(secret)
        if opened is None:
            message = "Too many browsers are signed in to this console right now; try again when some sign out"
            return console.error(request, 503, message)
        session_id, _session = opened
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, session_id, max_age=IDLE_S, httponly=True, samesite="strict", secure=console.secure_cookies
        )
        return response

    async def sign_out(request: Request) -> Response:
        try:
            check_origin(request)
            caller = await identify(request, console.core, console.sessions)
            if caller is not None:
                form = await request.form()
                raw = form.get("csrf_token")
                check_csrf(request, caller, raw if isinstance(raw, str) else None)
        except NotAllowed as exc:
            return console.error(request, exc.status, exc.message)
        console.sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    return [
        Route("/login", show, methods=["GET"]),
        Route("/login", sign_in, methods=["POST"]),
        Route("/logout", sign_out, methods=["POST"]),
    ]
