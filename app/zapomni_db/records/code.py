"""What `CodeStore` takes and returns: code files and their symbols."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class CodeFileRow:
    """A code file's `File` node to write."""

    id: str
    path: str  # absolute
    relative: str  # inside the codebase, POSIX
    codebase: str  # the codebase's root directory
    language: str
    module: str
    file_hash: str
    parsed_json: str  # the parse, kept so the codebase's links can be re-resolved without re-reading the file


# What a definition is: a function, a method (of a class, or a Go or Rust type) or a class.
SymbolKind = Literal["function", "method", "class"]


@dataclass(frozen=True)
class SymbolDefinition:
    """A definition as its `Function`, `Method` or `Class` node stores it. The parser's symbol
    (`zapomni_core.code.Symbol`) extends it with what only linking needs."""

    kind: SymbolKind
    name: str
    qualified_name: str
    signature: str
    docstring: str | None
    line_start: int
    line_end: int
    parent: str | None  # the enclosing symbol's qualified name


@dataclass(frozen=True)
class SymbolRow:
    """A symbol node to write: the definition, its node's id and its parent's (None: the file contains it)."""

    id: str
    symbol: SymbolDefinition
    parent_id: str | None


@dataclass(frozen=True, kw_only=True)
class SymbolInfo(SymbolDefinition):
    """A symbol as found by a code lookup, with the file and codebase it is defined in."""

    language: str
    path: str
    codebase: str
