"""Tokens: every token with its state, the OAuth client it was granted to, its last use; revoking one. The whole
store's business, so only an admin token for every workspace sees the page (as `zapomni token list`)."""

from __future__ import annotations

from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from zapomni_console.console import Console, Ctx
from zapomni_core import RevokeTokenRequest


def routes(console: Console) -> list[Route]:
    access = console.core.access

    async def listing(ctx: Ctx) -> Response:
        ctx.caller.require("admin", None)
        return ctx.render("tokens.html", tokens=(await access.list()).tokens, active="tokens")

    async def revoke(ctx: Ctx) -> Response:
        ctx.caller.require("admin", None)
        await access.revoke(RevokeTokenRequest(name_or_id=ctx.request.path_params["token_id"]))
        return RedirectResponse("/tokens", status_code=303)

    return [
        Route("/tokens", console.page("admin", listing), methods=["GET"]),
        Route("/tokens/{token_id}/revoke", console.page("admin", revoke), methods=["POST"]),
    ]
