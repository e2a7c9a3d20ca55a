"""Requests and results of the code tools: find_symbol, get_callers, get_callees (and get_related's code part)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from zapomni_core.validation import ScopedRequest

MAX_SYMBOL_CHARS = 300
MAX_SYMBOLS = 100

SymbolKindName = Literal["function", "method", "class"]


class FindSymbolRequest(ScopedRequest):
    name: str = Field(
        min_length=1,
        max_length=MAX_SYMBOL_CHARS,
        description="A function, method or class name, or part of one; matched fuzzily ('load cfg' finds "
        "load_config), qualified names too ('store.Store.get').",
    )
    kind: SymbolKindName | None = Field(None, description="Only symbols of this kind.")
    limit: int = Field(10, ge=1, le=MAX_SYMBOLS, description=f"At most this many symbols (1-{MAX_SYMBOLS}).")


class SymbolRequest(ScopedRequest):
    symbol: str = Field(
        min_length=1,
        max_length=MAX_SYMBOL_CHARS,
        description="A qualified name as find_symbol returns it (e.g. 'pkg.mod.Class.method'), or a plain name "
        "(every symbol of that name is used).",
    )
    limit: int = Field(50, ge=1, le=MAX_SYMBOLS, description=f"At most this many symbols (1-{MAX_SYMBOLS}).")


class SymbolOut(BaseModel):
    kind: SymbolKindName
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
