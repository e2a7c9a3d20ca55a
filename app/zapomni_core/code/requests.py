"""The code tools' requests: find_symbol, get_callers and get_callees."""

from __future__ import annotations

from pydantic import Field

from zapomni_core.validation import ScopedRequest
from zapomni_db import SymbolKind

MAX_SYMBOL_CHARS = 300
MAX_SYMBOLS = 100


class FindSymbolRequest(ScopedRequest):
    name: str = Field(
        min_length=1,
        max_length=MAX_SYMBOL_CHARS,
        description="A function, method or class name, or part of one; matched fuzzily ('load cfg' finds "
        "load_config), qualified names too ('store.Store.get').",
    )
    kind: SymbolKind | None = Field(None, description="Only symbols of this kind.")
    limit: int = Field(10, ge=1, le=MAX_SYMBOLS, description=f"At most this many symbols (1-{MAX_SYMBOLS}).")


class SymbolRequest(ScopedRequest):
    symbol: str = Field(
        min_length=1,
        max_length=MAX_SYMBOL_CHARS,
        description="A qualified name as find_symbol returns it (e.g. 'pkg.mod.Class.method'), or a plain name "
        "(every symbol of that name is used).",
    )
    limit: int = Field(50, ge=1, le=MAX_SYMBOLS, description=f"At most this many symbols (1-{MAX_SYMBOLS}).")
