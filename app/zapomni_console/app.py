"""The console as a Starlette app, built once from an engine that is already open (never per request)."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from zapomni_console import (
    consent_pages,
    graph_pages,
    job_pages,
    memory_pages,
    search_pages,
    signin,
    token_pages,
    workspace_pages,
)
from zapomni_console.console import Console
from zapomni_console.headers import SecurityHeaders
from zapomni_console.limits import Limits
from zapomni_core import ZapomniCore

STATIC = Path(__file__).parent / "static"


def console_routes(core: ZapomniCore, *, secure_cookies: bool = False, limits: Limits | None = None) -> list[BaseRoute]:
    """Every page of the console and its static files (without the headers and compression of `console_app`)."""
    console = Console(core, secure_cookies=secure_cookies, limits=limits)
    return [
        *signin.routes(console),
        *memory_pages.routes(console),
        *search_pages.routes(console),
        *job_pages.routes(console),
        *graph_pages.routes(console),
        *workspace_pages.routes(console),
        *consent_pages.routes(console),
        *token_pages.routes(console),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        # Browsers ask for it after any page, a refusal included: a 404 there is an error in their console.
        Route("/favicon.ico", _no_icon, methods=["GET"]),
    ]


async def _no_icon(request: Request) -> Response:
    return Response(status_code=204)


def console_app(core: ZapomniCore, *, secure_cookies: bool = False, limits: Limits | None = None) -> Starlette:
    """The console with its security headers and compression: served alone (`zapomni console`) or mounted at `/`
    of `zapomni serve --http`."""
    return Starlette(
        routes=console_routes(core, secure_cookies=secure_cookies, limits=limits),
        middleware=[Middleware(SecurityHeaders), Middleware(GZipMiddleware, minimum_size=1024)],
    )
