"""Workspaces and stats: counts, sizes, growth per day, free disk, embedder and version; deleting a
workspace needs an admin token and its name typed again."""

from __future__ import annotations

import asyncio

from starlette.responses import Response
from starlette.routing import Route

from zapomni_console.console import Console, Ctx
from zapomni_core import DeleteWorkspaceRequest, Growth, StatsRequest

CHART_DAYS = 60  # the chart's last days with any memory added


def bars(growth: Growth) -> list[dict[str, object]]:
    """The growth chart's bars as fractions of the busiest day (drawn as SVG by the template, no script)."""
    days = growth.days[-CHART_DAYS:]
    peak = max((d.memories for d in days), default=0) or 1
    return [{"day": d.day, "memories": d.memories, "height": d.memories / peak} for d in days]


def routes(console: Console) -> list[Route]:
    core = console.core

    async def overview(ctx: Ctx) -> Response:
        request = StatsRequest.model_validate({"workspace": ctx.workspace})
        stats, growth, listing = await asyncio.gather(
            core.workspaces.stats(request), core.workspaces.growth(request), core.workspaces.list()
        )
        visible = [w for w in listing.workspaces if ctx.caller.grant.sees(w.name)]
        if ctx.caller.grant.workspaces is not None:  # as get_stats: nothing of the workspaces it may not use
            stats = stats.model_copy(update={"workspaces": len(visible), "database_size_mb": None})
        return ctx.render(
            "workspaces.html",
            stats=stats,
            bars=bars(growth),
            listing=visible,
            can_delete=ctx.caller.may("admin", ctx.workspace),
            active="workspaces",
        )

    async def delete(ctx: Ctx) -> Response:
        name = ctx.request.path_params["name"]
        ctx.caller.require("admin", name)
        result = await core.workspaces.delete(
            DeleteWorkspaceRequest.model_validate({"name": name, "confirm": ctx.field("confirm")})
        )
        return ctx.render("workspace_deleted.html", result=result, active="workspaces")

    return [
        Route("/workspaces", console.page("read", overview), methods=["GET"], name="workspaces"),
        Route("/workspaces/{name}/delete", console.page("read", delete), methods=["POST"]),
    ]
