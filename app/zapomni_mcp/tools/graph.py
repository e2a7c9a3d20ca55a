"""build_graph, graph_status and get_related: the knowledge graph of a workspace's memories."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import (
    BuildGraphRequest,
    BuildGraphResult,
    CodeNeighbours,
    GetRelatedRequest,
    GraphStatus,
    GraphStatusRequest,
    RelatedEntity,
    RelatedResult,
    RequestContext,
)
from zapomni_mcp.registry import Tool
from zapomni_mcp.tools.code import symbol_line
from zapomni_mcp.tools.jobs import describe as describe_job


class BuildGraphTool(Tool[BuildGraphRequest, BuildGraphResult]):
    name = "build_graph"
    description = (
        "Extract entities (people, organisations, places, products, identifiers, ...) and the relations between "
        "them from memories, locally, into the workspace's knowledge graph. Answers at once with a job_id; the "
        "work runs in the background (graph_status follows it). New memories are queued automatically, so this "
        "is for memories stored before, or to rebuild given memory_ids."
    )
    input_model = BuildGraphRequest
    output_model = BuildGraphResult
    role = "write"
    # Not destructive: it only rebuilds what is derived from the memories (entities, relations); no memory changes.
    annotations = types.ToolAnnotations(
        title="Build knowledge graph", read_only_hint=False, destructive_hint=False, idempotent_hint=True
    )

    async def execute(self, arguments: BuildGraphRequest, ctx: RequestContext) -> BuildGraphResult:
        return await self.core.graph.build(arguments)

    @staticmethod
    def render(result: BuildGraphResult) -> str:
        if result.job_id is None:
            return f"No job queued in {result.workspace!r}: {result.note}."
        if result.note is not None:
            pending = f"{result.memories} memories pending in {result.workspace!r}"
            return f"{pending}; {result.note}. Follow it with graph_status."
        return (
            f"Queued job {result.job_id}: {result.extractor} extraction of {result.memories} memories in "
            f"{result.workspace!r}. Follow it with graph_status."
        )


class GraphStatusTool(Tool[GraphStatusRequest, GraphStatus]):
    name = "graph_status"
    description = (
        "The knowledge graph's counts (entities by type, relations, memories processed and still pending) and "
        "the state and progress of a build_graph job (the given job_id, else the latest)."
    )
    input_model = GraphStatusRequest
    output_model = GraphStatus
    role = "read"
    annotations = types.ToolAnnotations(title="Graph status", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: GraphStatusRequest, ctx: RequestContext) -> GraphStatus:
        return await self.core.graph.status(arguments, ctx)

    @staticmethod
    def render(result: GraphStatus) -> str:
        g = result.graph
        types_ = ", ".join(f"{kind} {n}" for kind, n in sorted(g.entities_by_type.items(), key=lambda kv: -kv[1]))
        lines = [
            f"Graph of {result.workspace!r} ({result.extractor}): {g.entities} entities ({types_ or 'none'}), "
            f"{g.relations} relations; {g.memories_processed} memories processed, {g.memories_pending} pending."
        ]
        if result.job is not None:
            lines.append(describe_job(result.job))
        return "\n".join(lines)


def _related_line(item: RelatedEntity) -> str:
    r = item.relation
    arrow = f"-[{r.type} '{r.predicate}']->" if r.direction == "out" else f"<-[{r.type} '{r.predicate}']-"
    when = f", since {r.valid_from}" if r.valid_from else ""
    superseded = ", superseded" if r.superseded else ""
    evidence = f' — "{item.evidence[0].text[:120]}"' if item.evidence else ""
    return (
        f"{'  ' * (item.distance - 1)}{arrow} {item.entity.name} ({item.entity.type}), distance {item.distance}, "
        f"strength {r.strength:.2f} ({r.method}{when}{superseded}){evidence}"
    )


class GetRelatedTool(Tool[GetRelatedRequest, RelatedResult]):
    name = "get_related"
    description = (
        "What the knowledge graph links to an entity: related entities up to `depth` hops away with the relation "
        "type, how strong and how it was found (stated vs. only mentioned together), dates, and the memory text "
        "that says so. The name is matched fuzzily; ambiguous names come back with candidates. The name of a "
        "function, method or class of an indexed codebase also brings its callers, callees, members and bases."
    )
    input_model = GetRelatedRequest
    output_model = RelatedResult
    role = "read"
    annotations = types.ToolAnnotations(title="Related entities", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: GetRelatedRequest, ctx: RequestContext) -> RelatedResult:
        return await self.core.graph.related(arguments)

    @staticmethod
    def render(result: RelatedResult) -> str:
        code = [_code_lines(n) for n in result.code]
        if result.matched is None:
            others = ", ".join(c.name for c in result.candidates)
            if code:
                return "\n".join(code)
            return f"No entity matches in {result.workspace!r}." + (f" Close: {others}." if others else "")
        head = f"{result.matched.name} ({result.matched.type}), matched with score {result.match_score:.0f}"
        if result.candidates:
            head += "; also close: " + ", ".join(f"{c.name} ({c.type})" for c in result.candidates)
        if not result.related:
            return "\n".join([head, "Nothing related yet.", *code])
        return "\n".join([head, *(_related_line(item) for item in result.related), *code])


def _code_lines(found: CodeNeighbours) -> str:
    lines = [symbol_line(found.symbol)]
    for label, symbols in (
        ("called by", found.callers),
        ("calls", found.callees),
        ("contains", found.contains),
        ("inherits from", found.inherits_from),
        ("subclassed by", found.subclasses),
    ):
        if symbols:
            lines.append(f"  {label}: " + ", ".join(s.qualified_name for s in symbols))
    return "\n".join(lines)
