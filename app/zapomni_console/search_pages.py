"""Search: the three modes side by side, each hit with the legs that found it, its scores and its graph context."""

from __future__ import annotations

import asyncio

from starlette.responses import Response
from starlette.routing import Route

from zapomni_console.console import Console, Ctx
from zapomni_console.memory_pages import filters
from zapomni_core import SEARCH_MODES, SearchRequest, SearchResult


def routes(console: Console) -> list[Route]:
    core = console.core

    async def search(ctx: Ctx) -> Response:
        query = ctx.field("q")
        results: dict[str, SearchResult] = {}
        if query:
            requests = {
                mode: SearchRequest.model_validate(
                    {
                        "workspace": ctx.workspace,
                        "query": query,
                        "mode": mode,
                        "limit": 10,
                        "filters": filters(ctx),
                        "graph_context": True,
                    }
                )
                for mode in SEARCH_MODES
            }
            replies = await asyncio.gather(*(core.memories.search(request) for request in requests.values()))
            results = dict(zip(requests, replies, strict=True))
        return ctx.render("search.html", q=query, results=results, modes=SEARCH_MODES, active="search")

    return [Route("/search", console.page("read", search), methods=["GET"], name="search")]
