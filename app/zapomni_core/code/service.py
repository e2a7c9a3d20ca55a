"""Looking up the code graph: find_symbol (fuzzy), get_callers, get_callees, and a symbol's neighbourhood."""

from __future__ import annotations

from rapidfuzz import fuzz, process, utils

from zapomni_core.code.replies import CallGraph, CodeNeighbours, SymbolList, SymbolOut
from zapomni_core.code.requests import FindSymbolRequest, SymbolRequest
from zapomni_core.errors import NotFound
from zapomni_core.faults import storage_boundary
from zapomni_core.kernel.registry import Workspaces
from zapomni_db import GraphStores, SymbolInfo

# Fuzzy matches below this score (0-100) are not offered.
MIN_SCORE = 60.0
# Symbols shown around one symbol, per relation, in get_related.
NEIGHBOURS = 20


@storage_boundary
class CodeService:
    def __init__(self, workspaces: Workspaces) -> None:
        self._workspaces = workspaces

    async def find(self, request: FindSymbolRequest) -> SymbolList:
        name = self._workspaces.resolve(request.workspace)
        stores = self._workspaces.stores(name)
        exact = [s for s in await stores.code.symbols_named(request.name, request.limit * 4) if _kind_ok(s, request)]
        scored = [(s, 100.0) for s in exact]
        if len(scored) < request.limit:
            seen = {s.qualified_name for s in exact}
            close = await _fuzzy(stores, request.name, request.limit * 4)
            fuzzy = [(qn, score) for qn, score in close if qn not in seen]
            by_name: dict[str, list[SymbolInfo]] = {}
            for symbol in await stores.code.symbols([qn for qn, _ in fuzzy]):
                by_name.setdefault(symbol.qualified_name, []).append(symbol)
            scored += [(s, score) for qn, score in fuzzy for s in by_name.get(qn, []) if _kind_ok(s, request)]
        symbols = [symbol_out(s, score) for s, score in scored[: request.limit]]
        return SymbolList(workspace=name, symbols=symbols, count=len(symbols))

    async def callers(self, request: SymbolRequest) -> CallGraph:
        return await self._calls(request, incoming=True)

    async def callees(self, request: SymbolRequest) -> CallGraph:
        return await self._calls(request, incoming=False)

    async def neighbours(self, stores: GraphStores, name: str, limit: int) -> list[CodeNeighbours]:
        """The code graph around each symbol named `name` (exactly, or by qualified name): for get_related."""
        found = []
        for symbol in await stores.code.symbols_named(name, limit):
            qn = symbol.qualified_name

            async def linked(edge: str, incoming: bool, qn: str = qn) -> list[SymbolOut]:
                return [symbol_out(s) for s in await stores.code.linked(qn, edge, incoming=incoming, limit=NEIGHBOURS)]

            found.append(
                CodeNeighbours(
                    symbol=symbol_out(symbol),
                    callers=await linked("CALLS", True),
                    callees=await linked("CALLS", False),
                    contains=await linked("CONTAINS", False),
                    inherits_from=await linked("INHERITS_FROM", False),
                    subclasses=await linked("INHERITS_FROM", True),
                )
            )
        return found

    async def _calls(self, request: SymbolRequest, *, incoming: bool) -> CallGraph:
        name = self._workspaces.resolve(request.workspace)
        stores = self._workspaces.stores(name)
        matched = await stores.code.symbols_named(request.symbol, request.limit)
        if not matched:
            close = [qn for qn, _ in await _fuzzy(stores, request.symbol, 5)]
            hint = f"; close matches: {', '.join(close)}" if close else " (index_codebase builds the code graph)"
            raise NotFound(f"symbol: no function, method or class named {request.symbol!r} in {name!r}{hint}")
        linked: dict[str, SymbolInfo] = {}
        for symbol in matched:
            for other in await stores.code.linked(
                symbol.qualified_name, "CALLS", incoming=incoming, limit=request.limit
            ):
                linked.setdefault(other.qualified_name + other.path, other)
        symbols = [symbol_out(s) for s in list(linked.values())[: request.limit]]
        return CallGraph(
            workspace=name,
            direction="callers" if incoming else "callees",
            matched=[symbol_out(s) for s in matched],
            symbols=symbols,
            count=len(symbols),
        )


async def _fuzzy(stores: GraphStores, query: str, limit: int) -> list[tuple[str, float]]:
    """Qualified names whose name or qualified name is close to `query`, best first."""
    names = await stores.code.symbol_names()
    if not names:
        return []
    # The name alone and the qualified name both count: 'load cfg' should find pkg.config.load_config.
    choices = {qn: f"{name} {qn}" for name, qn in names}
    matches = process.extract(
        query, choices, scorer=fuzz.WRatio, processor=utils.default_process, limit=limit, score_cutoff=MIN_SCORE
    )
    return [(key, round(float(score), 1)) for _, score, key in matches]


def _kind_ok(symbol: SymbolInfo, request: FindSymbolRequest) -> bool:
    return request.kind is None or symbol.kind == request.kind


def symbol_out(symbol: SymbolInfo, score: float | None = None) -> SymbolOut:
    return SymbolOut(
        kind=symbol.kind,
        name=symbol.name,
        qualified_name=symbol.qualified_name,
        signature=symbol.signature,
        docstring=symbol.docstring,
        language=symbol.language,
        path=symbol.path,
        line_start=symbol.line_start,
        line_end=symbol.line_end,
        score=score,
    )
