"""The person's answer to an OAuth client (`/oauth/consent/{id}`): who asks for what, and what is granted.

The authorization endpoint sends the person here; signed in with a write or admin token (or already signed in),
they see the client's name, where the answer goes, the role and workspaces asked for, narrow them, and allow or
deny. Either way the browser goes back to the client's registered redirect URI with a code or `access_denied`.
The page's policy lets its form lead there and nowhere else (`form-action`, which browsers apply to redirects).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from zapomni_console.access import NotAllowed
from zapomni_console.console import Console, Ctx
from zapomni_console.headers import csp_with_form_action
from zapomni_core import ROLES, NotFound, OAuthRefused, Role, grantable


def routes(console: Console) -> list[Route]:
    oauth = console.core.oauth

    async def show(ctx: Ctx) -> Response:
        consent = await oauth.consent(ctx.request.path_params["pending"])
        if consent is None:
            raise NotFound("this authorization request is unknown, answered or expired: start again from the client")
        grant = ctx.caller.grant
        roles = grantable(grant.role, consent.pending.role)
        names = await console.core.workspaces.names()
        response = ctx.render(
            "consent.html",
            consent=consent,
            redirect_host=urlsplit(consent.pending.redirect_uri).netloc,
            roles=roles,
            # Clients ask for every scope the metadata lists (the MCP SDK does): admin is granted only when chosen.
            chosen_role="write" if "write" in roles else roles[-1],
            all_workspaces=grant.workspaces is None,
            offered=sorted(name for name in names if grant.sees(name)),
        )
        response.headers["content-security-policy"] = csp_with_form_action(consent.pending.redirect_uri)
        return response

    async def answer(ctx: Ctx) -> Response:
        pending_id = ctx.request.path_params["pending"]
        if ctx.field("decision") != "allow":
            taken = await oauth.deny(pending_id)
            if taken is None:
                raise NotFound("this authorization request is unknown, answered or expired")
            target = answer_to(taken.redirect_uri, error="access_denied", state=taken.state)
            return RedirectResponse(target, status_code=303)
        role = ctx.field("role")
        if role not in ROLES:
            raise NotAllowed(400, f"role: one of {', '.join(ROLES)}")
        chosen: Role = ROLES[ROLES.index(role)]
        workspaces = None if ctx.field("all_workspaces") == "on" else frozenset(ctx.posted("grant_workspace"))
        if workspaces is not None and not workspaces:
            raise NotAllowed(400, "grant_workspace: choose at least one, or all workspaces")
        try:
            taken, code = await oauth.allow(pending_id, ctx.caller.grant, chosen, workspaces)
        except OAuthRefused as exc:
            raise NotAllowed(403, str(exc)) from exc
        return RedirectResponse(answer_to(taken.redirect_uri, code=code, state=taken.state), 303)

    return [
        Route("/oauth/consent/{pending}", console.page("write", show), methods=["GET"]),
        Route("/oauth/consent/{pending}", console.page("write", answer), methods=["POST"]),
    ]


def answer_to(redirect_uri: str, **params: str) -> str:
    """The client's redirect URI with the answer's parameters added to its own query (RFC 6749, 4.1.2)."""
    parts = urlsplit(redirect_uri)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), *params.items()])
    return urlunsplit(parts._replace(query=query))
