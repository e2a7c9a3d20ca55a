"""`/healthz` (the process serves) and `/readyz` (the engine is open and its database answers), without a token."""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from zapomni_core import ZapomniCore, ZapomniError
from zapomni_mcp.errors import public_message

READY_TIMEOUT_S = 5.0
_NO_CACHE = {"Cache-Control": "no-store"}


def health_routes(core: ZapomniCore) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "alive"}, headers=_NO_CACHE)

    async def readyz(request: Request) -> JSONResponse:
        try:
            with anyio.fail_after(READY_TIMEOUT_S):
                await core.workspaces.names()  # the database answers; what it holds is no business of a probe
        except TimeoutError:
            return _not_ready(f"the database did not answer within {READY_TIMEOUT_S:g} s")
        except ZapomniError as exc:
            return _not_ready(public_message(exc, local=False))
        return JSONResponse({"status": "ready"}, headers=_NO_CACHE)

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


def _not_ready(reason: str) -> JSONResponse:
    return JSONResponse({"status": "not_ready", "reason": reason}, status_code=503, headers=_NO_CACHE)
