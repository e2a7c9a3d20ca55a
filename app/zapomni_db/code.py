"""The code graph of indexed codebases: `File` and `Symbol` (`Function`, `Method`, `Class`) nodes and their edges.

A code file is a memory (its chunks are searchable like any other); its `File` node and symbols
carry the memory's id, so deleting or replacing the memory removes them in the same write
(`_cypher.PURGE_EVIDENCE`). Edges: `(:Symbol)-[:DEFINED_IN]->(:File)`, `(:File|:Class)-[:CONTAINS]->(:Symbol)`
(written with the file), and `CALLS`, `INHERITS_FROM`, `IMPORTS`, which depend on other files and
are rewritten for the whole codebase after a change (`replace_links`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from zapomni_db.client import GraphClient
from zapomni_db.records.code import CodeFileRow, SymbolDefinition, SymbolInfo, SymbolRow

# Edges created per query when the codebase's links are rewritten.
LINK_BATCH = 2000

_SYMBOL_PROPERTIES = (
    "{id: s.id, kind: s.kind, name: s.name, name_lower: toLower(s.name), qualified_name: s.qualified_name, "
    "signature: s.signature, docstring: s.docstring, language: $language, path: $path, codebase: $codebase, "
    "line_start: s.line_start, line_end: s.line_end, parent: s.parent, memory_id: $memory_id}"
)
# Labels cannot be parameters: one FOREACH per kind, over that kind's symbols.
_CREATE_SYMBOLS = " ".join(
    f"FOREACH (s IN [x IN $symbols WHERE x.kind = '{kind}'] | "
    f"CREATE (:Symbol:{label} {_SYMBOL_PROPERTIES})-[:DEFINED_IN]->(f)) "
    for kind, label in (("function", "Function"), ("method", "Method"), ("class", "Class"))
)
# The file and its symbols in one write, which also records the file's hash on its memory: a file
# whose write did not finish has no hash and is redone by the next run.
_WRITE_FILE = (
    "MATCH (m:Memory {id: $memory_id}) "
    "CREATE (f:File {id: $file_id, path: $path, relative: $relative, codebase: $codebase, language: $language, "
    "module: $module, parsed: $parsed, memory_id: $memory_id}) "
    f"SET m.file_hash = $file_hash WITH f {_CREATE_SYMBOLS}"
    "WITH f CALL { WITH f UNWIND $top AS sid MATCH (b:Symbol {id: sid}) CREATE (f)-[:CONTAINS]->(b) } "
    "CALL { WITH f UNWIND $nested AS pair MATCH (a:Symbol {id: pair[0]}) MATCH (b:Symbol {id: pair[1]}) "
    "CREATE (a)-[:CONTAINS]->(b) } RETURN f.id"
)
_DROP_LINKS = {
    "CALLS": "MATCH (a:Symbol {codebase: $codebase})-[r:CALLS]->() DELETE r",
    "INHERITS_FROM": "MATCH (a:Symbol {codebase: $codebase})-[r:INHERITS_FROM]->() DELETE r",
    "IMPORTS": "MATCH (a:File {codebase: $codebase})-[r:IMPORTS]->() DELETE r",
}
_CREATE_LINKS = {
    "CALLS": "MATCH (a:Symbol {codebase: $codebase, qualified_name: p[0]}) "
    "MATCH (b:Symbol {codebase: $codebase, qualified_name: p[1]}) CREATE (a)-[:CALLS]->(b)",
    "INHERITS_FROM": "MATCH (a:Class {codebase: $codebase, qualified_name: p[0]}) "
    "MATCH (b:Class {codebase: $codebase, qualified_name: p[1]}) CREATE (a)-[:INHERITS_FROM]->(b)",
    "IMPORTS": "MATCH (a:File {codebase: $codebase, relative: p[0]}) "
    "MATCH (b:File {codebase: $codebase, relative: p[1]}) CREATE (a)-[:IMPORTS]->(b)",
}
_SYMBOL = (
    "s.kind, s.name, s.qualified_name, s.signature, s.docstring, s.line_start, s.line_end, s.parent, s.language, "
    "s.path, s.codebase"
)


class CodeStore:
    def __init__(self, client: GraphClient) -> None:
        self._client = client

    # -- writes ------------------------------------------------------------------------------------

    async def write_file(self, memory_id: str, file: CodeFileRow, symbols: Sequence[SymbolRow]) -> bool:
        """Store a code file's `File` node and symbols for its memory; False when the memory is gone."""
        params: dict[str, Any] = {
            "memory_id": memory_id,
            "file_id": file.id,
            "path": file.path,
            "relative": file.relative,
            "codebase": file.codebase,
            "language": file.language,
            "module": file.module,
            "parsed": file.parsed_json,
            "file_hash": file.file_hash,
            "symbols": [_symbol_param(s) for s in symbols],
            "top": [row.id for row in symbols if row.parent_id is None],
            "nested": [[row.parent_id, row.id] for row in symbols if row.parent_id is not None],
        }
        return bool(await self._client.query(_WRITE_FILE, params))

    async def replace_links(
        self,
        codebase: str,
        *,
        calls: Sequence[tuple[str, str]],
        inherits: Sequence[tuple[str, str]],
        imports: Sequence[tuple[str, str]],
    ) -> None:
        """Rewrite the codebase's CALLS and INHERITS_FROM (by qualified name) and IMPORTS (by relative path)."""
        for edge, pairs in (("CALLS", calls), ("INHERITS_FROM", inherits), ("IMPORTS", imports)):
            await self._client.query(_DROP_LINKS[edge], {"codebase": codebase})
            rows = [list(pair) for pair in pairs]
            for start in range(0, len(rows), LINK_BATCH):
                await self._client.query(
                    f"UNWIND $pairs AS p {_CREATE_LINKS[edge]}",
                    {"codebase": codebase, "pairs": rows[start : start + LINK_BATCH]},
                )

    # -- reads -------------------------------------------------------------------------------------

    async def parsed_files(self, codebase: str) -> list[str]:
        """The stored parse of every file of a codebase (JSON, as `write_file` got it)."""
        rows = await self._client.ro_query(
            "MATCH (f:File {codebase: $codebase}) RETURN f.parsed ORDER BY f.relative", {"codebase": codebase}
        )
        return [row[0] for row in rows]

    async def symbols_named(self, name: str, limit: int) -> list[SymbolInfo]:
        """Symbols whose qualified name is `name`, else whose name is `name` (case-insensitive), else whose
        qualified name ends with it (`Store.get` finds `pkg.store.Store.get`)."""
        name = name.replace("::", ".")
        queries = [
            f"MATCH (s:Symbol {{qualified_name: $name}}) RETURN {_SYMBOL} LIMIT $limit",
            f"MATCH (s:Symbol {{name_lower: toLower($name)}}) RETURN {_SYMBOL} ORDER BY s.qualified_name LIMIT $limit",
        ]
        # A qualified name is its parent's plus "." plus the symbol's name, so for a plain name every
        # suffix match is already a name match: the scan of every symbol is only for a dotted name.
        if "." in name:
            queries.append(
                f"MATCH (s:Symbol) WHERE s.qualified_name ENDS WITH $suffix RETURN {_SYMBOL} "
                "ORDER BY s.qualified_name LIMIT $limit"
            )
        for query in queries:
            rows = await self._client.ro_query(query, {"name": name, "suffix": f".{name}", "limit": limit})
            if rows:
                return [_symbol(row) for row in rows]
        return []

    async def symbol_names(self) -> list[tuple[str, str]]:
        """Every symbol's (name, qualified name): what a fuzzy lookup ranks."""
        rows = await self._client.ro_query("MATCH (s:Symbol) RETURN s.name, s.qualified_name")
        return [(row[0], row[1]) for row in rows]

    async def symbols(self, qualified_names: Sequence[str]) -> list[SymbolInfo]:
        rows = await self._client.ro_query(
            f"UNWIND $names AS qn MATCH (s:Symbol {{qualified_name: qn}}) RETURN {_SYMBOL}",
            {"names": list(qualified_names)},
        )
        return [_symbol(row) for row in rows]

    async def linked(self, qualified_name: str, edge: str, *, incoming: bool, limit: int) -> list[SymbolInfo]:
        """The symbols at the other end of `edge` edges into (incoming) or out of this symbol."""
        pattern = (
            "(o:Symbol)-[:{e}]->(s:Symbol {{qualified_name: $qn}})"
            if incoming
            else ("(s:Symbol {{qualified_name: $qn}})-[:{e}]->(o:Symbol)")
        )
        if edge not in ("CALLS", "INHERITS_FROM", "CONTAINS"):
            raise ValueError(f"not a symbol edge: {edge}")
        rows = await self._client.ro_query(
            f"MATCH {pattern.format(e=edge)} WITH DISTINCT o AS s RETURN {_SYMBOL} "
            "ORDER BY s.qualified_name LIMIT $limit",
            {"qn": qualified_name, "limit": limit},
        )
        return [_symbol(row) for row in rows]

    async def counts(self) -> dict[str, int]:
        """Files, symbols and CALLS edges in this graph."""
        rows = await self._client.ro_query(
            "OPTIONAL MATCH (f:File) WITH count(f) AS files OPTIONAL MATCH (s:Symbol) WITH files, count(s) AS symbols "
            "OPTIONAL MATCH (:Symbol)-[c:CALLS]->() RETURN files, symbols, count(c)"
        )
        files, symbols, calls = rows[0] if rows else (0, 0, 0)
        return {"files": int(files), "symbols": int(symbols), "calls": int(calls)}


def _symbol_param(row: SymbolRow) -> dict[str, Any]:
    # The definition's own fields: a parser's symbol carries more (byte ranges, raw calls), kept out of the graph.
    return {"id": row.id, **{f.name: getattr(row.symbol, f.name) for f in fields(SymbolDefinition)}}


def _symbol(row: list[Any]) -> SymbolInfo:
    return SymbolInfo(
        kind=row[0],
        name=row[1],
        qualified_name=row[2],
        signature=row[3] or "",
        docstring=row[4],
        line_start=int(row[5]),
        line_end=int(row[6]),
        parent=row[7],
        language=row[8],
        path=row[9],
        codebase=row[10],
    )
