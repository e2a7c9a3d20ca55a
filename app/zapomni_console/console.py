"""The console's shared machinery: who is asking, in which workspace, and how a page or a refusal is answered.

Every page handler is wrapped by `Console.page(role, handler)`: the wrapper identifies the caller (a
redirect to the sign-in page when there is none), checks Origin and, for a state change, the CSRF
proof, resolves the workspace, checks the role, and turns the engine's errors into a page that says
what was wrong. Handlers only call the core and pick a template.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import structlog
from pydantic import ValidationError
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from zapomni_console.access import CSRF_FIELD, Caller, NotAllowed, check_csrf, check_origin, identify
from zapomni_console.limits import Limits
from zapomni_console.rendering import Renderer, describe
from zapomni_console.sessions import Sessions
from zapomni_core import Conflict, InvalidRequest, NotFound, Role, ZapomniCore, ZapomniError

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Ctx:
    """One request as a handler sees it: the caller, the workspace it acts on, the posted form."""

    request: Request
    caller: Caller
    workspace: str
    workspaces: list[str]
    form: FormData | None
    console: Console

    def field(self, name: str) -> str:
        """A query or form value, stripped; '' when absent."""
        value = self.request.query_params.get(name)
        if value is None and self.form is not None:
            raw = self.form.get(name)
            value = raw if isinstance(raw, str) else None
        return (value or "").strip()

    def posted(self, name: str) -> list[str]:
        """A form field's values exactly as typed (every field of that name, in order): nothing stripped, only the
        CRLF line ends browsers send for LF put back, so an unedited form gives back what it showed."""
        if self.form is None:
            return []
        return [value.replace("\r\n", "\n") for value in self.form.getlist(name) if isinstance(value, str)]

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        return self.console.renderer.page(
            self.request,
            template,
            status,
            caller=self.caller,
            workspace=self.workspace,
            workspaces=self.workspaces,
            csrf=self.caller.csrf,
            can_write=self.caller.may("write", self.workspace),
            can_admin=self.caller.may("admin", self.workspace),
            **context,
        )


Handler = Callable[[Ctx], Awaitable[Response]]


class Console:
    """The core, the sessions and the templates, built once with the app."""

    def __init__(self, core: ZapomniCore, *, secure_cookies: bool = False, limits: Limits | None = None) -> None:
        self.core = core
        self.limits = limits or Limits()
        self.sessions = Sessions()
        self.renderer = Renderer()
        self.secure_cookies = secure_cookies
        self._default: str | None = None

    async def default_workspace(self, caller: Caller) -> str:
        if self._default is None:
            self._default = (await self.core.workspaces.list()).default
        seen = caller.grant.workspaces
        if seen is None or self._default in seen:
            return self._default
        return sorted(seen)[0]

    def page(self, role: Role, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                check_origin(request)
                caller = await identify(request, self.core, self.sessions)
                if caller is None:
                    if request.method == "GET" and "hx-request" not in request.headers:
                        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
                    raise NotAllowed(401, "not signed in: sign in with a token")
                self._check_limits(request, caller)
                form = await request.form() if request.method == "POST" else None
                if request.method == "POST":
                    raw = form.get(CSRF_FIELD) if form is not None else None
                    check_csrf(request, caller, raw if isinstance(raw, str) else None)
                ctx = await self._context(request, caller, form)
                caller.require(role, ctx.workspace)
                return await handler(ctx)
            except NotAllowed as exc:
                response = self.error(request, exc.status, exc.message)
                if exc.retry_after is not None:
                    response.headers["Retry-After"] = str(exc.retry_after)
                return response
            except ValidationError as exc:
                return self.error(request, 400, describe(exc))
            except (InvalidRequest, NotFound, Conflict) as exc:
                status = 404 if isinstance(exc, NotFound) else 409 if isinstance(exc, Conflict) else 400
                return self.error(request, status, str(exc))
            except ZapomniError as exc:
                log.warning("console.failed", path=request.url.path, error=type(exc).__name__)
                return self.error(request, 503, str(exc))

        return endpoint

    def _check_limits(self, request: Request, caller: Caller) -> None:
        declared = request.headers.get("content-length", "")
        if request.method == "POST" and declared.isdigit() and int(declared) > self.limits.max_body:
            raise NotAllowed(413, f"request too large: {declared} bytes, at most {self.limits.max_body}")
        wait = self.limits.wait(caller.grant.token_id) if self.limits.wait is not None else 0.0
        if wait:
            retry = math.ceil(wait)
            raise NotAllowed(429, f"too many requests by token {caller.grant.name!r}: retry in {retry} s", retry)

    async def _context(self, request: Request, caller: Caller, form: FormData | None) -> Ctx:
        raw = request.query_params.get("workspace") or (form.get("workspace") if form is not None else None)
        workspace = raw.strip() if isinstance(raw, str) and raw.strip() else await self.default_workspace(caller)
        names = await self.core.workspaces.names()
        visible = [name for name in names if caller.grant.sees(name)]
        if workspace not in visible:
            visible.append(workspace)
        return Ctx(request, caller, workspace, sorted(visible), form, self)

    def error(self, request: Request, status: int, message: str) -> Response:
        # An htmx request shows the message in place (the page's responseHandling swaps 4xx/5xx too).
        template = "error_fragment.html" if "hx-request" in request.headers else "error.html"
        return self.renderer.page(request, template, status, message=message, code=status)
