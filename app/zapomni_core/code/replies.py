"""The code tools' replies: symbols found, call graphs, and a symbol's neighbourhood (get_related's code part)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from zapomni_db import SymbolKind


class SymbolOut(BaseModel):
    kind: SymbolKind
    name: str
    qualified_name: str
    signature: str
    docstring: str | None
    language: str
    path: str = Field(description="The file it is defined in.")
    line_start: int
    line_end: int
    score: float | None = Field(None, description="find_symbol: how closely the name matched (0-100).")


class SymbolList(BaseModel):
    workspace: str
    symbols: list[SymbolOut]
    count: int


class CallGraph(BaseModel):
    workspace: str
    direction: Literal["callers", "callees"]
    matched: list[SymbolOut] = Field(description="The symbols the name resolved to.")
    symbols: list[SymbolOut] = Field(description="Their callers (or callees) inside the indexed codebases.")
    count: int


class CodeNeighbours(BaseModel):
    """A code symbol's neighbourhood in the code graph: what get_related shows for a symbol's name."""

    symbol: SymbolOut
    callers: list[SymbolOut]
    callees: list[SymbolOut]
    contains: list[SymbolOut] = Field(description="Its methods (a class) or nested functions.")
    inherits_from: list[SymbolOut]
    subclasses: list[SymbolOut]
