"""Security headers on every console response: a content security policy with no inline script or style,
no framing, no sniffing, no referrer to other sites, and pages never cached (they show memory text)."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Scripts only from the console's own static files (no inline script, no eval); fetches only back to it.
# Inline styles are allowed (they run nothing): Cytoscape.js adds a <style> element and style attributes.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on its own form posts.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


def csp_with_form_action(target: str) -> str:
    """The policy of a page whose form leads on to `target` (an OAuth client's redirect URI): browsers apply
    `form-action` to where a form's answer redirects, so its origin is added there, and only there."""
    parts = urlsplit(target)
    return CSP.replace("form-action 'self'", f"form-action 'self' {parts.scheme}://{parts.netloc}")


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope.get("path", "").startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name == b"content-security-policy" for name, _ in headers):  # a page's own, or this
                    headers.append((b"content-security-policy", CSP.encode()))
                headers.extend(HEADERS)
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)
