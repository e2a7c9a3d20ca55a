"""What `CodeStore` takes and returns: code files and their symbols."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class SymbolRow:
    """A `Function`, `Method` or `Class` node to write."""

    id: str
    kind: str
    name: str
    qualified_name: str
    signature: str
    docstring: str | None
    line_start: int
    line_end: int
    parent: str | None  # the enclosing symbol's qualified name
    parent_id: str | None  # and its id (None: the file contains it)


@dataclass(frozen=True)
class SymbolInfo:
    """A symbol as found by a code lookup."""

    kind: str
    name: str
    qualified_name: str
    signature: str
    docstring: str | None
    language: str
    path: str
    line_start: int
    line_end: int
    codebase: str
