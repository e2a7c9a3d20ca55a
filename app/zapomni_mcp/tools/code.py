"""find_symbol, get_callers and get_callees: the code graph of indexed codebases."""

from __future__ import annotations

import mcp_types as types

from zapomni_core import CallGraph, FindSymbolRequest, RequestContext, SymbolList, SymbolOut, SymbolRequest
from zapomni_mcp.registry import Tool


def symbol_line(symbol: SymbolOut) -> str:
    score = f" (match {symbol.score:.0f})" if symbol.score is not None else ""
    return (
        f"{symbol.kind} {symbol.qualified_name} — {symbol.path}:{symbol.line_start}-{symbol.line_end}{score}\n"
        f"    {symbol.signature}"
    )


class FindSymbolTool(Tool[FindSymbolRequest, SymbolList]):
    name = "find_symbol"
    description = (
        "Find functions, methods and classes of indexed codebases by name, fuzzily ('load cfg' finds "
        "load_config): qualified name, signature, docstring, file and lines."
    )
    input_model = FindSymbolRequest
    output_model = SymbolList
    role = "read"
    annotations = types.ToolAnnotations(title="Find symbol", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: FindSymbolRequest, ctx: RequestContext) -> SymbolList:
        return await self.core.code.find(arguments)

    @staticmethod
    def render(result: SymbolList) -> str:
        if not result.symbols:
            return f"No symbol matches in {result.workspace!r}."
        return "\n".join(symbol_line(s) for s in result.symbols)


class _CallsTool(Tool[SymbolRequest, CallGraph]):
    input_model = SymbolRequest
    output_model = CallGraph
    role = "read"

    @staticmethod
    def render(result: CallGraph) -> str:
        names = ", ".join(s.qualified_name for s in result.matched)
        if not result.symbols:
            return f"No {result.direction} of {names} found in the indexed code."
        return f"{result.count} {result.direction} of {names}:\n" + "\n".join(symbol_line(s) for s in result.symbols)


class GetCallersTool(_CallsTool):
    name = "get_callers"
    description = (
        "The functions and methods that call a symbol (its qualified name from find_symbol, or a plain name), "
        "as resolved in the indexed codebase; calls through values of unknown type are not resolved."
    )
    annotations = types.ToolAnnotations(title="Callers", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: SymbolRequest, ctx: RequestContext) -> CallGraph:
        return await self.core.code.callers(arguments)


class GetCalleesTool(_CallsTool):
    name = "get_callees"
    description = (
        "The functions, methods and classes a symbol calls inside the indexed codebase (library and builtin calls "
        "are left out)."
    )
    annotations = types.ToolAnnotations(title="Callees", read_only_hint=True, idempotent_hint=True)

    async def execute(self, arguments: SymbolRequest, ctx: RequestContext) -> CallGraph:
        return await self.core.code.callees(arguments)
