"""The knowledge graph: an entity's neighbourhood drawn (1-3 hops, expanded by clicking), each edge with its
predicate, method, strength, evidence and whether a newer fact superseded it; the most connected entities
of the workspace; a code symbol's callers and callees."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from zapomni_console.console import Console, Ctx
from zapomni_core import GetRelatedRequest, GraphOverviewRequest, RelatedResult

NEIGHBOURS = 100  # entities per neighbourhood read (the engine's bound)


def drawing(result: RelatedResult) -> dict[str, Any]:
    """Nodes and edges for the page's graph library: one node per entity, one edge per relation found."""
    if result.matched is None:
        return {"matched": None, "candidates": [c.name for c in result.candidates], "nodes": [], "edges": []}
    nodes = {result.matched.name: {"id": result.matched.name, "type": result.matched.type, "distance": 0}}
    edges = []
    for item in result.related:
        nodes.setdefault(
            item.entity.name, {"id": item.entity.name, "type": item.entity.type, "distance": item.distance}
        )
        via = item.via or result.matched.name
        source, target = (via, item.entity.name) if item.relation.direction == "out" else (item.entity.name, via)
        edges.append(
            {
                "id": f"{source}\x1f{item.relation.type}\x1f{target}",
                "source": source,
                "target": target,
                "type": item.relation.type,
                "predicate": item.relation.predicate,
                "method": item.relation.method,
                "strength": item.relation.strength,
                "superseded": item.relation.superseded,
                "valid_from": item.relation.valid_from,
                "evidence": [e.text for e in item.evidence],
            }
        )
    return {
        "matched": result.matched.name,
        "candidates": [c.name for c in result.candidates],
        "nodes": list(nodes.values()),
        "edges": edges,
    }


def routes(console: Console) -> list[Route]:
    core = console.core

    def _related(ctx: Ctx, entity: str) -> GetRelatedRequest:
        depth = ctx.field("depth") or "1"
        return GetRelatedRequest.model_validate(
            {"workspace": ctx.workspace, "entity": entity, "depth": int(depth) if depth.isdigit() else depth,
             "limit": NEIGHBOURS}
        )  # fmt: skip

    async def page(ctx: Ctx) -> Response:
        entity = ctx.field("entity")
        result = await core.graph.related(_related(ctx, entity)) if entity else None
        overview = await core.graph.overview(GraphOverviewRequest.model_validate({"workspace": ctx.workspace}))
        return ctx.render(
            "graph.html",
            entity=entity,
            depth=ctx.field("depth") or "1",
            result=result,
            overview=overview.entities,
            active="graph",
        )

    async def data(ctx: Ctx) -> Response:
        result = await core.graph.related(_related(ctx, ctx.field("entity")))
        return JSONResponse(drawing(result))

    return [
        Route("/graph", console.page("read", page), methods=["GET"], name="graph"),
        Route("/graph/data", console.page("read", data), methods=["GET"]),
    ]
